"""MemoryIndex: retrieval over a store — BM25 (+ optional embedding fusion),
one-hop wiki-link expansion, a token budget and time gating.

The pipeline of :meth:`MemoryIndex.retrieve`, in order:

1. time gate — ``time_range`` if given ("explicit"), else the query's own
   time expressions (:func:`~wikimem.timeparse.scan_time`, "parsed"; they
   are then taken out of the text that is searched). The window's diary
   entries join the candidates as ``RecallItem(file=date, name=time)``; an
   empty window is widened by one day on each side, once. The wiki is never
   filtered by time.
2. rank — BM25 over the wiki plus the window's entries (scored with the
   statistics of both together), or, with an embedder, the fusion of BM25
   and cosine scores. A query without terms returns the window's entries
   newest first, or nothing when no window is open.
3. the top ``limit`` hits; then each hit's link targets right after it
   (``source="link"``), once each, no recursion; missing targets are
   reported in ``unresolved_links``.
4. budget — a prefix cut in that order with :func:`~wikimem.tokenize.est_tokens`;
   the first entry always survives.

Freshness: the index follows ``store.revision``; on a change it asks the
store which RecallFiles changed and re-reads only those, re-indexing only
the items whose text differs. ``refresh(files)`` does the same for changes
learnt elsewhere (another process), ``rebuild()`` rescans everything.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from .bm25 import BM25Index
from .models import RecallItem, as_recall_item
from .naming import validate_date
from .timeparse import scan_time
from .tokenize import est_tokens, jieba_available, tokenize

__all__ = ["MemoryIndex", "RetrievalResult", "RetrievedItem"]

log = logging.getLogger(__name__)

# How many BM25 candidates (and vector neighbours) fusion looks at, per hit asked for.
_FUSION_POOL_PER_HIT, _FUSION_POOL_MIN = 3, 30


def _item_dict(item: RecallItem) -> dict[str, Any]:
    return {"file": item.file, "name": item.name, "content": item.content,
            "owner": item.owner, "source_conv": item.source_conv, "ts": item.ts}


@dataclass
class RetrievedItem:
    """One entry of a retrieval result, with the evidence of why it is there.

    ``kind`` (``"wiki"`` or ``"diary"``) and ``via_file`` extend the seed's
    fields: a diary entry's ``file`` is its date, and ``via`` alone (the
    parent hit's name) can be ambiguous across files.
    """

    item: RecallItem
    source: str  # "hit" or "link"
    score: float | None = None  # fused score with embeddings, else BM25; None for links
    bm25_score: float | None = None
    cos_score: float | None = None
    via: str | None = None  # link entries: name of the hit that pulled them in
    matched_terms: list[str] = field(default_factory=list)
    tokens_est: int = 0
    kind: str = "wiki"
    via_file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return {
            "item": _item_dict(self.item),
            "source": self.source,
            "score": self.score,
            "bm25_score": self.bm25_score,
            "cos_score": self.cos_score,
            "via": self.via,
            "via_file": self.via_file,
            "matched_terms": list(self.matched_terms),
            "tokens_est": self.tokens_est,
            "kind": self.kind,
        }


@dataclass
class RetrievalResult:
    """What :meth:`MemoryIndex.retrieve` returns.

    ``query_terms`` extends the seed's fields: the terms actually searched
    (after a parsed time expression was taken out of the query).
    """

    items: list[RetrievedItem] = field(default_factory=list)
    budget_tokens: int | None = None
    budget_used: int = 0
    embedding_used: bool = False
    dropped: list[RetrievedItem] = field(default_factory=list)
    unresolved_links: list[str] = field(default_factory=list)
    time_range: tuple[str, str] | None = None
    time_range_source: str | None = None
    time_range_widened: bool = False
    query_terms: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (``time_range`` as a two-element list or None)."""
        return {
            "items": [e.to_dict() for e in self.items],
            "budget_tokens": self.budget_tokens,
            "budget_used": self.budget_used,
            "embedding_used": self.embedding_used,
            "dropped": [e.to_dict() for e in self.dropped],
            "unresolved_links": list(self.unresolved_links),
            "time_range": list(self.time_range) if self.time_range else None,
            "time_range_source": self.time_range_source,
            "time_range_widened": self.time_range_widened,
            "query_terms": list(self.query_terms),
        }


