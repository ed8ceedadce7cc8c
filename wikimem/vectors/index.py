"""Cosine search over a (memory-mapped) float32 matrix, in two tiers (numpy).

- Up to ``binary_threshold`` rows: exact cosine over every row (one BLAS
  matrix-vector product over the memmap).
- Above it, tier 1: a 1-bit sign signature per row in RAM (signs taken
  around the corpus mean direction), a Hamming coarse rank, and an exact
  rerank of :func:`rerank_size` rows. The rerank grows with the rows
  (``top_k · max(4, √rows / 5)``): a fixed ``4·top_k`` recalls ~0.4 of the
  exact top 10 at 100k rows on clustered data, ``64·top_k`` all of it, for
  well under a millisecond more (see ``bench/vectors.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["MemmapVectorIndex", "RERANK_FACTOR", "RERANK_DIVISOR", "rerank_size", "unit_vector"]

# A query or a row: a plain sequence of floats or a numpy vector.
Vector = Sequence[float] | np.ndarray

# Rows per chunk when a pass over the whole matrix would otherwise allocate
# a full-size temporary (norms, signatures).
_CHUNK = 16_384
# Coarse candidates reranked exactly, per result asked for: at least
# RERANK_FACTOR, and √rows / RERANK_DIVISOR on large matrices.
RERANK_FACTOR = 4
RERANK_DIVISOR = 5


def rerank_size(rows: int, top_k: int) -> int:
    """How many coarse (Hamming) candidates tier 1 reranks exactly for ``top_k`` results."""
    factor = max(RERANK_FACTOR, math.isqrt(max(rows, 0)) // RERANK_DIVISOR)
    return min(rows, top_k * factor)


def unit_vector(query: Vector, dim: int) -> np.ndarray:
    """The query as a float32 unit vector of the index's dimension."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if q.shape[0] != dim:
        raise ValueError(f"query has {q.shape[0]} dimensions, the index {dim}")
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 0 else q


