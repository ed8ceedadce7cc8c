"""What :class:`~wikimem.client.Client` returns: its own result types (:class:`Written`,
:class:`Fetched`, :class:`Page`, :class:`Memorized`) and the library's types rebuilt from
the API's JSON (:func:`recall_item`, :func:`diary_item`, :func:`retrieval_result`, …).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wikimem.models import DiaryItem, RecallItem
from wikimem.recall import RetrievalResult, RetrievedItem

__all__ = ["Written", "Fetched", "Page", "Memorized", "memorized", "recall_item", "diary_item", "retrieval_result"]


@dataclass
class Written:
    """What a write returns: its value, the commit it made, whether it was a replay, the item's etag."""

    value: Any
    commit: str | None
    replayed: bool = False
    etag: str | None = None


@dataclass
class Fetched:
    """An item with its etag (send it back as ``if_match=`` to refuse lost updates)."""

    item: RecallItem
    etag: str | None


@dataclass
class Page:
    """One page of a listing; pass ``next`` as ``cursor=`` for the following one (None: the last).

    ``prev`` (history) is the ``after=`` of the newer page; ``extra`` holds the answer's other
    fields (history: ``reverted_by``; runs: ``total``, ``complete``; cluster listings: ``unreachable``).
    """

    entries: list[Any] = field(default_factory=list)
    next: str | None = None
    prev: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Memorized:
    """The outcome of :meth:`Client.memorize`; unpacks as ``entries, run, commit``.

    ``facts``: the wiki items the turn kept; ``writes``: each write with its ``layer`` (``shared`` or
    ``character``) and whether it is ``staged``; ``dropped``: what the model said that could not be written;
    ``proposal``: the facts proposed to the shared layer (``{"run", "commit", "facts"}``) or None;
    ``character``: the character it memorized as, or None.
    """

    entries: list[DiaryItem]
    run: str
    commit: str | None
    replayed: bool = False
    facts: list[RecallItem] = field(default_factory=list)
    writes: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    proposal: dict[str, Any] | None = None
    character: str | None = None

    def __iter__(self):
        return iter((self.entries, self.run, self.commit))


def memorized(data: Mapping[str, Any]) -> Memorized:
    """A :class:`Memorized` from the JSON of a memorize answer."""
    return Memorized([diary_item(e) for e in data.get("entries") or []], data.get("run", ""),
                     data.get("commit"), bool(data.get("replayed")),
                     facts=[recall_item(f) for f in data.get("facts") or []],
                     writes=list(data.get("writes") or []), dropped=list(data.get("dropped") or []),
                     proposal=data.get("proposal"), character=data.get("character"))


def recall_item(data: Mapping[str, Any]) -> RecallItem:
    """A :class:`~wikimem.RecallItem` from its JSON."""
    return RecallItem(file=data["file"], name=data["name"], content=data["content"], owner=data.get("owner"),
                      source_conv=data.get("source_conv"), ts=data.get("ts"), channel=data.get("channel"),
                      present=tuple(data.get("present") or ()))


def diary_item(data: Mapping[str, Any]) -> DiaryItem:
    """A :class:`~wikimem.DiaryItem` from its JSON."""
    return DiaryItem(date=data["date"], time=data["time"], content=data["content"], owner=data.get("owner"),
                     source_conv=data.get("source_conv"), ts=data.get("ts"), channel=data.get("channel"),
                     present=tuple(data.get("present") or ()))


def _retrieved(data: Mapping[str, Any]) -> RetrievedItem:
    return RetrievedItem(
        item=recall_item(data["item"]), source=data["source"], score=data.get("score"),
        bm25_score=data.get("bm25_score"), cos_score=data.get("cos_score"), via=data.get("via"),
        matched_terms=list(data.get("matched_terms") or []), tokens_est=int(data.get("tokens_est") or 0),
        kind=data.get("kind") or "wiki", via_file=data.get("via_file"), staged=data.get("staged"),
        layer=data.get("layer"), character=data.get("character"),
    )


def retrieval_result(data: Mapping[str, Any]) -> RetrievalResult:
    """A :class:`~wikimem.RetrievalResult` rebuilt from its JSON (``RetrievalResult.to_dict``)."""
    window = data.get("time_range")
    return RetrievalResult(
        items=[_retrieved(e) for e in data.get("items") or []],
        budget_tokens=data.get("budget_tokens"),
        budget_used=int(data.get("budget_used") or 0),
        embedding_used=bool(data.get("embedding_used")),
        dropped=[_retrieved(e) for e in data.get("dropped") or []],
        unresolved_links=list(data.get("unresolved_links") or []),
        time_range=(window[0], window[1]) if window else None,
        time_range_source=data.get("time_range_source"),
        time_range_widened=bool(data.get("time_range_widened")),
        time_days=list(data["time_days"]) if data.get("time_days") else None,
        query_terms=list(data.get("query_terms") or []),
        diary=data.get("diary") or "window",
        vectors=dict(data["vectors"]) if data.get("vectors") is not None else None,
        diary_index=data.get("diary_index"),
        excluded=dict(data["excluded"]) if data.get("excluded") is not None else None,
    )
