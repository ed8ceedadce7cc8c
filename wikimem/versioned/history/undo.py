"""Undo as the versioned store offers it: revert a commit, roll back a run, restore to a point.

:class:`Undo` is the object a :class:`~wikimem.versioned.VersionedStore`
holds as ``undo``. Each operation has a preview (the
:class:`~wikimem.versioned.history.plans.Plan`, nothing written) and an action that
writes the plan as one new commit, under the owner lock, on files re-read
there. :data:`UNDO_KINDS` is the one table from an operation's name to what
it takes, its preview and its action (:meth:`Undo.preview`,
:meth:`Undo.apply`). The item-by-item rules are in
:mod:`wikimem.versioned.history.plans`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace

from wikimem.context import WriteContext
from wikimem.errors import Conflict, NotFound
from wikimem.store import Writer

from ..objects import GitRepo
from ..outcomes import Committed, Outcome
from .historydb import HistoryDB
from .itemdiff import ItemChange
from .plans import Plan, State, finish, plan_restore, plan_revert, stage_writes

__all__ = ["Undo", "UndoKind", "UNDO_KINDS", "undo_kind", "item_line"]

# How the store opens the unit of an undo: VersionedStore.batch(ctx, action=, message=, kind=, reverts=).
Batch = Callable[..., AbstractContextManager[Outcome]]


def item_line(change: ItemChange) -> str:
    """``changed preferences/tea`` / ``removed diary 2026-07-21 10:00``: one item an undo commit changes."""
    where = f"{change.file}/{change.name}" if change.kind == "wiki" else f"diary {change.date} {change.time}"
    return f"{change.status} {where}"


def _operator(ctx: WriteContext | None) -> WriteContext:
    """An undo without an actor is the operator's."""
    ctx = ctx if ctx is not None else WriteContext()
    return ctx if ctx.actor else replace(ctx, actor="operator")


