"""One owner's indexes: for each layer of its folder, the live one, a few as of past points, one with its staged runs.

Held by the :class:`~wikimem.host.Owner` as ``owner.indexes``; every index is a
:class:`~wikimem.MemoryIndex` over one layer's store (the shared layer, or a
character's ``characters/<id>/``), so a character's retrieve ranks only the
layers it may read (:mod:`wikimem.host.layered` merges them). What each cache
keys on is listed in ARCHITECTURE.md, "Caches".
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .freshness import IndexSlot
from .stagedview import StagedView

__all__ = ["Indexes", "AS_OF_CACHE"]

# As-of indexes are immutable (a commit never changes); keep a few per owner.
AS_OF_CACHE = 4


class Indexes:
    """The live, as-of and staged indexes of one owner, per layer; ``make(store, vectors_dir)`` makes one."""

    def __init__(self, vstore: Any, make: Callable[[Any, Path | None], Any], staging: Callable[[], Any],
                 cache_dir: Path | None = None):
        self._vstore = vstore
        self._make = make
        self._staging = staging
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._slots: dict[str | None, IndexSlot] = {}
        self._as_of: OrderedDict[tuple[str, str | None], Any] = OrderedDict()
        # The shared layer's staged view is kept fresh incrementally (StagedView); a character layer's is built whole,
        # one build at a time.
        self._staged_make = lambda store: make(store, self._vectors("as-of-vectors", None))
        self._shared_staged = StagedView(vstore, staging, self._staged_make)
        self._staged: dict[str | None, tuple[tuple, Any, frozenset]] = {}
        self._staged_build = threading.Lock()

    def _vectors(self, kind: str, layer: str | None) -> Path | None:
        """Where an index keeps its vectors: the host's cache folder of the owner (the shared layer's live index
        keeps them in the folder, as the library does)."""
        if self._cache_dir is None:
            return None
        base = self._cache_dir / kind
        return base if layer is None else base / "layers" / layer

    def live(self, layer: str | None = None) -> Any:
        """The index of a layer, fresh with every process's writes and hand edits."""
        slot = self._slots.get(layer)
        if slot is None:
            store = self._vstore.store.layer(layer)  # (validates the layer's id)
            vectors = None if layer is None else self._vectors("vectors", layer)
            with self._lock:
                slot = self._slots.setdefault(layer, IndexSlot(self._vstore, lambda: self._make(store, vectors),
                                                               layer))
        return slot.fresh()

    def as_of(self, commit: str, layer: str | None = None) -> Any:
        """The index of a layer as it was at ``commit`` (a full commit id), read from the object store."""
        key = (commit, layer)
        with self._lock:
            index = self._as_of.get(key)
            if index is not None:
                self._as_of.move_to_end(key)
                return index
        snapshot = self._vstore.snapshot(commit).layer(layer)
        index = self._make(snapshot, self._vectors("as-of-vectors", layer))
        with self._lock:
            self._as_of[key] = index
            while len(self._as_of) > AS_OF_CACHE:
                self._as_of.popitem(last=False)
        return index

    def with_staged(self, layer: str | None = None) -> tuple[Any, frozenset]:
        """The index of a layer's approved memory plus every staged run, and which items are staged; kept until
        main's head or a staged tip moves. One build at a time: a caller that waited for another's build uses it."""
        if layer is None:
            found = self._shared_staged.fresh()
            return found if found is not None else (self.live(None), frozenset())
        staging = self._staging()
        key = staging.overlay_key()
        if not key[1]:
            return self.live(layer), frozenset()
        cached = self._staged.get(layer)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        with self._staged_build:
            cached = self._staged.get(layer)
            key = staging.overlay_key()
            if cached is not None and cached[0] == key:
                return cached[1], cached[2]
            overlay = staging.overlay()
            index = self._make(overlay.snapshot.layer(layer), self._vectors("as-of-vectors", layer))
            self._staged[layer] = (overlay.key, index, overlay.staged)
            return index, overlay.staged

    def drop_staged(self) -> None:
        """Forget the staged views (a staged run was approved or discarded here)."""
        self._staged.clear()

    def reset(self) -> None:
        """Forget every index (the history was rewritten: a forget)."""
        with self._lock:
            self._slots.clear()
            self._as_of.clear()
        self._staged.clear()
        self._shared_staged = StagedView(self._vstore, self._staging, self._staged_make)
