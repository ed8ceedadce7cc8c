"""Okapi BM25 over an inverted index that is updated in place: :class:`BM25Index`.

``score(d) = Σ_t qtf(t)·idf(t)·tf(t,d)·(k1+1) / (tf(t,d) + k1·(1 − b + b·|d|/avgdl))``, ``k1 = 1.5``,
``b = 0.75``, Lucene's IDF (:func:`idf`, never negative). Documents are added and removed one at a time, in
time proportional to their own size; a term's postings are :class:`~wikimem.recall.lexical.postings.Postings`; top-k
is term-at-a-time with MaxScore-style pruning, or numpy arrays for large queries
(:mod:`wikimem.recall.lexical.bm25_numpy`, imported lazily) — the same scores bit for bit, the same ranking (score
descending, ties by key ascending: keys must be mutually comparable). Why, and the figures:
docs/explanation/bm25.md.
"""

from __future__ import annotations

import gc
import heapq
import importlib.util
import math
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter, neg
from sys import intern
from typing import Any

from .postings import ImpactCaches, Postings

__all__ = ["BM25Index", "K1", "B", "idf", "by_score"]

K1 = 1.5
B = 0.75
# Estimated bytes of one cached posting in the pure-Python cache: a dict entry with its float.
_PY_ENTRY_BYTES = 100
# A query whose postings hold at least this many entries is scored with
# numpy when it is available; below it, interpreter overhead of numpy's
# calls costs more than it saves.
NUMPY_MIN_POSTINGS = 1500
# Pruning bounds are widened by this relative margin, so float rounding can
# never make a pruned document one that belonged in the top k.
_SAFETY = 1e-9
# Slots of removed documents are reclaimed (all slots renumbered) once they
# outnumber twice the live ones plus this slack: amortised O(1) per removal.
RENUMBER_SLACK = 16384
# A ranking's sums are kept for the scores() that may follow (one dict per index) when they are at most this many.
LAST_SUMS = 4096


