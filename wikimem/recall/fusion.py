"""Ranked candidates and how their scores combine: fusion (SPEC §3) and the diary recency prior."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from wikimem.models import RecallItem

__all__ = ["Candidate", "normalise", "fuse", "recency_factor", "apply_recency"]


@dataclass
class Candidate:
    """A ranked candidate: its sort key, item, kind and scores."""

    key: tuple
    item: RecallItem
    kind: str  # "wiki" or "diary"
    bm25: float = 0.0
    cos: float | None = None
    score: float | None = None


def _by_score(c: Candidate) -> tuple[float, tuple]:
    """Best score first, ties by key (called once every candidate has its score)."""
    assert c.score is not None
    return -c.score, c.key


def normalise(values: list[float]) -> list[float]:
    """Min-max to [0, 1]; a set without spread maps to 1.0 where positive, else 0.0."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi == lo:
        return [1.0 if v > 0 else 0.0 for v in values]
    span = hi - lo
    return [(v - lo) / span for v in values]


def fuse(cands: list[Candidate], weight: float) -> list[Candidate]:
    """SPEC §3 fusion: min-max both score sets over the union, ``w·bm25 + (1−w)·cos``.

    A candidate without a cosine (its vector is not embedded yet) is ranked
    by BM25 alone: its normalised BM25 stands in for the missing cosine.
    Returns the candidates ranked (ties by key).
    """
    bm = normalise([c.bm25 for c in cands])
    with_cos = [c.cos for c in cands if c.cos is not None]
    cs = iter(normalise(with_cos))
    for c, b in zip(cands, bm):
        v = next(cs) if c.cos is not None else b
        c.score = weight * b + (1 - weight) * v
    return sorted(cands, key=_by_score)


def recency_factor(entry_date: str, today: date, half_life: float) -> float:
    """``0.5 + 0.5·2^(−age/half_life)``: today's entries keep their score, old ones at least half."""
    try:
        age = (today - date.fromisoformat(entry_date)).days
    except ValueError:
        return 1.0
    return 0.5 + 0.5 * 2.0 ** (-max(age, 0) / half_life)


def apply_recency(cands: list[Candidate], today: date, half_life: float | None) -> list[Candidate]:
    """Diary candidates' scores times :func:`recency_factor`, re-ranked; the wiki is untouched."""
    if half_life is None or not any(c.kind == "diary" for c in cands):
        return cands
    for c in cands:
        if c.kind == "diary":
            base = c.score if c.score is not None else c.bm25
            c.score = base * recency_factor(c.item.file, today, half_life)
        elif c.score is None:
            c.score = c.bm25
    return sorted(cands, key=_by_score)
