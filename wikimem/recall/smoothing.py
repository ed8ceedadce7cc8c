"""Lexical neighbour smoothing: in a conversation, a turn inherits part of its neighbours' BM25 score.

Design notes: docs/explanation/recall-internals.md (``wikimem/recall/smoothing.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from itertools import chain, compress, repeat
from operator import itemgetter, le, lt, neg
from typing import Any

__all__ = ["is_transcript", "smooth", "lexical_sides", "MIN_TURNS", "SPEAKER_RE", "MARK_RE"]

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
    if isinstance(neighbours, Mapping):
        mapped = neighbours.get
        near_of: Callable[[Iterable[Hashable]], list] = lambda keys: list(map(mapped, keys, repeat(())))  # noqa: E731
    else:
        near_of = lambda keys: list(map(neighbours, keys))  # noqa: E731
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
