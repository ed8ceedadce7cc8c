"""The embedding side of a :class:`~wikimem.recall.index.MemoryIndex`: :class:`IndexVectors`
(the vector layer, foreground sync, background embedding, vector counts) and :class:`Contents`
(what the index holds, handed to it)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikimem.errors import StoreBusy
from wikimem.models import RecallItem

if TYPE_CHECKING:
    from wikimem.vectors import EmbeddingSearch

__all__ = ["IndexVectors", "Contents", "EMBED_SLICE", "EMBED_RETRY_SECONDS", "EMBED_BUSY_SECONDS",
           "DIARY_WANTED_MAX", "FOREGROUND_EMBED_MAX"]

log = logging.getLogger("wikimem.recall.index")  # the index's logger: its warnings keep their name

# Background embedding: texts per cache per step, at least; more once the
# cache is large (each step rewrites the cache file: steps grow with it).
EMBED_SLICE = 64
# After a failed background step, wait this long before the next try.
EMBED_RETRY_SECONDS = 30.0
# When another process is embedding the same memory, look again after this long.
EMBED_BUSY_SECONDS = 1.0
# Window entries waiting for the background worker, at most.
DIARY_WANTED_MAX = 4096
# Foreground: a query that finds the vectors behind embeds at most this many texts per cache on its own
# path (one batch); the rest is handed to the background worker, and until it is done the items without
# a vector rank by BM25 alone (the first query over a large memory never waits for all of it).
FOREGROUND_EMBED_MAX = 64


@dataclass(frozen=True)
class Contents:
    """What an index holds at one moment, as its vectors should cover it."""

    mode: str  # the diary mode: "window" (the wiki alone) or "all" (the wiki and every diary entry)
    key: tuple  # (wiki generation, diary generation or None): changes whenever the contents do
    items: list[RecallItem]  # the wiki items, in file order
    diary: list[RecallItem] | None  # mode "all": every diary entry
    conversations: frozenset[str] = frozenset()  # the conversation-like wiki files (neighbour context)

    @property
    def total(self) -> int:
        return len(self.items) + len(self.diary or ())


class IndexVectors:
    """The vectors of one index's memory: loaded lazily, kept in line with what the index holds.

    Foreground (the library's default): :meth:`prepare` embeds what the
    vectors lack before a query is scored — up to
    :data:`FOREGROUND_EMBED_MAX` texts; beyond that the rest is embedded in
    the background as below, so no query waits for a whole memory. Background
    (``background=True``): nothing of memory is embedded on the request
    path; :meth:`schedule` asks ``worker`` to run ``step`` (the index's
    :meth:`~wikimem.recall.index.MemoryIndex.embed_step`, held weakly by the
    caller), which hands its contents to :meth:`embed`.
    """

    def __init__(self, embedder: Any, vectors_dir: Path, *, binary_threshold: int, neighbour_context: Any,
                 background: bool, worker: Any, step: Callable[[], bool]):
        self.embedder = embedder
        self.vectors_dir = vectors_dir
        self.binary_threshold = binary_threshold
        self.neighbour_context = neighbour_context
        self.background = background
        self.retry_at = 0.0  # background: no new step before this (monotonic) time
        self._worker = worker
        self._step = step
        self._search: EmbeddingSearch | None = None
        self._broken = False  # the vector layer cannot load (no numpy): stop trying
        self._synced: tuple | None = None  # the contents key the vectors were last brought in line with
        self._handed: tuple | None = None  # foreground: contents left to the background worker (too many)
        self._counts: tuple[tuple, tuple[int, int]] | None = None  # ((key, search version), counts)
        self._wanted: dict[tuple[str, str, str], RecallItem] = {}  # background: window entries to embed
        self._lock = threading.Lock()  # the wanted entries
        self._embed_lock = threading.Lock()  # one foreground sync at a time

    def search(self) -> EmbeddingSearch | None:
        """The vector layer, created on first use; None when it cannot load."""
        if self._search is None and not self._broken:
            try:
                from wikimem.vectors import EmbeddingSearch, NeighbourContext
            except ImportError:  # no numpy: BM25 only, for good
                self._broken = True
                log.warning("embedder given but wikimem.vectors cannot load; retrieval is BM25 only")
                return None
            context = self.neighbour_context
            if context is True:
                context = NeighbourContext()
            elif isinstance(context, (int, float)) and not isinstance(context, bool):
                context = NeighbourContext(item_weight=float(context))  # the item's weight
            self._search = EmbeddingSearch(self.embedder, self.vectors_dir, binary_threshold=self.binary_threshold,
                                           context=context or None)
        return self._search

    def lags(self, key: tuple, mode: str) -> bool:
        """True when the vectors may not cover the contents with this key (window mode: the wiki alone counts)."""
        synced = self._synced
        return not (synced == key or (synced is not None and mode == "window" and synced[0] == key[0]))

    def prepare(self, contents: Contents | None) -> EmbeddingSearch | None:
        """The vector layer, ready to score a query; None: score with BM25 alone.

        ``contents``: what the index holds when the vectors lag it (else
        None). Foreground: embedded now. Background: scheduled, and the
        vectors that exist are used (none before the first step).
        """
        search = self.search()
        if search is None:
            return None
        if self.background:
            if contents is not None:
                self.schedule()
            return search if search.ready() else None  # nothing embedded yet: BM25 until the worker has run
        if contents is not None:
            with self._embed_lock:
                if self._synced != contents.key and self._handed != contents.key:
                    pending = search.sync(contents.items, max_new=FOREGROUND_EMBED_MAX,
                                          conversations=contents.conversations)
                    if contents.diary is not None:
                        pending += search.ensure_diary(contents.diary, max_new=FOREGROUND_EMBED_MAX)
                    if pending:  # a large memory: the rest in the background
                        self._handed = contents.key
                        self.schedule()
                    else:
                        self._synced = contents.key
        return search if search.ready() else None

    def diary_cosines(self, search: EmbeddingSearch, qv: Any, items: list[RecallItem]) -> list[float | None]:
        """Cosines of these diary entries with the query vector; None where an entry has no vector yet.

        Foreground: missing vectors are embedded now; background: those
        entries are embedded by the next step.
        """
        values = search.diary_scores(qv, items, embed_missing=not self.background)
        self._want([item for item, v in zip(items, values) if v is None])
        return values

    def counts(self, contents: Contents) -> tuple[int, int]:
        """``(embedded, total)`` of ``contents``; background: schedules what is missing."""
        search = self.search()
        if search is None:
            return 0, contents.total
        if self.background and self.lags(contents.key, contents.mode):
            self.schedule()
        memo_key = (contents.key, search.version)
        if self._counts is not None and self._counts[0] == memo_key:
            return self._counts[1]
        diary = contents.diary or []
        counts = (search.embedded(contents.items) + (search.diary_embedded(diary) if diary else 0), contents.total)
        self._counts = (memo_key, counts)
        return counts

    # -- background embedding -------------------------------------------------

    def schedule(self) -> None:
        """Ask the worker to run a step (unless a failure is recent)."""
        if time.monotonic() < self.retry_at:
            return
        if self._worker is None:
            from wikimem.vectors import shared_worker

            self._worker = shared_worker()
        self._worker.submit(id(self), self._step)

    def embed(self, contents: Contents) -> bool:
        """One background step: embed a slice of what ``contents`` (and the wanted window entries) lack.

        True while more is left. A failure is logged and retried after
        :data:`EMBED_RETRY_SECONDS`; another process embedding the same
        folder, after :data:`EMBED_BUSY_SECONDS`.
        """
        search = self.search()
        if search is None:
            return False
        with self._lock:
            wanted = list(self._wanted.values())
            self._wanted.clear()
        diary = contents.diary
        if wanted:
            diary = (diary or []) + wanted
        slice_ = max(EMBED_SLICE, len(contents.items) // 4)
        try:
            with search.claim():
                pending = search.sync(contents.items, max_new=slice_, conversations=contents.conversations)
                if diary is not None:
                    left = search.ensure_diary(diary, max_new=slice_)
                    if left:
                        self._requeue(wanted)  # those already embedded are no-ops next time
                    pending += left
        except StoreBusy:  # another process is embedding this memory: look again soon
            self.retry_at = time.monotonic() + EMBED_BUSY_SECONDS
            self._requeue(wanted)
            return False
        except Exception as exc:
            self._requeue(wanted)
            self.retry_at = time.monotonic() + EMBED_RETRY_SECONDS
            log.warning("background embedding failed, retrying in %.0f s: %s", EMBED_RETRY_SECONDS, exc)
            return False
        if pending == 0:
            self._synced = contents.key
        return pending > 0

    def _want(self, items: list[RecallItem]) -> None:
        """Background: diary entries a query met without a vector are embedded next."""
        if not items or not self.background:
            return
        with self._lock:
            for item in items:
                self._wanted[(item.file, item.name, item.content)] = item
            while len(self._wanted) > DIARY_WANTED_MAX:  # a flood of windows: keep the newest
                self._wanted.pop(next(iter(self._wanted)))
        self.schedule()

    def _requeue(self, items: list[RecallItem]) -> None:
        with self._lock:
            for item in items:
                self._wanted.setdefault((item.file, item.name, item.content), item)