@contextmanager
def _collector_paused():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def idf(n_docs: int, df: int) -> float:
    """Lucene's BM25 IDF: ``ln(1 + (N − df + 0.5) / (df + 0.5))``, never negative."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class _Stats:
    """Collection statistics a query is scored with."""

    n: int
    avgdl: float
    version: Hashable | None  # None: statistics that include extra documents, not cacheable


@dataclass(frozen=True)
class _Term:
    term: str
    weight: float  # qtf · idf
    postings: Postings | None
    extra_tf: tuple  # tf of this term in each extra document (0 when absent)

    @property
    def posted(self) -> Postings:
        """The postings of a term the index holds (what ranking keeps of a plan)."""
        assert self.postings is not None, self.term
        return self.postings


class BM25Index:
    """An in-memory inverted index with Okapi BM25 ranking and in-place updates.

    Not thread-safe: callers serialise access (the retrieval layer holds one
    lock per index).
    """

    def __init__(self, *, k1: float = K1, b: float = B, use_numpy: bool | None = None):
        self.k1 = float(k1)
        self.b = float(b)
        if use_numpy is None:
            try:
                use_numpy = importlib.util.find_spec("numpy") is not None
            except (ImportError, ValueError):
                use_numpy = False
        self.use_numpy = bool(use_numpy)
        self._np: Any = None  # the bm25_numpy module, imported on first use
        self._slot_of: dict[Hashable, int] = {}
        self._keys: list = []  # slot -> key, None when removed
        self._terms: list = []  # slot -> tuple of distinct terms, None when removed
        self._dl = array("i")  # slot -> document length
        self._postings: dict[str, Postings] = {}
        self._total = 0  # sum of live document lengths
        self._version = 0  # bumped by every change: cached impacts are keyed by it
        self._caches = ImpactCaches()  # the bound on the impacts cached per term
        # The sums of the last pure-Python ranking: (stats version, plan key, {slot: score}, whether every match
        # is there — no pruning); scores() of the same query and statistics reads them (smoothing's neighbours)
        self._last: tuple | None = None

    # -- contents ----------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._slot_of

    def keys(self) -> list:
        """Every key in the index."""
        return list(self._slot_of)

    def doc_terms(self, key: Hashable) -> tuple[str, ...]:
        """The distinct terms of a document (empty if unknown)."""
        slot = self._slot_of.get(key)
        return self._terms[slot] if slot is not None else ()

    def df(self, term: str) -> int:
        p = self._postings.get(term)
        return p.df if p is not None else 0

    @property
    def avgdl(self) -> float:
        return self._total / len(self._slot_of) if self._slot_of else 0.0

    # -- updates -----------------------------------------------------------

    def add(self, key: Hashable, terms: Iterable[str]) -> None:
        """Index a document (replacing the one with the same key)."""
        if key is None:
            raise ValueError("a document key may not be None")
        # Interned: every document's term tuple shares one copy of each string.
        counts = Counter(map(intern, terms))
        if key in self._slot_of:
            self.remove(key)
        slot = len(self._keys)
        vocab = self._postings
        for term, tf in counts.items():
            p = vocab.get(term)
            if p is None:
                p = vocab[term] = Postings()
            p.slots.append(slot)
            p.tfs.append(tf)
            p.df += 1
            p.np_base = None
        dl = sum(counts.values())
        self._slot_of[key] = slot
        self._keys.append(key)
        self._terms.append(tuple(counts))
        self._dl.append(dl)
        self._total += dl
        self._version += 1

    def extend(self, docs: Iterable[tuple[Hashable, Iterable[str]]]) -> None:
        """Add many documents at once: a fresh build, faster than ``add`` one by one.

        A key that is already indexed is replaced, as with ``add``.
        """
        with _collector_paused():  # millions of small objects: generational GC passes only cost here
            self._extend(docs)

    def _extend(self, docs: Iterable[tuple[Hashable, Iterable[str]]]) -> None:
        pending: dict[str, tuple[list[int], list[int]]] = {}
        slot_of, keys, doc_terms, dls = self._slot_of, self._keys, self._terms, self._dl
        total = 0
        for key, terms in docs:
            if key is None:
                raise ValueError("a document key may not be None")
            if key in slot_of:  # rare: settle what is pending, then replace normally
                self._merge(pending)
                pending = {}
                self.add(key, terms)
                continue
            counts = Counter(map(intern, terms))
            slot = len(keys)
            for term, tf in counts.items():
                entry = pending.get(term)
                if entry is None:
                    pending[term] = ([slot], [tf])
                else:
                    entry[0].append(slot)
                    entry[1].append(tf)
            dl = sum(counts.values())
            slot_of[key] = slot
            keys.append(key)
            doc_terms.append(tuple(counts))
            dls.append(dl)
            total += dl
        self._total += total
        self._merge(pending)
        self._version += 1

    def _merge(self, pending: dict[str, tuple[list[int], list[int]]]) -> None:
        vocab = self._postings
        for term, (slots, tfs) in pending.items():
            p = vocab.get(term)
            if p is None:
                p = vocab[term] = Postings(array("i", slots), array("i", tfs))
            else:
                p.slots.extend(slots)  # new slots are larger than every existing one: still sorted
                p.tfs.extend(tfs)
                p.np_base = None
            p.df += len(slots)

    def remove(self, key: Hashable) -> bool:
        """Drop a document; False if it was not indexed."""
        slot = self._slot_of.pop(key, None)
        if slot is None:
            return False
        for term in self._terms[slot]:
            p = self._postings[term]
            p.tfs[p.find(slot)] = 0
            p.df -= 1
            p.np_base = None
            if p.df == 0:
                del self._postings[term]
            elif len(p.slots) - p.df > max(p.df, 8):
                p.compact()
        self._total -= self._dl[slot]
        self._keys[slot] = None
        self._terms[slot] = None
        self._version += 1
        dead = len(self._keys) - len(self._slot_of)
        if dead > 2 * len(self._slot_of) + RENUMBER_SLACK:
            self._renumber()
        return True

    def _renumber(self) -> None:
        """Compact the slot space after many removals (order of slots is kept)."""
        remap = {}
        keys: list = []
        terms: list = []
        dl = array("i")
        for slot, key in enumerate(self._keys):
            if key is not None:
                remap[slot] = len(keys)
                keys.append(key)
                terms.append(self._terms[slot])
                dl.append(self._dl[slot])
        for p in self._postings.values():
            p.compact(remap)
        self._keys, self._terms, self._dl = keys, terms, dl
        self._slot_of = {key: i for i, key in enumerate(keys)}
        self._version += 1

    # -- scoring -----------------------------------------------------------

    def top_k(self, query: Sequence[str], k: int | None = 10, *,
              extra: Sequence[tuple[Hashable, Sequence[str]]] = (),
              peers: Sequence[BM25Index] = (), loose: bool = False) -> list[tuple[Hashable, float]]:
        """The best ``k`` documents for the query terms as ``(key, score)``.

        ``k=None`` returns every matching document. ``extra`` documents
        (``(key, terms)``) join the collection for this query only — their
        terms count in N, df and avgdl exactly as if they were indexed.
        ``peers`` are other indexes whose documents count in the statistics
        too (one collection kept in two indexes, e.g. the wiki and the
        diary); their documents are not returned — ask each index in turn.
        Score descending, ties by key ascending; only documents sharing a
        term with the query are returned. ``loose``: fewer than ``k`` (every
        match) come in any order, not sorted (a caller that sorts them itself,
        or needs no order).
        """
        if (k is not None and k <= 0) or (not self._slot_of and not extra):  # (an empty index: nothing to rank)
            return []
        extra_docs = [(key, Counter(terms)) for key, terms in extra]
        stats = self._stats(extra_docs, peers)
        plan = self._plan(query, stats, extra_docs, peers)
        if not plan:
            return []
        ranked = self._rank_index(plan, stats, k)
        if extra_docs:
            ranked += self._rank_extra(plan, stats, extra_docs)
        if loose and (k is None or len(ranked) < k):
            return ranked
        return _best(ranked, k)

    def score(self, key: Hashable, query: Sequence[str], *,
              extra: Sequence[tuple[Hashable, Sequence[str]]] = (),
              peers: Sequence[BM25Index] = ()) -> float:
        """The BM25 score of one indexed document (0.0 if unknown or unmatched)."""
        return self.scores([key], query, extra=extra, peers=peers).get(key, 0.0)

    def scores(self, keys: Iterable[Hashable], query: Sequence[str], *,
               extra: Sequence[tuple[Hashable, Sequence[str]]] = (),
               peers: Sequence[BM25Index] = ()) -> dict[Hashable, float]:
        """BM25 scores of indexed documents (0.0 when unmatched; unknown keys left out).

        The query is planned once for all of them: what fusion needs for the
        vector candidates BM25 did not rank.
        """
        found = [(key, self._slot_of.get(key)) for key in keys]
        slots = [(key, slot) for key, slot in found if slot is not None]
        if not slots:
            return {}
        extra_docs = [(k, Counter(t)) for k, t in extra]
        stats = self._stats(extra_docs, peers)
        plan = [t for t in self._plan(query, stats, extra_docs, peers) if t.postings is not None]
        last = self._last
        if last is not None and last[0] == stats.version and last[1] == _plan_key(plan):
            known, every = last[2], last[3]  # (the sums the ranking of this very query made: the same floats)
            if every:
                return {key: known.get(slot, 0.0) for key, slot in slots}
            out = {key: known[slot] for key, slot in slots if slot in known}
            if len(out) == len(slots):
                return out
            slots = [(key, slot) for key, slot in slots if slot not in known]
            return out | self._sums(slots, plan, stats)
        return self._sums(slots, plan, stats)

    def _sums(self, slots: list[tuple[Hashable, int]], plan: list[_Term], stats: _Stats) -> dict[Hashable, float]:
        """The scores of ``(key, slot)`` over the plan's terms that the index holds."""
        # A term ranked just now has its impacts cached (same statistics): a dict lookup then, the same
        # value as the formula gives; else the slot's position in the postings.
        cached = [self._cached_impacts(t.posted, stats) for t in plan]
        # Term by term in the plan's order, so each document's sum adds the same values in the same order
        # as a document-by-document loop; a cached term visits only the slots it holds (set intersection).
        totals = dict.fromkeys((slot for _, slot in slots), 0.0)
        for t, imps in zip(plan, cached):
            weight = t.weight
            if imps is not None:
                held = imps[0]
                for slot in held.keys() & totals.keys():
                    totals[slot] = totals[slot] + weight * held[slot]
                continue
            for slot in totals:
                pos = t.posted.find(slot)
                if pos >= 0:
                    totals[slot] = totals[slot] + weight * self._impact(t.posted.tfs[pos], self._dl[slot], stats.avgdl)
        return {key: totals[slot] for key, slot in slots}

    def extra_scores(self, query: Sequence[str], extra: Sequence[tuple[Hashable, Sequence[str]]], *,
                     peers: Sequence[BM25Index] = ()) -> dict[Hashable, float]:
        """BM25 scores of the ``extra`` documents that match (statistics as in :meth:`top_k`)."""
        extra_docs = [(k, Counter(t)) for k, t in extra]
        stats = self._stats(extra_docs, peers)
        plan = self._plan(query, stats, extra_docs, peers)
        return dict(self._rank_extra(plan, stats, extra_docs)) if plan else {}

    def _impact(self, tf: int, dl: int, avgdl: float) -> float:
        # The one formula; bm25_numpy evaluates the same operations in the same order.
        k1, b = self.k1, self.b
        return tf * (k1 + 1) / (tf + k1 * ((1 - b) + b * dl / avgdl))

    def counts(self) -> tuple[int, int, int]:
        """``(documents, total length, version)``: what a peer index adds to collection statistics."""
        return len(self._slot_of), self._total, self._version

    def _stats(self, extra_docs: list[tuple[Hashable, Counter]], peers: Sequence[BM25Index] = ()) -> _Stats:
        n, total, own = self.counts()
        version: Hashable = own
        if peers:
            counted = [p.counts() for p in peers]
            n += sum(c[0] for c in counted)
            total += sum(c[1] for c in counted)
            # Impacts depend on avgdl only: cacheable per state of every index counted.
            version = (version, tuple((id(p), c[2]) for p, c in zip(peers, counted)))
        if not extra_docs:
            return _Stats(n, total / n if n else 0.0, version)
        n += len(extra_docs)
        total += sum(sum(c.values()) for _, c in extra_docs)
        return _Stats(n, total / n, None)

    def _plan(self, query: Sequence[str], stats: _Stats, extra_docs, peers: Sequence[BM25Index] = ()) -> list[_Term]:
        """Matched query terms with their weights, in the scoring order.

        The order (weight descending, then term) depends only on the
        collection, never on its history, so every path sums a document's
        contributions identically.
        """
        plan = []
        counts = Counter(query) if len(query) > 1 else {t: 1 for t in query}
        n, vocab = stats.n, self._postings
        if not extra_docs and not peers:
            for term, qtf in counts.items():
                p = vocab.get(term)
                if p is not None:
                    plan.append(_Term(term, qtf * idf(n, p.df), p, ()))
            plan.sort(key=lambda t: (-t.weight, t.term))
            return plan
        for term, qtf in counts.items():
            p = vocab.get(term)
            extra_tf = tuple(c.get(term, 0) for _, c in extra_docs)
            df = (p.df if p is not None else 0) + sum(1 for tf in extra_tf if tf)
            df += sum(peer.df(term) for peer in peers)
            if df:
                plan.append(_Term(term, qtf * idf(stats.n, df), p, extra_tf))
        plan.sort(key=lambda t: (-t.weight, t.term))
        return plan

    def _rank_index(self, plan: list[_Term], stats: _Stats, k: int | None) -> list[tuple[Hashable, float]]:
        terms = [t for t in plan if t.postings is not None]
        if not terms:
            return []
        size = sum(len(t.posted.slots) for t in terms)
        if self.use_numpy and size >= NUMPY_MIN_POSTINGS and self._numpy() is not None:
            columns = [(t.weight, *self._np_impacts(t.posted, stats)) for t in terms]
            keys = self._keys
            return [(keys[s], v) for s, v in self._np.rank(columns, len(keys), k)]
        return self._rank_python(terms, stats, k)

    def _np_impacts(self, p: Postings, stats: _Stats):
        """A term's slots (None: a dense row) and impacts as numpy arrays; cached until the statistics change
        (its arrays until its postings do)."""
        c = p.np_cache
        if stats.version is not None and c is not None and c[0] == stats.version:
            self._caches.touch(p, "np")
            return c[1], c[2]
        if p.np_base is None:
            p.np_base = self._np.term_arrays(p.slots, p.tfs, self._dl, len(self._keys))
        slots, imps = self._np.impacts(p.np_base, self.k1, self.b, stats.avgdl)
        if stats.version is not None:
            p.np_cache = (stats.version, slots, imps)
            self._caches.remember(p, "np", len(imps) * self._np.ENTRY_BYTES, len(self._slot_of))
        return slots, imps

    def warm(self) -> None:
        """Import now what a large query will need (numpy), so that the first one does not pay for it."""
        if self.use_numpy:
            self._numpy()

    def _numpy(self):
        if self._np is None:
            try:
                from . import bm25_numpy
            except ImportError:  # numpy went missing: the pure-Python path ranks the same
                self.use_numpy = False
                return None
            self._np = bm25_numpy
        return self._np

    def _rank_python(self, terms: list[_Term], stats: _Stats, k: int | None) -> list[tuple[Hashable, float]]:
        """Term-at-a-time scoring with MaxScore-style pruning of new candidates."""
        cacheable = stats.version is not None
        if not cacheable:  # statistics with extra documents: nothing to cache, no pruning
            k = None
        impacts = [self._cached_impacts(t.posted, stats) for t in terms]
        loose = self.k1 + 1  # an impact is always below k1 + 1
        bounds = [t.weight * (imp[1] if imp else loose) for t, imp in zip(terms, impacts)]
        rest = [0.0] * (len(terms) + 1)
        for i in range(len(terms) - 1, -1, -1):
            rest[i] = rest[i + 1] + bounds[i]
        acc: dict[int, float] = {}
        closed = False  # True once no new document can reach the top k
        for i, t in enumerate(terms):
            w, p = t.weight, t.posted
            if closed:
                if impacts[i] is None and len(acc) * 16 < len(p.slots):
                    self._add_seen_bisect(acc, p, w, stats)  # cheaper than all impacts of a long list
                    continue
                imps = (impacts[i] or self._impacts(p, stats))[0]
                if len(acc) < len(imps):
                    for s in acc:
                        x = imps.get(s)
                        if x is not None:
                            acc[s] = acc[s] + w * x
                else:
                    for s, x in imps.items():
                        if s in acc:
                            acc[s] = acc[s] + w * x
                continue
            imps = (impacts[i] or self._impacts(p, stats))[0]
            get = acc.get
            for s, x in imps.items():
                acc[s] = get(s, 0.0) + w * x
            nxt = i + 1
            if k is not None and nxt < len(terms) and len(acc) >= k and len(terms[nxt].posted.slots) > len(acc):
                closed = self._close(acc, k, rest[nxt])
        if cacheable and len(acc) <= LAST_SUMS:  # (what scores() of the same query then reads, not sums again)
            self._last = (stats.version, _plan_key(terms), acc, not closed)
        keys = self._keys
        if k is not None and len(acc) > k:  # only what can make the top k becomes a pair
            threshold = _kth_largest(list(acc.values()), k)
            return [(keys[s], v) for s, v in acc.items() if v >= threshold]
        return [(keys[s], v) for s, v in acc.items()]

    def _cached_impacts(self, p: Postings, stats: _Stats) -> tuple[dict[int, float], float] | None:
        c = p.cache
        if stats.version is not None and c is not None and c[0] == stats.version:
            self._caches.touch(p, "py")
            return c[1], c[2]
        return None

    def _impacts(self, p: Postings, stats: _Stats) -> tuple[dict[int, float], float]:
        """A term's impacts by slot and their maximum; cached until the statistics change."""
        # _impact's formula, its operations in the same order (the same floats), without a call per posting
        dl, avgdl, k1, b = self._dl, stats.avgdl, self.k1, self.b
        k1_1, b_1 = k1 + 1, 1 - b
        imps = {s: tf * k1_1 / (tf + k1 * (b_1 + b * dl[s] / avgdl)) for s, tf in zip(p.slots, p.tfs) if tf}
        entry = (imps, max(imps.values(), default=0.0))
        if stats.version is not None:
            p.cache = (stats.version, imps, entry[1])
            self._caches.remember(p, "py", len(imps) * _PY_ENTRY_BYTES, len(self._slot_of))
        return entry

    @property
    def cached_impact_bytes(self) -> int:
        """Estimated bytes held by the impact caches (kept under the bound)."""
        return self._caches.bytes

    def _add_seen_bisect(self, acc: dict[int, float], p: Postings, w: float, stats: _Stats) -> None:
        slots, tfs, dl, avgdl, impact = p.slots, p.tfs, self._dl, stats.avgdl, self._impact
        n = len(slots)
        for s in acc:
            pos = bisect_left(slots, s)
            if pos < n and slots[pos] == s and tfs[pos]:
                acc[s] = acc[s] + w * impact(tfs[pos], dl[s], avgdl)

    @staticmethod
    def _close(acc: dict[int, float], k: int, rest: float) -> bool:
        """Stop admitting new documents if the remaining terms cannot lift one into the top k.

        Also drops seen documents that cannot reach the top k any more.
        """
        theta = _kth_largest(list(acc.values()), k)
        slack = rest * (1 + _SAFETY) + theta * _SAFETY
        if slack >= theta:
            return False
        for s in [s for s, v in acc.items() if v + slack < theta]:
            del acc[s]
        return True

    def _rank_extra(self, plan: list[_Term], stats: _Stats, extra_docs) -> list[tuple[Hashable, float]]:
        out = []
        for j, (key, counts) in enumerate(extra_docs):
            dl = sum(counts.values())
            total, hit = 0.0, False
            for t in plan:
                tf = t.extra_tf[j]
                if tf:
                    total = total + t.weight * self._impact(tf, dl, stats.avgdl)
                    hit = True
            if hit:
                out.append((key, total))
        return out


