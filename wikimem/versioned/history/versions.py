"""One item through time: its text at each version, and which commit wrote the current text.

The history index knows which commits touched an item (``touches``); the
text at each of them is read from the commit's tree. "Blame" for an item
is the commit from which its current text has stood unchanged: metadata
changes (a new ``ts``, another ``source_conv``) do not move it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..objects import GitRepo
from .entries import HistoryEntry
from .itemdiff import wiki_items

__all__ = ["ItemVersion", "item_versions", "blame"]


@dataclass
class ItemVersion:
    """The item as one commit left it (``content`` None: the commit removed it)."""

    entry: HistoryEntry
    status: str  # "added" | "changed" | "removed"
    content: str | None
    ts: str | None = None
    source_conv: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _item_at(git: GitRepo, cid: str, file: str, name: str):
    tree = git.commit_tree(cid.encode())
    return wiki_items(git.blob_at(tree, f"wiki/{file}.md"), file).get(name)


def item_versions(git: GitRepo, entries: list[HistoryEntry], file: str, name: str) -> list[ItemVersion]:
    """The item at each commit of ``entries`` (its history, newest first), with what each commit did to it."""
    out: list[ItemVersion] = []
    for entry in entries:
        item = _item_at(git, entry.id, file, name)
        before = _item_at(git, entry.parents[0], file, name) if entry.parents else None
        status = "removed" if item is None else "added" if before is None else "changed"
        out.append(ItemVersion(entry, status, None if item is None else item.content,
                               None if item is None else item.ts, None if item is None else item.source_conv))
    return out


def blame(versions: list[ItemVersion], content: str) -> tuple[ItemVersion | None, bool]:
    """``(version, complete)``: the oldest of the newest versions that all hold ``content``.

    ``versions`` is newest first, possibly one page of a longer history:
    ``complete`` is False when every version given holds ``content`` (an
    older page may hold it too). None when the newest version does not hold
    it (a hand edit not committed yet).
    """
    found = None
    for version in versions:
        if version.content != content:
            return found, True
        found = version
    return found, False
