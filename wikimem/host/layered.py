"""Recall as a character: the layers it may read, ranked into one list with one limit and one token budget.

A retrieve with ``character`` reads exactly three sources (SPEC §11): that
character's layer of the person's folder, the person's shared layer, and the
character's own profile (the owner ``char:<id>``). Each is ranked by its own
index (:class:`~wikimem.host.indexes.Indexes`); :func:`retrieve_layers`
merges the hits by score (each hit with the link targets its index put after
it), keeps the first ``limit``, resolves a link the hit's own layer lacks in
the shared layer, and cuts the whole to one budget. Another character's layer
is never a source: the choice is made here, where the stores are queried.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wikimem.recall import RetrievalResult, RetrievedItem, Room, cut, est_tokens, item_text

__all__ = ["Source", "retrieve_layers", "mark_staged", "SHARED", "CHARACTER", "PROFILE"]

SHARED, CHARACTER, PROFILE = "shared", "character", "profile"
_ORDER = {CHARACTER: 0, SHARED: 1, PROFILE: 2}  # who goes first among entries of equal score


@dataclass(frozen=True)
class Source:
    """One index a retrieve reads: which layer it is, whose character, and (with staged runs) what is staged."""

    layer: str
    character: str | None
    index: Any
    staged: frozenset | None = field(default=None, compare=False)
    room: Room | None = field(default=None, compare=False)  # where the answer is read, as this layer sees it


def _groups(items: list[RetrievedItem]) -> list[list[RetrievedItem]]:
    """Each hit with the link entries its index injected right after it."""
    out: list[list[RetrievedItem]] = []
    for entry in items:
        if entry.source == "link" and out:
            out[-1].append(entry)
        else:
            out.append([entry])
    return out


def _label(entry: RetrievedItem, source: Source) -> RetrievedItem:
    entry.layer, entry.character = source.layer, source.character
    if source.staged is not None:
        mark_staged([entry], source.staged, source.character if source.layer == CHARACTER else None)
    return entry


def mark_staged(entries: list[RetrievedItem], staged: frozenset, layer: str | None = None) -> None:
    """Say of each entry of a retrieve that included staged runs whether it comes from one (``staged``: the keys
    of :func:`wikimem.versioned.item_key`; ``layer``: the folder's layer the entries come from)."""
    for entry in entries:
        item = entry.item
        key = ((layer, "wiki", item.file, item.name) if entry.kind == "wiki"
               else (layer, "diary", item.file, item.name, item.content))
        entry.staged = key in staged


def _links_of(group: list[RetrievedItem], source: Source, shared: Source | None,
              taken: set[tuple]) -> tuple[list[RetrievedItem], list[str]]:
    """The link targets of a hit that its own layer lacks, found in the shared layer (a character's or a profile's
    hit); and the links found nowhere (its own index injected the targets it holds already)."""
    hit = group[0]
    found, missing = [], []
    for link in hit.item.links:
        name = " ".join(link.name.split())
        if source.index.lookup(link.file, name) is not None:
            continue
        target = shared.index.lookup(link.file, name) if shared is not None and source is not shared else None
        if target is not None and shared is not None and shared.room is not None and shared.room.reason(target):
            continue  # a target the room leaves out is not brought in by a link either
        if target is None or shared is None:
            missing.append(link.render())
        elif (SHARED, "wiki", target.file, target.name) not in taken:
            taken.add((SHARED, "wiki", target.file, target.name))
            found.append(_label(RetrievedItem(item=target, source="link", via=hit.item.name, via_file=hit.item.file,
                                              tokens_est=_tokens(target)), shared))
    return found, missing


def _tokens(item: Any) -> int:
    return est_tokens(item_text(item))


def retrieve_layers(sources: list[Source], query: str, *, limit: int = 10, budget_tokens: int | None = None,
                    budget_strict: bool = False, expand_links: bool = True, explain: bool = False,
                    **options: Any) -> RetrievalResult:
    """One result over ``sources``: ranked by score across them (each source ranked by its own index), one ``limit``
    of hits, links resolved in the hit's own layer first and then in the shared one, one budget."""
    results = [(s, s.index.retrieve(query, limit=limit, budget_tokens=None, expand_links=expand_links,
                                    explain=explain, room=s.room, **options)) for s in sources]
    shared = next((s for s in sources if s.layer == SHARED), None)
    ranked = []
    for source, result in results:
        for position, group in enumerate(_groups(result.items)):
            score = group[0].score
            ranked.append(((score is None, -(score or 0.0), _ORDER.get(source.layer, 3), position), source, group))
    ranked.sort(key=lambda r: r[0])
    merged = _merged(results[0][1] if results else RetrievalResult(), budget_tokens)
    taken: set[tuple] = set()
    unresolved: dict[str, None] = {}
    entries: list[RetrievedItem] = []
    for _, source, group in ranked[:limit]:
        kept = []
        for entry in group:
            key = (source.layer, entry.kind, entry.item.file, entry.item.name, entry.item.content)
            if key not in taken:
                taken.add(key)
                taken.add((source.layer, entry.kind, entry.item.file, entry.item.name))
                kept.append(_label(entry, source))
        if expand_links and kept and kept[0].source == "hit":
            more, missing = _links_of(kept, source, shared, taken)
            kept += more
            unresolved.update(dict.fromkeys(missing))
        entries += kept
    merged.unresolved_links = list(unresolved)
    keep = cut(entries, budget_tokens, strict=budget_strict)
    merged.items, dropped = entries[:keep], entries[keep:]
    merged.budget_used = sum(e.tokens_est for e in merged.items)
    if explain:
        merged.dropped = dropped
    _combine(merged, [r for _, r in results])
    return merged


def _merged(first: RetrievalResult, budget_tokens: int | None) -> RetrievalResult:
    """A result with what every source's result shares (the parsed window, the query's terms, the diary mode)."""
    return RetrievalResult(budget_tokens=budget_tokens, time_range=first.time_range,
                           time_range_source=first.time_range_source, query_terms=list(first.query_terms),
                           diary=first.diary)


def _combine(merged: RetrievalResult, results: list[RetrievalResult]) -> None:
    merged.time_range_widened = any(r.time_range_widened for r in results)
    counted_out = [r.excluded for r in results if r.excluded is not None]
    if counted_out:
        reasons = sorted({k for c in counted_out for k in c})
        merged.excluded = {k: sum(c.get(k, 0) for c in counted_out) for k in reasons}
    merged.embedding_used = any(r.embedding_used for r in results)
    if any(r.diary_index == "building" for r in results):
        merged.diary_index = "building"
    counted = [r.vectors for r in results if r.vectors is not None]
    if counted:
        merged.vectors = {k: sum(v.get(k, 0) for v in counted) for k in ("embedded", "total")}
