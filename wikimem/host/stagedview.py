"""The index a retrieve with ``include_staged`` reads: one owner's approved memory plus its staged runs.

:class:`StagedView` builds it once per owner and process at a time (single
flight: concurrent callers wait for the one build, then share it) and keeps
it fresh incrementally: after a write of ``main`` or a staged run, the
overlay is re-planned path by path (:class:`~wikimem.versioned.OverlayCache`)
and the index re-reads only the RecallFiles and diary days that changed in
the view (:class:`~wikimem.versioned.ViewStore`), as the live index does
after a write. Cached by (main's head, every staged tip); the tips are read
from the ref files only when the staged refs' folder or ``packed-refs``
moved (a request on an unchanged owner reads one ref and two stamps).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wikimem.fsio import stat_stamp

__all__ = ["StagedView"]


class StagedView:
    """``include_staged``'s index of one owner (see the module docstring); safe to share between threads."""

    def __init__(self, vstore: Any, staging: Callable[[], Any], make_index: Callable[[Any], Any]):
        self._vstore = vstore
        self._git_dir = Path(vstore.root) / ".git"
        self._tips: tuple[Any, tuple] = (None, ())  # (the staged refs' stamps, the tips read then)
        self._staging = staging  # the owner's Staging (made lazily by the owner)
        self._make_index = make_index  # store -> a MemoryIndex over it
        self._lock = threading.Lock()
        self._cache: Any = None  # OverlayCache, made at the first build
        self._store: Any = None  # ViewStore the index reads
        self._current: tuple[tuple, Any, frozenset] | None = None  # (key, index, staged items)

    def fresh(self) -> tuple[Any, frozenset] | None:
        """The index over the approved memory plus every staged run, and the staged items; None when the owner has
        no staged run (the live index serves then)."""
        key = self._key()
        current = self._current
        if key[1] and (current is None or current[0] != key):
            with self._lock:  # one update at a time; who waited finds it done
                key = self._key()
                current = self._current
                if key[1] and (current is None or current[0] != key):
                    current = self._update(self._staging(), key)
        if not key[1] or current is None:
            return None
        return current[1], current[2]

    def _update(self, staging: Any, key: tuple) -> tuple[tuple, Any, frozenset]:
        from wikimem.versioned import OverlayCache, ViewStore

        if self._cache is None:
            self._cache = OverlayCache(staging)
        snapshot, staged, changed = self._cache.update(key)
        if self._store is None:
            self._store = ViewStore(snapshot, self._main_items)
            index = self._make_index(self._store)
        else:
            self._store.replace(snapshot, changed)
            index = self._current[1] if self._current is not None else self._make_index(self._store)
        self._current = (key, index, staged)
        return self._current

    def _main_items(self, file: str, blob: bytes) -> list | None:
        """The live store's items of ``file`` (parsed already, cached by its stamp) when the file on disk is the blob
        ``main`` holds; else None (the snapshot parses it)."""
        data = self._vstore.door.read(f"wiki/{file}.md")
        if data is None or hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest().encode() != blob:
            return None
        return self._vstore.store.items(file)

    def _key(self) -> tuple:
        """(main's head, every staged tip) — what :meth:`~wikimem.versioned.Staging.overlay_key` says, read cheaply."""
        from wikimem.versioned import folder_staged

        stamps = (stat_stamp(self._git_dir / "refs" / "heads" / "staged"), stat_stamp(self._git_dir / "packed-refs"))
        head = self._vstore.head()
        seen, tips = self._tips
        if stamps != seen or seen is None:  # (stamps first, then the files: a move in between is seen next time)
            tips = tuple(sorted(folder_staged(self._vstore.root).items()))
            self._tips = (stamps, tips)
        return (head, tips)
