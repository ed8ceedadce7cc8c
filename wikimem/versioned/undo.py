"""Undo as the versioned store offers it: revert a commit, roll back a run, restore to a point.

Each has a preview (the :class:`~wikimem.versioned.plans.Plan`, nothing
written) and an action that writes the plan as one new commit, under the
owner lock, on files re-read there. The item-by-item rules are in
:mod:`wikimem.versioned.plans`.
"""

from __future__ import annotations

from dataclasses import replace

from wikimem.context import WriteContext
from wikimem.errors import Conflict, NotFound
from wikimem.format import memory_path, utc_now
from wikimem.fsio import read_bytes

from .itemdiff import ItemChange
from .outcomes import Committed
from .plans import Plan, State, finish, plan_restore, plan_revert

__all__ = ["Undo", "item_line"]


def item_line(change: ItemChange) -> str:
    """``changed preferences/tea`` / ``removed diary 2026-07-21 10:00``: one item an undo commit changes."""
    where = f"{change.file}/{change.name}" if change.kind == "wiki" else f"diary {change.date} {change.time}"
    return f"{change.status} {where}"


class Undo:
    """The undo operations of :class:`~wikimem.versioned.VersionedStore` (mixed into it)."""

    def _state(self) -> State:
        return State(lambda p: read_bytes(self.root / p))

    def _revertible(self, point: str) -> str:
        cid = self.resolve(point)
        if not self.git.commit(cid.encode()).parents:
            raise ValueError("the first commit of a memory folder cannot be reverted")
        return cid

    def _plan_revert(self, cid: str, force: bool) -> tuple[Plan, dict]:
        state, conflicts = self._state(), []
        plan_revert(self.git, state, cid.encode(), conflicts, force)
        return finish(state, cid, conflicts)

    def _plan_rollback(self, run: str, force: bool) -> tuple[Plan, dict, list[str]]:
        commits = self.db.run_commits(run)
        if not commits:
            raise NotFound(f"no commits of run {run!r}")
        state, conflicts = self._state(), []
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

    def _apply(self, writes: dict, action: str, detail: str) -> None:
        for path, (old, new) in writes.items():
            folder, name = memory_path(path)
            record = {"ts": utc_now(), "action": action, ("file" if folder == "wiki" else "date"): name,
                      "detail": detail}
            self.writer.apply({path: (old, new)}, record)

    @staticmethod
    def _operator(ctx: WriteContext | None) -> WriteContext:
        ctx = ctx if ctx is not None else WriteContext()
        return ctx if ctx.actor else replace(ctx, actor="operator")

    def revert(self, point: str, *, force: bool = False, ctx: WriteContext | None = None) -> Committed:
        """Undo one commit, item by item, as a new commit; conflicts raise unless ``force``."""
        cid = self._revertible(point)
        entry = self.db.entry(cid)
        summary = entry.summary if entry else cid[:12]
        ctx = self._operator(ctx).bound("revert", cid, force)
        with self.batch(ctx, action="revert", message=f"revert {cid[:12]}: {summary}",
                        kind=f"revert {cid}", reverts=cid) as b:
            if b.replay is not None:
                return Committed(None, b.commit, True)
            plan, writes = self._plan_revert(cid, force)
            if plan.conflicts and not force:
                raise Conflict(f"{len(plan.conflicts)} item(s) changed after {cid[:12]}", conflicts=plan.conflicts)
            b.unit.info = replace(b.unit.info, undo_items=_items(plan))
            self._apply(writes, "revert", f"revert {cid[:12]}")
            b.result = {}
        return Committed(plan, b.commit)

    def rollback(self, run: str, *, force: bool = False, ctx: WriteContext | None = None) -> Committed:
        """Undo every commit of a run (newest first) as one new commit."""
        ctx = self._operator(ctx).bound("rollback", run, force)
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
            self._apply(writes, "rollback", f"rollback run {run}")
            b.result = {}
        return Committed(plan, b.commit)

    def restore(self, point: str, *, ctx: WriteContext | None = None) -> Committed:
        """Make ``wiki/`` and ``diary/`` what they were at a commit or time, as one new commit."""
        target = self.resolve(point)
        ctx = self._operator(ctx).bound("restore", target)
        with self.batch(ctx, action="restore", message=f"restore to {target[:12]}",
                        kind=f"restore {target}", reverts=target) as b:
            if b.replay is not None:
                return Committed(None, b.commit, True)
            plan, writes = self._plan_restore(target)
            b.unit.info = replace(b.unit.info, undo_items=_items(plan))
            self._apply(writes, "restore", f"restore to {target[:12]}")
            b.result = {}
        return Committed(plan, b.commit)

    # -- a selection: several runs and loose commits as one commit (bulk rollback) -------------

    def _selected(self, runs, commits, skip=frozenset()) -> list[str]:
        """The commits of ``runs`` plus ``commits`` on the branch, newest first, but those in ``skip``
        (full ids, or the 12-character prefixes older rollback commits recorded)."""
        ids = [c for run in dict.fromkeys(runs) for c in self.db.run_commits(run)]
        return [c for c in self.db.newest_first(list(dict.fromkeys([*ids, *commits])))
                if c not in skip and c[:12] not in skip]

    def _plan_set(self, ids: list[str], force: bool, label: str) -> tuple[Plan, dict]:
        state, conflicts = self._state(), []
        for cid in ids:
            plan_revert(self.git, state, cid.encode(), conflicts, force)
        return finish(state, label, conflicts)

    def preview_selection(self, runs=(), commits=(), skip=frozenset()) -> Plan:
        """What :meth:`rollback_selection` would change now, and its conflicts, without writing."""
        ids = self._selected(runs, commits, skip)
        return self._plan_set(ids, False, " ".join([*runs, *(c[:12] for c in commits)]))[0]

    def rollback_selection(self, runs=(), commits=(), *, skip=frozenset(), force: bool = False,
                           ctx: WriteContext | None = None, message: str | None = None,
                           kind: str = "rollback-selection") -> Committed:
        """Undo every commit of ``runs`` and the loose ``commits`` (newest first) as one new commit.

        The run's commits are read under the owner lock, so a run that grew
        since the preview is undone whole; commits in ``skip`` (already
        undone) are left alone. Conflicts raise
        :class:`~wikimem.errors.Conflict` unless ``force``; ``value`` is the
        plan, ``commit`` None when there was nothing left to undo.
        """
        runs, commits = list(runs), list(commits)
        label = " ".join([*runs, *(c[:12] for c in commits)])
        with self.batch(self._operator(ctx), action="rollback", kind=kind,
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
            self._apply(writes, "rollback", f"rollback {label}"[:200])
            b.result = {"changes": len(plan.changes), "forced": len(plan.conflicts)}
        return Committed(plan, b.commit)


def _items(plan: Plan) -> tuple[str, ...]:
    return tuple(item_line(c) for c in plan.changes)
