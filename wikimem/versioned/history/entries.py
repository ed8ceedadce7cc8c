"""What the history index answers: one commit (:class:`HistoryEntry`), a page of them, a commit item by item."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .itemdiff import ItemChange

__all__ = ["HistoryEntry", "HistoryPage", "CommitDiff"]


@dataclass
class HistoryEntry:
    """One commit, as the history shows it."""

    id: str
    parents: list[str]
    time: str
    actor: str | None
    run: str | None
    action: str | None
    file: str | None
    item: str | None
    date: str | None
    time_of_day: str | None
    owner: str | None
    source_conv: str | None
    summary: str
    changes: int
    # The characters' layers the commit touched (``characters/<id>/``), comma-separated; None: only the shared one.
    layers: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class HistoryPage:
    entries: list[HistoryEntry] = field(default_factory=list)
    next: str | None = None  # cursor of the older page
    prev: str | None = None  # cursor of the newer page (``after``), when the page is not the newest

    def to_dict(self) -> dict:
        return {"entries": [e.to_dict() for e in self.entries], "next": self.next}


@dataclass
class CommitDiff:
    """A commit (or the span between two) item by item, plus the raw patch."""

    entry: HistoryEntry | None
    changes: list[ItemChange] = field(default_factory=list)
    patch: str = ""

    def to_dict(self) -> dict:
        return asdict(self)
