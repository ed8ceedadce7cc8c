"""What :class:`~wikimem.MemoryIndex` calls for cosine scores (numpy).

Design notes: docs/explanation/recall-internals.md (``wikimem/vectors/search.py``).
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wikimem.locking import FileLock
from wikimem.models import RecallItem

from .cache import KEYS_FILE, CachedVectors, VectorCache, check_model, embed_matrix
from .embedders import Embedder, EmbeddingError, VectorMismatch, content_hash, embed_queries, embed_text
from .index import MemmapVectorIndex, unit_vector
from .queries import in_this_retrieve

__all__ = ["EmbeddingSearch", "NeighbourContext", "context_texts", "DIARY_VECTORS_DIR", "CONTEXT_VECTORS_DIR"]

DIARY_VECTORS_DIR = "diary-vectors"
CONTEXT_VECTORS_DIR = "vectors-context"  # "vectors*": ignored by a versioned store's .gitignore
CLAIM_FILE = "vectors.embedding.lock"  # held by the one process embedding a folder in the background


@dataclass(frozen=True)
class NeighbourContext:
    """Score items with their neighbours too: ``item_weight·cos(item) + (1 − item_weight)·cos(context)``.

    The context of an item is its text between the ``window`` items before
    and after it in the same RecallFile (file order). ``conversation_weight``,
    when set, is the item's weight in conversation-like files instead (the
    files :meth:`EmbeddingSearch.sync` is told of): a turn needs its
    neighbours more than a fact of a list does.
    """

    item_weight: float = 0.6
    window: int = 1
    conversation_weight: float | None = None

    def __post_init__(self):
        for name in ("item_weight", "conversation_weight"):
            value = getattr(self, name)
            if value is None and name == "conversation_weight":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 1:
            raise ValueError(f"window must be a positive integer, got {self.window!r}")


def context_texts(items: list[RecallItem], window: int = 1) -> list[str]:
    """For each item, its text with its ``window`` neighbours of the same file on each side.

    ``items`` in store order (each file's items together, in file order).
    """
    out: list[str] = []
    start = 0
    while start < len(items):
        end = start
        while end < len(items) and items[end].file == items[start].file:
            end += 1
        texts = [embed_text(i.name, i.content) for i in items[start:end]]
        for n in range(len(texts)):
            out.append("\n".join(texts[max(0, n - window):n + window + 1]))
        start = end
    return out


@dataclass(frozen=True)
class _WikiState:
    """The searchable wiki vectors: item rows, optional context rows aligned by item row."""

    index: MemmapVectorIndex
    keys: list[tuple[str, str]]
    hashes: dict[tuple[str, str], str]  # key -> hash of the embedded item text
    row_of_key: dict[tuple[str, str], int]
    context: MemmapVectorIndex | None = None
    context_row: np.ndarray | None = None  # item row -> context row, -1 when missing
    context_hashes: dict[tuple[str, str], str] | None = None
    item_weight: float | np.ndarray = 1.0  # one weight, or one per item row
    # Exact tier with context: the mixed unit rows w·item + (1−w)·context, so one
    # pass over one matrix scores everything (instead of two passes over two).
    mixed: np.ndarray | None = None

    @property
    def dim(self) -> int:
        return self.index.dim


class EmbeddingSearch:
    """Cosine scores for retrieval: the wiki caches, the diary cache, the query.

    See the module docstring. ``search`` raises :class:`EmbeddingError` until
    a ``sync`` succeeded.
    """

    QUERY_CACHE_SIZE = 256

    def __init__(self, embedder: Embedder, vectors_dir: Path | str, *, binary_threshold: int = 10_000,
                 batch_size: int = 64, context: NeighbourContext | None = None):
        self.embedder = embedder
        self.vectors_dir = Path(vectors_dir)
        self.binary_threshold = binary_threshold
        self.batch_size = batch_size
        self.context = context
        self.wiki_cache = VectorCache(self.vectors_dir)
        self.context_cache = VectorCache(self.vectors_dir / CONTEXT_VECTORS_DIR)
        self.diary_cache = VectorCache(self.vectors_dir / DIARY_VECTORS_DIR)
        self._state: _WikiState | None = None
        self.version = 0  # bumped whenever the vectors in memory change (wiki or diary)
        self._diary: CachedVectors | None = None
        self._diary_index: MemmapVectorIndex | None = None
        self._diary_loaded = False
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._diary_lock = threading.Lock()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._warned = False
        # Background steps of several processes (gunicorn workers) on one folder
        # would embed the same new texts: one claims the folder, the others skip.
        self._claim = FileLock(self.vectors_dir / CLAIM_FILE, timeout=0)

    def claim(self):
        """Context manager: this process embeds the folder in the background now;
        :class:`~wikimem.errors.StoreBusy` when another one does."""
        return self._claim.hold()

    # -- the wiki ----------------------------------------------------------

    def sync(self, items: list[RecallItem], *, max_new: int | None = None,
             conversations: Collection[str] = frozenset()) -> int:
        """Bring the wiki vectors in line with ``items`` (row order = item order).

        ``conversations``: the conversation-like files (their items take the
        context's ``conversation_weight``, when it has one).

        Returns how many texts still lack a vector: always 0 without
        ``max_new``; with it, each cache embeds at most ``max_new`` texts in
        this call and the rest is left for the next.
        """
        items = list(items)
        with self._sync_lock:
            try:
                cached = self._guard(lambda: self.wiki_cache.sync(items, self.embedder, self.batch_size,
                                                                  max_new=max_new))
                ctx = self._sync_context(items, self.context, max_new) if self.context is not None else None
            except BaseException:
                if max_new is None:
                    with self._lock:
                        self._state = None  # stale rows must not score changed items
                        self.version += 1
                raise
            state = self._build_state(cached, ctx, frozenset(conversations))
            with self._lock:
                self._state = state
                self.version += 1
                self._warned = False  # a later mismatch deserves a new warning
        return self._pending(items, cached, ctx)

    def _sync_context(self, items: list[RecallItem], context: NeighbourContext, max_new: int | None) -> CachedVectors:
        texts = context_texts(items, context.window)
        entries = [((i.file, i.name), t) for i, t in zip(items, texts)]
        return self._guard(lambda: self.context_cache.sync(entries, self.embedder, self.batch_size,
                                                           max_new=max_new))

    def _build_state(self, cached: CachedVectors, ctx: CachedVectors | None,
                     conversations: frozenset[str] = frozenset()) -> _WikiState:
        keys = [(f, n) for f, n, _ in cached.keys]
        row_of_key = {k: i for i, k in enumerate(keys)}
        hashes = {(f, n): h for f, n, h in cached.keys}
        matrix = _matrix(cached)
        index = MemmapVectorIndex(matrix, self.binary_threshold)
        if ctx is None or self.context is None:  # ctx is synced only with a context
            return _WikiState(index, keys, hashes, row_of_key)
        ctx_matrix = _matrix(ctx)
        if ctx.rows and cached.rows and ctx_matrix.shape[1] != matrix.shape[1]:
            self._guard(lambda: _raise_dim(matrix.shape[1], ctx_matrix.shape[1]))
        ctx_of = {(f, n): i for i, (f, n, _) in enumerate(ctx.keys)}
        mapping = np.array([ctx_of.get(k, -1) for k in keys], np.int64)
        ctx_index = MemmapVectorIndex(ctx_matrix, self.binary_threshold)
        w = _weights(self.context, keys, conversations)
        mixed = None if index.binary or ctx_index.binary else _mixed_rows(index, ctx_index, mapping, w)
        return _WikiState(index, keys, hashes, row_of_key, ctx_index, mapping,
                          {(f, n): h for f, n, h in ctx.keys}, w, mixed)

    def _pending(self, items: list[RecallItem], cached: CachedVectors, ctx: CachedVectors | None) -> int:
        held = cached.hashes()
        pending = sum(1 for i in items if content_hash(embed_text(i.name, i.content)) not in held)
        if ctx is not None and self.context is not None:
            have = ctx.hashes()
            pending += sum(1 for t in context_texts(items, self.context.window) if content_hash(t) not in have)
        return pending

    def embedded(self, items: list[RecallItem]) -> int:
        """How many of ``items`` can be scored with their current vectors now.

        An item counts when its text's vector is in memory, and — with
        neighbour context — its context's too.
        """
        with self._lock:
            state = self._state
        if state is None:
            return 0
        contexts = context_texts(items, self.context.window) if self.context is not None else None
        count = 0
        for n, item in enumerate(items):
            key = (item.file, item.name)
            if state.hashes.get(key) != content_hash(embed_text(item.name, item.content)):
                continue
            if contexts is not None and (state.context_hashes or {}).get(key) != content_hash(contexts[n]):
                continue
            count += 1
        return count

    # -- search ------------------------------------------------------------

    def search(self, query: str, top_k: int, *, candidates: list[tuple[str, str]],
               diary: list[RecallItem], embed_missing: bool = True
               ) -> tuple[dict[tuple[str, str], float], list[float | None]]:
        """Cosine of the vector top ``top_k`` and of every candidate; one cosine per diary item.

        With neighbour context the cosine is the mixed score. Diary items
        without a vector are embedded now (``embed_missing``) or scored None.
        """
        state = self._require_state()
        q = self.query_vector(query)
        wiki = self.wiki_scores(q, top_k, candidates, state)
        return wiki, self.diary_scores(q, diary, embed_missing=embed_missing)

    def ready(self) -> bool:
        """True once a sync succeeded (there are wiki vectors to search, maybe none)."""
        with self._lock:
            return self._state is not None

    def _require_state(self) -> _WikiState:
        with self._lock:
            state = self._state
        if state is None:
            raise EmbeddingError("no wiki vectors: sync() has not succeeded yet")
        return state

    def wiki_scores(self, q: np.ndarray, top_k: int, candidates: Iterable[tuple[str, str]],
                    state: _WikiState | None = None) -> dict[tuple[str, str], float]:
        """Cosine (mixed with context when enabled) of the vector top ``top_k`` and of ``candidates``."""
        state = state or self._require_state()
        if not state.index.rows:
            return {}
        if q.shape[0] != state.dim:
            self._guard(lambda: _raise_dim(state.dim, q.shape[0]))
        wanted = [state.row_of_key[k] for k in dict.fromkeys(candidates) if k in state.row_of_key]
        if state.context is None:
            top = state.index.search(q, top_k)
            out = {state.keys[row]: score for row, score in top}
            extra = [r for r in wanted if state.keys[r] not in out]
            for row, score in zip(extra, state.index.scores(q, extra)):
                out[state.keys[row]] = float(score)
            return out
        if state.mixed is not None:  # exact: one pass over the mixed rows scores the top and the candidates
            every = state.mixed @ unit_vector(q, state.dim)
            k = min(top_k, len(every))
            best = np.argpartition(-every, k - 1)[:k] if k else np.zeros(0, np.int64)
            rows = np.union1d(best, np.asarray(wanted, np.int64))
            keys = state.keys
            return dict(zip([keys[r] for r in rows.tolist()], every[rows].tolist()))
        rows = np.array(sorted(set(self._context_top(q, top_k, state)) | set(wanted)), np.int64)
        mixed = self._mixed(q, rows, state)
        return {state.keys[int(r)]: float(s) for r, s in zip(rows, mixed)}

    def _context_top(self, q: np.ndarray, top_k: int, state: _WikiState) -> list[int]:
        """Item rows worth a mixed score: the top by item cosine and by context cosine."""
        if state.mixed is not None:  # exact: one pass over the mixed rows
            mixed = state.mixed @ unit_vector(q, state.dim)
            k = min(top_k, len(mixed))
            return np.argpartition(-mixed, k - 1)[:k].tolist() if k else []
        context, context_row = state.context, state.context_row
        assert context is not None and context_row is not None  # only called with context
        rows = [r for r, _ in state.index.search(q, top_k)]
        back = {int(c): i for i, c in enumerate(context_row) if c >= 0}
        rows += [back[r] for r, _ in context.search(q, top_k) if r in back]
        return rows

    @staticmethod
    def _mixed(q: np.ndarray, rows: np.ndarray, state: _WikiState) -> np.ndarray:
        """The mixed cosine of item ``rows``; an item without a context vector keeps its own."""
        if state.mixed is not None:
            return state.mixed[rows] @ unit_vector(q, state.dim) if len(rows) else np.zeros(0, np.float32)
        context, context_row = state.context, state.context_row
        assert context is not None and context_row is not None  # only called with context
        item = state.index.scores(q, rows)
        ctx_rows = context_row[rows]
        have = ctx_rows >= 0
        ctx = item.copy()
        if have.any():
            ctx[have] = context.scores(q, ctx_rows[have])
        w = state.item_weight if isinstance(state.item_weight, float) else state.item_weight[rows]
        return w * item + (1.0 - w) * ctx

    # -- the query ---------------------------------------------------------

    def query_vector(self, query: str) -> np.ndarray:
        """The query's embedding (query role); recent queries are remembered (one call saved each)."""
        if not isinstance(query, str) or not query.strip():
            raise EmbeddingError("nothing to embed: the query is empty")
        with self._lock:
            cached = self._queries.get(query)
            if cached is not None:
                self._queries.move_to_end(query)
        if cached is not None:
            in_this_retrieve(query, cached)
            return cached
        q = embed_matrix(_QueryRole(self.embedder), [query], 1)[0]
        with self._lock:
            self._queries[query] = q
            while len(self._queries) > self.QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return q

    # -- the diary ---------------------------------------------------------

    def _diary_cache(self) -> CachedVectors | None:
        """The diary rows in memory (loaded from disk once; called under the diary lock)."""
        if not self._diary_loaded:
            loaded = self.diary_cache.load()
            self._diary = loaded if loaded.matrix is not None else None  # ([], None): no cache yet
            self._diary_loaded = True
            with self._lock:
                self.version += 1
        return self._diary

    def ensure_diary(self, items: list[RecallItem], *, max_new: int | None = None) -> int:
        """Embed the diary items not cached yet (at most ``max_new``); how many still lack one."""
        texts = [embed_text(it.name, it.content) for it in items]
        with self._diary_lock:
            cached = self._diary_cache()
            if cached is not None:
                self._guard(lambda: check_model(cached, self.embedder))
            held = cached.hashes() if cached is not None else set()
            if any(content_hash(t) not in held for t in texts):
                entries = [(it.file, it.name, t) for it, t in zip(items, texts)]
                cached = self._guard(lambda: self.diary_cache.ensure(entries, self.embedder, self.batch_size,
                                                                     max_new=max_new))
                self._diary, self._diary_index = cached, None
                with self._lock:
                    self.version += 1
                held = cached.hashes()
        return sum(1 for t in texts if content_hash(t) not in held)

    def diary_embedded(self, items: Iterable[RecallItem]) -> int:
        """How many of the diary ``items`` have a vector in memory now."""
        with self._diary_lock:
            cached = self._diary
        held = cached.hashes() if cached is not None else set()
        return sum(1 for it in items if content_hash(embed_text(it.name, it.content)) in held)

    def diary_scores(self, q: np.ndarray, diary: list[RecallItem], *, embed_missing: bool = True) -> list[float | None]:
        """One cosine per diary item; None for an item without a vector when not ``embed_missing``."""
        if not diary:
            return []
        hashes = [content_hash(embed_text(it.name, it.content)) for it in diary]
        if embed_missing:
            self.ensure_diary(diary)
        with self._diary_lock:
            cached = self._diary if self._diary_loaded else None
        if cached is None or not cached.rows:
            return [None] * len(diary)
        matrix = _matrix(cached)
        if matrix.shape[1] != q.shape[0]:
            self._guard(lambda: _raise_dim(matrix.shape[1], q.shape[0]))
        rows = [cached.row_of_hash(h) for h in hashes]
        have = [r for r in rows if r is not None]
        scores = iter(_cosines(matrix, np.array(have, np.int64), q)) if have else iter(())
        return [None if r is None else float(next(scores)) for r in rows]

    def diary_search(self, q: np.ndarray, top_k: int) -> list[tuple[str, float]]:
        """The diary rows nearest to ``q`` as ``(content hash, cosine)``, best first."""
        with self._diary_lock:
            cached = self._diary if self._diary_loaded else None
            if cached is None or not cached.rows:
                return []
            if self._diary_index is None:
                self._diary_index = MemmapVectorIndex(_matrix(cached), self.binary_threshold)
            index = self._diary_index
        if q.shape[0] != index.dim:
            self._guard(lambda: _raise_dim(index.dim, q.shape[0]))
        return [(cached.keys[row][2], score) for row, score in index.search(q, top_k)]

    # -- mismatch ----------------------------------------------------------

    def _guard(self, action: Callable[[], Any]) -> Any:
        """Run ``action``; on a mismatch warn (once) before re-raising."""
        try:
            return action()
        except VectorMismatch as exc:
            with self._lock:
                warn, self._warned = not self._warned, True
            if warn:
                warnings.warn(f"wikimem embeddings disabled, using BM25 only: {exc}",
                              RuntimeWarning, stacklevel=3)
            raise


class _QueryRole:
    """An embedder seen through its query role (``embed_query`` when it has one)."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder

    def embed(self, texts: list[str]) -> Any:
        return embed_queries(self.embedder, texts)


def _weights(context: NeighbourContext, keys: list[tuple[str, str]], conversations: frozenset[str]
             ) -> float | np.ndarray:
    """The item weight, or one per item row when conversation-like files take another one."""
    if context.conversation_weight is None:
        return float(context.item_weight)
    return np.array([context.conversation_weight if f in conversations else context.item_weight
                     for f, _ in keys], np.float32)


def _mixed_rows(items: MemmapVectorIndex, contexts: MemmapVectorIndex, ctx_row: np.ndarray,
                w: float | np.ndarray) -> np.ndarray:
    """``w·unit(item) + (1−w)·unit(context)`` per item row (its own unit row when it has no context)."""
    out = np.empty((items.rows, items.dim), np.float32)
    for start in range(0, items.rows, 4096):
        stop = min(items.rows, start + 4096)
        unit = np.asarray(items.matrix[start:stop], np.float32) * items.inv_norms[start:stop, None]
        rows = ctx_row[start:stop]
        ctx = unit.copy()
        have = rows >= 0
        if have.any():
            ctx[have] = np.asarray(contexts.matrix[rows[have]], np.float32) * contexts.inv_norms[rows[have], None]
        part = w if isinstance(w, float) else w[start:stop, None]
        out[start:stop] = part * unit + (1.0 - part) * ctx
    return out


def _matrix(cached: CachedVectors) -> np.ndarray:
    """The matrix of a cache that exists (only ``load()`` of no cache gives ``([], None)``)."""
    if cached.matrix is None:
        raise EmbeddingError("no vector cache")  # unreachable: synced and loaded caches have a matrix
    return cached.matrix


def _cosines(matrix: np.ndarray, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    vectors = np.asarray(matrix[rows], dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(q))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, (vectors @ q) / norms, 0.0)


def _raise_dim(cache_dim: int, query_dim: int) -> None:
    raise VectorMismatch(
        f"vector cache holds {cache_dim}-dimensional vectors but the embedder returned "
        f"{query_dim}; delete {KEYS_FILE} and the vectors-*.npy file to rebuild")
