"""Runs on probation: a staged run's writes go onto the branch ``staged/<run>``, then are approved or discarded.

:class:`Staging` is what a :class:`~wikimem.versioned.VersionedStore`'s owner holds for its staged runs
(SPEC §10):

- :meth:`Staging.branch` gives the writer of one run (:class:`StagedBranch`, the write API of the versioned
  store: ``add``, ``remove``, ``diary_append``, ``batch`` with ``store``/``diary``). Its unit reads and writes
  an :class:`~wikimem.store.OverlayDoor` over the branch's tree (``main``'s head at the run's first write),
  in memory: ``main``, the work tree and the approved memory never change. The commit (its trailers as a
  direct write's, plus ``Wikimem-Base``) moves the branch by compare-and-swap under the owner lock, after it
  is on the remote when the folder replicates (pushed with compare-and-swap too).
- :meth:`Staging.review` — what approving would change on current ``main``, item by item, and the conflicts
  (items ``main`` changed since the run started), planned by :func:`~wikimem.versioned.history.plans.plan_apply`.
- :meth:`Staging.approve` — one commit on ``main`` (``Wikimem-Action: approve``, the run's ``Wikimem-Run``
  and ``Wikimem-Actor``, ``Wikimem-Approved-By``, ``Wikimem-Staged-Tip``, one ``Wikimem-Skipped`` per
  conflicting item left out unless forced, operator edits applied in the same commit), then the branch goes.
- :meth:`Staging.discard` — one commit on ``main`` that changes no file (``Wikimem-Action: discard``, the
  run, the items it had changed in its body): the run stays findable in history; then the branch goes, its tip
  kept under ``refs/wikimem/discarded/<run>`` until housekeeping drops it (:meth:`Staging.sweep_discarded`);
  :meth:`Staging.restore_discarded` stages those commits again as a new run (a wrong click undone).
- :meth:`Staging.overlay` — the approved memory plus every staged run, as a
  :class:`~wikimem.versioned.Snapshot` (for a retrieve that includes staged runs) and which items are staged.

A run whose approve or discard commit is on ``main`` is *settled*: a branch of it that is still here (its
removal was interrupted, or another host's fetch brought it back) is removed by :meth:`Staging.settle`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from wikimem.context import WriteContext
from wikimem.errors import NotFound, PreconditionFailed, RemoteError, RemoteMoved
from wikimem.format import (
    utc_now,
)
from wikimem.store import MemoryStore, OverlayDoor, Unit, UnitInfo

from .approvedits import apply_edits, check_edits, own_edits, where
from .history import (
    ItemChange,
    Plan,
    Snapshot,
    State,
    finish,
    iso,
    path_changes,
    plan_apply,
    rebuild_result,
    stage_writes,
)
from .messages import build_message, parse_trailers, trailer_values
from .objects import oid
from .outcomes import Committed
from .replication import (
    STAGED,
    TRACKED,
    discarded_ages,
    discarded_tips,
    drop_discarded,
    keep_discarded,
    staged_ref,
    staged_tips,
    tracked_ref,
    validate_staged_run,
)
from .target import Target

if TYPE_CHECKING:
    from .vstore import VersionedStore

__all__ = ["Staging", "StagedBranch", "StagedRun", "StagedReview", "Overlay", "SETTLING_ACTIONS", "item_key"]

log = logging.getLogger(__name__)

SETTLING_ACTIONS = ("approve", "discard")  # the actions of the main commits that settle a staged run
SCRATCH = "wikimem-staged"  # in .git/: the journal of a staged unit, removed after it (never memory)
MAX_LISTED = 100  # items named in an approve or discard commit's body


def item_key(change: ItemChange) -> tuple:
    """What names an item across views: ``(layer, "wiki", file, name)`` or ``(layer, "diary", date, time, content)``
    (``layer``: a character's, None for the shared layer)."""
    if change.kind == "wiki":
        return (change.layer, "wiki", change.file, change.name)
    return (change.layer, "diary", change.date, change.time,
            change.after if change.after is not None else change.before)


def _line(change: ItemChange) -> str:
    where = f"{change.file}/{change.name}" if change.kind == "wiki" else f"diary {change.date} {change.time}"
    return f"{change.status} {where}"


@dataclass
class StagedRun:
    """One staged run of one owner: its branch's tip and base, who wrote it, when, and how much."""

    run: str
    tip: str
    base: str
    actor: str | None
    source_conv: str | None
    first: str  # UTC ISO-8601 time of its first commit
    last: str
    commits: int
    changes: int  # items it changes (against its base)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class StagedReview:
    """A staged run against current ``main``: what it changed (``staged``), what approving would change now
    (``changes``) and what it would skip (``conflicts``: items ``main`` changed since the run started)."""

    run: StagedRun
    staged: list[ItemChange] = field(default_factory=list)
    changes: list[ItemChange] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run.to_dict(), "staged": [c.to_dict() for c in self.staged],
                "changes": [c.to_dict() for c in self.changes], "conflicts": self.conflicts}


