"""Recovery of one versioned memory folder: what a killed writer or a power loss left, put right from the intent log.

:class:`Recovery` is held by its :class:`~wikimem.versioned.vstore.VersionedStore`
(``vs.recovery``) and runs under the owner lock, before anything else a
writer does (``VersionedStore.recover`` at every settle). See ARCHITECTURE.md,
"Durability": a writer that died on a machine that stayed up leaves at most
its last round unfinished (finished when its branch moved, else undone); after
a restart every round since the last checkpoint is redone from the log.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from wikimem.errors import DamagedFolder
from wikimem.format import SETTINGS_PATH, memory_path
from wikimem.fsio import atomic_write

from .intent import ABORTED, APPLIED, PENDING, UNDONE, Record, Step
from .objects import GitRepo
from .replication import is_ancestor

if TYPE_CHECKING:
    from .vstore import VersionedStore

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

    def __init__(self, vs: VersionedStore) -> None:
        self.vs = vs

    def run(self) -> str | None:
        """``"finished"``, ``"undone"``, ``"redone"`` or None: see :meth:`VersionedStore.recover`."""
        vs = self.vs
        legacy = vs.intent.legacy()
        if legacy is not None:
            return self._legacy(legacy)
        try:
            head = vs.head() or None
        except DamagedFolder:  # a branch naming a commit lost in a power loss: the redo puts it right (or repair)
            head = None
        found = vs.intent.pending(head)
        if found is None:
            return None
        outcome = self._redo(found.records) if found.restart else self._round(found.records[-1])
        vs.store.invalidate()
        vs.forget_stats()
        return outcome

    def _round(self, record: Record) -> str:
        """The last round, left pending or aborted by a writer that died (the machine stayed up)."""
        vs = self.vs
        head = vs.git.head()
        if record.state == PENDING and head == record.tip.encode():
            vs.finish_steps(record.steps)
            vs.tell(record.tip)  # the listeners may never have heard of it: the writer died first
            vs.intent.mark(record, APPLIED)
            return "finished"
        if head != (record.base.encode() if record.base else None):
            log.warning("%s: a round from %s met the branch at %s; its files follow the branch",
                        vs.root, record.base, head)
        vs.git.drop_unsound(record.objects)  # (killed mid-write: a torn copy must never pass for the object)
        if not record.steps[0].external:  # a hand edit's files are the editor's: never put back
            self.put_back([p for p in record.paths() if _writable(p)], head.decode() if head else "")
        if record.journal_size is not None:
            vs.store.journal.truncate(record.journal_size, durable=False)
        vs.intent.mark(record, UNDONE, durable=True)
        return "undone"

    def _legacy(self, found: dict) -> str:
        """The intent a writer of the previous version left: finished when its commit is the branch, else undone."""
        vs = self.vs
        head = vs.head()
        paths = [p for p in found["paths"] if isinstance(p, str) and _writable(p)]
        result = found.get("result") if isinstance(found.get("result"), dict) else None
        if found.get("state") == "committing" and found.get("commit") == head:
            tree = vs.git.commit_tree(head.encode())
            blobs = {p: (sha.decode() if (sha := (vs.git.entry(tree, p) or (None, None))[1]) else None)
                     for p in paths}
            vs.finish_steps([Step(head, None, blobs, result)])
            vs.tell(head)  # the listeners never heard of it: the writer died first
            outcome = "finished"
        else:
            self.put_back(paths, head)
            if isinstance(found.get("journal_size"), int):
                vs.store.journal.truncate(found["journal_size"])
            outcome = "undone"
        vs.store.invalidate()
        vs.intent.checkpoint(head or None)  # what was reconciled is on disk before the file goes
        vs.intent.clear_legacy()
        return outcome

    def _redo(self, records: list[Record]) -> str:
        """After a restart: objects, branch, files and journal made what the log says; then a checkpoint."""
        vs = self.vs
        live = [r for r in records if r.state not in (ABORTED, UNDONE)]
        built = set()
        with vs.git.repairing():
            # Every round's objects, aborted ones too: any object file of the log's rounds may be torn.
            for record in records:
                try:
                    self._rebuild(record)
                    built.add(record.offset)
                except Exception:
                    if record in live:
                        log.exception("%s: a logged round (%s) could not be rebuilt; skipped", vs.root,
                                      record.tip)
        head = self._sound_head(live[0].base if live else None)
        journal = vs.store.journal
        results: dict[str, tuple] = {}
        for record in records:
            if record not in live or record.offset not in built:
                if record.journal_size is not None and record not in live:
                    journal.truncate(record.journal_size, durable=False)
                continue
            base, tip = (record.base.encode() if record.base else None), record.tip.encode()
            if head == base:
                if not vs.git.move_ref(base, tip, durable=False):
                    raise RuntimeError(f"{vs.root}: branch moved while the owner lock was held")
                head = tip
            elif head is None or not _reaches(vs.git, head, tip):
                log.warning("%s: a logged round (%s) is not on the branch (%s); skipped", vs.root, tip, head)
                continue
            if record.journal_size is not None:
                journal.truncate(record.journal_size, durable=False)
                journal.write_many(record.journal, durable=False)
            results.update({s.commit: (s.result["key"], s.result.get("payload"), s.result.get("request"))
                            for s in record.steps if s.result})
        paths = list(dict.fromkeys(p for r in records for p in r.paths() if _writable(p)))
        tree = vs.git.commit_tree(head) if head else None
        shas: dict[str, bytes | None] = {}
        for path in paths:  # the work tree as the branch has it
            found = vs.git.entry(tree, path)
            want = None if found is None else vs.git.blob(found[1])
            shas[path] = None if found is None else found[1]
            try:
                if vs.door.read(path) == want:
                    continue
            except DamagedFolder:  # a link or a FIFO in its place: the branch's file goes over it
                pass
            if want is None:
                vs.door.remove(path, durable=False)
            else:
                vs.door.write(path, want, durable=False)
        vs.git.update_index(shas, durable=False)
        vs.db.sync(results=results or None)
        vs.intent.checkpoint(head.decode() if head else None)
        if head is not None:
            vs.tell(head.decode())  # (derived indexes above the folder may have missed the redone rounds)
        return "redone"

    def _rebuild(self, record: Record) -> None:
        """Write a logged round's objects again (a torn loose copy is replaced); each commit must then read."""
        vs = self.vs
        for sha, data in record.objects.items():
            vs.git.write_raw(sha, data, logged=True)
        for step in record.steps:
            vs.git.commit(step.commit.encode())

    def _sound_head(self, fallback: str | None) -> bytes | None:
        """The branch, if it names a readable commit; else ``fallback`` (the log's oldest base), written back."""
        vs = self.vs
        try:
            head = vs.git.head()
            if head is not None:
                vs.git.commit(head)
            return head
        except Exception:
            log.warning("%s: the branch was lost or torn; it goes back to %s", vs.root, fallback)
        if fallback is None:
            return None
        vs.git.clear_stale_locks()
        path = vs.root / ".git" / "refs" / "heads" / "main"
        atomic_write(path, fallback.encode() + b"\n", durable=False)
        return fallback.encode()

    def put_back(self, paths: list[str], head: str, only_missing: bool = False) -> None:
        """Make ``paths`` on disk what the commit ``head`` has (absent there → removed); ``only_missing``:
        write only the files that are not on disk (a hand edit stays)."""
        vs = self.vs
        tree = vs.git.commit_tree(head.encode()) if head else None
        for path in paths:
            want = vs.git.blob_at(tree, path)
            try:
                if vs.door.read(path) == want:
                    continue
            except DamagedFolder:  # a link or a FIFO in its place: the branch's file goes over it
                pass
            if only_missing and vs.door.stamp(path) is not None:
                continue
            if want is None:
                vs.door.remove(path)
            else:
                vs.door.write(path, want)
