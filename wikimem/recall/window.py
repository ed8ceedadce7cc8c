"""A time question's answer comes from its window (SPEC §3, time gating): :func:`window_order`.

When the time gate fires, every diary entry of the window is a candidate,
whatever the words left over match. The order:

1. the candidates that match the words (a BM25 score above zero, a
   neighbour's share included), wiki and diary together, best first;
2. the window's other entries, newest first (as for a question without
   words: "what did I do yesterday?") — only when the words left are
   question words (``fallback``; :func:`~wikimem.recall.stopwords.question_only`):
   a query with real words gets the entries that match them, as BM25 alone
   would (upstream's contract);
3. the rest — what only the vectors found.

And the window keeps at least half of the places (rounded down): its
``i``-th entry comes at the latest at place ``2i``, so a question about a
day is answered from that day even when many wiki items share a word with
it — and since that rule looks only at the places before, the first ``k``
are the same whatever the limit.
"""

from __future__ import annotations

from datetime import date, timedelta

from .fusion import Candidate

__all__ = ["window_order", "widen", "widen_days"]


def window_order(ranked: list[Candidate], window: list[Candidate], limit: int, *,
                 fallback: bool = True) -> list[Candidate]:
    """The first ``limit`` candidates of a time-gated query.

    ``ranked``: every ranked candidate, best first (BM25 or fused);
    ``window``: each entry of the window as a candidate, oldest first;
    ``fallback``: the window's unmatched entries come back too (newest first, after the matches). What matches
    no word comes last, the window's entries before the wiki's items.
    """
    if limit <= 0:
        return []
    matched = [c for c in ranked if c.bm25 > 0]
    seen = {c.key for c in matched}
    scored = {c.key: c for c in ranked}  # an entry keeps the scores it was ranked with (its cosine)
    unmatched = [scored.get(c.key, c) for c in reversed(window) if c.key not in seen] if fallback else []
    seen.update(c.key for c in unmatched)
    inside = {c.key for c in window}
    rest = [c for c in ranked if c.key not in seen]  # (what matches no word: the window's entries before the rest)
    order = matched + unmatched + [c for c in rest if c.key in inside] + [c for c in rest if c.key not in inside]
    return _reserve(order, inside, limit)


def _reserve(order: list[Candidate], window: set, limit: int) -> list[Candidate]:
    """The first ``limit`` of ``order``, the ``i``-th window entry placed at the latest at place ``2i``."""
    ins = [c for c in order if c.key in window]
    outs = [c for c in order if c.key not in window]
    place = {id(c): n for n, c in enumerate(order)}
    out: list[Candidate] = []
    i = j = 0
    while len(out) < limit and (i < len(ins) or j < len(outs)):
        due = 2 * (i + 1) <= len(out) + 1
        if i < len(ins) and (due or j >= len(outs) or place[id(ins[i])] < place[id(outs[j])]):
            out.append(ins[i])
            i += 1
        else:
            out.append(outs[j])
            j += 1
    return out


def widen(window: tuple[str, str]) -> tuple[str, str]:
    start, end = (date.fromisoformat(d) for d in window)
    # One day each side, but never past the ends of the calendar (0001-01-01, 9999-12-31).
    start = start - timedelta(days=1) if start > date.min else start
    end = end + timedelta(days=1) if end < date.max else end
    return start.isoformat(), end.isoformat()


def widen_days(days: list[str] | None) -> list[str] | None:
    """A set of days, each with the day before and after it."""
    if not days:
        return None
    out = set(days)
    for d in days:
        out.update(widen((d, d)))
    return sorted(out)
