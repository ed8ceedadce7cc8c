"""Recovery of one versioned memory folder: what a killed writer or a power loss left, put right from the intent log.

:class:`Recovery` is held by its :class:`~wikimem.versioned.vstore.VersionedStore`
(``vs.recovery``), built with the parts it works on, and runs under the owner lock, before anything else a
writer does (``VersionedStore.recover`` at every settle). See ARCHITECTURE.md,
"Durability": a writer that died on a machine that stayed up leaves at most
its last round unfinished (finished when its branch moved, else undone); after
a restart every round since the last checkpoint is redone from the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from wikimem.errors import DamagedFolder
from wikimem.format import SETTINGS_PATH, memory_path
from wikimem.fsio import atomic_write
from wikimem.store import Door, Journal

from .history import HistoryDB
from .intent import ABORTED, APPLIED, PENDING, UNDONE, IntentLog, Record, Step
from .objects import GitRepo
from .replication import is_ancestor

__all__ = ["Recovery"]

log = logging.getLogger(__name__)


def _writable(path: str) -> bool:
    """A path a logged round may write in the work tree (a memory file or the settings)."""
    return memory_path(path) is not None or path == SETTINGS_PATH


def _reaches(git: GitRepo, head: bytes, commit: bytes) -> bool:
    """Whether ``commit`` is ``head`` or one of its ancestors (False when history is unreadable)."""
    try:
        return is_ancestor(git, commit, head)
    except KeyError:
        return False


class Recovery:
    """Reconciles what the intent log holds with the folder (call under the owner lock)."""

    def __init__(self, git: GitRepo, intent: IntentLog, db: HistoryDB, door: Door, journal: Journal, *,
                 finish: Callable[[list[Step]], None], tell: Callable[[str], None],
                 reset: Callable[[], None]) -> None:
        """``finish(steps)`` completes what follows a branch move (the index, the history index, replay
        results), ``tell(commit)`` tells who listens that ``main`` moved, ``reset()`` drops what the store
        cached of the files."""
        self.git = git
        self.intent = intent
        self.db = db
        self.door = door  # every file of the work tree is read and written through it
        self.journal = journal
        self.root = git.root
        self._finish = finish
        self._tell = tell
        self._reset = reset

    def run(self) -> str | None:
        """``"finished"``, ``"undone"``, ``"redone"`` or None: see :meth:`VersionedStore.recover`."""
        legacy = self.intent.legacy()
        if legacy is not None:
            return self._legacy(legacy)
        try:
            head = self._head() or None
        except DamagedFolder:  # a branch naming a commit lost in a power loss: the redo puts it right (or repair)
            head = None
        found = self.intent.pending(head)
        if found is None:
            return None
        outcome = self._redo(found.records) if found.restart else self._round(found.records[-1])
        self._reset()
        return outcome

    def _round(self, record: Record) -> str:
        """The last round, left pending or aborted by a writer that died (the machine stayed up)."""
        head = self.git.head()
        if record.state == PENDING and head == record.tip.encode():
            self._finish(record.steps)
            self._tell(record.tip)  # the listeners may never have heard of it: the writer died first
            self.intent.mark(record, APPLIED)
            return "finished"
        if head != (record.base.encode() if record.base else None):
            log.warning("%s: a round from %s met the branch at %s; its files follow the branch",
                        self.root, record.base, head)
        self.git.drop_unsound(record.objects)  # (killed mid-write: a torn copy must never pass for the object)
        if not record.steps[0].external:  # a hand edit's files are the editor's: never put back
            self.put_back([p for p in record.paths() if _writable(p)], head.decode() if head else "")
        if record.journal_size is not None:
            self.journal.truncate(record.journal_size, durable=False)
        self.intent.mark(record, UNDONE, durable=True)
        return "undone"

    def _legacy(self, found: dict) -> str:
        """The intent a writer of the previous version left: finished when its commit is the branch, else undone."""
        head = self._head()
        paths = [p for p in found["paths"] if isinstance(p, str) and _writable(p)]
        result = found.get("result") if isinstance(found.get("result"), dict) else None
        if found.get("state") == "committing" and found.get("commit") == head:
            tree = self.git.commit_tree(head.encode())
            blobs = {p: (sha.decode() if (sha := (self.git.entry(tree, p) or (None, None))[1]) else None)
                     for p in paths}
            self._finish([Step(head, None, blobs, result)])
            self._tell(head)  # the listeners never heard of it: the writer died first
            outcome = "finished"
        else:
            self.put_back(paths, head)
            if isinstance(found.get("journal_size"), int):
                self.journal.truncate(found["journal_size"])
            outcome = "undone"
        self._reset()
        self.intent.checkpoint(head or None)  # what was reconciled is on disk before the file goes
        self.intent.clear_legacy()
        return outcome

    def _redo(self, records: list[Record]) -> str:
        """After a restart: objects, branch, files and journal made what the log says; then a checkpoint."""
        live = [r for r in records if r.state not in (ABORTED, UNDONE)]
        built = set()
        with self.git.repairing():
            # Every round's objects, aborted ones too: any object file of the log's rounds may be torn.
            for record in records:
                try:
                    self._rebuild(record)
                    built.add(record.offset)
                except Exception:
                    if record in live:
                        log.exception("%s: a logged round (%s) could not be rebuilt; skipped", self.root,
                                      record.tip)
        head = self._sound_head(live[0].base if live else None)
        journal = self.journal
        results: dict[str, tuple] = {}
        for record in records:
            if record not in live or record.offset not in built:
                if record.journal_size is not None and record not in live:
                    journal.truncate(record.journal_size, durable=False)
                continue
            base, tip = (record.base.encode() if record.base else None), record.tip.encode()
            if head == base:
                if not self.git.move_ref(base, tip, durable=False):
                    raise RuntimeError(f"{self.root}: branch moved while the owner lock was held")
                head = tip
            elif head is None or not _reaches(self.git, head, tip):
                log.warning("%s: a logged round (%s) is not on the branch (%s); skipped", self.root, tip, head)
                continue
            if record.journal_size is not None:
                journal.truncate(record.journal_size, durable=False)
                journal.write_many(record.journal, durable=False)
            results.update({s.commit: (s.result["key"], s.result.get("payload"), s.result.get("request"))
                            for s in record.steps if s.result})
        paths = list(dict.fromkeys(p for r in records for p in r.paths() if _writable(p)))
        tree = self.git.commit_tree(head) if head else None
        shas: dict[str, bytes | None] = {}
        for path in paths:  # the work tree as the branch has it
            found = self.git.entry(tree, path)
            want = None if found is None else self.git.blob(found[1])
            shas[path] = None if found is None else found[1]
            try:
                if self.door.read(path) == want:
                    continue
            except DamagedFolder:  # a link or a FIFO in its place: the branch's file goes over it
                pass
            self.door.put(path, want, durable=False)
        self.git.update_index(shas, durable=False)
        self.db.sync(results=results or None)
        self.intent.checkpoint(head.decode() if head else None)
        if head is not None:
            self._tell(head.decode())  # (derived indexes above the folder may have missed the redone rounds)
        return "redone"

    def _rebuild(self, record: Record) -> None:
        """Write a logged round's objects again (a torn loose copy is replaced); each commit must then read."""
        for sha, data in record.objects.items():
            self.git.write_raw(sha, data, logged=True)
        for step in record.steps:
            self.git.commit(step.commit.encode())

    def _sound_head(self, fallback: str | None) -> bytes | None:
        """The branch, if it names a readable commit; else ``fallback`` (the log's oldest base), written back."""
        try:
            head = self.git.head()
            if head is not None:
                self.git.commit(head)
            return head
        except Exception:
            log.warning("%s: the branch was lost or torn; it goes back to %s", self.root, fallback)
        if fallback is None:
            return None
        self.git.clear_stale_locks()
        path = self.root / ".git" / "refs" / "heads" / "main"
        atomic_write(path, fallback.encode() + b"\n", durable=False)
        return fallback.encode()

    def put_back(self, paths: list[str], head: str, only_missing: bool = False) -> None:
        """Make ``paths`` on disk what the commit ``head`` has (absent there → removed); ``only_missing``:
        write only the files that are not on disk (a hand edit stays)."""
        tree = self.git.commit_tree(head.encode()) if head else None
        for path in paths:
            want = self.git.blob_at(tree, path)
            try:
                if self.door.read(path) == want:
                    continue
            except DamagedFolder:  # a link or a FIFO in its place: the branch's file goes over it
                pass
            if only_missing and self.door.stamp(path) is not None:
                continue
            self.door.put(path, want)

    def _head(self) -> str:
        head = self.git.head()
        return head.decode() if head else ""