def _plan_key(plan: list[_Term]) -> tuple:
    """What a plan sums: its terms and their weights, in order (a ranking's sums are reused for the same key)."""
    return tuple((t.term, t.weight) for t in plan)


def _best(ranked: list[tuple[Hashable, float]], k: int | None) -> list[tuple[Hashable, float]]:
    """Score descending, ties by key ascending, cut to ``k``."""
    if k is not None and len(ranked) > k:
        threshold = _kth_largest([v for _, v in ranked], k)
        ranked = [kv for kv in ranked if kv[1] >= threshold]
    return by_score(ranked)[:k]


def _kth_largest(values: list[float], k: int) -> float:
    """The ``k``-th largest of ``values`` (``1 <= k <= len(values)``): a sort when ``k`` is a good share of them
    (a pool of 200 among a few hundred: ten times faster than a heap), else a heap."""
    if len(values) <= 8 * k:
        values.sort(reverse=True)
        return values[k - 1]
    return heapq.nlargest(k, values)[-1]


def by_score(ranked: Iterable[tuple[Hashable, float]]) -> list[tuple[Hashable, float]]:
    """``(key, score)`` pairs, score descending and ties by key ascending (sorted as ``(-score, key)`` tuples: no
    key function called per pair)."""
    pairs = ranked if isinstance(ranked, list) else list(ranked)
    order = sorted(zip(map(neg, map(itemgetter(1), pairs)), map(itemgetter(0), pairs)))
    return list(zip(map(itemgetter(1), order), map(neg, map(itemgetter(0), order))))
