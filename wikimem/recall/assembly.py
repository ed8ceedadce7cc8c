"""The entries of a retrieval result: hits with their evidence (:func:`entries`), each followed by
its link targets (:func:`expand`), cut to a token budget (:func:`cut`)."""

from __future__ import annotations

from wikimem.models import RecallItem

from .fusion import Candidate
from .results import RetrievalResult, RetrievedItem
from .rooms import Room, sift
from .tokenizer import est_tokens, item_text
from .wiki_index import WikiIndex

__all__ = ["entries", "expand", "cut", "cut_result"]


def _facts(wiki: WikiIndex, item: RecallItem, kind: str) -> tuple[int, list]:
    """An item's token estimate and links (remembered by the wiki index for its items)."""
    if kind != "wiki":
        return est_tokens(item_text(item)), item.links
    return wiki.facts(item)


def _matched(wiki: WikiIndex, item: RecallItem, terms: set[str]) -> list[str]:
    # a diary entry is never what the wiki index holds: its terms are tokenised (and remembered)
    return sorted(terms.intersection(wiki.terms(item))) if terms else []


def entries(hits: list[Candidate], terms: set[str], wiki: WikiIndex) -> list[RetrievedItem]:
    """The result entries of ranked candidates (``terms``: the query's)."""
    return [RetrievedItem(
        item=c.item, source="hit",
        score=c.score if c.score is not None else (c.bm25 if terms else None),
        bm25_score=c.bm25 if terms or c.cos is not None else None,
        cos_score=c.cos,
        matched_terms=_matched(wiki, c.item, terms),
        tokens_est=_facts(wiki, c.item, c.kind)[0],
        kind=c.kind,
    ) for c in hits]


def expand(hits: list[RetrievedItem], terms: set[str], wiki: WikiIndex, room: Room | None = None,
           left_out: dict[str, set[int]] | None = None) -> tuple[list[RetrievedItem], list[str]]:
    """Each hit followed by its link targets: one hop, each item once; and the dangling links.

    The first entry in injection order survives: a later hit that an
    earlier hit already brought in as a link is not repeated (its own
    links are still followed, from where it would have been).
    """
    seen: set[int] = set()
    unresolved: dict[str, None] = {}
    out = []
    for hit in hits:
        if id(hit.item) not in seen:
            seen.add(id(hit.item))
            out.append(hit)
        for link in _facts(wiki, hit.item, hit.kind)[1]:
            target = wiki.get(link.file, " ".join(link.name.split()))
            if target is None:
                unresolved.setdefault(link.render(), None)
                continue
            if id(target) in seen:
                continue
            if room is not None and not sift([target], room, left_out if left_out is not None else {}):
                continue  # a target this room leaves out is not brought in by a link either
            seen.add(id(target))
            out.append(RetrievedItem(
                item=target, source="link", via=hit.item.name, via_file=hit.item.file,
                matched_terms=_matched(wiki, target, terms),
                tokens_est=_facts(wiki, target, "wiki")[0],
            ))
    return out, list(unresolved)


def cut(entries: list[RetrievedItem], budget: int | None, *, strict: bool = False) -> int:
    """How many entries a prefix cut in injection order keeps; the first always survives unless ``strict``."""
    if budget is None:
        return len(entries)
    used = 0
    for n, e in enumerate(entries):
        if (n or strict) and used + e.tokens_est > budget:
            return n
        used += e.tokens_est
    return len(entries)


def cut_result(result: RetrievalResult, budget_tokens: int | None, strict: bool, explain: bool) -> None:
    """The result cut to the token budget (a prefix, in injection order)."""
    keep = cut(result.items, budget_tokens, strict=strict)
    result.items, dropped = result.items[:keep], result.items[keep:]
    result.budget_used = sum(e.tokens_est for e in result.items)
    if explain:
        result.dropped = dropped
