"""numpy scoring for :class:`wikimem.recall.bm25.BM25Index` (the ``[embed]`` extra brings numpy).

Imported lazily by the index, only for queries with many postings. It
evaluates exactly the float operations of the pure-Python path, in the same
order, so both return identical scores; the index's tests hold them to it.
"""

from __future__ import annotations

import numpy as np

from .bm25 import NP_ENTRY_BYTES

__all__ = ["rank"]

# A term in more than 1/DENSE_FRACTION of the slots is added as a dense row.
DENSE_FRACTION = 4
_SLOT = np.dtype(f"i{np.array([0], dtype=np.intc).itemsize}")  # array('i') is a C int


def _base(index, p) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """A term's own arrays: slots, tf and document lengths (dense rows for a common term).

    They change only when this term's postings do (a document's length
    never changes while it holds its slot), so they outlive other writes.
    """
    base = p.np_base
    if base is not None:
        return base
    # Copies, never views: a view would pin the arrays against appends.
    slots = np.array(p.slots, dtype=np.intp)
    tfs = np.array(p.tfs, dtype=np.float64)
    dl = np.frombuffer(index._dl, dtype=_SLOT)[slots].astype(np.float64)
    n = len(index._keys)
    if len(slots) * DENSE_FRACTION > n:
        # Adding a whole row is cheaper than scattering into most of it; the
        # zeros it adds elsewhere leave those sums unchanged (x + 0.0 == x).
        # Slots added later are beyond the row and never hold this term.
        dense_tf, dense_dl = np.zeros(n), np.zeros(n)
        dense_tf[slots], dense_dl[slots] = tfs, dl
        base = (None, dense_tf, dense_dl)
    else:
        base = (slots, tfs, dl)
    p.np_base = base
    return base


def _impacts(index, p, stats) -> tuple[np.ndarray | None, np.ndarray]:
    """Slots (None for a dense row) and impacts of a term, cached per statistics."""
    c = p.np_cache
    if stats.version is not None and c is not None and c[0] == stats.version:
        index.touch_cache(p, "np")
        return c[1], c[2]
    slots, tf, dl = _base(index, p)
    k1, b, avgdl = index.k1, index.b, stats.avgdl
    imps = tf * (k1 + 1) / (tf + k1 * ((1 - b) + b * dl / avgdl))
    if stats.version is not None:
        p.np_cache = (stats.version, slots, imps)
        index.remember_cache(p, "np", len(imps) * NP_ENTRY_BYTES)
    return slots, imps


def rank(index, terms, stats, k: int | None) -> list[tuple[object, float]]:
    """Candidates ``(key, score)`` holding at least the top ``k`` (all matches for None)."""
    n = len(index._keys)
    scores = np.zeros(n)
    touched, sparse = [], True
    for t in terms:
        slots, imps = _impacts(index, t.postings, stats)
        if slots is None:  # a dense row over the first len(imps) slots
            scores[:len(imps)] += t.weight * imps  # on the first term: 0.0 + w·x, as the pure-Python sum
            sparse = False
        else:
            scores[slots] += t.weight * imps  # slots are unique within a term
            touched.append(slots)
    if sparse and sum(len(s) for s in touched) * DENSE_FRACTION < n:
        cand = np.unique(np.concatenate(touched))  # few postings: never scan the whole row
        return _best_of(index, scores, cand[scores[cand] > 0], k)
    if k is None or k >= n:
        return _pairs(index, scores, np.flatnonzero(scores))
    # Select on the negated values: introselect is far faster with a small
    # kth when most scores are equal (zeros, or the same few sums).
    threshold = -np.partition(-scores, k - 1)[k - 1]
    # Every live match scores > 0, removed documents only ever add 0; ties
    # at the threshold are all kept and settled by key later.
    cand = np.flatnonzero(scores >= threshold) if threshold > 0 else np.flatnonzero(scores)
    return _pairs(index, scores, cand)


def _best_of(index, scores, cand, k):
    if k is not None and len(cand) > k:
        vals = scores[cand]
        cand = cand[vals >= -np.partition(-vals, k - 1)[k - 1]]
    return _pairs(index, scores, cand)


def _pairs(index, scores, cand) -> list[tuple[object, float]]:
    keys = index._keys
    return [(keys[s], float(scores[s])) for s in cand.tolist()]
