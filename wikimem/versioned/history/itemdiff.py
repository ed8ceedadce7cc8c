"""Per-item views of file contents: what a change did to each wiki item and diary entry."""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import asdict, dataclass, field

from wikimem.format import entry_key, layer_of, memory_path, parse_day, parse_wiki, same_item
from wikimem.fsio import decode
from wikimem.models import RecallItem

__all__ = ["ItemChange", "wiki_items", "path_changes", "unified_patch"]


@dataclass
class ItemChange:
    """One item (or diary entry) added, changed or removed."""

    kind: str  # "wiki" | "diary"
    status: str  # "added" | "changed" | "removed"
    file: str | None = None
    name: str | None = None
    date: str | None = None
    time: str | None = None
    before: str | None = None
    after: str | None = None
    layer: str | None = None  # a character's layer (characters/<id>/), None: the shared one
    # A diary entry's room: where it was said and who was there (None / [] when it does not say).
    channel: str | None = None
    present: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def wiki_items(data: bytes | None, file: str) -> dict[str, RecallItem]:
    """The items of a wiki file by name."""
    return {i.name: i for i in parse_wiki(data, file)}


def path_changes(path: str, old: bytes | None, new: bytes | None) -> list[ItemChange]:
    """What changed between two versions of one tracked file, item by item."""
    kind = memory_path(path)
    if kind is None or old == new:
        return []
    folder, name = kind
    layer = layer_of(path)[0]
    out = _changes(folder, name, old, new)
    if layer is not None:
        for change in out:
            change.layer = layer
    return out


def _changes(folder: str, name: str, old: bytes | None, new: bytes | None) -> list[ItemChange]:
    out: list[ItemChange] = []
    if folder == "wiki":
        a, b = wiki_items(old, name), wiki_items(new, name)
        for item_name in list(a) + [n for n in b if n not in a]:
            before, after = a.get(item_name), b.get(item_name)
            if before is None and after is not None:
                out.append(ItemChange("wiki", "added", file=name, name=item_name, after=after.content))
            elif after is None and before is not None:
                out.append(ItemChange("wiki", "removed", file=name, name=item_name, before=before.content))
            elif before is not None and after is not None and not same_item(before, after):
                out.append(ItemChange("wiki", "changed", file=name, name=item_name,
                                      before=before.content, after=after.content))
        return out
    a_entries, b_entries = parse_day(old, name), parse_day(new, name)
    removed = Counter(map(entry_key, a_entries)) - Counter(map(entry_key, b_entries))
    added = Counter(map(entry_key, b_entries)) - Counter(map(entry_key, a_entries))
    for entry in a_entries:
        if removed[entry_key(entry)] > 0:
            removed[entry_key(entry)] -= 1
            out.append(ItemChange("diary", "removed", date=name, time=entry.time, before=entry.content,
                                  channel=entry.channel, present=list(entry.present)))
    for entry in b_entries:
        if added[entry_key(entry)] > 0:
            added[entry_key(entry)] -= 1
            out.append(ItemChange("diary", "added", date=name, time=entry.time, after=entry.content,
                                  channel=entry.channel, present=list(entry.present)))
    return out


def unified_patch(path: str, old: bytes | None, new: bytes | None) -> str:
    a = decode(old).splitlines(keepends=True) if old is not None else []
    b = decode(new).splitlines(keepends=True) if new is not None else []
    lines = difflib.unified_diff(a, b, f"a/{path}" if old is not None else "/dev/null",
                                 f"b/{path}" if new is not None else "/dev/null")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
