"""What :class:`~wikimem.recall.lexical.bm25.BM25Index` keeps of one term (:class:`Postings`), and the bound on the
impacts it caches for its terms (:class:`ImpactCaches`, least recently used dropped first)."""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_left
from collections import OrderedDict

__all__ = ["Postings", "ImpactCaches", "IMPACT_CACHE_BYTES_PER_DOC", "IMPACT_CACHE_MIN_BYTES"]

# Bound of the impact caches (estimated bytes): per indexed document, with a small floor.
IMPACT_CACHE_BYTES_PER_DOC = 320
IMPACT_CACHE_MIN_BYTES = 32 * 1024


class Postings:
    """One term's postings: sorted slots, their term frequencies (0 = removed), caches."""

    __slots__ = ("slots", "tfs", "df", "cache", "np_cache", "np_base")

    def __init__(self, slots: array | None = None, tfs: array | None = None) -> None:
        self.slots = slots if slots is not None else array("i")
        self.tfs = tfs if tfs is not None else array("i")
        self.df = 0
        # Pure Python: (stats version, {slot: impact}, max impact).
        self.cache: tuple | None = None
        # numpy (see bm25_numpy): impacts per stats version, and the term's
        # own arrays, valid until this term's postings change.
        self.np_cache: tuple | None = None
        self.np_base: tuple | None = None

    def find(self, slot: int) -> int:
        """Position of ``slot``, or -1."""
        pos = bisect_left(self.slots, slot)
        return pos if pos < len(self.slots) and self.slots[pos] == slot else -1

    def compact(self, remap: dict[int, int] | None = None) -> None:
        """Drop the removed entries (slots renumbered by ``remap`` when given); caches dropped."""
        live = [(s if remap is None else remap[s], tf) for s, tf in zip(self.slots, self.tfs) if tf]
        self.slots = array("i", [s for s, _ in live])
        self.tfs = array("i", [tf for _, tf in live])
        self.cache = self.np_cache = self.np_base = None


class ImpactCaches:
    """The impact caches of an index's terms, within a byte budget: ``py`` (:attr:`Postings.cache`) and ``np``
    (:attr:`Postings.np_cache` with its arrays) accounted per term, least recently used dropped first."""

    def __init__(self) -> None:
        self._cached: OrderedDict[tuple[int, str], tuple[Postings, int]] = OrderedDict()
        self.bytes = 0  # estimated bytes held
        self._lock = threading.Lock()

    def touch(self, p: Postings, kind: str) -> None:
        """A cached impact set was used: it is the most recent now."""
        with self._lock:
            if (id(p), kind) in self._cached:
                self._cached.move_to_end((id(p), kind))

    def remember(self, p: Postings, kind: str, nbytes: int, documents: int) -> None:
        """Account for a new cache on ``p`` (``py`` or ``np``); drop the least recent beyond the bound of an
        index of ``documents``."""
        budget = max(IMPACT_CACHE_MIN_BYTES, IMPACT_CACHE_BYTES_PER_DOC * documents)
        with self._lock:
            old = self._cached.pop((id(p), kind), None)
            if old is not None:
                self.bytes -= old[1]
            self._cached[(id(p), kind)] = (p, nbytes)
            self.bytes += nbytes
            while self.bytes > budget and len(self._cached) > 1:
                (_, dropped), (q, size) = self._cached.popitem(last=False)
                if dropped == "py":
                    q.cache = None
                else:
                    q.np_cache = q.np_base = None
                self.bytes -= size
