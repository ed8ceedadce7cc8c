"""The mutation seam: how every write of a store happens, and who hears of it.

All writes of a :class:`~wikimem.MemoryStore` and its :class:`~wikimem.Diary`
go through one :class:`Writer`. A write runs inside a *unit*:

1. the writer takes its thread lock (:attr:`Writer.lock`), then the hook's
   inter-process lock (``hook.locked()``); the caller re-reads the file it
   will change *under* the lock, so no concurrent writer's change is lost;
2. the caller applies its changes with :meth:`Writer.apply` (atomic file
   writes plus one journal line per mutation);
3. when the unit ends without error, ``hook.committed(unit)`` is called,
   still inside the lock — the git layer turns the unit into exactly one
   commit and returns its id, which the writer keeps as ``unit.commit``;
4. when the unit ends with an error, every file it touched is put back as it
   was and the journal is cut back, so a failed unit leaves nothing behind;
5. a unit killed half-way (the process dies) leaves its marker
   ``.wikimem-unit`` (the paths it was writing and the journal size it
   started from, written durably before the first file): the next holder of
   the lock calls :meth:`Writer.recover` and the hook puts those paths back
   as its last commit has them, so a write that was never acknowledged never
   turns up later (as a hand edit, say) next to its retry.

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

import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ContextManager, Iterator, Protocol

from .fsio import atomic_write, read_bytes, remove_file
from .journal import Journal
from .locking import FileLock

__all__ = ["Mutation", "MutationHook", "PlainHook", "Writer", "Unit", "LOCK_NAME", "UNIT_MARKER"]

LOCK_NAME = ".wikimem.lock"
UNIT_MARKER = ".wikimem-unit"


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

    def committed(self, unit: "Unit") -> str | None:
        """Called once per successful unit, inside the lock, after the writes; returns the commit id (or None)."""


class PlainHook:
    """The default hook: an ``flock`` on ``<root>/.wikimem.lock``, nothing else."""

    def __init__(self, root: Path):
        self._lock = FileLock(Path(root) / LOCK_NAME)

    def locked(self) -> ContextManager[None]:
        return self._lock.hold()

    def committed(self, unit: "Unit") -> str | None:
        return None


@dataclass
class Unit:
    """The state of one unit of work in progress, and what its hook reported."""

    info: dict
    journal_size: int
    originals: dict[str, bytes | None] = field(default_factory=dict)
    mutations: list[Mutation] = field(default_factory=list)
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
        self.listeners: list[Callable[[tuple[str, ...]], None]] = []

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
                self._unit = unit
                try:
                    yield unit
                    if unit.mutations:
                        unit.commit = self.hook.committed(unit)
                except BaseException:
                    self._restore(unit.originals, unit.journal_size)
                    raise
                finally:
                    self._unit = None
                    if unit.originals:
                        remove_file(self.root / UNIT_MARKER)

    def recover(self, reset: Callable[[list[str]], None]) -> list[str]:
        """Undo what a killed unit left (call under the lock, before anything else); the paths reset.

        ``reset`` puts the given paths back as the hook knows them last (the
        versioned store: as its branch has them). The journal is cut back to
        where the unit started.
        """
        marker = self.root / UNIT_MARKER
        data = read_bytes(marker)
        if data is None:
            return []
        try:
            left = json.loads(data)
            paths = [p for p in left.get("paths", []) if isinstance(p, str)]
            journal_size = int(left.get("journal_size", -1))
        except (ValueError, TypeError, AttributeError):
            paths, journal_size = [], -1
        if paths:
            reset(paths)
            self._notify(tuple(paths))
        if 0 <= journal_size <= self.journal.size():
            self.journal.truncate(journal_size)
        remove_file(marker)
        return paths

    def apply(self, changes: dict[str, tuple[bytes | None, bytes | None]], record: dict | None) -> Mutation:
        """Write ``{relpath: (old, new)}`` (``new=None`` deletes) and journal ``record``.

        Must run inside :meth:`unit`. ``old`` is what the caller read under
        the lock. Either everything happens, or (on any error) the files
        and the journal are as they were before this call.
        """
        unit = self._unit
        if unit is None:
            raise RuntimeError("Writer.apply outside a unit")
        if any(rel not in unit.originals for rel in changes):
            paths = list(unit.originals) + [rel for rel in changes if rel not in unit.originals]
            marker = {"journal_size": unit.journal_size, "paths": paths}
            atomic_write(self.root / UNIT_MARKER, json.dumps(marker, ensure_ascii=False).encode("utf-8"))
        for rel, (old, _new) in changes.items():
            unit.originals.setdefault(rel, old)
        journal_size = self.journal.size()
        try:
            for rel, (_old, new) in changes.items():
                path = self.root / rel
                if new is None:
                    remove_file(path)
                else:
                    atomic_write(path, new)
            if record is not None:
                self.journal.write(record)
        except BaseException:
            self._restore({rel: old for rel, (old, _new) in changes.items()}, journal_size)
            raise
        mutation = Mutation(record=record or {}, paths=tuple(changes))
        unit.mutations.append(mutation)
        self._notify(mutation.paths)
        return mutation

    def _restore(self, originals: dict[str, bytes | None], journal_size: int) -> None:
        changed = []
        for rel, old in originals.items():
            path = self.root / rel
            if read_bytes(path) == old:
                continue
            if old is None:
                remove_file(path)
            else:
                atomic_write(path, old)
            changed.append(rel)
        self.journal.truncate(journal_size)
        if changed:
            self._notify(tuple(changed))

    def _notify(self, paths: tuple[str, ...]) -> None:
        for listener in self.listeners:
            listener(paths)
