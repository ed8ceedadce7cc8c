"""The data types of the library: wiki items, diary entries (and links, :mod:`wikimem.links`'s)."""

from __future__ import annotations

from dataclasses import dataclass

from wikimem.links import WikiLink, parse_wiki_links

__all__ = ["RecallItem", "DiaryItem", "WikiLink", "as_recall_item"]


@dataclass
class RecallItem:
    """One wiki item (state): a ``## name`` section of ``wiki/<file>.md``."""

    file: str
    name: str
    content: str
    owner: str | None = None
    source_conv: str | None = None
    ts: str | None = None
    # Where a diary entry was said and who was there (None / () for wiki items and entries without them).
    channel: str | None = None
    present: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.present = tuple(self.present or ())

    @property
    def links(self) -> list[WikiLink]:
        return parse_wiki_links(self.content)


@dataclass
class DiaryItem:
    """One diary event: a ``## HH:MM`` section of ``diary/YYYY-MM-DD.md``; ``channel`` and ``present``: where it
    was said (``dm`` = a direct chat) and who was there (owner ids and ``char:<character>``), when known."""

    date: str
    time: str
    content: str
    owner: str | None = None
    source_conv: str | None = None
    ts: str | None = None
    channel: str | None = None
    present: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.present = tuple(self.present or ())  # a list from JSON (a job's or a replay's record) reads the same

    @property
    def links(self) -> list[WikiLink]:
        return parse_wiki_links(self.content)


def as_recall_item(entry: DiaryItem) -> RecallItem:
    """A diary entry as a retrieval unit: the day is its file, the time its name."""
    return RecallItem(
        file=entry.date,
        name=entry.time,
        content=entry.content,
        owner=entry.owner,
        source_conv=entry.source_conv,
        ts=entry.ts,
        channel=entry.channel,
        present=entry.present,
    )
