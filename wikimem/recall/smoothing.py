"""Lexical neighbour smoothing: in a conversation, a turn inherits part of its neighbours' BM25 score.

Design notes: docs/explanation/recall-internals.md (``wikimem/recall/smoothing.py``).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Callable, Container, Hashable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from itertools import chain, compress, repeat
from operator import itemgetter, le, lt, neg
from typing import Any

__all__ = ["is_transcript", "smooth", "smooth_first", "lexical_sides", "MIN_TURNS", "SPEAKER_RE", "MARK_RE"]

MIN_TURNS = 3
SPEAKER_RE = re.compile(r"\s*[^\s:：\[\]#|]{1,24}\s*[:：]\s*\S")
MARK_RE = re.compile(r"(?:^|[-_])(?:chat|chats|transcript|transcripts|conversation|conversations|dialog|dialogue)"
                     r"(?:[-_]|$)")


def is_transcript(file: str, items: Sequence[Any]) -> bool:
    """True when a RecallFile is marked (by its name) or detected (speaker labels) as a conversation."""
    if MARK_RE.search(file):
        return True
    if len(items) < MIN_TURNS:
        return False
    labelled = sum(1 for item in items if SPEAKER_RE.match(item.content))
    return labelled * 4 >= len(items) * 3


def smooth(seeds: list[tuple[Hashable, float]], weight: float,
           neighbours: Callable[[Hashable], tuple[Hashable, ...]] | Mapping[Hashable, tuple[Hashable, ...]],
           scores: Callable[[Iterable[Hashable]], dict[Hashable, float]] | None, *,
           hidden: Container[Hashable] = (), limit: int | None = None) -> list[tuple[Hashable, float]]:
    """BM25's best ``(key, score)`` and their neighbours, re-scored with their neighbours' share.

    ``neighbours(key)``: the keys just before and after it in a
    conversation-like file (none elsewhere), or a mapping of them (a key
    missing has none); ``scores(keys)``: raw BM25 scores of those keys (missing
    = 0; None: every key that is not a seed scores 0). Best first, ties by key; the best
    ``limit`` only when given (the same as the whole list cut there).
    ``hidden``: keys left out of the answer (recall in a room): they still
    share their score and bring their neighbours in, but are not returned.
    A key's value is ``raw + weight · max(0, raw of each neighbour)``.
    """
    near_of = _near_of(neighbours)
    raw: dict[Hashable, float] = dict(seeds)
    keys = list(raw)
    nears = near_of(keys)
    new = set(chain.from_iterable(nears))  # the seeds' neighbours that are not seeds: in play too
    new.difference_update(raw)
    if hidden:  # (a hidden key is not returned: neither its neighbours nor its share are wanted)
        kept = [n for n, key in enumerate(keys) if key not in hidden]
        if len(kept) < len(keys):
            keys, nears = [keys[n] for n in kept], [nears[n] for n in kept]
        more = [key for key in new if key not in hidden]
    else:
        more = list(new)
    more_nears = near_of(more)
    if scores is not None:
        wanted = set(chain.from_iterable(more_nears))
        wanted.update(new)
        wanted.difference_update(raw)
        if wanted:
            raw.update(scores(wanted))
    keys += more
    nears += more_nears
    return _ranked(raw, weight, keys, nears, limit)


def smooth_first(seeds: list[tuple[Hashable, float]], weight: float, neighbours: Callable | Mapping,
                 scores: Callable[[Iterable[Hashable]], dict[Hashable, float]] | None, *,
                 hidden: Container[Hashable] = (), limit: int, first: int) -> Iterator[tuple[Hashable, float]]:
    """The pairs of :func:`smooth` (same arguments and ``limit``) in its order, lazily: the first ``first``, then
    half as many more and so on, found by bounds that value only the keys that can be among them; the whole list from
    :func:`smooth` itself once the bounds cannot tell.

    As BM25's seeds and a conversation's neighbours are: no key that is not a seed scores above the lowest seed,
    and a key is a neighbour of each of its neighbours.
    """
    k = min(max(first, 1), limit)
    whole = partial(smooth, seeds, weight, neighbours, scores, hidden=hidden, limit=limit)
    if k * _SHARE > len(seeds):  # (few seeds: the whole list costs less than the bounds)
        return iter(whole())
    return _first(_Bounds(seeds, weight, _near_of(neighbours), scores, hidden), k, limit, whole)


def _first(bounds: _Bounds, k: int, limit: int, whole: Callable[[], list]) -> Iterator[tuple[Hashable, float]]:
    """The best ``k`` by the bounds, then half as many more at a time, up to ``limit`` (or the rest of ``whole()``)."""
    done = 0
    while done < k:
        top = bounds.best(k)
        if top is None:  # (the bounds cannot tell: the whole list)
            yield from whole()[done:]
            return
        yield from top[done:]
        done, k = k, min(k + k // 2 + 1, limit)  # (demotion reads a few more, seldom many)


_SHARE = 8  # the bounds are tried for the first k of at least 8 k seeds (each of the k best brings its neighbours)
_MARGIN = 1 + 2.0 ** -30  # (a non-seed's score summed in another order than the seeds' may round a little above)


class _Bounds:
    """The best ``k`` of :func:`smooth`'s list for a growing ``k``, each key valued at most once.

    The seeds with the ``k`` best raw scores shown (hidden ones too: the "strong" seeds) and their neighbours are
    valued: ``t``, the k-th best of those values, is at most the k-th best value of all. Any other key has no strong
    neighbour: its share is at most ``below``, the best raw score of the other seeds, or ``ceiling`` (the lowest
    seed's: no key that is not a seed scores above it). So a seed whose ``raw + weight · max(below, ceiling)`` is
    below ``t`` cannot be among the best ``k``; nor can a key that is not a seed when ``ceiling + weight ·
    max(below, ceiling)`` is (else: None). Float sums and products round monotonically: the bounds hold for the
    computed values too.
    """

    def __init__(self, seeds: list[tuple[Hashable, float]], weight: float, near_of: Callable,
                 scores: Callable | None, hidden: Container[Hashable]) -> None:
        self.seeds, self.weight, self.near_of, self.scores, self.hidden = seeds, weight, near_of, scores, hidden
        self.shown = [kv for kv in seeds if kv[0] not in hidden] if hidden else seeds
        self.order = sorted(map(itemgetter(1), self.shown), reverse=True)
        self.rising = sorted(map(itemgetter(1), seeds))  # (every seed's raw score, hidden ones too)
        self.ceiling = self.rising[0] * _MARGIN if scores is not None and seeds else 0.0
        self.raw: dict[Hashable, float] = dict(seeds)
        self.values: dict[Hashable, float] = {}

    def best(self, k: int) -> list[tuple[Hashable, float]] | None:
        """The best ``k`` pairs, or None when the bounds cannot tell them without the whole list."""
        if len(self.order) < k or not self.order[k - 1] > 0:
            return None
        least, values, hidden = self.order[k - 1], self.values, self.hidden
        strong = [key for key, s in self.seeds if s >= least]
        near = set(chain.from_iterable(self.near_of(strong)))
        near.update(strong)
        self._value([key for key in near if key not in values and key not in hidden])
        t = sorted(values.values(), reverse=True)[k - 1]
        below = bisect_left(self.rising, least)
        reach = self.weight * max(self.rising[below - 1] if below else 0.0, self.ceiling)
        if not self.ceiling + reach < t:
            return None
        self._value([key for key, s in self.shown if s + reach >= t and key not in values])
        kth = sorted(values.values(), reverse=True)[k - 1]  # (> 0: at least the k-th best raw score)
        ranked = sorted([(-v, key) for key, v in values.items() if v >= kth])[:k]
        return [(key, -negated) for negated, key in ranked]

    def _value(self, keys: list) -> None:
        """``raw + weight · share`` of ``keys`` into ``values`` (the raw scores not known yet asked for at once)."""
        if not keys:
            return
        nears = self.near_of(keys)
        raw = self.raw
        if self.scores is not None:
            wanted = set(chain.from_iterable(nears))
            wanted.update(keys)
            wanted.difference_update(raw)
            if wanted:  # (a key asked for and not answered scores 0: not asked again)
                raw.update(dict.fromkeys(wanted, 0.0))
                raw.update(self.scores(wanted))
        get, weight, values = raw.get, self.weight, self.values
        for key, near in zip(keys, nears):  # (the same operations as _ranked: the same floats)
            share = 0.0
            for n in near:
                x = get(n, 0.0)
                if x > share:
                    share = x
            values[key] = get(key, 0.0) + weight * share


def _near_of(neighbours: Callable | Mapping) -> Callable[[Iterable[Hashable]], list]:
    """A function from keys to the list of their neighbours' tuples."""
    if isinstance(neighbours, Mapping):
        mapped = neighbours.get
        return lambda keys: list(map(mapped, keys, repeat(())))
    return lambda keys: list(map(neighbours, keys))


_NOTHING = 0.0


def _ranked(raw: dict, weight: float, keys: list, nears: list, limit: int | None) -> list[tuple[Hashable, float]]:
    """``keys`` valued ``raw + weight · share`` (``share``: the best raw score of its ``nears``, at least 0), best
    first and ties by key, those above 0 only, cut to ``limit``."""
    get = raw.get
    values = []
    for key, near in zip(keys, nears):  # (BM25 scores are never negative: an absent neighbour shares 0)
        share = 0.0
        for n in near:
            x = get(n, 0.0)
            if x > share:
                share = x
        values.append(get(key, 0.0) + weight * share)
    floor = _NOTHING  # above 0 only; and when only the best ``limit`` are wanted, at least the limit-th value
    if limit is not None and len(values) > limit:
        floor = max(floor, sorted(values, reverse=True)[limit - 1] if limit else math.inf)  # (floats: a fast sort)
        ranked = sorted(compress(zip(map(neg, values), keys), map(le, repeat(floor), values)))
        if not floor:  # (0 itself is not above 0)
            ranked = [pair for pair in ranked if pair[0]]
    else:  # (-value, key): sorted as is, best first and ties by key, without a key function
        ranked = sorted(compress(zip(map(neg, values), keys), map(lt, repeat(_NOTHING), values)))
    if limit is not None:
        del ranked[limit:]
    return list(zip(map(itemgetter(1), ranked), map(neg, map(itemgetter(0), ranked))))


def lexical_sides(q: Any, wiki: Any, diary: Any) -> tuple[Callable | Mapping, Callable]:
    """``(neighbours, scores)`` for :func:`smooth` over an index's wiki and diary entries in play.

    ``q``: the :class:`~wikimem.recall.results.Query`; ``diary``: the diary
    index (``diary="all"``), else None — then the diary entries in play are
    the window's, extra documents of the wiki's BM25 (keys ``(date, time, n)``).
    """
    if diary is None and not q.window:  # wiki keys only: the index's own mapping
        return (wiki.near() if wiki.conversational() else {}), _scores(q, wiki, diary)
    if diary is not None:
        if not wiki.conversational():
            return diary.near, _scores(q, wiki, diary)  # (a wiki key is in no day)
        if not diary.near:
            return wiki.near(), _scores(q, wiki, diary)  # (no day with two entries)
        other = diary.near.get
    else:  # the window's entries in time order: neighbours on the same day
        keys, items = q.window_keys, q.window
        other = {key: tuple(keys[j] for j in (n - 1, n + 1) if 0 <= j < len(keys) and items[j].file == key[0])
                 for n, key in enumerate(keys)}.get
    wiki_near = wiki.near().get
    return (lambda key: wiki_near(key) or other(key, ())), _scores(q, wiki, diary)


def _scores(q: Any, wiki: Any, diary: Any) -> Callable[[Iterable[Any]], dict]:
    """Raw BM25 scores of the keys in play (wiki, diary or the window's entries)."""

    def scores(keys: Iterable[Any]) -> dict:
        keys = list(keys)
        out = wiki.bm25.scores([k for k in keys if len(k) == 2], q.terms, extra=q.extra,
                               peers=[diary.bm25] if diary is not None else [])
        if diary is not None:
            out.update(diary.bm25.scores([k for k in keys if len(k) == 3], q.terms, peers=[wiki.bm25]))
        elif q.extra and any(len(k) == 3 for k in keys):
            out.update(wiki.bm25.extra_scores(q.terms, q.extra))
        return out

    return scores
