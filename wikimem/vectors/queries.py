"""Query vectors remembered: an owner's recent queries, and one vector per query within one retrieve.

A query's embedding is most of a fused retrieve (the bundled model: ~15 ms on
a quiet core, against ~1 ms of BM25). :class:`RememberedQueries` wraps the
host's embedder for one owner: every index of that owner (its layers, as-of
and staged views) shares its recent query vectors, so a character's retrieve
— three layers — embeds the query once, not three times. The memory is per
owner, so one tenant's queries never make another's faster (no timing hint of
what others ask). :func:`one_retrieve` widens it for the length of one call on
one thread: the character's profile (another owner) reuses the same vector.
The vectors are the embedder's own, byte for byte; passages pass through.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .embedders import embed_queries

__all__ = ["RememberedQueries", "one_retrieve", "in_this_retrieve", "QUERIES_KEPT"]

QUERIES_KEPT = 64  # recent query vectors kept per owner (384 floats each with the local model: ~100 kB)

_call = threading.local()  # .vectors: {text: vector} of the retrieve running on this thread, or None


@contextmanager
def one_retrieve() -> Iterator[None]:
    """Within the block, on this thread, every :class:`RememberedQueries` reuses the vectors computed in it."""
    outer = getattr(_call, "vectors", None)
    if outer is None:
        _call.vectors = {}
    try:
        yield
    finally:
        if outer is None:
            _call.vectors = None


def in_this_retrieve(text: str, vector: Any) -> None:
    """A query vector found in a cache (an index's, an owner's) is this retrieve's too: the other owners it reads
    (a character's own memory) reuse it instead of embedding the text again."""
    scoped = getattr(_call, "vectors", None)
    if scoped is not None:
        scoped[text] = vector


class RememberedQueries:
    """An embedder whose query vectors of recent texts are remembered (LRU of ``kept``); the rest is ``inner``'s."""

    def __init__(self, inner: Any, kept: int = QUERIES_KEPT):
        self.inner = inner
        self.kept = kept
        self._recent: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # model, space, dim, load, take … are the wrapped embedder's
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"RememberedQueries({self.inner!r})"

    def embed(self, texts: list[str]) -> Any:
        return self.inner.embed(texts)

    def embed_query(self, texts: list[str]) -> Any:
        """Query vectors, one row per text: remembered ones when every text is, else the embedder's (then kept)."""
        import numpy as np

        known = [self._known(t) for t in texts] if isinstance(texts, list) else []
        if known and all(v is not None for v in known):
            return np.stack(known)
        out = embed_queries(self.inner, texts)
        matrix = np.asarray(out)
        if known and matrix.ndim == 2 and matrix.shape[0] == len(texts):
            for text, row in zip(texts, matrix, strict=True):
                self._keep(text, row)
        return out

    def _known(self, text: Any) -> Any:
        if not isinstance(text, str):
            return None
        scoped = getattr(_call, "vectors", None)
        if scoped is not None and text in scoped:
            return scoped[text]
        with self._lock:
            row = self._recent.get(text)
            if row is not None:
                self._recent.move_to_end(text)
        if row is not None:
            in_this_retrieve(text, row)
        return row

    def _keep(self, text: str, row: Any) -> None:
        import numpy as np

        row = np.array(row, copy=True)
        row.flags.writeable = False  # (shared by every caller: nobody may change it in place)
        scoped = getattr(_call, "vectors", None)
        if scoped is not None:
            scoped[text] = row
        with self._lock:
            self._recent[text] = row
            self._recent.move_to_end(text)
            while len(self._recent) > self.kept:
                self._recent.popitem(last=False)
