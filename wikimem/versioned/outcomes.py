"""What a write of the versioned store returns (a commit read back item by item: `historydb.CommitDiff`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wikimem.context import WriteContext
from wikimem.errors import PreconditionFailed
from wikimem.store import Unit

__all__ = ["Committed", "Outcome"]


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

    @classmethod
    def opened(cls, unit: Unit, ctx: WriteContext, kind: str | None, request: str | None, *,
               replay: Callable[[str, str | None, str | None], dict | None], head: Callable[[], str],
               changed: str) -> Outcome:
        """The outcome of a unit just opened: the key's stored result when it was applied already, else the
        ``If-Match`` checked against ``head()`` (:class:`PreconditionFailed` saying ``changed``, e.g. "the
        memory changed: head is")."""
        outcome = cls(unit)
        if ctx.idempotency_key is not None:
            outcome.replay = replay(ctx.idempotency_key, kind, request)
            if outcome.replay is not None:
                outcome.commit = outcome.replay.get("commit")
        if ctx.if_match is not None and outcome.replay is None:
            current = head()
            if not current.startswith(ctx.if_match.lower()) or len(ctx.if_match) < 4:
                raise PreconditionFailed(f"{changed} {current[:12]}, not {ctx.if_match}", current=current)
        return outcome
