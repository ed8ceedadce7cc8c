"""MemoryIndex: retrieval over a store — BM25 (+ optional embedding fusion), one-hop wiki-link
expansion, a token budget and time gating (the pipeline: :meth:`MemoryIndex.retrieve`).

What it holds: the wiki (:mod:`~wikimem.recall.wiki_index`), the diary (:mod:`~wikimem.recall.diary_index`,
``diary="all"``), the vectors (:mod:`~wikimem.recall.semantic`) and their fusion with BM25
(:mod:`~wikimem.recall.hybrid`); results are assembled in :mod:`~wikimem.recall.assembly`. The
result types (:mod:`~wikimem.recall.results`) are imported from here as before.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

from wikimem.models import RecallItem, as_recall_item
from wikimem.timeparse import scan_time

from .assembly import cut_result, entries, expand
from .diary_index import DiaryBuild, DiaryIndex
from .filler import is_content_free
from .fusion import Candidate, apply_recency
from .hybrid import HybridRanker
from .lexical import B, by_score
from .results import (
    DIARY_MODES,
    Query,
    RecallOptions,
    RetrievalResult,
    RetrievedItem,
    check_count,
    check_diary,
    check_half_life,
    check_range,
)
from .rooms import Room, hidden_items, reaching, sift
from .semantic import Contents, IndexVectors
from .smoothing import lexical_sides, smooth, smooth_first
from .stopwords import LANGUAGES, check_languages, content_terms, is_function_term, question_only, topic_terms
from .tokenizer import cached_terms, item_text, jieba_available, tokenize
from .wiki_index import WikiIndex
from .window import widen, widen_days, window_order

__all__ = ["MemoryIndex", "RetrievalResult", "RetrievedItem", "RecallOptions", "DIARY_MODES", "DIARY_WAIT",
           "POOL"]

# How many BM25 candidates (and vector neighbours) are ranked before the first ``limit`` are taken: a fixed
# pool, so that the first k are the same whatever the limit (up to this one; a larger limit widens it).
POOL = 100
# The diary index (diary="all") is built in a background thread. With ``diary_wait`` (the host's is this
# many seconds) a query waits at most that long for its first build, then answers with the diary through
# its time window only, as diary="window" does, and says so (RetrievalResult.diary_index == "building");
# without it (the library's default) a query waits for the build. Later changes are read incrementally.
DIARY_WAIT = 0.25

log = logging.getLogger(__name__)


def _second(pair: tuple) -> Any:
    return pair[1]


def _item(candidate: Candidate) -> RecallItem:
    return candidate.item


def _weak(method: Callable[[], bool]) -> Callable[[], bool]:
    """``method()`` while its object lives, else False: a queued background job keeps no index alive."""
    ref = weakref.WeakMethod(method)

    def call() -> bool:
        bound = ref()
        return bound() if bound is not None else False

    return call


class MemoryIndex:
    """BM25 (+ optional embedding fusion) over a store; see :meth:`retrieve`.

    ``store`` needs only: ``root``, ``files()``, ``items(file=None)``,
    ``get(file, name)``, ``revision``, ``changed_files_since(revision)`` and
    ``diary.window(start, end)`` / ``diary.day(date)`` (``diary.dates()`` for
    ``diary="all"``) — a read-only snapshot store works the same. Safe to
    share between threads.

    Freshness: the index follows ``store.revision``; on a change it asks the
    store which RecallFiles changed and re-reads only those, re-indexing only
    the items whose text differs. ``refresh(files)`` does the same for changes
    learnt elsewhere (another process), ``rebuild()`` rescans everything. The
    diary index (``diary="all"``) follows the diary folder day by day.

    Options beyond the seed (all off by default, the seed's behaviour):
    ``query_stopwords`` drops function words from query terms (True, or
    the languages whose words go: ``"en"``, ``"zh"``); ``bm25_b`` is BM25's
    length normalisation (the seed's 0.75); ``neighbour_smoothing`` (a
    weight, 0 = off) lets a turn of a conversation-like file inherit that
    share of its neighbours' BM25 score (:mod:`~wikimem.recall.smoothing`;
    ``transcripts(file, items) -> bool`` replaces its detection of
    conversation-like wiki files);
    ``neighbour_context`` (True, the item's weight as a number, or a
    :class:`~wikimem.vectors.NeighbourContext`) scores items with their neighbours too; ``embed_in_background`` moves
    every embedding of memory off the request path (``worker``: the
    :class:`~wikimem.vectors.worker.EmbeddingWorker` to use, the
    process-wide one by default) — retrieval then scores with the vectors
    that exist (items not embedded yet are ranked by BM25 alone;
    ``RetrievalResult.vectors`` says how far embedding is); ``diary`` is the
    default diary mode of :meth:`retrieve`, ``recency_half_life`` its default
    recency prior (``diary="all"``).
    """

    def __init__(self, store: Any, *, use_jieba: bool | None = None, embedder: Any = None,
                 vectors_dir: Path | str | None = None, fusion_weight: float = 0.5,
                 binary_threshold: int = 10_000, query_stopwords: bool = False,
                 neighbour_context: Any = False, embed_in_background: bool = False,
                 diary: str = "window", worker: Any = None, bm25_b: float = B,
                 neighbour_smoothing: float = 0.0, transcripts: Callable[[str, list], bool] | None = None,
                 recency_half_life: float | None = None, diary_wait: float | None = None):
        if isinstance(fusion_weight, bool) or not isinstance(fusion_weight, (int, float)) \
                or not 0.0 <= fusion_weight <= 1.0:
            raise ValueError(f"fusion_weight must be a number in [0, 1], got {fusion_weight!r}")
        if not isinstance(neighbour_context, bool) and not hasattr(neighbour_context, "item_weight") \
                and not (isinstance(neighbour_context, (int, float)) and 0.0 <= neighbour_context <= 1.0):
            raise ValueError("neighbour_context must be True, False, an item weight in [0, 1] or a NeighbourContext, "
                             f"got {neighbour_context!r}")
        self.store = store
        self.use_jieba = jieba_available() if use_jieba is None else bool(use_jieba)
        self.embedder = embedder
        self.vectors_dir = Path(vectors_dir) if vectors_dir is not None else Path(store.root)
        self.fusion_weight = float(fusion_weight)
        self.binary_threshold = binary_threshold
        self.stop_languages = check_languages(query_stopwords)
        self.query_stopwords = _stop_option(self.stop_languages)
        if isinstance(bm25_b, bool) or not isinstance(bm25_b, (int, float)) or not 0.0 <= bm25_b <= 1.0:
            raise ValueError(f"bm25_b must be a number in [0, 1], got {bm25_b!r}")
        self.bm25_b = float(bm25_b)
        if isinstance(neighbour_smoothing, bool) or not isinstance(neighbour_smoothing, (int, float)) \
                or not 0.0 <= neighbour_smoothing <= 1.0:
            raise ValueError(f"neighbour_smoothing must be a number in [0, 1], got {neighbour_smoothing!r}")
        self.neighbour_smoothing = float(neighbour_smoothing)
        self.recency_half_life = check_half_life(recency_half_life)
        self.neighbour_context = neighbour_context
        self.embed_in_background = bool(embed_in_background)
        self.diary = check_diary(diary)
        self._lock = threading.RLock()
        self._hidden_items: dict[tuple, dict] = {}  # (room, state key) -> the items it leaves out
        self.wiki = WikiIndex(store, use_jieba=self.use_jieba, b=self.bm25_b)
        if transcripts is not None:
            self.wiki.transcripts = transcripts
        self.diary_wait = None if diary_wait is None else float(diary_wait)
        self._diary_index: DiaryIndex | None = None  # built in the background from the first use of diary="all"
        self._diary_build: DiaryBuild | None = None
        # Whether the diary may have changed since the last look (None: always look — the library's default). The
        # host sets it from its own cheap checks (HEAD, the folder's stamp, a time bound): host/freshness.py.
        self.diary_changed: Callable[[], bool] | None = None
        self.vectors: IndexVectors | None = None
        self._hybrid: HybridRanker | None = None
        if embedder is not None:
            self.vectors = IndexVectors(embedder, self.vectors_dir, binary_threshold=binary_threshold,
                                        neighbour_context=neighbour_context, background=self.embed_in_background,
                                        worker=worker, step=_weak(self.embed_step))
            self._hybrid = HybridRanker(self.vectors, self.wiki, self._lock, self.fusion_weight)

    # -- keeping the index fresh -------------------------------------------

    def __len__(self) -> int:
        """Number of wiki items indexed."""
        return len(self.wiki)

    def rebuild(self) -> None:
        """Rescan the whole store now (after edits made outside this process).

        The diary index re-reads every day file that changed (its stamps say
        which: exact, and no stall on a large diary); with ``diary="all"`` as
        the default its first build starts now, in the background.
        """
        with self._lock:
            self.wiki.rebuild()
            if self._diary_index is not None:
                self._diary_index.refresh()
            elif self.diary == "all":
                self._start_diary_build()

    def refresh(self, files: Iterable[str]) -> None:
        """Re-read these RecallFiles and update the index incrementally.

        For changes learnt from elsewhere (another process, git). Nothing
        changes if any name is invalid (``ValueError``).
        """
        if isinstance(files, str):
            files = [files]
        with self._lock:
            if not self.wiki.built:
                self.rebuild()
                return
            self.wiki.refresh(files)

    def _ensure_fresh(self, mode: str = "window") -> None:
        """Bring the index up to ``store.revision`` (called under the lock)."""
        if mode == "all":
            self._diary_fresh()
        if not self.wiki.catch_up():
            self.rebuild()

    def _diary_fresh(self) -> DiaryIndex | None:
        """The diary index brought up to date, or None while its first build runs (called under the lock)."""
        index = self._diary_index
        if index is not None and (self.diary_changed is None or self.diary_changed()):
            index.refresh()
        return index

    def diary_ready(self, wait: float | None = 0.0) -> bool:
        """Whether the diary index (``diary="all"``) is built; starts its build and waits up to ``wait``
        seconds for it (``None``: until the build is over)."""
        if self._diary_index is not None:  # (built once, kept: no need to queue behind a ranking for this)
            return True
        with self._lock:
            if self._diary_index is not None:
                return True
            build = self._start_diary_build()
        if wait is None or wait > 0:
            build.done.wait(wait)
        with self._lock:
            return self._diary_index is not None

    def _start_diary_build(self) -> DiaryBuild:
        """The diary build in progress, started now if there is none (called under the lock)."""
        build = self._diary_build
        if build is None or (build.done.is_set() and time.monotonic() >= build.retry_at):
            build = self._diary_build = DiaryBuild(self.store.diary, self.use_jieba, self.bm25_b,
                                                    self._install_diary)
            build.start()
        return build

    def _install_diary(self, build: DiaryBuild, index: DiaryIndex) -> None:
        with self._lock:
            if self._diary_build is build and self._diary_index is None:
                self._diary_index = index
                self._diary_build = None

    # -- retrieval ---------------------------------------------------------

    def retrieve(self, query: str, *, limit: int = 10, budget_tokens: int | None = None,
                 expand_links: bool = True, explain: bool = False,
                 time_range: tuple[str, str] | None = None, tz: Any = None,
                 diary: str | None = None, recency_half_life: float | None = None,
                 budget_strict: bool = False, room: Room | None = None) -> RetrievalResult:
        """Rank, expand links one hop, cut to the budget. Never calls an LLM; never
        raises because an optional path (jieba, embeddings) is missing or down.

        ``diary``: ``"window"`` or ``"all"`` (default: the index's ``diary``).
        ``recency_half_life`` (days, ``diary="all"``; default: the index's,
        0 = none): a diary entry's score is multiplied by
        ``0.5 + 0.5·2^(−age/half_life)``. ``budget_strict``:
        the first entry does not survive a budget it alone exceeds. ``room``
        (:class:`~wikimem.recall.rooms.Room`): where the answer will be read —
        the entries it leaves out are never candidates (with ``explain``,
        ``excluded`` counts them by reason). Invalid arguments raise
        ``ValueError``.

        The pipeline, in order:

        1. time gate — ``time_range`` if given ("explicit"), else the query's own
           time expressions (:func:`~wikimem.timeparse.scan_time`, "parsed"; they
           are then taken out of the text that is searched, but the words of an
           explicit date — "the 10th of February 2024" — still count, so a dated
           wiki fact is found by its date). A window may be a set of days
           (``time_days``). An empty window is widened by one day on each side,
           once. The wiki is never filtered by time.
        2. query terms — the tokens of the text; with ``query_stopwords`` the
           function words are dropped (:func:`~wikimem.recall.stopwords.content_terms`,
           all kept when nothing else is left). A time question keeps only the
           terms of its topic (:func:`~wikimem.recall.stopwords.topic_terms`:
           "what did I do yesterday?" has none). The index is never filtered.
        3. rank — BM25 over the wiki plus the diary entries in play, or, with an
           embedder, the fusion of BM25 and cosine scores, over a fixed pool of
           candidates (:data:`POOL`, or ``limit`` when larger): the first ``k``
           are the same whatever the limit. Which diary entries:
           ``diary="window"`` (the seed's behaviour, the default) — the window's
           entries only, scored with the statistics of the wiki plus the window;
           ``diary="all"`` — every entry, indexed incrementally, ranked with the
           wiki (statistics over both; a window then filters the diary's
           candidates), optionally with a recency prior (``recency_half_life``).
           A query without terms returns the window's entries newest first, or
           what the embedding path ranks, or nothing. With a window
           (:func:`~wikimem.recall.window.window_order`): the entries that match
           first, then — when the words left are question words only ("what did
           I have for dinner last night?") — the window's other entries newest
           first, before wiki items that match no word.
        4. the top ``limit`` hits; then each hit's link targets right after it
           (``source="link"``, no recursion). The first entry in injection order
           survives: a target linked from an earlier hit stays ``"link"`` even when
           it is also a later hit (that later hit is not repeated). Missing targets
           are reported in ``unresolved_links``.
        5. budget — a prefix cut in that order with :func:`~wikimem.recall.tokenizer.est_tokens`;
           the first entry always survives (the seed's rule: a prompt gets at least
           the best memory), unless ``budget_strict=True`` — then nothing over the
           budget is returned, possibly nothing at all.
        """
        limit, budget_tokens, mode, half_life = self._arguments(query, limit, budget_tokens, diary,
                                                                recency_half_life)
        result = RetrievalResult(budget_tokens=budget_tokens, diary=mode)
        q = self._query(query, mode, half_life, time_range, tz, result, room)
        if q.terms or q.window or (self.vectors is not None and q.text.strip()):
            self._answer(q, limit, expand_links, explain, result)
        cut_result(result, budget_tokens, bool(budget_strict), explain)
        if explain and q.room is not None:
            result.excluded = {why: len(ids) for why, ids in sorted(q.left_out.items())}
        return result

    def _arguments(self, query: Any, limit: Any, budget_tokens: Any, diary: Any,
                   half_life: Any) -> tuple[int, int | None, str, float | None]:
        """retrieve's arguments checked: ``(limit, budget_tokens, diary mode, half-life)``."""
        if not isinstance(query, str):
            raise ValueError(f"query must be a string, got {type(query).__name__}")
        budget = None if budget_tokens is None else check_count(budget_tokens, "budget_tokens")
        mode = self.diary if diary is None else check_diary(diary)
        half_life = self.recency_half_life if half_life is None else check_half_life(half_life)
        return check_count(limit, "limit"), budget, mode, half_life

    def _query(self, query: str, mode: str, half_life: float | None, time_range: Any, tz: Any,
               result: RetrievalResult, room: Room | None = None) -> Query:
        """The query as the ranking sees it: its window (on ``result`` too), terms and the window's entries."""
        if mode == "all" and not self.diary_ready(self.diary_wait):
            mode, result.diary_index = "window", "building"  # answered now: the diary through its window
        text, topic_text, cues = self._gate(query, time_range, tz, result)
        topic = tokenize(topic_text, use_jieba=self.use_jieba)
        if result.time_range is not None:
            topic = topic_terms(topic)
        elif self.stop_languages:
            topic = content_terms(topic, self.stop_languages)
        cue_terms = [t for t in tokenize(cues, use_jieba=self.use_jieba) if not is_function_term(t)] if cues else []
        terms = topic + [t for t in dict.fromkeys(cue_terms) if t not in topic]
        result.query_terms = terms
        q = Query(text, terms, mode, [], None, half_life if mode == "all" else None, tz,
                  fallback=question_only(topic), content=bool(topic) and not is_content_free(topic_text),
                  room=room if room is not None and room.active else None)
        if result.time_range is not None:
            self._open_window(q, result)
        return q

    def _answer(self, q: Query, limit: int, expand_links: bool, explain: bool, result: RetrievalResult) -> None:
        """The hits of ``q`` with their links, into ``result`` (an embedder is called outside the lock)."""
        if self.vectors is None:
            with self._lock:  # one consistent view of the index, from ranking to links
                self._assemble(self._hits(q, limit, result), q, expand_links, result)
            return
        hits = self._hits(q, limit, result)  # embedding calls: not under the lock
        with self._lock:
            self._assemble(hits, q, expand_links, result)
        if explain:
            result.vectors = self._vector_counts_dict()

    def lookup(self, file: str, name: str) -> RecallItem | None:
        """The indexed wiki item ``file``/``name`` (whitespace in the name collapsed), or None: where a link from
        outside this index (another layer's item) finds its target."""
        with self._lock:
            self._ensure_fresh()
            return self.wiki.get(file, " ".join(name.split()))

    def _gate(self, query: str, time_range: Any, tz: Any, result: RetrievalResult) -> tuple[str, str, str]:
        """Set the result's time window; return the text to embed, the text of the topic and the explicit dates."""
        if time_range is not None:
            result.time_range, result.time_range_source = check_range(time_range), "explicit"
            return query, query, ""
        found = scan_time(query, tz=tz)
        if found is None:
            return query, query, ""
        result.time_range, result.time_range_source = found.range, "parsed"
        result.time_days = list(found.days) if found.days else None
        return found.strip(query, keep_cues=True), found.strip(query), found.cues(query)

    def _open_window(self, q: Query, result: RetrievalResult) -> None:
        """The window's diary entries, widened once when there are none."""
        assert result.time_range is not None
        window, days = result.time_range, result.time_days
        keyed = self._window_entries(q, window, days)
        if not keyed:
            window, days = widen(window), widen_days(days)
            result.time_range, result.time_days, result.time_range_widened = window, days, True
            q.left_out.clear()  # the wider window reads its entries again
            keyed = self._window_entries(q, window, days)
        if q.mode == "all":
            q.dates, q.days = window, frozenset(days) if days else None
        q.window = [item for _, item in keyed]
        q.window_keys = [key for key, _ in keyed]

    def _window_entries(self, q: Query, window: tuple[str, str], days: list[str] | None) -> list[tuple[Any, Any]]:
        """``(candidate key, item)`` of the entries of a window (of its ``days`` only, when given) that the query's
        room allows, in time order."""
        if q.mode == "window":
            spans = [(d, d) for d in days] if days else [window]
            items = [as_recall_item(e) for span in spans for e in self.store.diary.window(*span)]
            return [((i.file, i.name, n), i) for n, i in enumerate(sift(items, q.room, q.left_out))]
        with self._lock:
            index = self._diary_fresh()
            assert index is not None  # (retrieve asks for "all" only once the index is built)
            keyed = index.keyed(*window)
        return sift([(k, i) for k, i in keyed if not days or k[0] in days], q.room, q.left_out, _second)

    def _hits(self, q: Query, limit: int, result: RetrievalResult) -> list[Candidate]:
        window = [Candidate(k, i, "diary") for k, i in zip(q.window_keys, q.window)]
        if not q.window:
            return self._rank(q, limit, result, first=limit)  # BM25 or fused, or the embedding path alone
        if not q.terms:  # a window and nothing to search for: the window, newest first
            return window[::-1][:limit]
        return window_order(self._rank(q, limit, result), window, limit, fallback=q.fallback)

    def _rank(self, q: Query, limit: int, result: RetrievalResult, first: int | None = None) -> list[Candidate]:
        """The ranked candidates, best first (at least the top ``limit``; only the ``first`` when given): BM25, or
        fused with cosine.

        The pool is the same whatever the limit (up to :data:`POOL`): the candidates, their normalisation
        and so the first ``k`` do not depend on how many are asked for.
        """
        pool = max(limit, POOL)
        if q.window:
            pool += len(q.window)  # every entry of the window that matches, whatever the wiki holds
        if q.mode == "window":
            q.extra.extend(((i.file, i.name, n), cached_terms(item_text(i), self.use_jieba))
                           for n, i in enumerate(q.window))
        with self._lock:
            self._ensure_fresh(q.mode)
            hidden = self._hidden(q.room, q.mode) if q.room is not None else {}
            # (no indexed item the room leaves out: BM25's candidates need no sifting — the window's were sifted)
            sifting = q.room is not None and (bool(hidden) or self._hybrid is not None)
            if self._hybrid is not None:  # fusion ranks a pool grown by what the room may leave out (then sifted)
                pool, hidden = pool + len(hidden), {}
            lazy = self._hybrid is None and not sifting and q.half_life is None and first is not None
            pairs = self._bm25_pairs(q, pool, hidden, first if lazy else None) if q.terms and pool else []
            if lazy:
                # (BM25 alone, nothing re-scored or sifted after: a candidate is made only when demotion looks at it)
                return self._demote((self._candidate(key, score, q) for key, score in pairs), q, first)
            cands = [self._candidate(key, score, q) for key, score in pairs]
            lagging = self._lagging(q.mode)
        if self._hybrid is not None and limit:
            fused = self._hybrid.rank(q, cands, pool, lagging, self._diary_index)
            if fused is not None:
                cands, result.embedding_used = fused, True
        if sifting:
            cands = sift(cands, q.room, q.left_out, _item)
        return self._demote(self._prior(cands, q), q, first)

    def _hidden(self, room: Room, mode: str) -> dict[Any, tuple[str, Any]]:
        """The indexed items ``room`` leaves out, ``{key: (reason, item)}`` (called under the lock, after
        ``_ensure_fresh(mode)``)."""
        key = (room, self._state_key(mode))
        found = self._hidden_items.get(key)
        if found is None:
            diary = self._diary_index.roomed if mode == "all" and self._diary_index is not None else {}
            found = hidden_items(room, self.wiki.roomed, diary)
            if len(self._hidden_items) >= 32:
                self._hidden_items.clear()
            self._hidden_items[key] = found
        return found

    def _demote(self, cands: Iterable[Candidate], q: Query, first: int | None = None) -> list[Candidate]:
        """A question with content ranks the content-free turns (greetings, acknowledgements) after the others
        (the ``first`` of that order only, when given: the candidates are looked at until they are known)."""
        if not q.content:
            return list(islice(cands, first))
        kept: list[Candidate] = []
        free: list[Candidate] = []
        with self._lock:
            for c in cands:
                if self.wiki.content_free(c.item) if c.kind == "wiki" else is_content_free(c.item.content,
                                                                                          use_jieba=self.use_jieba):
                    free.append(c)
                else:
                    kept.append(c)
                    if len(kept) == first:
                        return kept
        return (kept + free)[:first]

    def _prior(self, cands: list[Candidate], q: Query) -> list[Candidate]:
        if q.half_life is None:
            return cands
        return apply_recency(cands, datetime.now(_tzinfo(q.tz)).date(), q.half_life)

    def _bm25_pairs(self, q: Query, pool: int, hidden: dict | None = None,
                    first: int | None = None) -> Iterable[tuple[Any, float]]:
        """BM25's best ``pool`` ``(key, score)``, wiki and diary, best first (called under the lock). ``hidden``:
        what the room leaves out (``{key: (reason, item)}``): the seeds reach down past them, and they share their
        scores with their neighbours as without a room, but none takes a place (each seed is noted in
        ``q.left_out``). ``first``: the same pairs, lazily, the first ``first`` of them smoothed cheaply (the
        others only when looked at, consumed under the lock)."""
        seeds = max(2 * pool, 20) if self.neighbour_smoothing else pool
        most = seeds + len(hidden or ())
        asked = min(most, 2 * seeds)  # (enough unless the room leaves out more than half the best: then all)
        loose = bool(self.neighbour_smoothing)  # (smoothing sorts its own list: a short one needs no order)
        best = self._bm25_ranked(q, asked, loose)
        if loose and seeds < len(best) < asked:  # (more than the seeds: the first of them are cut in order)
            best = by_score(best)
        ranked, reached = reaching(best, hidden, seeds, q.left_out)
        if not reached and asked < most and len(best) == asked:  # (a shorter list holds every match already)
            best = self._bm25_ranked(q, asked := most)
            ranked, _ = reaching(best, hidden, seeds, q.left_out)
        if self.neighbour_smoothing and ranked:
            diary = self._diary_made() if q.mode == "all" else None
            near, scores = lexical_sides(q, self.wiki, diary)
            # every match a seed (a shorter list than asked, none cut): any other key scores 0, none is asked for
            complete = len(ranked) == len(best) < asked and q.dates is None
            args = (ranked, self.neighbour_smoothing, near, None if complete else scores)
            if first is not None:  # (the seeds are BM25's best: no other key scores above the lowest of them)
                return smooth_first(*args, hidden=hidden or (), limit=pool, first=first)
            ranked = smooth(*args, hidden=hidden or (), limit=pool)
        elif hidden:
            ranked = [kv for kv in ranked if kv[0] not in hidden]
        return ranked[:pool]

    def _bm25_ranked(self, q: Query, k: int, loose: bool = False) -> list[tuple[Any, float]]:
        """BM25's best ``k`` keys, wiki and diary, best first (called under the lock); ``loose``: fewer than ``k``
        (every match) in any order."""
        bm25 = self.wiki.bm25
        if q.mode == "window":
            return bm25.top_k(q.terms, k, extra=q.extra, loose=loose)
        diary = self._diary_made()
        wiki = bm25.top_k(q.terms, k, peers=[diary.bm25], loose=loose)
        if q.dates is None:
            days = diary.bm25.top_k(q.terms, k, peers=[bm25], loose=loose)
        else:
            every: list[tuple[Any, float]] = diary.bm25.top_k(q.terms, None, peers=[bm25])
            days = [(key, s) for key, s in every if q.in_window(key[0])]
        if not days or not wiki:  # (one list alone: already in that order)
            return (wiki or days)[:k]
        return by_score(wiki + days)[:k]

    def _candidate(self, key: Any, score: float, q: Query) -> Candidate:
        if len(key) == 3:
            item = q.window[key[2]] if q.mode == "window" else self._diary_made().item(key)
            assert item is not None  # BM25 ranks only the entries the diary index holds
            return Candidate(key, item, "diary", score)
        return Candidate(key, self.wiki.item(key), "wiki", score)

    def _diary_made(self) -> DiaryIndex:
        """The diary index, once ``_ensure_fresh("all")`` made it (called under the lock)."""
        assert self._diary_index is not None
        return self._diary_index

    def _assemble(self, hits: list[Candidate], q: Query, expand_links: bool, result: RetrievalResult) -> None:
        """Result entries for the hits, with their link targets (called under the lock)."""
        self._ensure_fresh()  # link targets come from the index
        wanted = set(q.terms)
        found = entries(hits, wanted, self.wiki)
        if expand_links:
            found, result.unresolved_links = expand(found, wanted, self.wiki, q.room, q.left_out)
        result.items = found

    # -- the vectors -----------------------------------------------------------

    def _state_key(self, mode: str) -> tuple:
        diary = self._diary_index.generation if (mode == "all" and self._diary_index is not None) else None
        return self.wiki.generation, diary

    def _contents(self, mode: str) -> Contents:
        """What the index holds, for its vectors (called under the lock, after ``_ensure_fresh(mode)``)."""
        diary = self._diary_index.items() if mode == "all" and self._diary_index is not None else None
        return Contents(mode, self._state_key(mode), self.wiki.items(), diary, self.wiki.conversations())

    def _lagging(self, mode: str) -> Contents | None:
        """The contents when the vectors may not cover them, else None (called under the lock)."""
        if self.vectors is None or not self.vectors.lags(self._state_key(mode), mode):
            return None
        return self._contents(mode)

    def _vector_mode(self) -> str:
        return self.diary if self._diary_index is None else "all"

    def embed_step(self) -> bool:
        """One background step: embed a slice of what is missing; True while more is left."""
        if self.vectors is None or self.vectors.search() is None:
            return False
        with self._lock:
            mode = self._vector_mode()
            self._ensure_fresh(mode)
            contents = self._contents(mode)
        more = self.vectors.embed(contents)
        with self._lock:
            return more or self._state_key(mode) != contents.key

    def vector_counts(self) -> tuple[int, int]:
        """``(embedded, total)``: items (and, with ``diary="all"``, diary entries) with their vectors.

        Without an embedder ``embedded`` is 0. With background embedding,
        asking also schedules what is missing, so a client can poll this
        until both numbers agree.
        """
        with self._lock:
            mode = self._vector_mode()
            self._ensure_fresh(mode)
            contents = self._contents(mode)
        if self.vectors is None:
            return 0, contents.total
        return self.vectors.counts(contents)

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


def _stop_option(languages: tuple[str, ...]) -> bool | str:
    """``query_stopwords`` as given back: True (every language), False, or the languages."""
    if set(languages) == set(LANGUAGES):
        return True
    return ",".join(languages) if languages else False


def _tzinfo(tz: Any):
    if tz is None:
        return None
    from wikimem.store import resolve_tz

    return resolve_tz(tz)
