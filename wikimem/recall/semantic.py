"""The embedding side of :class:`~wikimem.recall.index.MemoryIndex`: the vector layer,
cosine candidates for fusion, foreground and background embedding, vector counts.

:class:`RetrievalVectors` is mixed into ``MemoryIndex``, whose ``__init__`` sets the
state used here: ``embedder``, ``vectors_dir``, ``binary_threshold``, ``neighbour_context``,
``embed_in_background``, ``_lock``, ``_embed_lock``, ``_search``, ``_search_broken``,
``_generation``, ``_synced``, ``_retry_at``, ``_counts``, ``_diary_wanted``, ``_worker``; the
index side provides ``_ensure_fresh``, ``_files``, ``_bm25`` and ``_diary_index``.
"""

from __future__ import annotations

import logging
import time
import weakref

from wikimem.errors import StoreBusy
from wikimem.models import RecallItem

from .fusion import Candidate
from .results import Query

__all__ = ["RetrievalVectors", "EMBED_SLICE", "EMBED_RETRY_SECONDS", "EMBED_BUSY_SECONDS", "DIARY_WANTED_MAX"]

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


class RetrievalVectors:
    """Embeddings for a :class:`~wikimem.recall.index.MemoryIndex` (a mixin; see the module docstring)."""

    # -- embeddings (optional) ----------------------------------------------

    def _all_items(self) -> list[RecallItem]:
        return [item for items in self._files.values() for item in items.values()]

    def _embedding_search(self):
        """The vector layer, created on first use; None when it cannot load."""
        if self._search is None and not self._search_broken:
            try:
                from wikimem.vectors import EmbeddingSearch, NeighbourContext
            except ImportError:  # no numpy: BM25 only, for good
                self._search_broken = True
                log.warning("embedder given but wikimem.vectors cannot load; retrieval is BM25 only")
                return None
            context = self.neighbour_context
            if context is True:
                context = NeighbourContext()
            self._search = EmbeddingSearch(self.embedder, self.vectors_dir, binary_threshold=self.binary_threshold,
                                           context=context or None)
        return self._search

    def _state_key(self, mode: str) -> tuple:
        diary = self._diary_index.generation if (mode == "all" and self._diary_index is not None) else None
        return self._generation, diary

    def _snapshot_for_vectors(self, mode: str) -> tuple | None:
        """``(state key, wiki items, diary items)`` when the vectors lag the index (under the lock)."""
        if self.embedder is None:
            return None
        key = self._state_key(mode)
        if self._synced == key or (self._synced is not None and mode == "window" and self._synced[0] == key[0]):
            return None
        diary = self._diary_index.items() if mode == "all" and self._diary_index is not None else None
        return key, self._all_items(), diary

    def _sync_vectors(self, search, snapshot: tuple | None) -> None:
        """Foreground: embed what the vectors lack before scoring (the library's default)."""
        if snapshot is None:
            return
        key, items, diary = snapshot
        with self._embed_lock:
            if self._synced == key:
                return
            search.sync(items)
            if diary is not None:
                search.ensure_diary(diary)
            self._synced = key

    def _scored(self, q: Query, cands: list[Candidate], pool: int, search) -> list[Candidate]:
        """The union of BM25 and vector candidates, each with its BM25 score and its cosine (or None)."""
        qv = search.query_vector(q.text)
        wiki_cos = search.wiki_scores(qv, pool, [c.key for c in cands if c.kind == "wiki"])
        by_key = {c.key: c for c in cands}
        lazy = not self.embed_in_background
        if q.mode == "window":
            diary_cos = search.diary_scores(qv, q.window, embed_missing=lazy) if q.window else []
            diary_new = [((i.file, i.name, n), i, v) for n, (i, v) in enumerate(zip(q.window, diary_cos))]
            self._want_diary([i for i, v in zip(q.window, diary_cos) if v is None])
        else:
            diary_new = self._diary_vector_candidates(q, qv, pool, by_key, search)
        with self._lock:
            self._add_wiki(by_key, wiki_cos, q)
            for key, item, value in diary_new:
                cand = by_key.get(key)
                if cand is None:
                    cand = by_key[key] = Candidate(key, item, "diary", 0.0)
                cand.cos = None if value is None else float(value)
            if q.mode == "all":
                self._rescore_diary(by_key, q)
        return list(by_key.values())

    def _add_wiki(self, by_key: dict, cos: dict, q: Query) -> None:
        """Cosines onto wiki candidates; vector-only ones join with their BM25 score (under the lock)."""
        files = self._files
        fresh = [k for k in map(tuple, cos) if k not in by_key and k[1] in files.get(k[0], ())]
        terms = set(q.terms)
        # Most vector-only candidates share no term with the query: their BM25 is 0, no need to score.
        matching = [k for k in fresh if terms.intersection(self._bm25.doc_terms(k))]
        if matching:
            peers = [self._diary_index.bm25] if q.mode == "all" else []
            scores = self._bm25.scores(matching, q.terms, extra=q.extra, peers=peers)
        else:
            scores = {}
        for key in fresh:
            by_key[key] = Candidate(key, self._files[key[0]][key[1]], "wiki", scores.get(key, 0.0))
        for key, value in cos.items():
            cand = by_key.get(tuple(key))
            if cand is not None and cand.kind == "wiki":
                cand.cos = float(value)

    def _diary_vector_candidates(self, q: Query, qv, pool: int, by_key: dict, search) -> list[tuple]:
        """``diary="all"``: the diary's vector top plus the BM25 diary candidates, with cosines."""
        top = search.diary_search(qv, pool)
        with self._lock:
            index = self._diary_index
            listed = [(c.key, c.item) for c in by_key.values() if c.kind == "diary"]
            for digest, _ in top:
                for key in index.keys_of_hash(digest):
                    if q.dates is None or q.dates[0] <= key[0] <= q.dates[1]:
                        listed.append((key, index.item(key)))
        listed = list(dict(listed).items())
        values = search.diary_scores(qv, [item for _, item in listed], embed_missing=not self.embed_in_background)
        self._want_diary([item for (_, item), v in zip(listed, values) if v is None])
        return [(key, item, v) for (key, item), v in zip(listed, values)]

    def _rescore_diary(self, by_key: dict, q: Query) -> None:
        """BM25 of diary candidates that only the vectors found (``diary="all"``, under the lock)."""
        missing = [k for k, c in by_key.items() if c.kind == "diary" and not c.bm25]
        if missing and q.terms:
            scores = self._diary_index.bm25.scores(missing, q.terms, peers=[self._bm25])
            for key, value in scores.items():
                by_key[key].bm25 = value

    # -- background embedding -------------------------------------------------

    def _want_diary(self, items: list[RecallItem]) -> None:
        """Background: diary entries a query met without a vector are embedded next."""
        if not items or not self.embed_in_background:
            return
        with self._lock:
            for item in items:
                self._diary_wanted[(item.file, item.name, item.content)] = item
            while len(self._diary_wanted) > DIARY_WANTED_MAX:  # a flood of windows: keep the newest
                self._diary_wanted.pop(next(iter(self._diary_wanted)))
        self._schedule()

    def _schedule(self) -> None:
        """Ask the worker to embed what the vectors lack (unless a failure is recent)."""
        if time.monotonic() < self._retry_at:
            return
        worker = self._worker
        if worker is None:
            from wikimem.vectors import shared_worker

            worker = self._worker = shared_worker()
        ref = weakref.ref(self)

        def job() -> bool:
            index = ref()
            return index.embed_step() if index is not None else False

        worker.submit(id(self), job)

    def embed_step(self) -> bool:
        """One background step: embed a slice of what is missing; True while more is left."""
        search = self._embedding_search()
        if search is None:
            return False
        with self._lock:
            mode = self.diary if self._diary_index is None else "all"
            self._ensure_fresh(mode)
            key = self._state_key(mode)
            items = self._all_items()
            diary = self._diary_index.items() if mode == "all" else None
            wanted = list(self._diary_wanted.values())
            self._diary_wanted.clear()
        if wanted:
            diary = (diary or []) + wanted
        slice_ = max(EMBED_SLICE, len(items) // 4)
        try:
            with search.claim():
                pending = search.sync(items, max_new=slice_)
                if diary is not None:
                    left = search.ensure_diary(diary, max_new=slice_)
                    if left:
                        self._requeue(wanted)  # those already embedded are no-ops next time
                    pending += left
        except StoreBusy:  # another process is embedding this memory: look again soon
            self._retry_at = time.monotonic() + EMBED_BUSY_SECONDS
            self._requeue(wanted)
            return False
        except Exception as exc:
            self._requeue(wanted)
            self._retry_at = time.monotonic() + EMBED_RETRY_SECONDS
            log.warning("background embedding failed, retrying in %.0f s: %s", EMBED_RETRY_SECONDS, exc)
            return False
        with self._lock:
            if pending == 0:
                self._synced = key
            return pending > 0 or self._state_key(mode) != key

    def _requeue(self, items: list[RecallItem]) -> None:
        with self._lock:
            for item in items:
                self._diary_wanted.setdefault((item.file, item.name, item.content), item)

    def vector_counts(self) -> tuple[int, int]:
        """``(embedded, total)``: items (and, with ``diary="all"``, diary entries) with their vectors.

        Without an embedder ``embedded`` is 0. With background embedding,
        asking also schedules what is missing, so a client can poll this
        until both numbers agree.
        """
        with self._lock:
            mode = self.diary if self._diary_index is None else "all"
            self._ensure_fresh(mode)
            items = self._all_items()
            diary = self._diary_index.items() if mode == "all" else []
            snapshot = self._snapshot_for_vectors(mode)
        total = len(items) + len(diary)
        search = self._embedding_search() if self.embedder is not None else None
        if search is None:
            return 0, total
        if snapshot is not None and self.embed_in_background:
            self._schedule()
        memo_key = (self._state_key(mode), search.version)
        if self._counts is not None and self._counts[0] == memo_key:
            return self._counts[1]
        counts = (search.embedded(items) + (search.diary_embedded(diary) if diary else 0), total)
        self._counts = (memo_key, counts)
        return counts

    def _vector_counts_dict(self) -> dict[str, int] | None:
        try:
            embedded, total = self.vector_counts()
        except Exception:  # explain must never fail because of the vector layer
            return None
        return {"embedded": embedded, "total": total}

    def wait_for_vectors(self, timeout: float = 60.0) -> bool:
        """Block until every item has its vectors (background embedding); False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            embedded, total = self.vector_counts()
            if embedded >= total:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