class Undo:
    """Revert, roll back and restore one versioned folder, each previewed or applied as one new commit.

    Built by the store with what undo needs: the git objects, the history
    index (the commits of a run), the writer (the unit's files), and the
    store's ways to resolve a point (``resolve``) and to open a unit
    (``batch``).
    """

    def __init__(self, git: GitRepo, db: HistoryDB, writer: Writer, *, resolve: Callable[[str], str],
                 batch: Batch):
        self.git = git
        self.db = db
        self.writer = writer
        self.resolve = resolve
        self.batch = batch

    # -- by kind: the one dispatch (see UNDO_KINDS) --------------------------------------------

    def preview(self, kind: str, target: str) -> Plan:
        """What ``apply(kind, target)`` would change now, and its conflicts, without writing."""
        return undo_kind(kind).preview(self, target)

    def apply(self, kind: str, target: str, *, force: bool = False, ctx: WriteContext | None = None) -> Committed:
        """Revert a commit, roll back a run, or restore to a point (``kind``), as one new commit.

        Conflicts raise :class:`~wikimem.errors.Conflict` unless ``force``
        (a restore has none: it makes the memory equal to its target).
        """
        return undo_kind(kind).apply(self, target, force, ctx)

    # -- plans ---------------------------------------------------------------------------------

    def _state(self) -> State:
        return State(self.writer.door.read)

    def _revertible(self, point: str) -> str:
        cid = self.resolve(point)
        if not self.git.commit(cid.encode()).parents:
            raise ValueError("the first commit of a memory folder cannot be reverted")
        return cid

    def _plan_revert(self, cid: str, force: bool) -> tuple[Plan, dict]:
        state = self._state()
        conflicts: list[dict] = []
        plan_revert(self.git, state, cid.encode(), conflicts, force)
        return finish(state, cid, conflicts)

    def _plan_rollback(self, run: str, force: bool) -> tuple[Plan, dict, list[str]]:
        commits = self.db.run_commits(run)
        if not commits:
            raise NotFound(f"no commits of run {run!r}")
        state = self._state()
        conflicts: list[dict] = []
        for cid in commits:
            plan_revert(self.git, state, cid.encode(), conflicts, force)
        plan, writes = finish(state, run, conflicts)
        return plan, writes, commits

    def _plan_restore(self, target: str) -> tuple[Plan, dict]:
        state = self._state()
        plan_restore(self.git, state, self.git.head(), target.encode())
        return finish(state, target, [])

    def preview_revert(self, point: str) -> Plan:
        return self._plan_revert(self._revertible(point), False)[0]

    def preview_rollback(self, run: str) -> Plan:
        return self._plan_rollback(run, False)[0]

    def preview_restore(self, point: str) -> Plan:
        return self._plan_restore(self.resolve(point))[0]

    # -- the actions -----------------------------------------------------------------------------

    def revert(self, point: str, *, force: bool = False, ctx: WriteContext | None = None) -> Committed:
        """Undo one commit, item by item, as a new commit; conflicts raise unless ``force``."""
        cid = self._revertible(point)
        entry = self.db.entry(cid)
        summary = entry.summary if entry else cid[:12]
        ctx = _operator(ctx).bound("revert", cid, force)
        with self.batch(ctx, action="revert", message=f"revert {cid[:12]}: {summary}",
                        kind=f"revert {cid}", reverts=cid) as b:
            if b.replay is not None:
                return Committed(None, b.commit, True)
            plan, writes = self._plan_revert(cid, force)
            if plan.conflicts and not force:
                raise Conflict(f"{len(plan.conflicts)} item(s) changed after {cid[:12]}", conflicts=plan.conflicts)
            b.unit.info = replace(b.unit.info, undo_items=_items(plan))
            stage_writes(self.writer, writes, "revert", f"revert {cid[:12]}")
            b.result = {}
        return Committed(plan, b.commit)

    def rollback(self, run: str, *, force: bool = False, ctx: WriteContext | None = None) -> Committed:
        """Undo every commit of a run (newest first) as one new commit."""
        ctx = _operator(ctx).bound("rollback", run, force)
        with self.batch(ctx, action="rollback", message=f"roll back run {run}",
                        kind=f"rollback {run}") as b:
            if b.replay is not None:
                return Committed(None, b.commit, True)
            plan, writes, commits = self._plan_rollback(run, force)
            # Full ids, the run and the items: the commit says exactly what it undid (history links both ways).
            b.unit.info = replace(b.unit.info, reverts_commits=tuple(commits), reverts_runs=(run,),
                                  undo_items=_items(plan))
            if plan.conflicts and not force:
                raise Conflict(f"{len(plan.conflicts)} item(s) changed after run {run}", conflicts=plan.conflicts)
            stage_writes(self.writer, writes, "rollback", f"rollback run {run}")
            b.result = {}
        return Committed(plan, b.commit)

    def restore(self, point: str, *, ctx: WriteContext | None = None) -> Committed:
        """Make ``wiki/`` and ``diary/`` what they were at a commit or time, as one new commit."""
        target = self.resolve(point)
        ctx = _operator(ctx).bound("restore", target)
        with self.batch(ctx, action="restore", message=f"restore to {target[:12]}",
                        kind=f"restore {target}", reverts=target) as b:
            if b.replay is not None:
                return Committed(None, b.commit, True)
            plan, writes = self._plan_restore(target)
            b.unit.info = replace(b.unit.info, undo_items=_items(plan))
            stage_writes(self.writer, writes, "restore", f"restore to {target[:12]}")
            b.result = {}
        return Committed(plan, b.commit)

    # -- a selection: several runs and loose commits as one commit (bulk rollback) -------------

    def _selected(self, runs: Iterable[str], commits: Iterable[str], skip: Set[str] = frozenset()) -> list[str]:
        """The commits of ``runs`` plus ``commits`` on the branch, newest first, but those in ``skip``
        (full ids, or the 12-character prefixes older rollback commits recorded)."""
        ids = [c for run in dict.fromkeys(runs) for c in self.db.run_commits(run)]
        return [c for c in self.db.newest_first(list(dict.fromkeys([*ids, *commits])))
                if c not in skip and c[:12] not in skip]

    def _plan_set(self, ids: list[str], force: bool, label: str) -> tuple[Plan, dict]:
        state = self._state()
        conflicts: list[dict] = []
        for cid in ids:
            plan_revert(self.git, state, cid.encode(), conflicts, force)
        return finish(state, label, conflicts)

    def preview_selection(self, runs: Iterable[str] = (), commits: Iterable[str] = (),
                          skip: Set[str] = frozenset()) -> Plan:
        """What :meth:`rollback_selection` would change now, and its conflicts, without writing."""
        runs, commits = list(runs), list(commits)
        ids = self._selected(runs, commits, skip)
        return self._plan_set(ids, False, " ".join([*runs, *(c[:12] for c in commits)]))[0]

    def rollback_selection(self, runs: Iterable[str] = (), commits: Iterable[str] = (), *,
                           skip: Set[str] = frozenset(), force: bool = False, ctx: WriteContext | None = None,
                           message: str | None = None, kind: str = "rollback-selection") -> Committed:
        """Undo every commit of ``runs`` and the loose ``commits`` (newest first) as one new commit.

        The run's commits are read under the owner lock, so a run that grew
        since the preview is undone whole; commits in ``skip`` (already
        undone) are left alone. Conflicts raise
        :class:`~wikimem.errors.Conflict` unless ``force``; ``value`` is the
        plan, ``commit`` None when there was nothing left to undo.
        """
        runs, commits = list(runs), list(commits)
        label = " ".join([*runs, *(c[:12] for c in commits)])
        with self.batch(_operator(ctx), action="rollback", kind=kind,
                        message=message or f"roll back {len(runs) + len(commits)} run(s): {label}"[:200]) as b:
            if b.replay is not None:
                return Committed(b.replay, b.commit, True)
            ids = self._selected(runs, commits, skip)
            plan, writes = self._plan_set(ids, force, label)
            b.unit.info = replace(b.unit.info, reverts_commits=tuple(ids), reverts_runs=tuple(runs),
                                  undo_items=_items(plan))
            if plan.conflicts and not force:
                raise Conflict(f"{len(plan.conflicts)} item(s) changed after the selected runs",
                               conflicts=plan.conflicts)
            stage_writes(self.writer, writes, "rollback", f"rollback {label}"[:200])
            b.result = {"changes": len(plan.changes), "forced": len(plan.conflicts)}
        return Committed(plan, b.commit)


