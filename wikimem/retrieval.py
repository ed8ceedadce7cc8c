"""MemoryIndex: retrieval over a store — BM25 (+ optional embedding fusion),
one-hop wiki-link expansion, a token budget and time gating.

The pipeline of :meth:`MemoryIndex.retrieve`, in order:

1. time gate — ``time_range`` if given ("explicit"), else the query's own
   time expressions (:func:`~wikimem.timeparse.scan_time`, "parsed"; they
   are then taken out of the text that is searched). An empty window is
   widened by one day on each side, once. The wiki is never filtered by time.
2. query terms — the tokens of the text; with ``query_stopwords`` the
   function words are dropped (:func:`~wikimem.stopwords.content_terms`,
   all kept when nothing else is left). The index is never filtered.
3. rank — BM25 over the wiki plus the diary entries in play, or, with an
   embedder, the fusion of BM25 and cosine scores. Which diary entries:
   ``diary="window"`` (the seed's behaviour, the default) — the window's
   entries only, scored with the statistics of the wiki plus the window;
   ``diary="all"`` — every entry, indexed incrementally, ranked with the
   wiki (statistics over both; a window then filters the diary's
   candidates), optionally with a recency prior (``recency_half_life``).
   A query without terms returns the window's entries newest first, or
   what the embedding path ranks, or nothing.
4. the top ``limit`` hits; then each hit's link targets right after it
   (``source="link"``, no recursion). The first entry in injection order
   survives: a target linked from an earlier hit stays ``"link"`` even when
   it is also a later hit (that later hit is not repeated). Missing targets
   are reported in ``unresolved_links``.
5. budget — a prefix cut in that order with :func:`~wikimem.tokenize.est_tokens`;
   the first entry always survives (the seed's rule: a prompt gets at least
   the best memory), unless ``budget_strict=True`` — then nothing over the
   budget is returned, possibly nothing at all.

Freshness: the index follows ``store.revision``; on a change it asks the
store which RecallFiles changed and re-reads only those, re-indexing only
the items whose text differs. ``refresh(files)`` does the same for changes
learnt elsewhere (another process), ``rebuild()`` rescans everything. The
diary index (``diary="all"``) follows the diary folder day by day.

Embeddings (optional, :mod:`wikimem.vectors`): with ``embed_in_background``
a retrieve never embeds memory — a background worker does, and retrieval
scores with the vectors that exist (items not embedded yet are ranked by
BM25 alone; ``RetrievalResult.vectors`` says how far embedding is).
``neighbour_context`` scores each item with its neighbours in the same file
too. Only the query is embedded on the request path.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from .bm25 import BM25Index
from .diary_index import DiaryIndex
from .errors import StoreBusy
from .fusion import Candidate as _Candidate, apply_recency, fuse as _fuse, normalise as _normalise
from .models import RecallItem, as_recall_item
from .naming import validate_date
from .stopwords import content_terms
from .timeparse import scan_time
from .tokenize import est_tokens, jieba_available, tokenize

__all__ = ["MemoryIndex", "RetrievalResult", "RetrievedItem", "RecallOptions", "DIARY_MODES"]

log = logging.getLogger(__name__)

# How many BM25 candidates (and vector neighbours) fusion looks at, per hit asked for.
_FUSION_POOL_PER_HIT, _FUSION_POOL_MIN = 3, 30
DIARY_MODES = ("window", "all")
# Background embedding: texts per cache per step, at least; more once the
# cache is large (each step rewrites the cache file: steps grow with it).
EMBED_SLICE = 64
# After a failed background step, wait this long before the next try.
EMBED_RETRY_SECONDS = 30.0
# When another process is embedding the same memory, look again after this long.
EMBED_BUSY_SECONDS = 1.0
# Window entries waiting for the background worker, at most.
DIARY_WANTED_MAX = 4096


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

    Beyond the seed's fields: ``query_terms`` (the terms actually searched,
    after a parsed time expression and function words were taken out),
    ``diary`` (the diary mode used) and ``vectors`` (with an embedder and
    ``explain=True``: ``{"embedded": n, "total": m}``, how many items had
    their vectors when this query ran).
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
    diary: str = "window"
    vectors: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (``time_range`` as a two-element list or None).

        ``diary`` appears when it is ``"all"``, ``vectors`` when it was measured.
        """
        out = {
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
        if self.diary != "window":
            out["diary"] = self.diary
        if self.vectors is not None:
            out["vectors"] = dict(self.vectors)
        return out


@dataclass(frozen=True)
class RecallOptions:
    """How a host configures every index it makes — one object through the layers.

    The library's defaults are the seed's behaviour; the host's defaults
    (``webapp.config``) are what ``bench/quality.py`` measured best.
    """

    use_jieba: bool | None = None
    query_stopwords: bool = False
    neighbour_context: bool = False
    embed_in_background: bool = False
    diary: str = "window"
    fusion_weight: float = 0.5

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :class:`MemoryIndex`."""
        return {"use_jieba": self.use_jieba, "query_stopwords": self.query_stopwords,
                "neighbour_context": self.neighbour_context, "embed_in_background": self.embed_in_background,
                "diary": self.diary, "fusion_weight": self.fusion_weight}


@lru_cache(maxsize=8192)
def _cached_terms(text: str, use_jieba: bool) -> tuple[str, ...]:
    # Window entries are tokenised per query (the seed's mode does not index
    # them); most windows repeat, so remember recent ones.
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


def _check_diary(mode: Any) -> str:
    if mode not in DIARY_MODES:
        raise ValueError(f"diary must be 'window' or 'all', got {mode!r}")
    return mode


def _check_half_life(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value:
        raise ValueError(f"recency_half_life must be a positive number of days, got {value!r}")
    return float(value)


def _widen(window: tuple[str, str]) -> tuple[str, str]:
    start, end = (date.fromisoformat(d) for d in window)
    # One day each side, but never past the ends of the calendar (0001-01-01, 9999-12-31).
    start = start - timedelta(days=1) if start > date.min else start
    end = end + timedelta(days=1) if end < date.max else end
    return start.isoformat(), end.isoformat()


@dataclass
class _Query:
    """One retrieve call, as the ranking stages see it."""

    text: str
    terms: list[str]
    mode: str
    window: list[RecallItem]  # the window's entries ("window" mode: extra BM25 documents)
    dates: tuple[str, str] | None  # "all" mode: the window that filters diary candidates
    half_life: float | None
    tz: Any
    extra: list = field(default_factory=list)  # "window" mode: (key, terms) of the window's entries


class MemoryIndex:
    """BM25 (+ optional embedding fusion) over a store; see the module docstring.

    ``store`` needs only: ``root``, ``files()``, ``items(file=None)``,
    ``get(file, name)``, ``revision``, ``changed_files_since(revision)`` and
    ``diary.window(start, end)`` / ``diary.day(date)`` (``diary.dates()`` for
    ``diary="all"``) — a read-only snapshot store works the same. Safe to
    share between threads.

    Options beyond the seed (all off by default, the seed's behaviour):
    ``query_stopwords`` drops function words from query terms;
    ``neighbour_context`` (True or a :class:`~wikimem.vectors.NeighbourContext`)
    scores items with their neighbours too; ``embed_in_background`` moves
    every embedding of memory off the request path (``worker``: the
    :class:`~wikimem.embedding_worker.EmbeddingWorker` to use, the
    process-wide one by default); ``diary`` is the default diary mode of
    :meth:`retrieve`.
    """

    def __init__(self, store: Any, *, use_jieba: bool | None = None, embedder: Any = None,
                 vectors_dir: Path | str | None = None, fusion_weight: float = 0.5,
                 binary_threshold: int = 10_000, query_stopwords: bool = False,
                 neighbour_context: Any = False, embed_in_background: bool = False,
                 diary: str = "window", worker: Any = None):
        if isinstance(fusion_weight, bool) or not isinstance(fusion_weight, (int, float)) \
                or not 0.0 <= fusion_weight <= 1.0:
            raise ValueError(f"fusion_weight must be a number in [0, 1], got {fusion_weight!r}")
        if not isinstance(neighbour_context, bool) and not hasattr(neighbour_context, "item_weight"):
            raise ValueError(f"neighbour_context must be True, False or a NeighbourContext, got {neighbour_context!r}")
        self.store = store
        self.use_jieba = jieba_available() if use_jieba is None else bool(use_jieba)
        self.embedder = embedder
        self.vectors_dir = Path(vectors_dir) if vectors_dir is not None else Path(store.root)
        self.fusion_weight = float(fusion_weight)
        self.binary_threshold = binary_threshold
        self.query_stopwords = bool(query_stopwords)
        self.neighbour_context = neighbour_context
        self.embed_in_background = bool(embed_in_background)
        self.diary = _check_diary(diary)
        self._worker = worker
        self._lock = threading.RLock()
        self._bm25 = BM25Index()
        self._files: dict[str, dict[str, RecallItem]] = {}  # file -> name -> item, as indexed
        # (file, name) -> (item, tokens_est, links), valid while the index holds that item
        self._facts_cache: dict[tuple[str, str], tuple] = {}
        self._revision: Any = None
        self._built = False
        self._diary_index: DiaryIndex | None = None
        self._embed_lock = threading.Lock()
        self._search: Any = None
        self._search_broken = False  # the vector layer cannot load (no numpy): stop trying
        self._generation = 0  # bumped by every change of the indexed wiki
        self._synced: Any = None  # (wiki generation, diary generation) the vectors were last synced with
        self._embed_ok = True
        self._retry_at = 0.0  # background: no new step before this (monotonic) time
        self._counts: tuple[Any, tuple[int, int]] | None = None
        self._diary_wanted: dict[tuple[str, str, str], RecallItem] = {}  # background: window entries to embed

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
            if self._diary_index is not None:
                self._diary_index.rebuild()

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
        changed = list(new) != list(old)  # the order of items decides neighbours
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

    def _ensure_fresh(self, mode: str = "window") -> None:
        """Bring the index up to ``store.revision`` (called under the lock)."""
        if mode == "all":
            self._diary_fresh()
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

    def _diary_fresh(self) -> DiaryIndex:
        if self._diary_index is None:
            self._diary_index = DiaryIndex(self.store.diary, use_jieba=self.use_jieba)
        self._diary_index.refresh()
        return self._diary_index

    # -- retrieval ---------------------------------------------------------

    def retrieve(self, query: str, *, limit: int = 10, budget_tokens: int | None = None,
                 expand_links: bool = True, explain: bool = False,
                 time_range: tuple[str, str] | None = None, tz: Any = None,
                 diary: str | None = None, recency_half_life: float | None = None,
                 budget_strict: bool = False) -> RetrievalResult:
        """Rank, expand links one hop, cut to the budget. Never calls an LLM; never
        raises because an optional path (jieba, embeddings) is missing or down.

        ``diary``: ``"window"`` or ``"all"`` (default: the index's ``diary``).
        ``recency_half_life`` (days, ``diary="all"``): a diary entry's score
        is multiplied by ``0.5 + 0.5·2^(−age/half_life)``. ``budget_strict``:
        the first entry does not survive a budget it alone exceeds. Invalid
        arguments raise ``ValueError``.
        """
        if not isinstance(query, str):
            raise ValueError(f"query must be a string, got {type(query).__name__}")
        limit = _check_int(limit, "limit", allow_none=False)
        budget_tokens = _check_int(budget_tokens, "budget_tokens", allow_none=True)
        mode = self.diary if diary is None else _check_diary(diary)
        half_life = _check_half_life(recency_half_life)
        result = RetrievalResult(budget_tokens=budget_tokens, diary=mode)
        text = self._gate(query, time_range, tz, result)
        terms = tokenize(text, use_jieba=self.use_jieba)
        if self.query_stopwords:
            terms = content_terms(terms)
        result.query_terms = terms
        q = _Query(text, terms, mode, [], None, half_life if mode == "all" else None, tz)
        if result.time_range:
            self._open_window(q, result)
        embed = self.embedder is not None and bool(text.strip())
        if not terms and not q.window and not embed:
            return result
        if self.embedder is None:
            with self._lock:  # one consistent view of the index, from ranking to links
                hits = self._hits(q, limit, result)
                self._assemble(hits, q, expand_links, result)
        else:
            hits = self._hits(q, limit, result)  # embedding calls: not under the lock
            with self._lock:
                self._assemble(hits, q, expand_links, result)
            if explain:
                result.vectors = self._vector_counts_dict()
        self._cut(result.items, budget_tokens, explain, result, strict=bool(budget_strict))
        return result

    def _open_window(self, q: _Query, result: RetrievalResult) -> None:
        """The window's diary entries (widened once when empty)."""
        if q.mode == "window":
            q.window = self._window(result)
            return
        with self._lock:
            index = self._diary_fresh()
            entries = index.keyed(*result.time_range)
            if not entries:
                result.time_range, result.time_range_widened = _widen(result.time_range), True
                entries = index.keyed(*result.time_range)
        q.dates = result.time_range
        q.window = [item for _, item in entries]

    def _hits(self, q: _Query, limit: int, result: RetrievalResult) -> list[_Candidate]:
        if q.terms:
            return self._rank(q, limit, result)
        if q.window:  # a window and nothing to search for: the window, newest first
            return [_Candidate((i.file, i.name, n), i, "diary") for n, i in enumerate(q.window)][::-1][:limit]
        return self._rank(q, limit, result)  # the embedding path alone

    def _assemble(self, hits: list[_Candidate], q: _Query, expand_links: bool, result: RetrievalResult) -> None:
        """Result entries for the hits, with their link targets (called under the lock)."""
        self._ensure_fresh()  # link targets come from the index
        wanted = set(q.terms)
        entries = self._entries(hits, wanted)
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

    def _rank(self, q: _Query, limit: int, result: RetrievalResult) -> list[_Candidate]:
        """The top ``limit`` candidates: BM25, or fused with cosine when an embedder works."""
        wide = self.embedder is not None or q.half_life is not None
        pool = max(limit * _FUSION_POOL_PER_HIT, _FUSION_POOL_MIN) if wide else limit
        if q.mode == "window":
            q.extra.extend(((i.file, i.name, n), _cached_terms(_text(i), self.use_jieba))
                           for n, i in enumerate(q.window))
        with self._lock:
            self._ensure_fresh(q.mode)
            cands = self._bm25_candidates(q, pool) if q.terms and pool else []
            snapshot = self._snapshot_for_vectors(q.mode)
        if self.embedder is None or not limit:
            return self._prior(cands, q)[:limit]
        fused = self._fusion(q, cands, pool, snapshot)
        if fused is None:
            return self._prior(cands, q)[:limit]
        result.embedding_used = True
        return self._prior(fused, q)[:limit]

    def _prior(self, cands: list[_Candidate], q: _Query) -> list[_Candidate]:
        if q.half_life is None:
            return cands
        return apply_recency(cands, datetime.now(_tzinfo(q.tz)).date(), q.half_life)

    def _bm25_candidates(self, q: _Query, pool: int) -> list[_Candidate]:
        """BM25's best ``pool`` candidates, wiki and diary, best first (called under the lock)."""
        if q.mode == "window":
            ranked = self._bm25.top_k(q.terms, pool, extra=q.extra)
            return [self._candidate(key, score, q) for key, score in ranked]
        diary = self._diary_index
        wiki = [(k, s) for k, s in self._bm25.top_k(q.terms, pool, peers=[diary.bm25])]
        if q.dates is None:
            days = diary.bm25.top_k(q.terms, pool, peers=[self._bm25])
        else:
            start, end = q.dates
            days = [(k, s) for k, s in diary.bm25.top_k(q.terms, None, peers=[self._bm25]) if start <= k[0] <= end]
        ranked = sorted(wiki + days, key=lambda kv: (-kv[1], kv[0]))[:pool]
        return [self._candidate(key, score, q) for key, score in ranked]

    def _candidate(self, key: tuple, score: float, q: _Query) -> _Candidate:
        if len(key) == 3:
            item = q.window[key[2]] if q.mode == "window" else self._diary_index.item(key)
            return _Candidate(key, item, "diary", score)
        return _Candidate(key, self._files[key[0]][key[1]], "wiki", score)

    def _all_items(self) -> list[RecallItem]:
        return [item for items in self._files.values() for item in items.values()]

    # -- embeddings (optional) ----------------------------------------------

    def _embedding_search(self):
        """The vector layer, created on first use; None when it cannot load."""
        if self._search is None and not self._search_broken:
            try:
                from .vector_search import EmbeddingSearch, NeighbourContext
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

    def _fusion(self, q: _Query, cands: list[_Candidate], pool: int, snapshot: tuple | None) -> list[_Candidate] | None:
        """BM25 fused with cosine scores; None when the embedding path fails (BM25 only)."""
        try:
            search = self._embedding_search()
            if search is None:
                return None
            if self.embed_in_background:
                if snapshot is not None:
                    self._schedule()
                if not search.ready():  # nothing embedded yet: BM25 until the worker has run
                    return None
            else:
                self._sync_vectors(search, snapshot)
            fused = self._scored(q, cands, pool, search)
        except Exception as exc:  # down, timeout, bad answer, mismatch: degrade, never raise
            if self._embed_ok:
                log.warning("embedding path failed, retrieval is BM25 only: %s", exc)
            self._embed_ok = False
            return None
        self._embed_ok = True
        return _fuse(fused, self.fusion_weight) if fused else []

    def _scored(self, q: _Query, cands: list[_Candidate], pool: int, search) -> list[_Candidate]:
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
                    cand = by_key[key] = _Candidate(key, item, "diary", 0.0)
                cand.cos = None if value is None else float(value)
            if q.mode == "all":
                self._rescore_diary(by_key, q)
        return list(by_key.values())

    def _add_wiki(self, by_key: dict, cos: dict, q: _Query) -> None:
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
            by_key[key] = _Candidate(key, self._files[key[0]][key[1]], "wiki", scores.get(key, 0.0))
        for key, value in cos.items():
            cand = by_key.get(tuple(key))
            if cand is not None and cand.kind == "wiki":
                cand.cos = float(value)

    def _diary_vector_candidates(self, q: _Query, qv, pool: int, by_key: dict, search) -> list[tuple]:
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

    def _rescore_diary(self, by_key: dict, q: _Query) -> None:
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
            from .embedding_worker import shared_worker

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

    def _entries(self, hits: list[_Candidate], terms: set[str]) -> list[RetrievedItem]:
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
        """Each hit followed by its link targets: one hop, each item once, dangling ones reported.

        The first entry in injection order survives: a later hit that an
        earlier hit already brought in as a link is not repeated (its own
        links are still followed, from where it would have been).
        """
        seen: set[int] = set()
        unresolved: dict[str, None] = {}
        out = []
        for hit in hits:
            if id(hit.item) not in seen:
                seen.add(id(hit.item))
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
    def _cut(entries: list[RetrievedItem], budget: int | None, explain: bool, result: RetrievalResult, *,
             strict: bool = False) -> None:
        """Prefix cut in injection order; the first entry always survives unless ``strict``."""
        keep = len(entries)
        if budget is not None:
            used = 0
            for n, e in enumerate(entries):
                if (n or strict) and used + e.tokens_est > budget:
                    keep = n
                    break
                used += e.tokens_est
        result.items = entries[:keep]
        result.budget_used = sum(e.tokens_est for e in result.items)
        if explain:
            result.dropped = entries[keep:]


def _tzinfo(tz: Any):
    if tz is None:
        return None
    from .diary import resolve_tz

    return resolve_tz(tz)
