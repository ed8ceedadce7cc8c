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

A single ``store.add`` is a unit of its own. ``store.batch(run=..., actor=...)``
makes a unit of everything inside the ``with`` block (a memorize run, an API
batch). What a unit carries down to its commit is one typed value,
:class:`UnitInfo` (``unit.info``), handed to the hook as is. Values travel
back through attributes of the :class:`Unit`: the caller may leave a
``payload`` for the hook (the result an idempotent request replays), the
hook leaves the ``commit``.

The plain library's hook (:class:`PlainHook`) only locks; the library never
imports git.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Protocol

from wikimem.errors import WikimemError
from wikimem.locking import FileLock

from .door import Door
from .journal import Journal

__all__ = ["Mutation", "MutationHook", "PlainHook", "Writer", "Unit", "UnitInfo", "LOCK_NAME"]

LOCK_NAME = ".wikimem.lock"


@dataclass(frozen=True)
class Mutation:
    """One successful mutation: its journal record and the files it changed.

    ``paths`` are relative to the store root, with ``/`` separators
    (``"wiki/preferences.md"``, ``"diary/2026-07-21.md"``).
    """

    record: dict
    paths: tuple[str, ...]


@dataclass(frozen=True)
class UnitInfo:
    """What a unit carries down to its commit; every field may be empty (the plain store records none of it).

    - ``run``, ``actor``, ``source_conv``, ``idempotency_key``: who wrote, as part of what
      (``Wikimem-Run``, ``Wikimem-Actor``, ``Wikimem-Source-Conv``, ``Wikimem-Idempotency-Key``);
    - ``message``: the commit's summary line (else one made from the journal records);
    - ``action``: the commit's ``Wikimem-Action`` when it is not its single record's (``revert``, ``restore``…);
    - ``request``: the hash of what the idempotency key was used for (``Wikimem-Request``);
    - ``reverts``: the one commit a revert undid or a restore went back to (``Wikimem-Reverts``);
    - ``reverts_commits``, ``reverts_runs``: every commit and run a rollback undid (a trailer each);
    - ``undo_items``: the items an undo changes, one line each (the commit's body);
    - ``trailers``: further ``(name, value)`` trailers, written as ``Wikimem-<name>: <value>`` after the others
      (an approval's ``Approved-By``, a staged commit's ``Base``).
    """

    run: str | None = None
    actor: str | None = None
    source_conv: str | None = None
    idempotency_key: str | None = None
    message: str | None = None
    action: str | None = None
    request: str | None = None
    reverts: str | None = None
    reverts_commits: tuple[str, ...] = ()
    reverts_runs: tuple[str, ...] = ()
    undo_items: tuple[str, ...] = ()
    trailers: tuple[tuple[str, str], ...] = ()

    def filled_from(self, other: UnitInfo) -> UnitInfo:
        """This info, with ``other``'s value in each field this one leaves empty (a nested unit joining)."""
        missing = {f.name: getattr(other, f.name) for f in fields(self) if not getattr(self, f.name)}
        return replace(self, **missing) if missing else self

    def to_dict(self) -> dict[str, object]:
        """The fields that are set."""
        return {k: v for k, v in asdict(self).items() if v}


class MutationHook(Protocol):
    """What a layer above the plain store plugs into the seam."""

    def locked(self) -> AbstractContextManager[None]:
        """Inter-process exclusion held for a whole unit."""

    def writing(self, unit: Unit, paths: tuple[str, ...]) -> None:
        """Called inside the lock before ``paths`` (relative to the root) are written or deleted."""

    def committed(self, unit: Unit) -> str | None:
        """Called once per successful unit, inside the lock, after the writes; returns the commit id (or None)."""


class PlainHook:
    """The default hook: an ``flock`` on ``<root>/.wikimem.lock``, nothing else."""

    def __init__(self, root: Path):
        self._lock = FileLock(Path(root) / LOCK_NAME)

    def locked(self) -> AbstractContextManager[None]:
        return self._lock.hold()

    def writing(self, unit: Unit, paths: tuple[str, ...]) -> None:
        return None

    def committed(self, unit: Unit) -> str | None:
        return None


@dataclass
class Unit:
    """The state of one unit of work in progress, and what its hook reported."""

    info: UnitInfo
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

    def __init__(self, root: Path, journal: Journal, hook: MutationHook | None = None, door: Door | None = None):
        self.root = Path(root)
        # Every file of the folder is read and written through it (a staged run's writer is given an
        # OverlayDoor: its files live in memory over a git tree, never on disk).
        self.door = door if door is not None else Door(self.root)
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
    def unit(self, info: UnitInfo | None = None) -> Iterator[Unit]:
        """Run the block as one unit (joins the enclosing unit when nested: its ``info`` fills what is unset)."""
        info = info if info is not None else UnitInfo()
        with self.lock:
            if self._unit is not None:
                self._unit.info = self._unit.info.filled_from(info)
                yield self._unit
                return
            with self.hook.locked():
                unit = Unit(info=info, journal_size=self.journal.size())
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
        unit = self._unit if self.active else None
        if unit is not None and rel in unit.staged:
            return unit.staged[rel]
        return self.door.read(rel)

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
            if new is None:
                self.door.remove(rel)
            else:
                self.door.write(rel, new)
        self.journal.write_many(unit.records)
        # Listeners (the store's caches and revision) hear of a change once it is on disk, so that
        # another thread that reacts to it reads the new files, never the old ones.
        self._notify(tuple(unit.staged))

    def _restore(self, unit: Unit) -> None:
        """Put every file the unit may have touched back as it was, cut the journal back."""
        for rel, old in unit.originals.items():
            try:
                if self.door.read(rel) == old:
                    continue
            except WikimemError:  # something else took the file's place: put ours back over it
                pass
            if old is None:
                self.door.remove(rel)
            else:
                self.door.write(rel, old)
        self.journal.truncate(unit.journal_size)
        if unit.staged:
            self._notify(tuple(unit.staged))  # what was read back from the stage is stale now

    def _notify(self, paths: tuple[str, ...]) -> None:
        for listener in self.listeners:
            listener(paths)
