"""The values of a retrieval: what :meth:`~wikimem.recall.index.MemoryIndex.retrieve` returns
(:class:`RetrievalResult` of :class:`RetrievedItem`), how a host configures its indexes
(:class:`RecallOptions`), and one retrieve call as the ranking stages see it (:class:`Query`).

Re-exported by :mod:`wikimem.recall.index`, where users import them from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wikimem.models import RecallItem
from wikimem.naming import validate_date

from .tokenizer import est_tokens

__all__ = ["RetrievedItem", "RetrievalResult", "RecallOptions", "Query", "DIARY_MODES", "check_count", "check_range",
           "check_diary", "check_half_life"]

DIARY_MODES = ("window", "all")


def _item_dict(item: RecallItem, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"file": item.file, "name": item.name, "content": item.content,
                           "owner": item.owner, "source_conv": item.source_conv, "ts": item.ts}
    if kind == "diary":  # as the diary routes name an entry; file and name stay for older readers
        out.update(date=item.file, time=item.name)
    if item.channel is not None or item.present:  # where it was said and who was there, when it says so
        out.update(channel=item.channel, present=list(item.present))
    return out


@dataclass
class RetrievedItem:
    """One entry of a retrieval result, with the evidence of why it is there.

    ``kind`` (``"wiki"`` or ``"diary"``) and ``via_file`` extend the seed's
    fields: a diary entry's ``file`` is its date and its ``name`` its time
    (also :attr:`date` and :attr:`time`, and ``date``/``time`` in its JSON),
    and ``via`` alone (the parent hit's name) can be ambiguous across files.
    """

    item: RecallItem
    source: str  # "hit" or "link"
    score: float | None = None  # fused score with embeddings, else BM25; None for links
    bm25_score: float | None = None
    cos_score: float | None = None
    via: str | None = None  # link entries: name of the hit that pulled them in
    matched_terms: list[str] = field(default_factory=list)
    tokens_est: int = 0
    kind: str = "wiki"
    via_file: str | None = None
    # With a retrieve that includes staged runs (the host's ``include_staged``): whether the entry comes from a
    # run on probation (True) or from the approved memory (False); None otherwise (and left out of the JSON).
    staged: bool | None = None
    # With a host's retrieve as a character: where the entry comes from ("shared", "character" — that character's
    # own layer —, "profile" — the character's own profile) and which character; None otherwise (left out).
    layer: str | None = None
    character: str | None = None

    @property
    def date(self) -> str | None:
        """A diary entry's day (``YYYY-MM-DD``); None for a wiki item."""
        return self.item.file if self.kind == "diary" else None

    @property
    def time(self) -> str | None:
        """A diary entry's time (``HH:MM``); None for a wiki item."""
        return self.item.name if self.kind == "diary" else None

    def label(self) -> str:
        """How a prompt names the entry: ``preferences/likes-the-sea``, or ``diary 2026-12-03 20:30``."""
        if self.kind == "diary":
            return f"diary {self.item.file} {self.item.name}"
        return f"{self.item.file}/{self.item.name}"

    def to_text(self) -> str:
        """The entry as one block of prompt text: ``- [label] content``, later lines indented."""
        lines = self.item.content.strip().splitlines() or [""]
        return "\n".join([f"- [{self.label()}] {lines[0]}"] + [f"  {line}" for line in lines[1:]])

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        out = {
            "item": _item_dict(self.item, self.kind),
            "source": self.source,
            "score": self.score,
            "bm25_score": self.bm25_score,
            "cos_score": self.cos_score,
            "via": self.via,
            "via_file": self.via_file,
            "matched_terms": list(self.matched_terms),
            "tokens_est": self.tokens_est,
            "kind": self.kind,
        }
        if self.staged is not None:
            out["staged"] = self.staged
        if self.layer is not None:
            out["layer"] = self.layer
            out["character"] = self.character
        return out


@dataclass
class RetrievalResult:
    """What :meth:`MemoryIndex.retrieve` returns.

    Beyond the seed's fields: ``query_terms`` (the terms actually searched,
    after a parsed time expression and function words were taken out),
    ``diary`` (the diary mode used) and ``vectors`` (with an embedder and
    ``explain=True``: ``{"embedded": n, "total": m}``, how many items had
    their vectors when this query ran), ``diary_index`` (``"building"``
    when ``diary="all"`` was answered before the diary index's first build
    was done: the diary then took part through its time window only),
    ``time_days`` (a window of separate days — "last Friday" asked on a
    Sunday — lists them; ``time_range`` then spans from the first to the
    last, and only those days' entries are candidates; None otherwise).
    :meth:`to_prompt` turns the entries into prompt text within the budget.
    """

    items: list[RetrievedItem] = field(default_factory=list)
    budget_tokens: int | None = None
    budget_used: int = 0
    embedding_used: bool = False
    dropped: list[RetrievedItem] = field(default_factory=list)
    unresolved_links: list[str] = field(default_factory=list)
    time_range: tuple[str, str] | None = None
    time_range_source: str | None = None
    time_range_widened: bool = False
    time_days: list[str] | None = None
    query_terms: list[str] = field(default_factory=list)
    diary: str = "window"
    vectors: dict[str, int] | None = None
    diary_index: str | None = None
    excluded: dict[str, int] | None = None  # explain, in a room: how many entries it left out, by reason

    def to_prompt(self, budget_tokens: int | None = None, *, strict: bool = False,
                  heading: str | None = None) -> str:
        """The entries as text to put into a prompt, in injection order, within a token budget.

        Each entry is one block (:meth:`RetrievedItem.to_text`): ``- [people/mia] content``
        for a wiki item, ``- [diary 2026-12-03 20:30] content`` for a diary entry; a
        ``heading`` line, when given, comes first. ``budget_tokens`` (default: the budget
        this result was cut to, if any) bounds the whole text as :func:`est_tokens`
        counts it, heading and labels included: the blocks are a prefix cut as retrieve's
        own — the first block always survives unless ``strict``. Empty text when nothing
        is kept (no entries, or ``strict`` and the first is over the budget).
        """
        budget = self.budget_tokens if budget_tokens is None else budget_tokens
        lines = [heading] if heading else []
        used = est_tokens(heading) if heading else 0
        kept = 0
        for entry in self.items:
            block = entry.to_text()
            cost = est_tokens(block)
            if budget is not None and (kept or strict) and used + cost > budget:
                break
            lines.append(block)
            used += cost
            kept += 1
        return "\n".join(lines) if kept else ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (``time_range`` as a two-element list or None).

        ``diary`` appears when it is ``"all"``, ``vectors`` when it was measured, ``time_days`` for a window
        of separate days.
        """
        out: dict[str, Any] = {
            "items": [e.to_dict() for e in self.items],
            "budget_tokens": self.budget_tokens,
            "budget_used": self.budget_used,
            "embedding_used": self.embedding_used,
            "dropped": [e.to_dict() for e in self.dropped],
            "unresolved_links": list(self.unresolved_links),
            "time_range": list(self.time_range) if self.time_range else None,
            "time_range_source": self.time_range_source,
            "time_range_widened": self.time_range_widened,
            "query_terms": list(self.query_terms),
        }
        if self.time_days is not None:
            out["time_days"] = list(self.time_days)
        if self.diary != "window":
            out["diary"] = self.diary
        if self.vectors is not None:
            out["vectors"] = dict(self.vectors)
        if self.diary_index is not None:
            out["diary_index"] = self.diary_index
        if self.excluded is not None:
            out["excluded"] = dict(self.excluded)
        return out


@dataclass(frozen=True)
class RecallOptions:
    """How a host configures every index it makes — one object through the layers.

    The library's defaults are the seed's behaviour; the host's defaults
    (``wikimem.host.config``) are what ``bench/quality*.py`` measured best.
    """

    use_jieba: bool | None = None
    query_stopwords: bool | str = False  # True, or the languages whose function words go ("en")
    neighbour_context: bool | float = False  # True, or the item's weight
    embed_in_background: bool = False
    diary: str = "window"
    fusion_weight: float = 0.5
    bm25_b: float = 0.75
    neighbour_smoothing: float = 0.0
    recency_half_life: float | None = None  # diary="all": the default recency prior, in days
    diary_wait: float | None = None  # seconds a query waits for the diary index's first build (None: all)

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :class:`~wikimem.recall.index.MemoryIndex`."""
        return {"use_jieba": self.use_jieba, "query_stopwords": self.query_stopwords,
                "neighbour_context": self.neighbour_context, "embed_in_background": self.embed_in_background,
                "diary": self.diary, "fusion_weight": self.fusion_weight, "bm25_b": self.bm25_b,
                "neighbour_smoothing": self.neighbour_smoothing, "recency_half_life": self.recency_half_life,
                "diary_wait": self.diary_wait}


@dataclass
class Query:
    """One retrieve call, as the ranking stages see it."""

    text: str
    terms: list[str]
    mode: str
    window: list[RecallItem]  # the window's entries, in time order ("window" mode: extra BM25 documents)
    dates: tuple[str, str] | None  # "all" mode: the window that filters diary candidates
    half_life: float | None
    tz: Any
    extra: list = field(default_factory=list)  # "window" mode: (key, terms) of the window's entries
    window_keys: list = field(default_factory=list)  # the candidate key of each window entry
    days: frozenset[str] | None = None  # a window of separate days: those days only
    fallback: bool = True  # the window's unmatched entries come back (the words left are question words)
    content: bool = False  # the question has content: small-talk turns rank after the others
    room: Any = None  # where the answer will be read (a wikimem.recall.rooms.Room that can leave entries out)
    left_out: dict[str, set[int]] = field(default_factory=dict)  # entries the room left out: reason -> item ids

    def in_window(self, day: str) -> bool:
        """Whether a diary day passes the window ("all" mode; True without one)."""
        if self.dates is None:
            return True
        return self.dates[0] <= day <= self.dates[1] and (self.days is None or day in self.days)


# -- the arguments of a retrieve, checked ------------------------------------------------------------


def check_count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def check_range(time_range: Any) -> tuple[str, str]:
    if isinstance(time_range, (str, bytes)) or not isinstance(time_range, (tuple, list)) or len(time_range) != 2:
        raise ValueError(f"time_range must be (start, end) dates YYYY-MM-DD, got {time_range!r}")
    start, end = (validate_date(d) for d in time_range)
    return (start, end) if start <= end else (end, start)


def check_diary(mode: Any) -> str:
    if mode not in DIARY_MODES:
        raise ValueError(f"diary must be 'window' or 'all', got {mode!r}")
    return mode


def check_half_life(value: Any) -> float | None:
    """A half-life in days; None or 0: no recency prior."""
    if value is None or (value == 0 and not isinstance(value, bool)):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value \
            or value == float("inf"):
        raise ValueError(f"recency_half_life must be a positive number of days (0: none), got {value!r}")
    return float(value)
