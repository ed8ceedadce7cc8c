"""Per-item views of file contents: what a change did to each wiki item and diary entry."""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import asdict, dataclass

from ..diary import _sort_key_times
from ..fsio import decode
from ..markdown import Block, parse_blocks, render_blocks
from ..models import RecallItem
from ..store import _dedupe, _render

__all__ = ["ItemChange", "Entry", "wiki_items", "diary_entries", "render_wiki", "render_diary",
           "path_changes", "unified_patch", "split_path"]


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

    def to_dict(self) -> dict:
        return asdict(self)


# A diary entry, as compared: heading (HH:MM), content, owner, source_conv, ts.
Entry = tuple[str, str, str | None, str | None, str | None]


def split_path(path: str) -> tuple[str, str] | None:
    """``("wiki", file)`` / ``("diary", date)`` of a tracked markdown path, else None."""
    folder, _, name = path.partition("/")
    if folder in ("wiki", "diary") and name.endswith(".md") and "/" not in name and len(name) > 3:
        return folder, name[:-3]
    return None


def wiki_items(data: bytes | None, file: str) -> dict[str, RecallItem]:
    if data is None:
        return {}
    return {i.name: i for i in _dedupe(parse_blocks(decode(data)), file)}


def diary_entries(data: bytes | None) -> list[Entry]:
    if data is None:
        return []
    return [(b.heading, b.content, b.owner, b.source_conv, b.ts) for b in parse_blocks(decode(data))]


def render_wiki(file: str, items: list[RecallItem]) -> bytes | None:
    return _render(file, items) if items else None


def render_diary(date: str, entries: list[Entry]) -> bytes | None:
    if not entries:
        return None
    blocks = [Block(*e) for e in entries]
    keys = _sort_key_times(blocks)
    order = sorted(range(len(blocks)), key=keys.__getitem__)
    return render_blocks(date, [blocks[i] for i in order]).encode("utf-8")


def _same(a: RecallItem, b: RecallItem) -> bool:
    return (a.content, a.owner, a.source_conv, a.ts) == (b.content, b.owner, b.source_conv, b.ts)


def path_changes(path: str, old: bytes | None, new: bytes | None) -> list[ItemChange]:
    """What changed between two versions of one tracked file, item by item."""
    kind = split_path(path)
    if kind is None or old == new:
        return []
    folder, name = kind
    out: list[ItemChange] = []
    if folder == "wiki":
        a, b = wiki_items(old, name), wiki_items(new, name)
        for item_name in list(a) + [n for n in b if n not in a]:
            before, after = a.get(item_name), b.get(item_name)
            if before is None:
                out.append(ItemChange("wiki", "added", file=name, name=item_name, after=after.content))
            elif after is None:
                out.append(ItemChange("wiki", "removed", file=name, name=item_name, before=before.content))
            elif not _same(before, after):
                out.append(ItemChange("wiki", "changed", file=name, name=item_name,
                                      before=before.content, after=after.content))
        return out
    a_entries, b_entries = diary_entries(old), diary_entries(new)
    removed = Counter(a_entries) - Counter(b_entries)
    added = Counter(b_entries) - Counter(a_entries)
    for entry in a_entries:
        if removed[entry] > 0:
            removed[entry] -= 1
            out.append(ItemChange("diary", "removed", date=name, time=entry[0], before=entry[1]))
    for entry in b_entries:
        if added[entry] > 0:
            added[entry] -= 1
            out.append(ItemChange("diary", "added", date=name, time=entry[0], after=entry[1]))
    return out


def unified_patch(path: str, old: bytes | None, new: bytes | None) -> str:
    a = decode(old).splitlines(keepends=True) if old is not None else []
    b = decode(new).splitlines(keepends=True) if new is not None else []
    lines = difflib.unified_diff(a, b, f"a/{path}" if old is not None else "/dev/null",
                                 f"b/{path}" if new is not None else "/dev/null")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
