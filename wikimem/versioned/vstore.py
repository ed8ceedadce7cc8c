"""VersionedStore: a memory folder whose every mutation is one git commit.

The versioned store *is* the hook of the library's mutation seam
(:mod:`wikimem.store.writer`): its :meth:`~VersionedStore.locked` is the same
``flock`` on ``<root>/.wikimem.lock`` the plain store takes (so plain and
versioned writers of one folder exclude each other), and its
:meth:`~VersionedStore.committed` turns the unit's files into blob → tree →
commit objects and moves ``main`` by compare-and-swap, all inside the
critical section of the write; it returns the commit id, which the writer
keeps on the unit.

On entering the lock the hook first commits hand edits (files that differ
from ``HEAD``) as an ``external-edit`` commit, so a write never sweeps
someone's editor change into its own commit.

Durability: a round of units (one or more commits, group commit in
:mod:`wikimem.store.writer`) is recorded in the intent log
(:mod:`wikimem.versioned.intent`) with one ``fdatasync`` before anything of
it lands; objects, files, journal, branch and the derived indexes are then
written without syncs of their own, and the log rebuilds them after a crash
or a power loss (see ARCHITECTURE.md, "Durability").

Every write takes one :class:`~wikimem.context.WriteContext` (who writes,
under which preconditions); undo (revert, roll back, restore) is the object
the store holds as :attr:`VersionedStore.undo` (:mod:`wikimem.versioned.history.undo`).
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from dulwich.objects import Blob

from wikimem.context import WriteContext
from wikimem.errors import IdempotencyKeyReused, NotFound
from wikimem.format import (
    MEMORY_DIRS,
    SETTINGS_PATH,
    layer_dirs,
    layer_of,
    memory_path,
    read_instant,
    utc_now,
)
from wikimem.fsio import Stamp, sweep_temp_files, sync_filesystem
from wikimem.locking import FileLock
from wikimem.store import GITIGNORE_NAME, LOCK_NAME, Landing, MemoryStore, Unit, UnitInfo

from .forgetting import Forgetting, Forgotten, generation
from .history import (
    CommitDiff,
    HistoryDB,
    HistoryEntry,
    HistoryPage,
    ItemChange,
    Snapshot,
    Undo,
    iso,
    path_changes,
    rebuild_result,
    unified_patch,
)
from .intent import ABORTED, APPLIED, UNDONE, IntentLog, Record, Step
from .messages import build_message, layer_trailers, printable
from .objects import GitRepo, loose_bytes
from .outcomes import Committed, Outcome
from .recovery import Recovery
from .replication import (
    RemoteMoved,
    Replica,
    fast_forward,
    is_ancestor,
    local_only,
    merge_base,
    replay,
    switch_to,
    tracking,
)
from .target import Target, request_of

__all__ = ["VersionedStore", "PACK_EVERY"]

log = logging.getLogger(__name__)

# Pack loose objects after this many commits (auto_pack=True).
PACK_EVERY = 1000
_HEX_RE = re.compile(r"[0-9a-fA-F]{4,40}")


def _touches(records: list[dict]) -> list[tuple] | None:
    """Touches of a unit from its journal records, when every record names its item (else None: diff it).

    A wiki item written twice in one unit is one touch; every diary append is
    one (two entries of the same minute are two changes).
    """
    out: list[tuple] = []
    for rec in records:
        action, layer = rec.get("action"), rec.get("layer")
        if action in ("add", "update", "remove") and rec.get("file") and rec.get("item"):
            touch = ("wiki", rec["file"], rec["item"], None, None, layer)
            if touch not in out:
                out.append(touch)
        elif action == "diary" and rec.get("date") and rec.get("time"):
            out.append(("diary", None, None, rec["date"], rec["time"], layer, rec.get("channel")))
        else:
            return None
    return out


class VersionedStore:
    """One memory folder, versioned: ``store`` and ``diary`` as in the library, every write a commit.

    ``undo`` holds revert, rollback and restore (and their previews).
    """

    def __init__(self, root: Path | str, *, auto_pack: bool = True, pack_every: int = PACK_EVERY):
        self.root = Path(root)
        self.auto_pack = auto_pack
        self.pack_every = pack_every
        self.root.mkdir(parents=True, exist_ok=True)
        # make_parent=False: a writer that waited while the owner was deleted must not re-create its folder.
        self._lock = FileLock(self.root / LOCK_NAME, make_parent=False)
        if not (self.root / ".git" / "HEAD").exists():
            with self._lock.hold():
                if not (self.root / ".git" / "HEAD").exists():
                    GitRepo.init(self.root)
        self.git = GitRepo(self.root)
        self.db = HistoryDB(self.git)
        self.intent = IntentLog(self.root / ".git")
        # The round in progress (under the owner lock): the commits built and not landed yet, and the tip
        # the next one builds on.
        self._steps: list[Step] = []
        self._objects: dict[str, bytes] = {}  # their git objects (sha -> loose bytes), not written yet
        self._tip: bytes | None = None
        self.store = MemoryStore(self.root, hook=self)
        self.diary = self.store.diary
        self.writer = self.store.writer
        self.door = self.writer.door  # every file of the folder is read and written through it
        self._stat_cache: dict[str, tuple[Stamp, bytes]] = {}
        self._files_at: tuple[bytes, dict[str, bytes]] | None = None  # (a tree, its memory files), see _memory_files
        self._swept = False  # temp files swept by this process (see _settle)
        # Called with the new head whenever ``main`` moves — a unit's commit, a killed writer's commit
        # finished by recovery, a fast-forward or replay from the remote — still inside the owner lock,
        # once the history index holds it (derived indexes above this folder, background replication).
        self.on_commit: list[Callable[[str], None]] = []
        # Set by the host when the folder replicates to a git remote; None: a local folder only.
        self.replica: Replica | None = None
        # Seconds an idempotency key replays its write (the host's retention); None: for ever.
        self.idempotency_ttl: float | None = None
        self.main = Target(self)  # the write verbs onto main
        self.undo = Undo(self.git, self.db, self.writer, resolve=self.resolve, batch=self.batch)
        self.forgetting = Forgetting(self.git, self.db, self.intent, self.root, self.store.journal, self.door,
                                     replica=lambda: self.replica)
        # what a killed writer or a power loss left (see recover())
        self.recovery = Recovery(self.git, self.intent, self.db, self.door, self.store.journal,
                                 finish=self.finish_steps, tell=self.tell, reset=self._reset_caches)

    def __repr__(self) -> str:
        return f"VersionedStore({str(self.root)!r})"

    def close(self) -> None:
        self.db.close()
        self.intent.close()
        self.git.close()

    # -- the seam (MutationHook) ------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The owner's inter-process lock.

        On entry: a deleted owner is refused (:class:`NotFound`), what a killed
        writer left is reconciled (git lock files, its write in flight, its
        temp files) and hand edits are committed.
        """
        try:
            with self._lock.hold():
                if not (self.root / ".git").is_dir():
                    raise NotFound(f"{self.root.name}: the memory folder was deleted")
                self._settle()
                self._commit_external(actor=None)
                yield
        except FileNotFoundError:
            if (self.root / ".git").is_dir():
                raise
            raise NotFound(f"{self.root.name}: the memory folder was deleted") from None

    def _settle(self) -> None:
        """Under the lock: what a killed writer left (git locks, its write in flight, temp files), then
        what the remote is known to hold (see :meth:`_reconcile`). A commit recovery finishes, a
        fast-forward or a replay is told to the :attr:`on_commit` listeners like a write."""
        self.git.clear_stale_locks()
        # Temp files are debris of a killed writer: one of a round leaves its record pending (recovered
        # here), any other is found by the first settle of each process; not a scan of every folder
        # on every write (the diary folder holds a file a day).
        if self.recover() is not None or not self._swept:
            sweep_temp_files(self.root)
            self._swept = True
        if self.replica is not None:
            before = self.git.head()
            self._reconcile(self.replica)
            head = self.git.head()
            if head is not None and head != before:
                self.tell(head.decode())

    def tell(self, cid: str) -> None:
        """Tell the :attr:`on_commit` listeners that ``main`` is at ``cid`` (a failing one is logged)."""
        for listener in self.on_commit:
            try:
                listener(cid)
            except Exception:  # the commit stands; what listens is derived and catches up later
                log.exception("commit listener failed for %s at %s", self.root, cid)

    def _reconcile(self, replica: Replica) -> None:
        """Bring ``main`` and the files to what the remote is known to hold (the tracking ref).

        Behind it: fast-forward (also after a sync push whose branch move a
        crash prevented: the pushed commit is this host's write, kept). Ahead
        of it: nothing to do here (the next push sends the rest). Both moved:
        replay the local commits on top of it, item by item; in sync mode
        that result is pushed before the branch moves to it.
        """
        head, known = self.git.head(), tracking(self.git.repo)
        if known is None or head == known or not self.git.has(known):
            return
        if self.forgetting.follow(head, known, push=replica.push if replica.mode == "sync" else None):
            pass  # the remote's history was rewritten (a forget elsewhere): followed, the old one pruned
        elif head is None or is_ancestor(self.git, head, known):
            fast_forward(self.git, self.root, known)
        elif is_ancestor(self.git, known, head):
            return
        else:
            base = merge_base(self.git, head, known)
            mine = local_only(self.git, head, base)
            tip = replay(self.git, mine, known)
            if replica.mode == "sync" and tip != known:
                replica.push(self.git, tip)
            switch_to(self.git, self.root, tip)
            self.db.forget([c.decode() for c in mine])  # (syncs the index first)
        self.store.invalidate()
        self._stat_cache.clear()
        self.db.sync()

    @contextmanager
    def held(self) -> Iterator[None]:
        """The owner lock alone: nothing settled, nothing committed (removing the folder from under it)."""
        with self.writer.lock, self._lock.hold():
            yield

    def catch_up(self, fetch: bool = True) -> str:
        """Fetch the remote (when ``fetch``) and bring this folder up to it, under the owner lock; the head."""
        if self.replica is None:
            return self.head()
        if fetch:
            self.replica.fetch(self.git)
        with self.writer.lock, self._lock.hold():
            self._settle()
        return self.head()

    def relation(self, commit: str) -> str:
        """Where ``commit`` stands to ``main``: ``"head"``, ``"ancestor"`` (main went on from it), ``"descendant"``
        (main is behind it: another copy went further), ``"diverged"``, or ``"unknown"`` (no such commit here)."""
        head = self.git.head()
        try:
            sha = commit.encode("ascii")
        except UnicodeEncodeError:
            return "unknown"
        if head is not None and sha == head:
            return "head"
        if not _HEX_RE.fullmatch(commit) or len(commit) != 40 or not self.git.has(sha):
            return "unknown"
        if head is None or is_ancestor(self.git, head, sha):
            return "descendant"
        return "ancestor" if is_ancestor(self.git, sha, head) else "diverged"

    def replica_known(self) -> str | None:
        """The commit this folder knows its remote to hold (its tracking ref), or None."""
        known = tracking(self.git.repo)
        return known.decode() if known else None

    def replication_lag(self) -> int:
        """Commits on ``main`` the remote is not known to hold (0 without a remote)."""
        return 0 if self.replica is None else self.replica.lag(self.git)

    def push_pending(self) -> bool:
        """Push what the remote lacks (async, or data from before the remote); when it moved, catch up first."""
        if self.replica is None:
            return False
        try:
            return self.replica.push_pending(self.git)
        except RemoteMoved:  # another host wrote: replay ours on top of it (fetched already), then push
            with self.writer.lock, self._lock.hold():
                self._settle()
            return self.replica.push_pending(self.git)

    def clear(self, ctx: WriteContext | None = None) -> Committed:
        """Remove every memory file as one ``delete-owner`` commit (what a replicated owner's deletion leaves
        on its remote, so that no host brings the owner back from there)."""
        from wikimem.format import utc_now

        with self.batch(ctx, action="delete-owner", message="delete owner: every memory file removed") as b:
            for folder in MEMORY_DIRS:
                for name in self.door.names(folder):
                    path = f"{folder}/{name}"
                    self.writer.apply({path: (self.door.read(path), None)},
                                      {"ts": utc_now(), "action": "delete-owner", "path": path})
            b.result = {}
        return Committed(None, b.commit)

    def generation(self) -> bytes | None:
        """The history's generation: changes whenever the history is rewritten (a forget, here or followed)."""
        return generation(self.root)

    def forget(self, kind: str, *, actor: str = "operator", key: str | None = None,
               before: Callable[[set[str], set[str]], None] | None = None, **where) -> Forgotten:
        """Forget one wiki item (``file``, ``name``) or diary entry (``date``, ``time_``, ``index``) with its
        history, under the owner lock (see :mod:`wikimem.versioned.forgetting.forget`). With a remote, a remote that
        moved raises :class:`RemoteMoved` (nothing changed; the folder caught up: call again)."""
        with self.writer.lock, self._lock.hold():
            if not (self.root / ".git").is_dir():
                raise NotFound(f"{self.root.name}: the memory folder was deleted")
            self._settle()
            self._commit_external(actor=None)
            target = self.forgetting.resolve(kind, **where)
            try:
                return self.forgetting.run(target, actor=actor, key=key, before=before)
            finally:
                if self.intent.in_flight() is not None:  # cut short: its files put back, or its commit finished
                    try:
                        self.recover()
                    except Exception:  # the next writer reconciles it; the forget's own error is the one to report
                        log.exception("%s: reconciling a cut-short forget is left to the next writer", self.root)
                self.store.invalidate()
                self._stat_cache.clear()

    def head_action(self) -> str | None:
        """The ``Wikimem-Action`` of the newest commit (``delete-owner`` marks an owner deleted everywhere)."""
        head = self.git.head()
        if head is None:
            return None
        from .messages import parse_trailers

        return parse_trailers(self.git.commit(head).message.decode("utf-8", "replace"))[1].get("Action")

    def writing(self, unit: Unit, paths: tuple[str, ...]) -> None:
        """Nothing to record yet: a unit's files stay staged until its round lands (see :meth:`land`)."""
        return None

    def committed(self, unit: Unit) -> str:
        """Build the unit's commit on the round's tip (objects written, nothing synced, the branch unmoved)."""
        paths = list(dict.fromkeys(p for m in unit.mutations for p in m.paths))
        records = [m.record for m in unit.mutations if m.record]
        info = unit.info
        key = info.idempotency_key
        result = {"key": key, "payload": unit.payload, "request": info.request} if key else None
        if not self._steps:
            self._tip = self.git.head()
        step, objects = self._step(self._tip, {p: unit.staged[p] for p in paths}, build_message(records, info),
                                   info.actor, touches=_touches(records), result=result)
        self._steps.append(step)
        self._objects.update(objects)
        self._tip = step.commit.encode()
        return step.commit

    def land(self, landing: Landing) -> None:
        """Land a round: its record in the intent log (the one sync), then objects, files, journal, branch."""
        steps, objects = self._steps, self._objects
        self._steps, self._objects, self._tip = [], {}, None
        self._land(steps, objects, landing)

    def _step(self, base: bytes | None, contents: dict[str, bytes | None], message: str, actor: str | None,
              touches: list[tuple] | None = None, result: dict | None = None,
              external: bool = False) -> tuple[Step, dict[str, bytes]]:
        """One commit built on ``base``, in memory: the step, and its new objects (sha -> loose bytes; pending
        in the repository, readable, not written)."""
        built: list = []
        try:
            tree = self.git.write_tree(self.git.commit_tree(base), contents, out=built)
            cid = self.git.make_commit(tree, [base] if base else [], message, actor, out=built)
            objects = {obj.id.decode("ascii"): loose_bytes(obj) for obj in built}
        except BaseException:
            self.git.forget(obj.id for obj in built)
            raise
        blobs = {p: None if data is None else Blob.from_string(data).id.decode("ascii") for p, data in contents.items()}
        step = Step(cid.decode(), base.decode() if base else None, blobs, result,
                    [list(t) for t in touches] if touches is not None else None, external)
        return step, objects

    def _land(self, steps: list[Step], objects: dict[str, bytes], landing: Landing | None) -> bool:
        """Make ``steps`` the branch: ``True`` when the steps after the branch move completed too.

        The order is what recovery relies on: the intent record first
        (durable: from here on the round can be redone, and no object, file or
        ref of it reaches the disk before it), then the git objects, the
        remote (sync replication: pushed before the branch moves), the files
        and the journal (``landing``; None for a hand edit, whose files are on
        disk already), the branch (CAS). A failure up to the branch move
        aborts the record (synced) and puts the files back: nothing was
        committed. After it the commit stands: a failure of the derived steps
        is logged and left to the next writer.
        """
        base = steps[0].parent.encode() if steps[0].parent else None
        tip = steps[-1].commit.encode()
        journal = (landing.journal_size, landing.records) if landing is not None else (None, [])
        try:
            record = self.intent.append(steps, objects, *journal)
        except BaseException:
            self.git.forget(objects)
            raise
        try:
            self.git.write_objects(objects)
            if self.replica is not None:  # sync: on the remote before the branch moves (or raise: nothing moves)
                self.replica.before_move(self.git, base, tip)
            if landing is not None:
                landing.write(durable=False)
            if not self.git.move_ref(base, tip, durable=False):
                raise RuntimeError(f"{self.root}: branch moved while the owner lock was held")
        except BaseException:
            self.git.forget(objects)
            self._abort(record, landing)
            raise
        try:
            self.finish_steps(steps)
            done = True
        except Exception:
            log.exception("%s: commit %s made; finishing it is left to the next writer", self.root, steps[-1].commit)
            done = False
        for step in steps:
            self.tell(step.commit)
        if done:  # after the listeners: a writer killed before they ran leaves the record, and recovery tells them
            self.intent.mark(record, APPLIED)
        if self.auto_pack and self._since_pack(done) >= self.pack_every:
            try:
                self._pack_locked()
            except Exception:  # packing is housekeeping: the write is done
                log.exception("packing %s failed", self.root)
        return done

    def _since_pack(self, finished: bool) -> int:
        """Commits since the last pack: as the round's own history transaction counted them (no query), else
        asked of the history index."""
        counted, self.db.counted = self.db.counted, None
        return counted if finished and counted is not None else self.db.since_pack()

    def _abort(self, record: Record, landing: Landing | None) -> None:
        """A round failed before its branch move: the record says so (synced), then its files go back."""
        try:
            self.intent.mark(record, ABORTED, durable=True)
            if landing is not None:
                landing.restore(durable=False)
            self.intent.mark(record, UNDONE)
        except Exception:  # the next writer reconciles the record (it is aborted or pending)
            log.exception("%s: putting back a failed write is left to the next writer", self.root)
        self.store.invalidate()

    def _commit_files(self, contents: dict[str, bytes | None], message: str, actor: str | None,
                      touches: list[tuple] | None = None, result: dict | None = None) -> tuple[str, bool]:
        """Commit files already on disk (hand edits): ``(commit id, whether the steps after the branch move
        completed)``."""
        step, objects = self._step(self.git.head(), contents, message, actor, touches, result, external=True)
        return step.commit, self._land([step], objects, None)

    def finish_steps(self, steps: list[Step]) -> None:
        """The steps after the branch moved: ``.git/index``, the history index and the replayable results."""
        shas: dict[str, bytes | None] = {}
        for step in steps:
            for p, hexsha in step.blobs.items():
                shas[p] = None if hexsha is None else hexsha.encode("ascii")
        self.git.update_index(shas, durable=False)
        for p, blob in shas.items():
            self._remember(p, blob)
        self._advance_files(steps)
        hints = {s.commit.encode(): [tuple(t) for t in s.touches] for s in steps if s.touches is not None}
        results = {s.commit: (s.result["key"], s.result.get("payload"), s.result.get("request"))
                   for s in steps if s.result}
        base = steps[0].parent.encode() if steps and steps[0].parent else None
        self.db.sync(hints or None, results=results or None, chain=(base, [s.commit.encode() for s in steps]))

    # -- recovery ----------------------------------------------------------------

    def recover(self) -> str | None:
        """Reconcile what the intent log holds after a killed writer or a power loss (call under the owner lock).

        ``"finished"``: the last round's branch had moved (the steps after it
        are completed); ``"undone"``: it had not (its files are put back as the
        branch has them, the journal cut back); ``"redone"``: the machine
        restarted, and every round since the last checkpoint was redone from
        the log (objects, branch, files, journal); None: nothing to do.
        """
        return self.recovery.run()

    # -- hand edits ------------------------------------------------------------

    def forget_stats(self) -> None:
        """Forget the files' stat stamps: the next hand-edit check hashes every memory file again."""
        self._stat_cache.clear()

    def _reset_caches(self) -> None:
        """What recovery calls once it rewrote files: the parsed files and their stat stamps forgotten."""
        self.store.invalidate()
        self.forget_stats()

    def _remember(self, path: str, sha: bytes | None) -> None:
        if sha is None:
            self._stat_cache.pop(path, None)
            return
        stamp = self.door.stamp(path)
        if stamp is None:
            self._stat_cache.pop(path, None)
            return
        self._stat_cache[path] = (stamp, sha)

    def _disk_files(self) -> dict[str, bytes]:
        """``{path: blob sha}`` of the memory files on disk (hashed only when their stat changed)."""
        out: dict[str, bytes] = {}
        for folder in self.memory_dirs():
            for name, key in self.door.stamps(folder).items():
                path = f"{folder}/{name}"
                cached = self._stat_cache.get(path)
                if cached is not None and cached[0] == key:
                    out[path] = cached[1]
                    continue
                data = self.door.read(path)  # a link, a FIFO, a device, a huge file: DamagedFolder
                if data is None:
                    continue
                sha = Blob.from_string(data).id
                self._stat_cache[path] = (key, sha)
                out[path] = sha
        return out

    def memory_dirs(self) -> list[str]:
        """The memory folders on disk: ``wiki/``, ``diary/`` and those of every character's layer."""
        return [*MEMORY_DIRS, *(d for layer in self.door.layers() for d in layer_dirs(layer))]

    def layers(self) -> list[str]:
        """The characters with a layer in this folder: on disk, or at the branch's head."""
        return sorted(set(self.door.layers()) | set(self.git.layers(self.git.commit_tree(self.git.head()))))

    def external_changes(self) -> list[str]:
        """Memory files whose content on disk differs from ``HEAD``."""
        committed = self._memory_files(self.git.commit_tree(self.git.head()))
        disk = self._disk_files()
        if disk == committed:
            return []
        return sorted(p for p in committed.keys() | disk.keys() if committed.get(p) != disk.get(p))

    def _memory_files(self, tree: bytes | None) -> dict[str, bytes]:
        """``{path: blob sha}`` of the memory files of ``tree`` (the last one asked kept; a round's own tree
        derived from its base's by :meth:`_advance_files`, not listed again: O(changes), not O(files))."""
        known = self._files_at
        if known is not None and tree is not None and known[0] == tree:
            return known[1]
        files = {p: s for p, s in self.git.tracked(tree).items() if memory_path(p) is not None}
        if tree is not None:
            self._files_at = (tree, files)
        return files

    def _advance_files(self, steps: list[Step]) -> None:
        """The memory files of the round's last tree, from those of its base's tree and the paths it changed."""
        known, base = self._files_at, steps[0].parent
        if known is None or base is None or known[0] != self.git.commit_tree(base.encode("ascii")):
            return
        files = dict(known[1])
        for step in steps:
            for path, sha in step.blobs.items():
                if memory_path(path) is None:
                    continue
                if sha is None:
                    files.pop(path, None)
                else:
                    files[path] = sha.encode("ascii")
        tree = self.git.commit_tree(steps[-1].commit.encode("ascii"))
        if tree is not None:
            self._files_at = (tree, files)

    def _commit_external(self, actor: str | None) -> str | None:
        paths = self.external_changes()
        if not paths:
            return None
        self.store.invalidate()
        contents = {p: self.door.read(p) for p in paths}
        lines = [f"external-edit: {len(paths)} file{'s' if len(paths) != 1 else ''} changed outside wikimem", ""]
        lines += [f"- {printable(p)}" for p in paths] + ["", "Wikimem-Action: external-edit"]
        where = memory_path(paths[0]) if len(paths) == 1 else None
        if where is not None:
            folder, name = where
            lines.append(f"Wikimem-{'File' if folder == 'wiki' else 'Date'}: {printable(name)}")
        lines.append(f"Wikimem-Actor: {actor or 'external'}")
        lines += layer_trailers(layer_of(p)[0] for p in paths)
        return self._commit_files(contents, "\n".join(lines) + "\n", actor or "external")[0]

    def sync_external(self, actor: str | None = None) -> str | None:
        """Commit hand edits now (every write does this first anyway); the commit id or None."""
        with self.writer.lock, self._lock.hold():
            self._settle()
            return self._commit_external(actor)

    # -- writes ----------------------------------------------------------------

    def head(self) -> str:
        head = self.git.head()
        return head.decode() if head else ""

    def head_file(self, path: str) -> bytes | None:
        """The bytes of ``path`` (``settings.json``, ``wiki/x.md``…) as the branch's head holds it, or None."""
        head = self.git.head()
        return None if head is None else self.git.blob_at(self.git.commit_tree(head), path)

    def replay(self, key: str, kind: str | None = None, request: str | None = None, *,
               pending: bool = False) -> dict | None:
        """The stored result of an already-applied request with this idempotency key, or None.

        Reads the history index only (no lock, no commit of hand edits);
        ``pending`` (inside a unit) also the units of its round that have not
        landed yet (the same key twice in one round replays the first).
        ``request`` is the hash of the request's kind and fingerprint: a key
        used for another kind, target or body raises
        :class:`IdempotencyKeyReused`. A result the index lost (it is
        derived, and may be rebuilt from git) is derived again from the
        commit, so a replay always answers.
        """
        found = self._pending_result(key) if pending else None
        if found is None:
            since = None if self.idempotency_ttl is None else int(time.time() - self.idempotency_ttl)
            found = self.db.idem(key, since=since)
        if found is None:
            return None
        commit, stored, stored_request = found
        legacy_kind = stored.get("_kind") if isinstance(stored, dict) else None  # results stored before requests
        if (request and stored_request and request != stored_request) or (kind and legacy_kind
                                                                          and legacy_kind != kind):
            raise IdempotencyKeyReused(f"Idempotency-Key {key!r} was already used for another request (its kind, "
                                       "target or body differ); use a new key for a new request")
        if not isinstance(stored, dict):
            stored = rebuild_result(self.git, commit, kind)
        stored = dict(stored)
        stored.setdefault("commit", commit)
        return stored

    def _pending_result(self, key: str) -> tuple[str, object, str | None] | None:
        for step in reversed(self._steps):
            if step.result and step.result.get("key") == key:
                return step.commit, step.result.get("payload"), step.result.get("request")
        return None

    # -- the branch main (a Branch of target.py; the write verbs are its Target's) ----------------------------

    where = ""  # (how a refusal names this branch: main needs no name)
    changed = "the memory changed: head is"

    def unit_info(self, info: UnitInfo) -> UnitInfo:
        return info

    def round_head(self) -> str:
        """Inside a unit: the commit it builds on (the last one of its round not landed yet, else the head)."""
        if self._steps and self._tip is not None:
            return self._tip.decode()
        return self.head()

    request_of = staticmethod(request_of)

    def batch(self, ctx: WriteContext | None = None, *, message: str | None = None, action: str | None = None,
              kind: str | None = None, reverts: str | None = None) -> AbstractContextManager[Outcome]:
        """Everything written inside is one commit on ``main`` (:meth:`Target.batch`)."""
        return self.main.batch(ctx, message=message, action=action, kind=kind, reverts=reverts)

    def add(self, file: str, name: str, content: str, *, owner: str | None = None, ts: str | None = None,
            ctx: WriteContext | None = None, **room: Any) -> Committed:
        """Add or replace an item as one commit on ``main`` (:meth:`Target.add`; ``room``: its ``channel`` and
        ``present``)."""
        return self.main.add(file, name, content, owner=owner, ts=ts, ctx=ctx, **room)

    def remove(self, file: str, name: str, *, owner: str | None = None,
               ctx: WriteContext | None = None) -> Committed:
        """Remove an item as one commit on ``main`` (:meth:`Target.remove`)."""
        return self.main.remove(file, name, owner=owner, ctx=ctx)

    def diary_append(self, content: str, *, ts: str | None = None, date: str | None = None,
                     time: str | None = None, tz=None, owner: str | None = None,
                     ctx: WriteContext | None = None, **room: Any) -> Committed:
        """Append a diary entry as one commit on ``main`` (:meth:`Target.diary_append`; ``room``: its ``channel``
        and ``present``)."""
        return self.main.diary_append(content, ts=ts, date=date, time=time, tz=tz, owner=owner, ctx=ctx, **room)

    # -- history ---------------------------------------------------------------

    def history(self, *, file: str | None = None, item: str | None = None, run: str | None = None,
                date: str | None = None, limit: int = 50, cursor: str | None = None,
                layers: tuple[str | None, ...] | None = None) -> HistoryPage:
        """The log, newest first, optionally of one RecallFile, one item, one run or one diary day; ``layers``: only
        the commits of these layers (None in it: the shared one) and those that touched no item."""
        if item is not None:
            item = " ".join(item.split())
        return self.db.page(file=file, item=item, run=run, date=date, limit=max(1, int(limit)), cursor=cursor,
                            layers=layers)

    def runs(self, limit: int = 50) -> list[dict]:
        return self.db.runs(limit)

    def resolve(self, point: str | None) -> str:
        """A full commit id for ``HEAD`` / ``HEAD~N``, an id or unique prefix, or an ISO-8601 time."""
        if point is None or point.strip().upper() == "HEAD":
            return self.head()
        text = point.strip()
        back = re.fullmatch(r"HEAD~(\d*)", text, re.IGNORECASE)
        if back:
            cid = self.git.head()
            if cid is None:
                raise NotFound(f"{text}: the memory folder has no commits")
            for _ in range(int(back.group(1) or 1)):
                parents = self.git.commit(cid).parents
                if not parents:
                    raise NotFound(f"{text} goes back beyond the first commit")
                cid = parents[0]
            return cid.decode()
        if _HEX_RE.fullmatch(text):
            text = text.lower()
            if len(text) == 40:
                try:
                    self.git.commit(text.encode())
                    return text
                except KeyError:
                    raise NotFound(f"no commit {text}") from None
            found = self.db.by_prefix(text)
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                raise ValueError(f"commit prefix {text} is ambiguous")
            if not re.fullmatch(r"\d{4}", text):
                raise NotFound(f"no commit {text}")
        moment = read_instant(text, repr(point), "a commit id, an ISO-8601 time or HEAD")
        found_at = self.db.at_or_before(int(moment.timestamp()))
        if found_at is None:
            raise NotFound(f"no commit at or before {point}")
        return found_at

    def _span(self, old_tree, new_tree, layers: tuple[str | None, ...] | None = None,
              ) -> tuple[list[ItemChange], str, bool]:
        """The item changes and the patch between two trees, of ``layers`` only (None: every layer); and whether
        anything changed in a layer left out."""
        changes: list[ItemChange] = []
        patch: list[str] = []
        hidden = False
        for path in sorted(self.git.changed_paths(old_tree, new_tree)):
            if layers is not None and layer_of(path)[0] not in layers:
                hidden = True
                continue
            old, new = self.git.blob_at(old_tree, path), self.git.blob_at(new_tree, path)
            changes.extend(path_changes(path, old, new))
            patch.append(unified_patch(path, old, new))
        return changes, "".join(patch), hidden

    def show_commit(self, point: str, layers: tuple[str | None, ...] | None = None) -> CommitDiff:
        """One commit: its history entry, what it did item by item, and its patch. ``layers``: seen by a reader of
        these layers only (None in it: the shared one): a commit of other layers alone is :class:`NotFound`."""
        cid = self.resolve(point)
        obj = self.git.commit(cid.encode())
        parent_tree = self.git.commit_tree(obj.parents[0]) if obj.parents else None
        changes, patch, hidden = self._span(parent_tree, obj.tree, layers)
        if hidden and not changes:
            raise NotFound(f"no commit {point} in the layers you may read")
        entry = self.db.entry(cid)
        if entry is None:  # a commit not on the branch
            entry = HistoryEntry(cid, [p.decode() for p in obj.parents], iso(obj.commit_time),
                                 obj.author.decode("utf-8", "replace").split(" <")[0], None, None, None, None,
                                 None, None, None, None, obj.message.decode("utf-8", "replace").split("\n")[0],
                                 len(changes))
        return CommitDiff(entry, changes, patch)

    def diff(self, a: str, b: str = "HEAD", layers: tuple[str | None, ...] | None = None) -> CommitDiff:
        """What changed from ``a`` to ``b``, item by item (in ``layers`` only; None: every layer)."""
        ta = self.git.commit_tree(self.resolve(a).encode())
        tb = self.git.commit_tree(self.resolve(b).encode())
        changes, patch, _ = self._span(ta, tb, layers)
        return CommitDiff(None, changes, patch)

    def changed_paths(self, old: str | None, new: str | None) -> set[str]:
        ta = self.git.commit_tree(old.encode()) if old else None
        tb = self.git.commit_tree(new.encode()) if new else None
        return self.git.changed_paths(ta, tb)

    def snapshot(self, point: str) -> Snapshot:
        """The memory at a commit or time, read from the object store."""
        return Snapshot(self.git, self.resolve(point).encode())

    # -- housekeeping ------------------------------------------------------------

    def pack(self) -> None:
        """Pack loose objects now (delta-compressed by the ``git`` CLI when it is installed)."""
        with self.writer.lock, self._lock.hold():
            self._settle()  # (a killed writer's torn object is rewritten before git reads every object)
            self._pack_locked()

    def _pack_locked(self) -> None:
        git = shutil.which("git")
        if git:
            def run(*args: str) -> None:
                subprocess.run([git, "--git-dir", str(self.root / ".git"), "-c", "gc.auto=0", *args], cwd=self.root,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)

            packs = list((self.root / ".git" / "objects" / "pack").glob("*.pack"))
            run("repack", "-d", "-q", *(["-a"] if len(packs) >= 8 else []))
            self.intent.checkpoint(self.head() or None)  # the new pack on disk before the loose copies go
            run("prune-packed", "-q")
        else:
            self.intent.checkpoint(self.head() or None)
            self.git.store.pack_loose_objects()
            sync_filesystem(self.root)
        self.db.reset_since_pack()
        if self.idempotency_ttl is not None:  # retention: stored results (they hold what was written) go
            self.db.expire_results(int(time.time() - self.idempotency_ttl))

    def repair(self, actor: str = "wikimem repair") -> list[str]:
        """Put a damaged folder right (``wikimem repair``); what was done, one line each.

        Under the owner lock: a branch that names no commit goes back to the
        last good one; what the door refuses (links, FIFOs, devices, files
        over their limit) is moved to ``.git/wikimem-quarantine/`` and the
        files it stood for are written back as the branch has them; a
        damaged history index is rebuilt; a write a killed writer left is
        reconciled. Then a ``settings.json`` the head holds but nobody can
        read is replaced, as one commit, by the newest readable version.
        Memory is never lost: hand edits stay (the next write commits them),
        what was moved aside stays in the quarantine folder.
        """
        from . import repair

        # A link or a FIFO in place of the lock file: moved first, or the lock could never be taken.
        done = [f"moved aside to .git/{repair.QUARANTINE}/: {m}" for m in repair.quarantine(self.root, (LOCK_NAME,))]
        with self.writer.lock, self._lock.hold():
            self.git.clear_stale_locks()
            new, why = repair.good_head(self.git, self.db.known_heads())
            if new is not None:
                repair.move_branch(self.git, new)
                done.append(f"branch main moved to {new.decode()[:12]}: {why}")
            moved = repair.quarantine(self.root)
            done += [f"moved aside to .git/{repair.QUARANTINE}/: {m}" for m in moved]
            if moved:  # the files they stood for, as the branch has them (settings.json and .gitignore too,
                # unless the branch's own copy is unreadable: the settings are replaced below)
                tree = self.git.commit_tree(self.git.head())
                tops = [t for t in (SETTINGS_PATH, GITIGNORE_NAME) if repair.readable(self.git.blob_at(tree, t), t)]
                self.recovery.put_back(sorted(self.git.tracked(tree)) + tops, self.head(), only_missing=True)
            if new is not None or not self.db.healthy():
                self.db.rebuild()
                done.append("history index rebuilt from git")
            if self.recover() is not None:
                done.append("a write a killed writer left was reconciled")
            sweep_temp_files(self.root)
            self.store.invalidate()
            self._stat_cache.clear()
        head = self.git.head()
        fixed = repair.readable_settings(self.git, head) if head is not None else None
        if fixed is not None:
            data, source = fixed
            with self.batch(WriteContext(actor=actor), action="repair",
                            message="repair: settings.json back to its last readable version") as b:
                self.writer.apply({SETTINGS_PATH: (self.writer.read(SETTINGS_PATH), data)},
                                  {"ts": utc_now(), "action": "repair", "detail": "settings.json"})
                b.result = {}
            what = f"back to its version of {source[:12]}" if data is not None else "removed"
            done.append(f"settings.json could not be read: {what} (commit {(b.commit or '')[:12]})")
        return done

    def verify(self) -> list[str]:
        """Problems found: a missing branch or unreadable objects at the branch's tip (hand edits are not problems)."""
        problems = []
        head = self.git.head()
        if head is None:
            return ["no branch main"]
        try:
            tree = self.git.commit_tree(head)
            for sha in self.git.tracked(tree).values():
                self.git.blob(sha)
        except KeyError as exc:
            problems.append(f"missing object {exc}")
        return problems
