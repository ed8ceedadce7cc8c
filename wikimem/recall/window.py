"""A time question's answer comes from its window (SPEC §3, time gating): :func:`window_order`.

When the time gate fires, every diary entry of the window is a candidate,
whatever the words left over match. The order:

1. the candidates that match the words (a BM25 score above zero, a
   neighbour's share included), wiki and diary together, best first;
2. the window's other entries, newest first (as for a question without
   words: "what did I do yesterday?");
3. the rest — wiki items that only the vectors found.

So an entry is never dropped for want of vectors, nor ranked below a wiki
item that shares no word with the question. And the window keeps at least
half of the places (all of them for a window smaller than that): a
question about a day is answered from that day even when many wiki items
share a word with it.
"""

from __future__ import annotations

from .fusion import Candidate

__all__ = ["window_order"]


def window_order(ranked: list[Candidate], window: list[Candidate], limit: int) -> list[Candidate]:
    """The first ``limit`` candidates of a time-gated query.

    ``ranked``: every ranked candidate, best first (BM25 or fused);
    ``window``: each entry of the window as a candidate, oldest first.
    """
    if limit <= 0:
        return []
    matched = [c for c in ranked if c.bm25 > 0]
    seen = {c.key for c in matched}
    scored = {c.key: c for c in ranked}  # an entry keeps the scores it was ranked with (its cosine)
    unmatched = [scored.get(c.key, c) for c in reversed(window) if c.key not in seen]
    seen.update(c.key for c in unmatched)
    order = matched + unmatched + [c for c in ranked if c.key not in seen]
    return _reserve(order, {c.key for c in window}, limit)


def _reserve(order: list[Candidate], window: set, limit: int) -> list[Candidate]:
    """The first ``limit`` of ``order``, with at least half the places for the window's entries."""
    top = order[:limit]
    wanted = min(len(window), (limit + 1) // 2)
    if sum(1 for c in top if c.key in window) >= wanted:
        return top
    keep = [c for c in order if c.key in window][:wanted]
    keep += [c for c in order if c.key not in window][:limit - len(keep)]
    kept = {id(c) for c in keep}
    return [c for c in order if id(c) in kept]
