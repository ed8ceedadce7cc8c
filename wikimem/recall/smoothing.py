"""Lexical neighbour smoothing: in a conversation, a turn inherits part of its neighbours' BM25 score.

Design notes: docs/explanation/recall-internals.md (``wikimem/recall/smoothing.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from itertools import chain, repeat
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
           scores: Callable[[Iterable[Hashable]], dict[Hashable, float]], *,
           hidden: Container[Hashable] = (), limit: int | None = None) -> list[tuple[Hashable, float]]:
    """BM25's best ``(key, score)`` and their neighbours, re-scored with their neighbours' share.

    ``neighbours(key)``: the keys just before and after it in a
    conversation-like file (none elsewhere), or a mapping of them (a key
    missing has none); ``scores(keys)``: raw BM25
    scores of those keys (missing = 0). Best first, ties by key; the best
    ``limit`` only when given (the same as the whole list cut there).
    ``hidden``: keys left out of the answer (recall in a room): they still
    share their score and bring their neighbours in, but are not returned.
    """
    raw: dict[Hashable, float] = dict(seeds)
    # around: every key in play (the seeds, then their neighbours, in order) -> its neighbours
    if isinstance(neighbours, Mapping):
        mapped = neighbours.get
        around: dict[Hashable, tuple[Hashable, ...]] = dict(zip(raw, map(mapped, raw, repeat(()))))
        one: Callable[[Hashable], tuple[Hashable, ...]] = lambda key: mapped(key, ())  # noqa: E731
    else:
        around, one = {k: neighbours(k) for k in raw}, neighbours
    for near in list(around.values()):
        for n in near:
            if n not in around:
                around[n] = () if n in hidden else one(n)  # (a hidden key's own score is not wanted)
    wanted = set(around)
    wanted.update(chain.from_iterable(around.values()))
    wanted.difference_update(raw)
    if wanted:
        raw.update(scores(wanted))
    get = raw.get
    ranked = []  # (-value, key): sorted as is, best first and ties by key, without a key function
    for key, near in around.items():  # (BM25 scores are never negative: an absent neighbour shares 0)
        if key in hidden:
            continue
        share = 0.0
        for n in near:
            x = get(n, 0.0)
            if x > share:
                share = x
        value = get(key, 0.0) + weight * share
        if value > 0:
            ranked.append((-value, key))
    ranked.sort()
    return [(key, -negated) for negated, key in (ranked if limit is None else ranked[:limit])]


def lexical_sides(q: Any, wiki: Any, diary: Any) -> tuple[Callable | Mapping, Callable]:
    """``(neighbours, scores)`` for :func:`smooth` over an index's wiki and diary entries in play.

    ``q``: the :class:`~wikimem.recall.results.Query`; ``diary``: the diary
    index (``diary="all"``), else None — then the diary entries in play are
    the window's, extra documents of the wiki's BM25 (keys ``(date, time, n)``).
    """
    last = len(q.window) - 1
    if diary is None and not q.window:  # wiki keys only: the index's own method, one call a key
        return (wiki.neighbours if wiki.conversational() else {}), _scores(q, wiki, diary)

    wiki_near = wiki.neighbours
    if diary is not None:  # (one call a key, or none: smoothing's hot path)
        if not wiki.conversational():
            return diary.near, _scores(q, wiki, diary)  # (a wiki key is in no day)
        diary_near = diary.neighbours
        return (lambda key: wiki_near(key) if len(key) == 2 else diary_near(key)), _scores(q, wiki, diary)

    def neighbours(key: Any) -> tuple:
        if len(key) == 2:
            return wiki_near(key)
        n = key[2]  # the window's entries in time order: neighbours on the same day
        return tuple(q.window_keys[i] for i in (n - 1, n + 1) if 0 <= i <= last and q.window[i].file == key[0])

    return neighbours, _scores(q, wiki, diary)


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