@dataclass
class _Candidate:
    """A ranked candidate: its sort key, item, kind and scores."""

    key: tuple
    item: RecallItem
    kind: str
    bm25: float = 0.0
    cos: float | None = None
    score: float | None = None


@lru_cache(maxsize=8192)
def _cached_terms(text: str, use_jieba: bool) -> tuple[str, ...]:
    # Diary entries are tokenised per query (they are not indexed); most
    # windows repeat, so remember recent ones.
    return tuple(tokenize(text, use_jieba=use_jieba))


def _text(item: RecallItem) -> str:
    return item.name + "\n" + item.content


def _check_int(value: Any, what: str, *, allow_none: bool) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def _check_range(time_range: Any) -> tuple[str, str]:
    if isinstance(time_range, (str, bytes)) or not isinstance(time_range, (tuple, list)) or len(time_range) != 2:
        raise ValueError(f"time_range must be (start, end) dates YYYY-MM-DD, got {time_range!r}")
    start, end = (validate_date(d) for d in time_range)
    return (start, end) if start <= end else (end, start)


def _widen(window: tuple[str, str]) -> tuple[str, str]:
    start, end = (date.fromisoformat(d) for d in window)
    # One day each side, but never past the ends of the calendar (0001-01-01, 9999-12-31).
    start = start - timedelta(days=1) if start > date.min else start
    end = end + timedelta(days=1) if end < date.max else end
    return start.isoformat(), end.isoformat()


def _normalise(values: list[float]) -> list[float]:
    """Min-max to [0, 1]; a set without spread maps to 1.0 where positive, else 0.0."""
    lo, hi = min(values), max(values)
    if hi == lo:
        return [1.0 if v > 0 else 0.0 for v in values]
    span = hi - lo
    return [(v - lo) / span for v in values]


def _fuse(cands: list[_Candidate], weight: float) -> list[_Candidate]:
    """SPEC §3 fusion: min-max both score sets over the union, ``w·bm25 + (1−w)·cos``.

    Every candidate must carry a ``cos``; returns them ranked (ties by key).
    """
    bm = _normalise([c.bm25 for c in cands])
    cs = _normalise([c.cos for c in cands])
    for c, b, v in zip(cands, bm, cs):
        c.score = weight * b + (1 - weight) * v
    return sorted(cands, key=lambda c: (-c.score, c.key))


