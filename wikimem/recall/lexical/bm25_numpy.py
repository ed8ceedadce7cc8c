"""numpy scoring for :class:`wikimem.recall.lexical.bm25.BM25Index` (the ``[embed]`` extra brings numpy).

Imported lazily by the index, only for queries with many postings. It takes
arrays (a term's slots and term frequencies, the documents' lengths), never
the index, and evaluates exactly the float operations of the pure-Python
path, in the same order, so both return identical scores; the index's
tests hold them to it. The index keeps what these functions return cached.
"""

from __future__ import annotations

from array import array

import numpy as np

__all__ = ["term_arrays", "impacts", "rank", "ENTRY_BYTES"]

# A term in more than 1/DENSE_FRACTION of the slots is added as a dense row.
DENSE_FRACTION = 4
# Estimated bytes of one cached posting: its impact plus its slot, tf and length cells.
ENTRY_BYTES = 32
_SLOT = np.dtype(f"i{np.array([0], dtype=np.intc).itemsize}")  # array('i') is a C int

# A term's arrays: (slots, or None for a dense row over the first slots; tf; document lengths).
Base = tuple[np.ndarray | None, np.ndarray, np.ndarray]


def term_arrays(slots: array, tfs: array, lengths: array, n: int) -> Base:
    """A term's own arrays from its postings (``slots``, ``tfs``), the documents' ``lengths`` by slot and the
    number of slots ``n``: dense rows for a common term.

    They change only when this term's postings do (a document's length
    never changes while it holds its slot), so they outlive other writes.
    """
    # Copies, never views: a view would pin the arrays against appends.
    at = np.array(slots, dtype=np.intp)
    tf = np.array(tfs, dtype=np.float64)
    dl = np.frombuffer(lengths, dtype=_SLOT)[at].astype(np.float64)
    if len(at) * DENSE_FRACTION > n:
        # Adding a whole row is cheaper than scattering into most of it; the
        # zeros it adds elsewhere leave those sums unchanged (x + 0.0 == x).
        # Slots added later are beyond the row and never hold this term.
        dense_tf, dense_dl = np.zeros(n), np.zeros(n)
        dense_tf[at], dense_dl[at] = tf, dl
        return None, dense_tf, dense_dl
    return at, tf, dl


def impacts(base: Base, k1: float, b: float, avgdl: float) -> tuple[np.ndarray | None, np.ndarray]:
    """Slots (None for a dense row) and impacts of a term: the index's one formula, as arrays."""
    slots, tf, dl = base
    return slots, tf * (k1 + 1) / (tf + k1 * ((1 - b) + b * dl / avgdl))


def rank(columns: list[tuple[float, np.ndarray | None, np.ndarray]], n: int,
         k: int | None) -> list[tuple[int, float]]:
    """Candidates ``(slot, score)`` holding at least the top ``k`` (all matches for None), of the terms'
    ``(weight, slots, impacts)`` in scoring order over ``n`` slots."""
    scores = np.zeros(n)
    touched, sparse = [], True
    for weight, slots, imps in columns:
        if slots is None:  # a dense row over the first len(imps) slots
            scores[:len(imps)] += weight * imps  # on the first term: 0.0 + w·x, as the pure-Python sum
            sparse = False
        else:
            scores[slots] += weight * imps  # slots are unique within a term
            touched.append(slots)
    if sparse and sum(len(s) for s in touched) * DENSE_FRACTION < n:
        cand = np.unique(np.concatenate(touched))  # few postings: never scan the whole row
        return _best_of(scores, cand[scores[cand] > 0], k)
    if k is None or k >= n:
        return _pairs(scores, np.flatnonzero(scores))
    # Select on the negated values: introselect is far faster with a small
    # kth when most scores are equal (zeros, or the same few sums).
    threshold = -np.partition(-scores, k - 1)[k - 1]
    # Every live match scores > 0, removed documents only ever add 0; ties
    # at the threshold are all kept and settled by key later.
    cand = np.flatnonzero(scores >= threshold) if threshold > 0 else np.flatnonzero(scores)
    return _pairs(scores, cand)


def _best_of(scores, cand, k):
    if k is not None and len(cand) > k:
        vals = scores[cand]
        cand = cand[vals >= -np.partition(-vals, k - 1)[k - 1]]
    return _pairs(scores, cand)


def _pairs(scores, cand) -> list[tuple[int, float]]:
    return [(s, float(scores[s])) for s in cand.tolist()]