def _items(plan: Plan) -> tuple[str, ...]:
    return tuple(item_line(c) for c in plan.changes)


@dataclass(frozen=True)
class UndoKind:
    """One undo operation: what its target names, its preview and its action."""

    target: str  # "commit", "run" or "to" (a commit point or a time): the API's name of the target
    preview: Callable[[Undo, str], Plan]
    apply: Callable[[Undo, str, bool, WriteContext | None], Committed]  # (undo, target, force, ctx)


# The one dispatch of undo by name (Owner.undo / preview_undo, the CLI's revert / rollback / restore).
UNDO_KINDS: Mapping[str, UndoKind] = {
    "revert": UndoKind("commit", Undo.preview_revert,
                       lambda undo, target, force, ctx: undo.revert(target, force=force, ctx=ctx)),
    "rollback": UndoKind("run", Undo.preview_rollback,
                         lambda undo, target, force, ctx: undo.rollback(target, force=force, ctx=ctx)),
    # A restore has no conflicts to force: it makes the memory equal to its target.
    "restore": UndoKind("to", Undo.preview_restore, lambda undo, target, force, ctx: undo.restore(target, ctx=ctx)),
}


def undo_kind(kind: str) -> UndoKind:
    """The entry of :data:`UNDO_KINDS` named ``kind`` (``ValueError`` for any other name)."""
    found = UNDO_KINDS.get(kind)
    if found is None:
        raise ValueError(f"unknown undo operation {kind!r}: use one of {', '.join(UNDO_KINDS)}")
    return found