@dataclass(frozen=True)
class Overlay:
    """The approved memory plus every staged run (``snapshot``), the items that differ from ``main``
    (``staged``, keys of :func:`item_key`), and what it was built from (``key``: main's head and the tips)."""

    key: tuple
    snapshot: Snapshot
    staged: frozenset


class StagedBranch:
    """The writer of one staged run: the versioned store's write API, onto ``refs/heads/staged/<run>``.

    It is the mutation hook of its own :class:`~wikimem.store.MemoryStore`, whose door is an
    :class:`~wikimem.store.OverlayDoor`: a unit reads the branch's files from git and keeps what it writes in
    memory; :meth:`committed` makes the commit and moves the branch.
    """

    def __init__(self, staging: Staging, run: str):
        self.staging = staging
        self.run = validate_staged_run(run)
        self.git = staging.git
        scratch = staging.vstore.root / ".git" / SCRATCH
        self.door = OverlayDoor(scratch, lambda _p: None, lambda _f: [])
        self.store = MemoryStore(scratch, hook=self, door=self.door)
        self.diary = self.store.diary
        self.writer = self.store.writer
        # One unit per round: each commit moves the branch by compare-and-swap from the tip read under the lock.
        self.writer.group_commit = False
        self._start: bytes | None = None  # the commit a unit starts from: the tip, or main's head
        self._tip: bytes | None = None  # the branch's tip when the unit started (None: its first write)

    def __repr__(self) -> str:
        return f"StagedBranch({self.staging.vstore.root.name!r}, {self.run!r})"

    # -- the seam (MutationHook) ------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The owner's lock (as every write of the folder takes it), the branch's tip read under it."""
        vs = self.staging.vstore
        with vs.writer.lock, vs.locked():
            self.staging.settle()
            self._tip = self.staging.tip_bytes(self.run)
            if self._tip is None:
                self.staging.check_room()
            self._start = self._tip if self._tip is not None else self.git.head()
            tree = self.git.commit_tree(self._start)
            self.door.rebase(lambda p: self.git.blob_at(tree, p),
                             lambda f: [p.rsplit("/", 1)[1] for p in self.git.files_under(tree, f)])
            self.store.invalidate()
            try:
                yield
            finally:
                try:
                    os.unlink(self.store.journal.path)  # the records are in the commit message
                except FileNotFoundError:
                    pass

    def writing(self, unit: Unit, paths: tuple[str, ...]) -> None:
        return None  # nothing reaches the folder before the commit: a crash leaves nothing to undo

    def committed(self, unit: Unit) -> str:
        """Commit the unit on the branch (after the remote took it, when the folder replicates); its id."""
        assert self._start is not None
        paths = list(dict.fromkeys(p for m in unit.mutations for p in m.paths))
        records = [m.record for m in unit.mutations if m.record]
        contents = {p: unit.staged[p] for p in paths}  # (the unit's files land after its commit is made)
        base = self.staging.base_of(self._tip) if self._tip is not None else self._start
        info = replace(unit.info, run=self.run, trailers=unit.info.trailers + (("Base", base.decode()),))
        tree = self.git.write_tree(self.git.commit_tree(self._start), contents)
        cid = self.git.make_commit(tree, [self._start], build_message(records, info), info.actor)
        self.staging.move(self.run, self._tip, cid, base)
        return cid.decode()

    # -- the branch (a Branch of target.py: the write verbs are its Target's) -------------------------------

    changed = "the staged run changed: its tip is"

    @property
    def where(self) -> str:
        return f" on staged run {self.run}"

    def unit_info(self, info: UnitInfo) -> UnitInfo:
        return replace(info, run=self.run)

    def head(self) -> str:
        """The run's view: its tip, or ``main``'s head before its first write."""
        tip = self.staging.tip_bytes(self.run)
        return (tip or self.git.head() or b"").decode()

    def round_head(self) -> str:
        return self.head()  # (one unit per round: the tip read under the lock)

    def replay(self, key: str, kind: str | None = None, request: str | None = None, *,
               pending: bool = False) -> dict | None:
        """The result of a keyed request this branch already holds (its commit's trailers name the key)."""
        from wikimem.errors import IdempotencyKeyReused

        tip = self.staging.tip_bytes(self.run)
        if tip is None:
            return None
        for cid in self.staging.commits(tip):
            _, trailers, _ = parse_trailers(self.git.commit(cid).message.decode("utf-8", "replace"))
            if trailers.get("Idempotency-Key") != key:
                continue
            if request and trailers.get("Request") and trailers["Request"] != request:
                raise IdempotencyKeyReused(f"Idempotency-Key {key!r} was already used for another request (its "
                                           "kind, target or body differ); use a new key for a new request")
            out = dict(rebuild_result(self.git, cid.decode(), kind))
            out.setdefault("commit", cid.decode())
            return out
        return None


