"""MemoryIndex: retrieval over a store — BM25 (+ optional embedding fusion),
one-hop wiki-link expansion, a token budget and time gating.

The pipeline of :meth:`MemoryIndex.retrieve`, in order:

1. time gate — ``time_range`` if given ("explicit"), else the query's own
   time expressions (:func:`~wikimem.timeparse.scan_time`, "parsed"; they
   are then taken out of the text that is searched). An empty window is
   widened by one day on each side, once. The wiki is never filtered by time.
2. query terms — the tokens of the text; with ``query_stopwords`` the
   function words are dropped (:func:`~wikimem.recall.stopwords.content_terms`,
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
5. budget — a prefix cut in that order with :func:`~wikimem.recall.tokenizer.est_tokens`;
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

Modules: the result types are in :mod:`wikimem.recall.results` (imported
from here as before), the embedding side of the index
(:class:`~wikimem.recall.semantic.RetrievalVectors`, mixed into
:class:`MemoryIndex`) in :mod:`wikimem.recall.semantic`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from wikimem.models import RecallItem, as_recall_item
from wikimem.naming import validate_date
from wikimem.timeparse import scan_time

from .bm25 import BM25Index
from .diary_index import DiaryIndex
from .fusion import Candidate as _Candidate
from .fusion import apply_recency
from .fusion import fuse as _fuse
from .results import Query, RecallOptions, RetrievalResult, RetrievedItem
from .semantic import RetrievalVectors
from .stopwords import content_terms
from .tokenizer import est_tokens, jieba_available, tokenize

__all__ = ["MemoryIndex", "RetrievalResult", "RetrievedItem", "RecallOptions", "DIARY_MODES"]

log = logging.getLogger(__name__)

# How many BM25 candidates (and vector neighbours) fusion looks at, per hit asked for.
_FUSION_POOL_PER_HIT, _FUSION_POOL_MIN = 3, 30
DIARY_MODES = ("window", "all")


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


class MemoryIndex(RetrievalVectors):
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
    :class:`~wikimem.vectors.worker.EmbeddingWorker` to use, the
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
        q = Query(text, terms, mode, [], None, half_life if mode == "all" else None, tz)
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

    def _open_window(self, q: Query, result: RetrievalResult) -> None:
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

    def _hits(self, q: Query, limit: int, result: RetrievalResult) -> list[_Candidate]:
        if q.terms:
            return self._rank(q, limit, result)
        if q.window:  # a window and nothing to search for: the window, newest first
            return [_Candidate((i.file, i.name, n), i, "diary") for n, i in enumerate(q.window)][::-1][:limit]
        return self._rank(q, limit, result)  # the embedding path alone

    def _assemble(self, hits: list[_Candidate], q: Query, expand_links: bool, result: RetrievalResult) -> None:
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

    def _rank(self, q: Query, limit: int, result: RetrievalResult) -> list[_Candidate]:
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

    def _prior(self, cands: list[_Candidate], q: Query) -> list[_Candidate]:
        if q.half_life is None:
            return cands
        return apply_recency(cands, datetime.now(_tzinfo(q.tz)).date(), q.half_life)

    def _bm25_candidates(self, q: Query, pool: int) -> list[_Candidate]:
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

    def _candidate(self, key: tuple, score: float, q: Query) -> _Candidate:
        if len(key) == 3:
            item = q.window[key[2]] if q.mode == "window" else self._diary_index.item(key)
            return _Candidate(key, item, "diary", score)
        return _Candidate(key, self._files[key[0]][key[1]], "wiki", score)

    # -- fusion (the vector side: retrieval_vectors.RetrievalVectors) --------

    def _fusion(self, q: Query, cands: list[_Candidate], pool: int, snapshot: tuple | None) -> list[_Candidate] | None:
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
    from wikimem.store import resolve_tz

    return resolve_tz(tz)