class MemoryIndex:
    """BM25 (+ optional embedding fusion) over a store; see the module docstring.

    ``store`` needs only: ``root``, ``files()``, ``items(file=None)``,
    ``get(file, name)``, ``revision``, ``changed_files_since(revision)`` and
    ``diary.window(start, end)`` / ``diary.day(date)`` — a read-only snapshot
    store works the same. Safe to share between threads.
    """

    def __init__(self, store: Any, *, use_jieba: bool | None = None, embedder: Any = None,
                 vectors_dir: Path | str | None = None, fusion_weight: float = 0.5,
                 binary_threshold: int = 10_000):
        if isinstance(fusion_weight, bool) or not isinstance(fusion_weight, (int, float)) \
                or not 0.0 <= fusion_weight <= 1.0:
            raise ValueError(f"fusion_weight must be a number in [0, 1], got {fusion_weight!r}")
        self.store = store
        self.use_jieba = jieba_available() if use_jieba is None else bool(use_jieba)
        self.embedder = embedder
        self.vectors_dir = Path(vectors_dir) if vectors_dir is not None else Path(store.root)
        self.fusion_weight = float(fusion_weight)
        self.binary_threshold = binary_threshold
        self._lock = threading.RLock()
        self._bm25 = BM25Index()
        self._files: dict[str, dict[str, RecallItem]] = {}  # file -> name -> item, as indexed
        # (file, name) -> (item, tokens_est, links), valid while the index holds that item
        self._facts_cache: dict[tuple[str, str], tuple] = {}
        self._revision: Any = None
        self._built = False
        self._embed_lock = threading.Lock()
        self._search: Any = None
        self._search_broken = False  # the vector layer cannot load (no numpy): stop trying
        self._generation = 0  # bumped by every change of the indexed wiki
        self._synced = -1  # the generation the vectors were last synced with
        self._embed_ok = True

    # -- keeping the index fresh -------------------------------------------

    def __len__(self) -> int:
        """Number of wiki items indexed."""
        return len(self._bm25)

    def rebuild(self) -> None:
        """Rescan the whole store now (after edits made outside this process)."""
        with self._lock:
            revision = self.store.revision
            bm25, files, use_jieba = BM25Index(), {}, self.use_jieba
            items = self.store.items()
            for item in items:
                files.setdefault(item.file, {})[item.name] = item
            bm25.extend(((i.file, i.name), tokenize(_text(i), use_jieba=use_jieba)) for i in items)
            self._bm25, self._files, self._facts_cache = bm25, files, {}
            self._revision, self._built = revision, True
            self._generation += 1

    def refresh(self, files: Iterable[str]) -> None:
        """Re-read these RecallFiles and update the index incrementally.

        For changes learnt from elsewhere (another process, git). Nothing
        changes if any name is invalid (``ValueError``).
        """
        if isinstance(files, str):
            files = [files]
        with self._lock:
            if not self._built:
                self.rebuild()
                return
            fresh = [(f, self.store.items(f)) for f in sorted(set(files))]  # read all before changing any
            for file, items in fresh:
                self._apply_file(file, items)

    def _apply_file(self, file: str, items: list[RecallItem]) -> None:
        """Diff one file's items against the index; re-index only what changed."""
        new = {i.name: i for i in items}
        old = self._files.get(file, {})
        changed = False
        for name in old.keys() - new.keys():
            self._bm25.remove((file, name))
            self._facts_cache.pop((file, name), None)
            changed = True
        for name, item in new.items():
            before = old.get(name)
            if before is None or before.content != item.content:
                self._bm25.add((file, name), tokenize(_text(item), use_jieba=self.use_jieba))
                changed = True
            elif (before.owner, before.source_conv, before.ts) != (item.owner, item.source_conv, item.ts):
                changed = True  # provenance only: same terms, new item object
        if new:
            self._files[file] = new
        else:
            self._files.pop(file, None)
        if changed:
            self._generation += 1

    def _ensure_fresh(self) -> None:
        """Bring the index up to ``store.revision`` (called under the lock)."""
        revision = self.store.revision
        if not self._built:
            self.rebuild()
            return
        if revision == self._revision:
            return
        changed = self.store.changed_files_since(self._revision)
        if changed is None:
            self.rebuild()
            return
        self.refresh(changed)
        self._revision = revision

    # -- retrieval ---------------------------------------------------------

    def retrieve(self, query: str, *, limit: int = 10, budget_tokens: int | None = None,
                 expand_links: bool = True, explain: bool = False,
                 time_range: tuple[str, str] | None = None, tz: Any = None) -> RetrievalResult:
        """Rank, expand links one hop, cut to the budget. Never calls an LLM; never
        raises because an optional path (jieba, embeddings) is missing or down.
        Invalid arguments raise ``ValueError``."""
        if not isinstance(query, str):
            raise ValueError(f"query must be a string, got {type(query).__name__}")
        limit = _check_int(limit, "limit", allow_none=False)
        budget_tokens = _check_int(budget_tokens, "budget_tokens", allow_none=True)
        result = RetrievalResult(budget_tokens=budget_tokens)
        text = self._gate(query, time_range, tz, result)
        diary = self._window(result) if result.time_range else []
        terms = tokenize(text, use_jieba=self.use_jieba)
        result.query_terms = terms
        embed = self.embedder is not None and bool(text.strip())
        if not terms and not diary and not embed:
            return result
        if self.embedder is None:
            with self._lock:  # one consistent view of the index, from ranking to links
                hits = self._hits(text, terms, diary, limit, result)
                self._assemble(hits, terms, diary, expand_links, result)
        else:
            hits = self._hits(text, terms, diary, limit, result)  # embedding calls: not under the lock
            with self._lock:
                self._assemble(hits, terms, diary, expand_links, result)
        self._cut(result.items, budget_tokens, explain, result)
        return result

    def _hits(self, text: str, terms: list[str], diary: list[RecallItem], limit: int,
              result: RetrievalResult) -> list[_Candidate]:
        if terms:
            return self._rank(text, terms, diary, limit, result)
        if diary:  # a window and nothing to search for: the window, newest first
            return [_Candidate((i.file, i.name, n), i, "diary") for n, i in enumerate(diary)][::-1][:limit]
        return self._rank(text, terms, [], limit, result)  # the embedding path alone

    def _assemble(self, hits: list[_Candidate], terms: list[str], diary: list[RecallItem],
                  expand_links: bool, result: RetrievalResult) -> None:
        """Result entries for the hits, with their link targets (called under the lock)."""
        self._ensure_fresh()  # link targets come from the index
        wanted = set(terms)
        entries = self._entries(hits, wanted, diary)
        result.items = self._expand(entries, wanted, result) if expand_links else entries

    def _gate(self, query: str, time_range: Any, tz: Any, result: RetrievalResult) -> str:
        """Set the result's time window; return the text left to search."""
        if time_range is not None:
            result.time_range, result.time_range_source = _check_range(time_range), "explicit"
            return query
        found = scan_time(query, tz=tz)
        if found is None:
            return query
        result.time_range, result.time_range_source = found.range, "parsed"
        return found.strip(query)

    def _window(self, result: RetrievalResult) -> list[RecallItem]:
        entries = self.store.diary.window(*result.time_range)
        if not entries:
            result.time_range, result.time_range_widened = _widen(result.time_range), True
            entries = self.store.diary.window(*result.time_range)
        return [as_recall_item(e) for e in entries]

    def _rank(self, text: str, terms: list[str], diary: list[RecallItem], limit: int,
              result: RetrievalResult) -> list[_Candidate]:
        """The top ``limit`` candidates: BM25, or fused with cosine when an embedder works."""
        extra = [((i.file, i.name, n), _cached_terms(_text(i), self.use_jieba)) for n, i in enumerate(diary)]
        pool = limit if self.embedder is None else max(limit * _FUSION_POOL_PER_HIT, _FUSION_POOL_MIN)
        with self._lock:
            self._ensure_fresh()
            ranked = self._bm25.top_k(terms, pool, extra=extra) if terms and pool else []
            cands = [self._candidate(key, score, diary) for key, score in ranked]
            stale = self.embedder is not None and self._synced != self._generation
            wiki = (self._generation, self._all_items()) if stale else None
        if self.embedder is None or not limit:
            return cands[:limit]
        fused = self._fusion(text, terms, cands, diary, extra, pool, wiki)
        if fused is None:
            return cands[:limit]
        result.embedding_used = True
        return fused[:limit]

    def _candidate(self, key: tuple, score: float, diary: list[RecallItem]) -> _Candidate:
        if len(key) == 3:
            return _Candidate(key, diary[key[2]], "diary", score)
        return _Candidate(key, self._files[key[0]][key[1]], "wiki", score)

    def _all_items(self) -> list[RecallItem]:
        return [item for items in self._files.values() for item in items.values()]

    # -- embeddings (optional) ----------------------------------------------

    def _embedding_search(self):
        """The vector layer, created on first use; None when it cannot load."""
        if self._search is None and not self._search_broken:
            try:
                from .vectors import EmbeddingSearch
            except ImportError:  # no numpy: BM25 only, for good
                self._search_broken = True
                log.warning("embedder given but wikimem.vectors cannot load; retrieval is BM25 only")
                return None
            self._search = EmbeddingSearch(self.embedder, self.vectors_dir,
                                           binary_threshold=self.binary_threshold)
        return self._search

    def _fusion(self, text: str, terms: list[str], cands: list[_Candidate], diary: list[RecallItem],
                extra: list, pool: int, wiki: tuple[int, list[RecallItem]] | None) -> list[_Candidate] | None:
        """BM25 fused with cosine scores; None when the embedding path fails (BM25 only).

        ``wiki`` is ``(generation, items)`` when the vectors need a sync first.
        """
        try:
            with self._embed_lock:
                search = self._embedding_search()
                if search is None:
                    return None
                if wiki is not None and self._synced < wiki[0]:
                    search.sync(wiki[1])
                    self._synced = wiki[0]
            wiki_keys = [c.key for c in cands if c.kind == "wiki"]
            cos, diary_cos = search.search(text, pool, candidates=wiki_keys, diary=diary)
            fused = self._fusion_candidates(terms, cands, diary, extra, cos, list(diary_cos))
        except Exception as exc:  # down, timeout, bad answer, mismatch: degrade, never raise
            if self._embed_ok:
                log.warning("embedding path failed, retrieval is BM25 only: %s", exc)
            self._embed_ok = False
            return None
        self._embed_ok = True
        return _fuse(fused, self.fusion_weight) if fused else []

    def _fusion_candidates(self, terms, cands, diary, extra, cos: dict, diary_cos: list[float]) -> list[_Candidate]:
        """The union of BM25 and vector candidates, each with both scores."""
        if len(diary_cos) != len(diary):
            raise ValueError("embedding search returned a diary score list of the wrong length")
        by_key = {c.key: c for c in cands}
        with self._lock:
            for key, value in cos.items():
                key = tuple(key)
                cand = by_key.get(key)
                if cand is None:
                    item = self._files.get(key[0], {}).get(key[1])
                    if item is None:  # removed since the vectors were synced
                        continue
                    score = self._bm25.score(key, terms, extra=extra) if terms else 0.0
                    cand = by_key[key] = _Candidate(key, item, "wiki", score)
                cand.cos = float(value)
        for n, (item, value) in enumerate(zip(diary, diary_cos)):
            key = (item.file, item.name, n)
            cand = by_key.get(key) or by_key.setdefault(key, _Candidate(key, item, "diary", 0.0))
            cand.cos = float(value)
        return [c for c in by_key.values() if c.cos is not None]

    # -- result assembly -----------------------------------------------------

    def _facts(self, item: RecallItem, kind: str) -> tuple[int, list]:
        """An item's token estimate and links, remembered for indexed wiki items."""
        if kind != "wiki":
            return est_tokens(_text(item)), item.links
        key = (item.file, item.name)
        cached = self._facts_cache.get(key)
        if cached is not None and cached[0] is item:
            return cached[1], cached[2]
        facts = (est_tokens(_text(item)), item.links)
        if self._files.get(item.file, {}).get(item.name) is item:
            self._facts_cache[key] = (item, *facts)
        return facts

    def _matched(self, item: RecallItem, kind: str, terms: set[str]) -> list[str]:
        if not terms:
            return []
        if kind == "wiki" and self._files.get(item.file, {}).get(item.name) is item:
            have = self._bm25.doc_terms((item.file, item.name))  # indexed: the terms are at hand
        else:  # a diary entry, or an item replaced since it was ranked
            have = _cached_terms(_text(item), self.use_jieba)
        return sorted(terms.intersection(have))

    def _entries(self, hits: list[_Candidate], terms: set[str], diary) -> list[RetrievedItem]:
        return [RetrievedItem(
            item=c.item, source="hit",
            score=c.score if c.score is not None else (c.bm25 if terms else None),
            bm25_score=c.bm25 if terms or c.cos is not None else None,
            cos_score=c.cos,
            matched_terms=self._matched(c.item, c.kind, terms),
            tokens_est=self._facts(c.item, c.kind)[0],
            kind=c.kind,
        ) for c in hits]

    def _expand(self, hits: list[RetrievedItem], terms: set[str], result: RetrievalResult) -> list[RetrievedItem]:
        """Each hit followed by its link targets: one hop, each item once, dangling ones reported."""
        seen = {id(e.item) for e in hits}
        unresolved: dict[str, None] = {}
        out = []
        for hit in hits:
            out.append(hit)
            for link in self._facts(hit.item, hit.kind)[1]:
                target = self._files.get(link.file, {}).get(" ".join(link.name.split()))
                if target is None:
                    unresolved.setdefault(link.render(), None)
                    continue
                if id(target) in seen:
                    continue
                seen.add(id(target))
                out.append(RetrievedItem(
                    item=target, source="link", via=hit.item.name, via_file=hit.item.file,
                    matched_terms=self._matched(target, "wiki", terms),
                    tokens_est=self._facts(target, "wiki")[0],
                ))
        result.unresolved_links = list(unresolved)
        return out

    @staticmethod
    def _cut(entries: list[RetrievedItem], budget: int | None, explain: bool, result: RetrievalResult) -> None:
        """Prefix cut in injection order; the first entry always survives."""
        keep = len(entries)
        if budget is not None:
            used = 0
            for n, e in enumerate(entries):
                if n and used + e.tokens_est > budget:
                    keep = n
                    break
                used += e.tokens_est
        result.items = entries[:keep]
        result.budget_used = sum(e.tokens_est for e in result.items)
        if explain:
            result.dropped = entries[keep:]