class Staging:
    """The staged runs of one versioned folder: their writers, review, approval, discard and the read overlay.

    ``on_change`` listeners are told the run whose branch moved or went (the host's staged-run index).
    """

    def __init__(self, vstore: VersionedStore):
        self.vstore = vstore
        self.git = vstore.git
        self.on_change: list[Callable[[str], None]] = []

    def __repr__(self) -> str:
        return f"Staging({str(self.vstore.root)!r})"

    # -- reading ---------------------------------------------------------------

    def tips(self) -> dict[str, str]:
        """``{run: tip}`` of every staged branch here."""
        return {run: sha.decode() for run, sha in staged_tips(self.git.repo).items()}

    def check_room(self) -> None:
        """Refuse a new staged run when the owner holds :data:`~wikimem.limits.MAX_STAGED_RUNS` already."""
        from wikimem import limits
        from wikimem.errors import QuotaExceeded

        held = len(staged_tips(self.git.repo))
        if held >= limits.MAX_STAGED_RUNS:
            raise QuotaExceeded(f"this owner has {held} runs on probation (at most {limits.MAX_STAGED_RUNS}): "
                                "approve or discard some before staging another")

    def tip_bytes(self, run: str) -> bytes | None:
        return staged_tips(self.git.repo).get(validate_staged_run(run))

    def tip(self, run: str) -> str:
        found = self.tip_bytes(run)
        if found is None:
            raise NotFound(f"no staged run {run!r} (approved, discarded, or never staged)")
        return found.decode()

    def base_of(self, tip: bytes) -> bytes:
        """The commit of ``main`` a staged branch started from (its commits' ``Wikimem-Base``)."""
        message = self.git.commit(tip).message.decode("utf-8", "replace")
        found = trailer_values(message, "Base")
        if found and len(found[0]) == 40:
            return found[0].encode("ascii")
        parents = self.git.commit(tip).parents
        return parents[0] if parents else tip

    def commits(self, tip: bytes) -> list[bytes]:
        """The branch's own commits, newest first (from ``tip`` back to its base, excluded)."""
        base = self.base_of(tip)
        out: list[bytes] = []
        cid: bytes | None = tip
        while cid is not None and cid != base and len(out) < 100_000:
            out.append(cid)
            parents = self.git.commit(cid).parents
            cid = parents[0] if parents else None
        return out

    def info(self, run: str, tip: str | None = None) -> StagedRun:
        """What a staged run is: tip, base, actor, times, commits, changes."""
        tip_b = (tip or self.tip(run)).encode("ascii")
        base = self.base_of(tip_b)
        commits = self.commits(tip_b)
        first = self.git.commit(commits[-1]) if commits else self.git.commit(tip_b)
        newest = self.git.commit(tip_b)
        _, trailers, _ = parse_trailers(first.message.decode("utf-8", "replace"))
        changes = self._changes(base, tip_b)
        return StagedRun(run, tip_b.decode(), base.decode(), trailers.get("Actor"), trailers.get("Source-Conv"),
                         iso(first.commit_time), iso(newest.commit_time), len(commits), len(changes))

    def runs(self) -> list[StagedRun]:
        """Every staged run here, oldest first."""
        found = [self.info(run, tip) for run, tip in self.tips().items()]
        return sorted(found, key=lambda r: (r.first, r.run))

    def _changes(self, base: bytes, tip: bytes) -> list[ItemChange]:
        ta, tb = self.git.commit_tree(base), self.git.commit_tree(tip)
        out: list[ItemChange] = []
        for path in sorted(self.git.changed_paths(ta, tb)):
            out.extend(path_changes(path, self.git.blob_at(ta, path), self.git.blob_at(tb, path)))
        return out

    def review(self, run: str, *, force: bool = False) -> StagedReview:
        """The run against current ``main``: what it changed, what approving would change now, its conflicts."""
        info = self.info(run)
        tip, base = info.tip.encode(), info.base.encode()
        plan = self._plan(base, tip, force, State(self.vstore.door.read), ())[0]
        return StagedReview(info, self._changes(base, tip), plan.changes, plan.conflicts)

    def _plan(self, base: bytes, tip: bytes, force: bool, state: State,
              edits: Sequence[dict]) -> tuple[Plan, dict]:
        conflicts: list[dict] = []
        plan_apply(self.git, state, self.git.commit_tree(base), self.git.commit_tree(tip), conflicts, force,
                   tip.decode()[:12])
        apply_edits(state, edits)
        return finish(state, tip.decode(), conflicts)

    # -- the branch's moves ---------------------------------------------------------

    def branch(self, run: str, layer: str | None = None) -> Target:
        """The write API of staged run ``run`` (``InvalidName`` when it cannot name a branch), in a layer of the
        folder (None: the shared one)."""
        return Target(StagedBranch(self, run), layer)

    def move(self, run: str, old: bytes | None, new: bytes, base: bytes) -> None:
        """Move the run's branch from ``old`` to ``new`` (under the owner lock): on the remote first when the folder
        replicates (compare-and-swap from what the remote is known to hold), then here."""
        replica = self.vstore.replica
        if replica is not None:
            if replica.mode == "async":
                replica.push_pending(self.git)  # the base must be on the remote before a branch on it
            known = staged_tips(self.git.repo, TRACKED).get(run)
            try:
                replica.remote.push(self.git.repo, new.decode(), known.decode() if known else None,
                                    name=staged_ref(run), have=base.decode())
            except RemoteMoved:
                replica.fetch(self.git)  # (its staged refs too: the next attempt starts from them)
                raise
        name = staged_ref(run)
        ok = (self.git.repo.refs.add_if_new(name, oid(new)) if old is None
              else self.git.repo.refs.set_if_equals(name, oid(old), oid(new)))
        if not ok and self.tip_bytes(run) != new:  # (a fetch may have moved it to this very commit already)
            raise RuntimeError(f"{self.vstore.root}: staged branch {run} moved while the owner lock was held")
        self._tell(run)

    def _tell(self, run: str) -> None:
        for listener in self.on_change:
            try:
                listener(run)
            except Exception:  # derived indexes catch up later
                log.exception("staged-run listener failed for %s run %s", self.vstore.root, run)

    def _drop(self, run: str, tip: str) -> None:
        """Remove a settled run's branch here and on the remote (best effort there: :meth:`settle` retries)."""
        replica = self.vstore.replica
        if replica is not None:
            known = staged_tips(self.git.repo, TRACKED).get(run)
            if known is not None:
                try:
                    replica.remote.push(self.git.repo, None, known.decode(), name=staged_ref(run))
                except RemoteError as exc:
                    log.warning("%s: the remote keeps staged run %s for now: %s", self.vstore.root.name, run, exc)
        self.git.repo.refs.remove_if_equals(staged_ref(run), oid(tip.encode("ascii")))
        self._tell(run)

    def settled(self, run: str) -> dict[str, str] | None:
        """The trailers of the approve or discard commit on ``main`` that settled ``run``, or None."""
        for cid in self.vstore.db.run_commits(run):
            obj = self.git.commit(cid.encode())
            _, trailers, _ = parse_trailers(obj.message.decode("utf-8", "replace"))
            if trailers.get("Action") in SETTLING_ACTIONS:
                return {**trailers, "commit": cid, "time": iso(obj.commit_time)}
        return None

    def settle(self) -> None:
        """Under the owner lock: branches of runs already settled on ``main`` go (here, and on the remote when it
        still holds them), and ref locks a killed writer left are cleared."""
        folder = self.vstore.root / ".git" / STAGED.decode()
        try:
            for lock in folder.glob("*.lock"):
                lock.unlink(missing_ok=True)
        except OSError:
            pass
        tracked = staged_tips(self.git.repo, TRACKED)
        local = staged_tips(self.git.repo)
        for run in set(local) | set(tracked):
            done = self.settled(run)
            if done is None:
                continue
            tip = (local.get(run) or tracked[run]).decode()
            if done.get("Staged-Tip") not in (None, tip) and run in local:
                continue  # written again after it was settled: a new probation of the same run id
            if run in local:
                self.git.repo.refs.remove_if_equals(staged_ref(run), oid(local[run]))
                self._tell(run)
            if run in tracked and self.vstore.replica is not None:
                try:
                    self.vstore.replica.remote.push(self.git.repo, None, tracked[run].decode(), name=staged_ref(run))
                except RemoteError:
                    pass
            elif run in tracked:
                self.git.repo.refs.remove_if_equals(tracked_ref(run), None)

    # -- approve, discard ----------------------------------------------------------

    def approve(self, run: str, *, force: bool = False, edits: Sequence[dict] = (),
                ctx: WriteContext | None = None) -> Committed:
        """Apply the run onto current ``main`` item by item as one commit, then remove its branch.

        Items ``main`` changed since the run started are conflicts: skipped (listed in the result and as
        ``Wikimem-Skipped``) unless ``force``. ``edits`` (``{"file", "name", "content"}`` for an item,
        ``{"date", "time", "before", "content"}`` for a diary entry) change what is approved, in the same
        commit. ``ctx.actor`` is the approver; the commit's actor is the run's. ``value`` is a dict:
        ``changes``, ``conflicts``, ``skipped``.
        """
        ctx = ctx if ctx is not None else WriteContext()
        approver = ctx.actor or "operator"
        info = self.info(run)
        tip, base = info.tip.encode(), info.base.encode()
        key = ctx.idempotency_key or f"approve:{run}:{info.tip}"
        edits = own_edits(check_edits(edits), self._changes(base, tip), run)
        wctx = WriteContext(run=run, actor=info.actor or approver, source_conv=info.source_conv,
                            idempotency_key=key).bound("approve", run, info.tip, force, list(edits), approver)
        vs = self.vstore
        with vs.batch(wctx, action="approve", message=f"approve staged run {run}", kind=f"approve {run}") as b:
            if b.replay is not None:
                value = {k: v for k, v in b.replay.items() if k != "commit"}
            else:
                if self.tip_bytes(run) != tip:
                    raise PreconditionFailed(f"staged run {run} moved while it was being approved: review it again",
                                             current=(self.tip_bytes(run) or b"").decode())
                plan, writes = self._plan(base, tip, force, State(vs.door.read), edits)
                skipped = [] if force else plan.conflicts
                trailers = [("Approved-By", approver), ("Staged-Tip", info.tip), ("Base", info.base)]
                trailers += [("Skipped", where(c)) for c in skipped[:MAX_LISTED]]
                trailers += [("Edited", where(e)) for e in edits[:MAX_LISTED]]
                b.unit.info = replace(b.unit.info, undo_items=tuple(_line(c) for c in plan.changes),
                                      trailers=tuple(trailers))
                stage_writes(vs.writer, writes, "approve", f"approve staged run {run}", always=True)
                value = {"changes": [c.to_dict() for c in plan.changes], "conflicts": plan.conflicts,
                         "skipped": len(skipped), "forced": len(plan.conflicts) if force else 0,
                         "approved_by": approver, "tip": info.tip}
                b.result = value
        self._drop(run, info.tip)
        return Committed(value, b.commit, b.replay is not None)

    def discard(self, run: str, *, ctx: WriteContext | None = None, reason: str = "discarded") -> Committed:
        """Settle the run without applying it: one commit on ``main`` that changes no file, naming the run, what it
        had changed and who discarded it (``reason``: ``discarded`` or ``expired``); then its branch goes."""
        ctx = ctx if ctx is not None else WriteContext()
        operator = ctx.actor or "operator"
        info = self.info(run)
        key = ctx.idempotency_key or f"discard:{run}:{info.tip}"
        changes = self._changes(info.base.encode(), info.tip.encode())
        wctx = WriteContext(run=run, actor=operator, idempotency_key=key).bound("discard", run, info.tip, reason)
        vs = self.vstore
        with vs.batch(wctx, action="discard", message=f"{'expire' if reason == 'expired' else 'discard'} staged run "
                      f"{run}: {len(changes)} change(s) not applied", kind=f"discard {run}") as b:
            if b.replay is not None:
                value = {k: v for k, v in b.replay.items() if k != "commit"}
            else:
                if self.tip_bytes(run) != info.tip.encode():
                    raise PreconditionFailed(f"staged run {run} moved while it was being discarded: review it again",
                                             current=(self.tip_bytes(run) or b"").decode())
                b.unit.info = replace(b.unit.info, undo_items=tuple(_line(c) for c in changes), trailers=(
                    ("Staged-Tip", info.tip), ("Staged-Actor", info.actor or ""), ("Reason", reason)))
                vs.writer.apply({}, {"ts": utc_now(), "action": "discard", "detail": f"{reason} staged run {run}"})
                value = {"discarded": len(changes), "reason": reason, "tip": info.tip}
                b.result = value
        keep_discarded(self.git.repo, run, info.tip.encode("ascii"))  # (before the branch goes: always reachable)
        self._drop(run, info.tip)
        return Committed(value, b.commit, b.replay is not None)

    def discarded(self) -> dict[str, str]:
        """``{run: tip}`` of the discarded runs whose commits are kept here."""
        return {run: tip.decode() for run, tip in discarded_tips(self.git.repo).items()}

    def restore_discarded(self, run: str) -> str:
        """Stage the commits of the discarded run ``run`` again, as the new run ``<run>-restored`` (``-2``, ``-3``…
        when taken; the original id is settled on ``main``); the new run id. :class:`NotFound` when none is kept."""
        tip = discarded_tips(self.git.repo).get(validate_staged_run(run))
        if tip is None:
            raise NotFound(f"no discarded run {run!r} kept here (never discarded, restored, or dropped after its days)")
        self.check_room()
        vs = self.vstore
        with vs.writer.lock, vs.locked():
            taken = set(self.tips())
            new = next(n for n in (f"{run[:110]}-restored", *(f"{run[:110]}-restored-{k}" for k in range(2, 1000)))
                       if n not in taken)
            self.move(new, None, tip, self.base_of(tip))
            drop_discarded(self.git.repo, run, tip)
        return new

    def sweep_discarded(self, older_than: float, now: float) -> list[str]:
        """Drop the discarded runs kept longer than ``older_than`` seconds (their commits become unreachable); the
        runs dropped."""
        tips = discarded_tips(self.git.repo)
        gone = []
        for run, age in discarded_ages(self.vstore.root, now).items():
            if age > older_than and run in tips and drop_discarded(self.git.repo, run, tips[run]):
                gone.append(run)
        return gone

    # -- reading with the staged runs ----------------------------------------------------------

    def overlay_key(self) -> tuple:
        """What :meth:`overlay` is built from: main's head and every staged tip (a cache's key)."""
        return (self.vstore.head(), tuple(sorted(self.tips().items())))

    def overlay(self) -> Overlay:
        """The approved memory with every staged run applied over it (oldest run first; a staged version wins
        over main's), read from the object store: nothing on disk changes."""
        key = self.overlay_key()
        head = key[0].encode()
        tree = self.git.commit_tree(head)

        def read(path: str) -> bytes | None:
            return self.git.blob_at(tree, path)

        state = State(read)
        for info in self.runs():
            plan_apply(self.git, state, self.git.commit_tree(info.base.encode()),
                       self.git.commit_tree(info.tip.encode()), [], True, info.tip[:12])
        changed = state.changed()
        staged = frozenset(item_key(c) for p, (old, new) in changed.items() for c in path_changes(p, old, new)
                           if c.status != "removed")
        revision = f"{key[0]}+staged:{abs(hash(key[1])):x}"
        return Overlay(key, Snapshot(self.git, head, {p: new for p, (_old, new) in changed.items()},
                                     revision=revision), staged)