def _signatures(matrix: np.ndarray, inv_norms: np.ndarray, center: np.ndarray) -> np.ndarray:
    """1-bit signatures ``sign(row/|row| - center)``, packed, padded to whole uint64 words."""
    n, dim = matrix.shape
    words = -(-dim // 64)
    out = np.zeros((n, words * 8), np.uint8)
    for start in range(0, n, _CHUNK):
        chunk = np.asarray(matrix[start:start + _CHUNK], np.float32) * inv_norms[start:start + _CHUNK, None]
        bits = np.packbits(chunk > center, axis=1)
        out[start:start + bits.shape[0], :bits.shape[1]] = bits
    return out.view(np.uint64)


def _mean_direction(matrix: np.ndarray, inv_norms: np.ndarray) -> np.ndarray:
    """The mean of the unit rows.

    Real embedding models are anisotropic (every vector shares a common
    component); signs taken around the mean keep their bits informative.
    """
    total = np.zeros(matrix.shape[1], np.float64)
    for start in range(0, matrix.shape[0], _CHUNK):
        chunk = np.asarray(matrix[start:start + _CHUNK], np.float32) * inv_norms[start:start + _CHUNK, None]
        total += chunk.sum(axis=0, dtype=np.float64)
    return (total / max(matrix.shape[0], 1)).astype(np.float32)


def _popcount(words: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(words)
    as_bytes = words.view(np.uint8)  # pragma: no cover - older numpy
    return _POP8[as_bytes].reshape(words.shape + (8,)).sum(axis=-1)


_POP8 = np.array([bin(i).count("1") for i in range(256)], np.uint8)


class MemmapVectorIndex:
    """Cosine search over a (memory-mapped) matrix; see the module doc for the two tiers.

    Read-only after construction, so any number of threads may search at once.
    """

    def __init__(self, matrix: np.ndarray, binary_threshold: int = 10_000):
        if matrix.ndim != 2:
            raise ValueError("matrix must be 2-dimensional")
        self.matrix = matrix
        self.rows, self.dim = matrix.shape
        self.binary_threshold = binary_threshold
        self.inv_norms = self._inverse_norms()
        self.center: np.ndarray | None = None
        self.signatures: np.ndarray | None = None
        if self.binary:
            self.center = _mean_direction(matrix, self.inv_norms)
            self.signatures = _signatures(matrix, self.inv_norms, self.center)

    @property
    def binary(self) -> bool:
        """True when the sign-bit tier answers (more rows than the threshold)."""
        return self.rows > self.binary_threshold

    @property
    def resident_bytes(self) -> int:
        """RAM this index holds of its own (the matrix itself stays in the page cache)."""
        sig = 0
        if self.signatures is not None and self.center is not None:
            sig = self.signatures.nbytes + self.center.nbytes
        return self.inv_norms.nbytes + sig

    def _inverse_norms(self) -> np.ndarray:
        out = np.empty(self.rows, np.float32)
        for start in range(0, self.rows, _CHUNK):
            chunk = np.asarray(self.matrix[start:start + _CHUNK], dtype=np.float32)
            out[start:start + chunk.shape[0]] = np.sqrt(np.einsum("ij,ij->i", chunk, chunk))
        with np.errstate(divide="ignore"):
            inv = np.where(out > 0, 1.0 / out, 0.0)
        return inv.astype(np.float32)

    def search(self, query: Vector, top_k: int) -> list[tuple[int, float]]:
        """The ``top_k`` rows nearest to ``query`` as ``(row, cosine)``, best first."""
        if top_k <= 0 or self.rows == 0:
            return []
        q = unit_vector(query, self.dim)
        if self.binary:
            return self._search_binary(q, top_k)
        return self.exact(q, top_k)

    def exact(self, query: Vector, top_k: int) -> list[tuple[int, float]]:
        """Exact cosine over every row (tier 0; the reference the binary tier is measured by)."""
        if top_k <= 0 or self.rows == 0:
            return []
        return _best(np.arange(self.rows), self.all_scores(query), top_k)

    def _search_binary(self, q: np.ndarray, top_k: int) -> list[tuple[int, float]]:
        signatures, center = self.signatures, self.center
        assert signatures is not None and center is not None  # built in __init__ whenever self.binary
        words = signatures.shape[1]
        qsig = np.zeros(words * 8, np.uint8)
        bits = np.packbits(q > center)
        qsig[:bits.shape[0]] = bits
        distance = _popcount(signatures ^ qsig.view(np.uint64)).sum(axis=1)
        m = rerank_size(self.rows, top_k)
        coarse = np.argpartition(distance, m - 1)[:m] if m < self.rows else np.arange(self.rows)
        coarse.sort()  # ascending rows read the memmap in file order
        return _best(coarse, self.scores(q, coarse), top_k)

    def all_scores(self, query: Vector) -> np.ndarray:
        """Exact cosine of ``query`` with every row."""
        q = unit_vector(query, self.dim)
        return (self.matrix @ q) * self.inv_norms

    def scores(self, query: Vector, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """Exact cosine of ``query`` with each of ``rows`` (in that order)."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            return np.zeros(0, np.float32)
        q = unit_vector(query, self.dim)
        return (np.asarray(self.matrix[rows]) @ q) * self.inv_norms[rows]


def _best(rows: np.ndarray, scores: np.ndarray, top_k: int) -> list[tuple[int, float]]:
    """The ``top_k`` (row, score) pairs by score, best first; ties by row."""
    k = min(top_k, rows.shape[0])
    if k < rows.shape[0]:
        part = np.argpartition(-scores, k - 1)[:k]
    else:
        part = np.arange(rows.shape[0])
    order = part[np.lexsort((rows[part], -scores[part]))]
    return [(int(rows[i]), float(scores[i])) for i in order]
