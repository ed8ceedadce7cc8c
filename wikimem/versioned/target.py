"""The write verbs of a versioned folder, written once over a target: a branch (``main`` or a staged run) and a
layer of the folder (the shared one, or a character's: ``characters/<id>/``).

A :class:`Target` is where a write goes; :class:`Branch` is the little that
differs between branches (how a unit is opened and committed, what a
commit-id ``If-Match`` compares with, how a keyed retry finds its first
result, the wording of a refusal). The verbs — :meth:`Target.batch`,
:meth:`~Target.add`, :meth:`~Target.remove`, :meth:`~Target.diary_append` —
with their ``If-Match`` / ``If-None-Match`` checks and idempotent replay
exist only here (``tests/unit/test_architecture.py`` holds it so).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from typing import Protocol

from wikimem.context import WriteContext, digest
from wikimem.errors import PreconditionFailed
from wikimem.format import item_etag
from wikimem.models import DiaryItem, RecallItem
from wikimem.naming import validate_provenance
from wikimem.store import Diary, MemoryStore, UnitInfo, Writer

from .outcomes import Committed, Outcome

__all__ = ["Branch", "Target", "request_of", "is_commit_id"]


def request_of(ctx: WriteContext, kind: str | None) -> str | None:
    """The hash a keyed request is remembered by: its kind (with target) and its fingerprint (body)."""
    return digest(kind, ctx.fingerprint) if ctx.idempotency_key is not None and kind else None


def is_commit_id(text: str) -> bool:
    """Whether an ``If-Match`` value is a full commit id (else it is an item's etag)."""
    return len(text) == 40 and all(c in "0123456789abcdef" for c in text.lower())


class Branch(Protocol):
    """What a target needs of the branch it writes: main (:class:`~wikimem.versioned.VersionedStore`) or a
    staged run (:class:`~wikimem.versioned.staging.StagedBranch`)."""

    writer: Writer  # whose units make this branch's commits
    store: MemoryStore  # the shared layer as this branch holds it (its layers: ``store.layer(id)``)

    @property
    def where(self) -> str:
        """How a refusal names the branch: "" for main, " on staged run <run>"."""

    @property
    def changed(self) -> str:
        """A commit-id ``If-Match`` that failed reads "<changed> <current head>, not <given>"."""

    def unit_info(self, info: UnitInfo) -> UnitInfo:
        """What this branch's commits carry besides the request's own info."""

    def round_head(self) -> str:
        """Inside a unit: the commit the unit builds on (what a commit-id ``If-Match`` must equal)."""

    def replay(self, key: str, kind: str | None, request: str | None, *, pending: bool = False) -> dict | None:
        """The stored result of a keyed request this branch already applied, or None."""


class Target:
    """The write API of one branch and layer: each verb is one commit on the branch (or a replay of the first)."""

    def __init__(self, branch: Branch, layer: str | None = None):
        self.branch = branch
        self.layer = layer
        self.store = branch.store.layer(layer)  # (validates the layer's id)

    def __repr__(self) -> str:
        return f"Target({self.branch!r}, layer={self.layer!r})"

    def _bound(self, ctx: WriteContext | None, *request: object) -> WriteContext:
        """``ctx`` bound to the request (and to the layer it writes: a retry must address the same one)."""
        where = ("layer", self.layer) if self.layer is not None else ()
        return WriteContext.of(ctx).bound(*request, *where)

    def _kind(self, kind: str) -> str:
        return kind if self.layer is None else f"{kind} in {self.layer}"

    def with_layer(self, layer: str | None) -> Target:
        """The same branch, another layer (a memorize writes the character's layer and proposes to the shared one)."""
        return self if layer == self.layer else Target(self.branch, layer)

    @property
    def diary(self) -> Diary:
        return self.store.diary

    @staticmethod
    def request_of(ctx: WriteContext, kind: str | None) -> str | None:
        return request_of(ctx, kind)

    def replay(self, key: str, kind: str | None = None, request: str | None = None) -> dict | None:
        """The stored result of an already-applied request with this idempotency key, or None."""
        return self.branch.replay(key, kind, request)

    @contextmanager
    def batch(self, ctx: WriteContext | None = None, *, message: str | None = None, action: str | None = None,
              kind: str | None = None, reverts: str | None = None) -> Iterator[Outcome]:
        """Everything written inside is one commit (or none, if nothing was written).

        ``ctx`` says who writes and under which preconditions; ``message``,
        ``action`` and ``reverts`` (the one commit a revert or restore undoes)
        go into the commit. With an idempotency key already applied,
        ``outcome.replay`` holds the stored result and nothing should be
        written; ``kind`` names the request (``add f/n``, ``diary``, …) and
        ``ctx.fingerprint`` its body, so that a key reused for another
        request is refused (:class:`~wikimem.errors.IdempotencyKeyReused`)
        rather than replayed. A commit id ``if_match`` must still be the
        branch's head. The block sets ``outcome.result`` (what a retry
        replays); ``outcome.commit`` is the commit made once it is over.
        """
        ctx = ctx if ctx is not None else WriteContext()
        request = request_of(ctx, kind)
        info = self.branch.unit_info(UnitInfo(
            run=ctx.run, actor=ctx.actor, source_conv=ctx.source_conv, idempotency_key=ctx.idempotency_key,
            message=validate_provenance(message, "message") or None, action=action or None,
            request=request or None, reverts=reverts or None))
        branch = self.branch
        with branch.writer.unit(info) as unit:
            # (inside a round: the key may name a unit of the round not landed yet, and If-Match sees its tip)
            outcome = Outcome.opened(unit, ctx, kind, request, head=branch.round_head,
                                     replay=lambda key, k, r: branch.replay(key, k, r, pending=True),
                                     changed=branch.changed)
            yield outcome
            if outcome.replay is None:
                unit.payload = outcome.result
        if outcome.replay is None:
            outcome.commit = unit.commit

    def check_item(self, file: str, name: str, ctx: WriteContext) -> None:
        """The item's preconditions, inside the unit (under the owner's lock), against this branch's view:
        ``ctx.if_match`` is its etag or a full commit id that must still be the head; ``ctx.if_none_match``
        says it must not exist."""
        if_match = ctx.if_match
        if if_match is None and not ctx.if_none_match:
            return
        if if_match is not None and is_commit_id(if_match):
            head = self.branch.round_head()
            if head != if_match.lower():
                raise PreconditionFailed(f"{self.branch.changed} {head[:12]}, not {if_match[:12]}", current=head)
            return
        current = self.store.get(file, name)
        tag = item_etag(current) if current is not None else None
        shown = asdict(current) if current is not None else None
        where = self.branch.where
        if ctx.if_none_match and current is not None:
            raise PreconditionFailed(f"item {file}/{name} exists already{where} (etag {tag}): nothing written",
                                     current=tag, item=shown)
        if if_match is not None and tag != if_match:
            raise PreconditionFailed(f"item {file}/{name} changed{where} (etag {tag or 'none'}, not {if_match})",
                                     current=tag, item=shown)

    def add(self, file: str, name: str, content: str, *, owner: str | None = None, ts: str | None = None,
            ctx: WriteContext | None = None, channel: str | None = None,
            present: Iterable[str] | str | None = None) -> Committed:
        """Add or replace an item as one commit (``ctx.if_match``: its etag or the head commit id;
        ``ctx.if_none_match``: only if it does not exist yet; ``channel``/``present``: :meth:`wikimem.Wiki.add`)."""
        ctx = self._bound(ctx, "add", file, name, content, owner, ts, *_room(channel, present))
        # The item's preconditions are checked by check_item, not as a head commit by batch().
        with self.batch(replace(ctx, if_match=None, if_none_match=False), kind=self._kind(f"add {file}/{name}")) as b:
            if b.replay is not None:
                value = b.replay.get("value")
                return Committed(RecallItem(**value) if value else self.store.get(file, name), b.commit, True,
                                 created=bool(b.replay.get("created")))
            self.check_item(file, name, ctx)
            saved = self.store.save(file, name, content, owner=owner, ts=ts, source_conv=ctx.source_conv,
                                    channel=channel, present=present)
            b.result = {"value": asdict(saved.item), "created": saved.created}
        return Committed(saved.item, b.commit, created=saved.created)

    def remove(self, file: str, name: str, *, owner: str | None = None,
               ctx: WriteContext | None = None) -> Committed:
        """Remove an item as one commit; ``value`` is False (and no commit) when it did not exist."""
        ctx = self._bound(ctx, "remove", file, name, owner)
        with self.batch(replace(ctx, if_match=None, if_none_match=False, source_conv=None),
                        kind=self._kind(f"remove {file}/{name}")) as b:
            if b.replay is not None:
                return Committed(bool(b.replay.get("value")), b.commit, True)
            self.check_item(file, name, ctx)
            removed = self.store.remove(file, name, owner=owner)
            b.result = {"value": removed}
        return Committed(removed, b.commit)

    def diary_append(self, content: str, *, ts: str | None = None, date: str | None = None,
                     time: str | None = None, tz=None, owner: str | None = None,
                     ctx: WriteContext | None = None, channel: str | None = None,
                     present: Iterable[str] | str | None = None) -> Committed:
        """Append a diary entry as one commit (``channel``/``present``: :meth:`wikimem.Diary.append`)."""
        ctx = self._bound(ctx, "diary", content, ts, date, time, str(tz) if tz else None, owner,
                          *_room(channel, present))
        with self.batch(ctx, kind=self._kind("diary")) as b:
            if b.replay is not None:
                value = b.replay.get("value")
                return Committed(DiaryItem(**value) if value else None, b.commit, True)
            entry = self.diary.append(content, ts=ts, date=date, time=time, tz=tz, owner=owner,
                                      source_conv=ctx.source_conv, channel=channel, present=present)
            b.result = {"value": asdict(entry)}
        return Committed(entry, b.commit)


def _room(channel: str | None, present: Iterable[str] | str | None) -> tuple:
    """What a write's ``channel``/``present`` add to the request its key is bound to (nothing when absent, so a
    retry of an older request matches)."""
    if channel is None and present is None:
        return ()
    return channel, present if present is None or isinstance(present, str) else list(present)
