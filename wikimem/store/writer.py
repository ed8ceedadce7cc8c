"""The mutation seam: how every write of a store happens, and who hears of it.

All writes of a :class:`~wikimem.MemoryStore` and its :class:`~wikimem.Diary`
go through one :class:`Writer`. A write runs inside a *unit*:

1. the writer takes its thread lock (:attr:`Writer.lock`), then the hook's
   inter-process lock (``hook.locked()``); the caller re-reads the file it
   will change *under* the lock, so no concurrent writer's change is lost;
2. the caller applies its changes with :meth:`Writer.apply` (new file
   contents plus one journal record per mutation); the hook hears which
   files will change (``hook.writing(unit, paths)``) so that it can record
   the write in flight and recover it after a crash. Changes are staged in
   the unit (the caller reads them back with :meth:`Writer.read`) and
   written when the unit ends: each file once, atomically, and the journal
   lines in one append — a batch of a thousand mutations costs a few
   fsyncs, not thousands;
3. when the unit ends without error, its files are written, then
   ``hook.committed(unit)`` is called,
   still inside the lock — the git layer turns the unit into exactly one
   commit and returns its id, which the writer keeps as ``unit.commit``;
4. when the unit ends with an error, every file it touched is put back as it
   was and the journal is cut back, so a failed unit leaves nothing behind.

A single ``store.add`` is a unit of its own. ``store.batch(**info)`` makes a
unit of everything inside the ``with`` block (a memorize run, an API batch);
``info`` (``run``, ``actor``, ``message``...) is handed to the hook as is.
Values travel through attributes of the :class:`Unit`, never through keys
of ``info``: the caller may leave a ``payload`` for the hook (the result an
idempotent request replays), the hook leaves the ``commit``.

The plain library's hook (:class:`PlainHook`) only locks; the library never
imports git.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ContextManager, Protocol

from wikimem.fsio import atomic_write, read_bytes, remove_file
from wikimem.locking import FileLock

from .journal import Journal

__all__ = ["Mutation", "MutationHook", "PlainHook", "Writer", "Unit", "LOCK_NAME"]

LOCK_NAME = ".wikimem.lock"


@dataclass(frozen=True)
class Mutation:
    """One successful mutation: its journal record and the files it changed.

    ``paths`` are relative to the store root, with ``/`` separators
    (``"wiki/preferences.md"``, ``"diary/2026-07-21.md"``).
    """

    record: dict
    paths: tuple[str, ...]


class MutationHook(Protocol):
    """What a layer above the plain store plugs into the seam."""

    def locked(self) -> ContextManager[None]:
        """Inter-process exclusion held for a whole unit."""

    def writing(self, unit: Unit, paths: tuple[str, ...]) -> None:
        """Called inside the lock before ``paths`` (relative to the root) are written or deleted."""

    def committed(self, unit: Unit) -> str | None:
        """Called once per successful unit, inside the lock, after the writes; returns the commit id (or None)."""


class PlainHook:
    """The default hook: an ``flock`` on ``<root>/.wikimem.lock``, nothing else."""

    def __init__(self, root: Path):
        self._lock = FileLock(Path(root) / LOCK_NAME)

    def locked(self) -> ContextManager[None]:
        return self._lock.hold()

    def writing(self, unit: Unit, paths: tuple[str, ...]) -> None:
        return None

    def committed(self, unit: Unit) -> str | None:
        return None


@dataclass
class Unit:
    """The state of one unit of work in progress, and what its hook reported."""

    info: dict
    journal_size: int
    originals: dict[str, bytes | None] = field(default_factory=dict)
    mutations: list[Mutation] = field(default_factory=list)
    staged: dict[str, bytes | None] = field(default_factory=dict)  # relpath -> new content (None: delete)
    parsed: dict[str, tuple] = field(default_factory=dict)  # relpath -> (the bytes parsed, what they parsed to)
    records: list[dict] = field(default_factory=list)  # journal records, written with the files
    payload: object = None  # left by the caller for the hook (e.g. the result a retry replays)
    commit: str | None = None  # the hook's answer once the unit committed


class Writer:
    """Serialises the writes of one store folder and reports them to the hook."""

    def __init__(self, root: Path, journal: Journal, hook: MutationHook | None = None):
        self.root = Path(root)
        self.journal = journal
        self.hook: MutationHook = hook if hook is not None else PlainHook(self.root)
        # Held for a whole unit; take it (before any inter-process lock) to keep writers out.
        self.lock = threading.RLock()
        self._unit: Unit | None = None
        self._unit_thread: int | None = None  # the thread whose unit is in progress
        self.listeners: list[Callable[[tuple[str, ...]], None]] = []

    @property
    def active(self) -> bool:
        """Whether this thread is inside a unit (other threads never see a unit's staged changes)."""
        return self._unit is not None and self._unit_thread == threading.get_ident()

    @contextmanager
    def unit(self, **info) -> Iterator[Unit]:
        """Run the block as one unit (joins the enclosing unit when nested)."""
        with self.lock:
            if self._unit is not None:
                for key, value in info.items():
                    self._unit.info.setdefault(key, value)
                yield self._unit
                return
            with self.hook.locked():
                unit = Unit(info=dict(info), journal_size=self.journal.size())
                self._unit, self._unit_thread = unit, threading.get_ident()
                try:
                    yield unit
                    if unit.mutations:
                        self._flush(unit)
                        unit.commit = self.hook.committed(unit)
                except BaseException:
                    self._restore(unit)
                    raise
                finally:
                    self._unit, self._unit_thread = None, None

    def read(self, rel: str) -> bytes | None:
        """A file's content as this thread's unit in progress will leave it (the disk's otherwise)."""
        if self.active and rel in self._unit.staged:
            return self._unit.staged[rel]
        return read_bytes(self.root / rel)

    def parse(self, rel: str, parser: Callable[[bytes | None], list]) -> tuple[bytes | None, list]:
        """``(content, parser(content))`` of a file as :meth:`read` sees it, parsed once per staged version.

        A batch of many mutations of one file parses it once, not once per
        mutation; the list returned is the caller's to change.
        """
        data = self.read(rel)
        unit = self._unit if self.active else None
        memo = unit.parsed.get(rel) if unit is not None else None
        if memo is not None and memo[0] is data:
            return data, list(memo[1])
        parsed = parser(data)
        if unit is not None:
            unit.parsed[rel] = (data, list(parsed))
        return data, parsed

    def apply(self, changes: dict[str, tuple[bytes | None, bytes | None]], record: dict | None,
              parsed: dict[str, list] | None = None) -> Mutation:
        """Stage ``{relpath: (old, new)}`` (``new=None`` deletes) and the journal ``record``.

        ``parsed`` may give what a new content parses to (the caller rendered
        it from that), so the next :meth:`parse` of it costs nothing.

        Must run inside :meth:`unit`. ``old`` is what the caller read under
        the lock (with :meth:`read`). Nothing reaches the disk before the unit
        ends; then either everything does, or (on any error) the files and
        the journal stay as they were before the unit.
        """
        unit = self._unit
        if unit is None:
            raise RuntimeError("Writer.apply outside a unit")
        self.hook.writing(unit, tuple(changes))
        for rel, (old, new) in changes.items():
            unit.originals.setdefault(rel, old)
            unit.staged[rel] = new
            if parsed is not None and rel in parsed:
                unit.parsed[rel] = (new, list(parsed[rel]))
        if record is not None:
            unit.records.append(record)
        mutation = Mutation(record=record or {}, paths=tuple(changes))
        unit.mutations.append(mutation)
        return mutation

    def _flush(self, unit: Unit) -> None:
        """Write the unit's files (each once, atomically) and its journal lines (one append)."""
        for rel, new in unit.staged.items():
            if new == unit.originals.get(rel, object()):
                continue
            path = self.root / rel
            if new is None:
                remove_file(path)
            else:
                atomic_write(path, new)
        self.journal.write_many(unit.records)
        # Listeners (the store's caches and revision) hear of a change once it is on disk, so that
        # another thread that reacts to it reads the new files, never the old ones.
        self._notify(tuple(unit.staged))

    def _restore(self, unit: Unit) -> None:
        """Put every file the unit may have touched back as it was, cut the journal back."""
        for rel, old in unit.originals.items():
            path = self.root / rel
            if read_bytes(path) == old:
                continue
            if old is None:
                remove_file(path)
            else:
                atomic_write(path, old)
        self.journal.truncate(unit.journal_size)
        if unit.staged:
            self._notify(tuple(unit.staged))  # what was read back from the stage is stale now

    def _notify(self, paths: tuple[str, ...]) -> None:
        for listener in self.listeners:
            listener(paths)
