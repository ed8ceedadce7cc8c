"""BM25 candidates joined with cosine scores and fused (SPEC §3): :class:`HybridRanker`."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from .diary_index import DiaryIndex
from .fusion import Candidate, fuse
from .results import Query
from .semantic import Contents, IndexVectors
from .wiki_index import WikiIndex

if TYPE_CHECKING:
    from wikimem.vectors import EmbeddingSearch

__all__ = ["HybridRanker"]

log = logging.getLogger("wikimem.recall.index")  # the index's logger: its warnings keep their name


class HybridRanker:
    """Where an index's BM25 side and its vectors meet.

    ``lock`` is the index's: the wiki and diary indexes are read under it,
    the vector layer (which may call the embedder) is asked outside it.
    """

    def __init__(self, vectors: IndexVectors, wiki: WikiIndex, lock: threading.RLock, weight: float):
        self.vectors = vectors
        self.wiki = wiki
        self.lock = lock
        self.weight = weight
        self._ok = True  # the last try worked: a failure is logged once, not per query

    def rank(self, q: Query, cands: list[Candidate], pool: int, contents: Contents | None,
             diary: DiaryIndex | None) -> list[Candidate] | None:
        """BM25 candidates fused with cosine scores; None when the embedding path fails (BM25 only).

        ``contents``: what the index holds when the vectors lag it;
        ``diary``: the diary index (``q.mode == "all"``).
        """
        try:
            search = self.vectors.prepare(contents)
            if search is None:
                return None
            joined = self._join(q, cands, pool, search, diary)
        except Exception as exc:  # down, timeout, bad answer, mismatch: degrade, never raise
            if self._ok:
                log.warning("embedding path failed, retrieval is BM25 only: %s", exc)
            self._ok = False
            return None
        self._ok = True
        return fuse(joined, self.weight) if joined else []

    def _join(self, q: Query, cands: list[Candidate], pool: int, search: EmbeddingSearch,
              diary: DiaryIndex | None) -> list[Candidate]:
        """The union of BM25 and vector candidates, each with its BM25 score and its cosine (or None)."""
        qv = search.query_vector(q.text)
        wiki_cos = search.wiki_scores(qv, pool, [c.key for c in cands if c.kind == "wiki"])
        by_key = {c.key: c for c in cands}
        if q.mode == "window":
            diary_cos = self.vectors.diary_cosines(search, qv, q.window) if q.window else []
            diary_new = [((i.file, i.name, n), i, v) for n, (i, v) in enumerate(zip(q.window, diary_cos))]
        else:
            assert diary is not None
            diary_new = self._diary_candidates(q, qv, pool, by_key, search, diary)
        with self.lock:
            self._add_wiki(by_key, wiki_cos, q, diary)
            for key, item, value in diary_new:
                cand = by_key.get(key)
                if cand is None:
                    cand = by_key[key] = Candidate(key, item, "diary", 0.0)
                cand.cos = None if value is None else float(value)
            if diary is not None and q.mode == "all":
                self._rescore_diary(by_key, q, diary)
        return list(by_key.values())

    def _add_wiki(self, by_key: dict, cos: dict, q: Query, diary: DiaryIndex | None) -> None:
        """Cosines onto wiki candidates; vector-only ones join with their BM25 score (under the lock)."""
        wiki = self.wiki
        fresh = [k for k in map(tuple, cos) if k not in by_key and wiki.get(k[0], k[1]) is not None]
        terms = set(q.terms)
        # Most vector-only candidates share no term with the query: their BM25 is 0, no need to score.
        matching = [k for k in fresh if terms.intersection(wiki.bm25.doc_terms(k))]
        scores: dict[Any, float] = {}
        if matching:
            peers = [diary.bm25] if diary is not None and q.mode == "all" else []
            scores = wiki.bm25.scores(matching, q.terms, extra=q.extra, peers=peers)
        for key in fresh:
            by_key[key] = Candidate(key, wiki.item(key), "wiki", scores.get(key, 0.0))
        for key, value in cos.items():
            cand = by_key.get(tuple(key))
            if cand is not None and cand.kind == "wiki":
                cand.cos = float(value)

    def _diary_candidates(self, q: Query, qv: Any, pool: int, by_key: dict, search: EmbeddingSearch,
                          diary: DiaryIndex) -> list[tuple]:
        """``diary="all"``: the diary's vector top plus the BM25 diary candidates, with cosines."""
        top = search.diary_search(qv, pool)
        with self.lock:
            listed = [(c.key, c.item) for c in by_key.values() if c.kind == "diary"]
            for digest, _ in top:
                for key in diary.keys_of_hash(digest):
                    if q.in_window(key[0]):
                        listed.append((key, diary.item(key)))
        listed = list(dict(listed).items())
        values = self.vectors.diary_cosines(search, qv, [item for _, item in listed])
        return [(key, item, v) for (key, item), v in zip(listed, values)]

    def _rescore_diary(self, by_key: dict, q: Query, diary: DiaryIndex) -> None:
        """BM25 of diary candidates that only the vectors found (``diary="all"``, under the lock)."""
        missing = [k for k, c in by_key.items() if c.kind == "diary" and not c.bm25]
        if missing and q.terms:
            scores = diary.bm25.scores(missing, q.terms, peers=[self.wiki.bm25])
            for key, value in scores.items():
                by_key[key].bm25 = value
