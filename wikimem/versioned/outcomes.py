"""What the versioned store's operations return."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from wikimem.store import Unit

from .historydb import HistoryEntry
from .itemdiff import ItemChange

__all__ = ["Committed", "Outcome", "CommitDiff"]


@dataclass
class Committed:
    """What a write returns: its value, the commit it made (None if nothing changed), and whether it was a replay."""

    value: Any
    commit: str | None
    replayed: bool = False
    created: bool = False  # an add that made a new item (not a replacement): the API answers 201


@dataclass
class Outcome:
    """What the block of :meth:`VersionedStore.batch` sees and sets: a replay, its result, then the commit."""

    unit: Unit = field(repr=False)  # the writer's unit: its ``info`` goes into the commit
    replay: dict | None = None  # the stored result when the idempotency key was already applied
    result: Any = None  # set by the block: what a retry with the same key will replay
    commit: str | None = None  # the commit made (set when the block is over)


@dataclass
class CommitDiff:
    """A commit (or the span between two) item by item, plus the raw patch."""

    entry: HistoryEntry | None
    changes: list[ItemChange] = field(default_factory=list)
    patch: str = ""

    def to_dict(self) -> dict:
        return asdict(self)
