"""Keeping one owner's :class:`~wikimem.MemoryIndex` fresh across processes.

Other gunicorn workers write the same owner, and people edit the markdown by
hand. Before each use, an :class:`IndexSlot` makes two cheap checks:

1. the repository HEAD (one ref read): when it moved, the commits in
   between name the RecallFiles they changed (``vs.changed_paths``);
2. the wiki folder's listing with each file's (inode, mtime, size): a file
   that appeared, vanished or was rewritten — by an editor, by ``git`` —
   shows up here even without a commit. The listing is taken when HEAD or
   the folder's own stamp moved (every write through wikimem, any rename
   into the folder), and at least every :data:`FULL_CHECK_SECONDS`
   otherwise: a hand edit made in place is seen within that bound, and a
   request on an unchanged owner costs one ref read and one ``stat``.

The diary index (``diary="all"``) is looked at under the same rule
(:class:`DiaryCheck`): its folder's listing only when HEAD or the diary
folder's stamp moved, or every :data:`FULL_CHECK_SECONDS`.

Only the RecallFiles named by either check are re-read (``index.refresh``);
anything unexpected falls back to a full ``rebuild``. Writes made in this
process are seen by the index on its own (``store.revision``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem.format import DIARY_DIR, WIKI_DIR, is_memory_name, layer_of, layer_prefix, memory_path
from wikimem.fsio import Stamp, folder_signature, stat_stamp

if TYPE_CHECKING:
    from wikimem.recall import MemoryIndex

__all__ = ["IndexSlot", "DiaryCheck", "wiki_signature", "FULL_CHECK_SECONDS"]

# The wiki folder's full listing (each file's stamp) is taken at least this often (seconds).
FULL_CHECK_SECONDS = 1.0

log = logging.getLogger(__name__)

Signature = dict[str, Stamp]


def _wiki_file(name: str) -> str | None:
    return name[:-3] if is_memory_name(name) else None


def wiki_signature(root: Path, layer: str | None = None) -> Signature:
    """``{RecallFile: (inode, mtime_ns, size)}`` of the wiki files of the memory folder (of one of its layers)."""
    return folder_signature(Path(root) / layer_prefix(layer) / WIKI_DIR, _wiki_file)


def _changed(old: Signature, new: Signature) -> set[str]:
    return {f for f in old.keys() | new.keys() if old.get(f) != new.get(f)}


def _wiki_files(paths: list[str], layer: str | None = None) -> set[str]:
    """RecallFile names among repository paths (``wiki/<file>.md`` of the layer)."""
    kinds = (memory_path(rel) for rel in paths if layer_of(rel)[0] == layer)
    return {kind[1] for kind in kinds if kind is not None and kind[0] == WIKI_DIR}


class DiaryCheck:
    """Whether a layer's diary may have changed since the last call: HEAD or the diary folder's stamp moved, or the
    time bound passed (a hand edit made in place). True the first time. Called under the index's lock."""

    def __init__(self, vstore, layer: str | None = None):
        self.vstore = vstore
        self._diary = Path(vstore.root) / layer_prefix(layer) / DIARY_DIR
        self._seen: tuple[str | None, Stamp | None] | None = None
        self._next_full = 0.0

    def __call__(self) -> bool:
        seen, now = (self.vstore.head(), stat_stamp(self._diary)), time.monotonic()
        if seen == self._seen and now < self._next_full:
            return False
        self._seen, self._next_full = seen, now + FULL_CHECK_SECONDS
        return True


class IndexSlot:
    """One owner's index (of one layer of its folder) and what it was last synchronised with."""

    def __init__(self, vstore, make_index: Callable[[], MemoryIndex], layer: str | None = None):
        self.vstore = vstore
        self.layer = layer
        self._make_index = make_index
        self._lock = threading.Lock()
        self.index: MemoryIndex | None = None
        self._signature: Signature = {}
        self._seen: tuple[str | None, Stamp | None] | None = None  # (head, folder stamp) the index matches
        self._wiki = Path(vstore.root) / layer_prefix(layer) / WIKI_DIR
        self._next_full = 0.0  # (monotonic) the next full listing is due

    def fresh(self) -> MemoryIndex:
        """The index, brought up to date with the repository and the working tree.

        The two checks run without the lock: concurrent requests on an
        unchanged owner (the common case) never queue behind each other's
        file reads; only a change takes the lock and catches up.
        """
        # Read HEAD before the files: a write landing in between makes the
        # next call refresh once more, never miss a change.
        head, folder, now = self.vstore.head(), stat_stamp(self._wiki), time.monotonic()
        index, seen = self.index, self._seen
        if index is not None and seen == (head, folder) and now < self._next_full:
            return index
        with self._lock:
            head, folder, now = self.vstore.head(), stat_stamp(self._wiki), time.monotonic()
            if self.index is not None and self._seen == (head, folder) and now < self._next_full:
                return self.index  # another thread caught up meanwhile
            signature = wiki_signature(self.vstore.root, self.layer)
            self._next_full = now + FULL_CHECK_SECONDS
            if self.index is None:
                self.index = self._make_index()
                self.index.diary_changed = DiaryCheck(self.vstore, self.layer)
                self.index.rebuild()
            elif head != self._seen_head or signature != self._signature:
                self._catch_up(self.index, head, signature)
            self._signature = signature
            self._seen = (head, folder)  # (last: a lock-free reader trusts the index once this matches)
            return self.index

    @property
    def _seen_head(self) -> str | None:
        """The HEAD the index was last brought up to."""
        return self._seen[0] if self._seen is not None else None

    def _catch_up(self, index: MemoryIndex, head: str | None, signature: Signature) -> None:
        try:
            files = _changed(self._signature, signature)
            seen = self._seen_head
            if head != seen:
                if seen is None or head is None:
                    raise LookupError("no common commit")
                files |= _wiki_files(self.vstore.changed_paths(seen, head), self.layer)
            if files:
                index.refresh(files)
        except Exception as exc:  # an odd file name, a vanished commit: start over
            log.info("full index rebuild for %s: %s", self.vstore.store.root, exc)
            self.vstore.store.invalidate()
            index.rebuild()
