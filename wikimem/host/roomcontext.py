"""A channel's context in one call (SPEC §11, "Channels"): what the persons present left, as a character recalls it.

:func:`channel_context` asks each present person's folder with the same room
(:meth:`~wikimem.host.owner.Owner.retrieve` with ``channel``, ``present``,
``character``: the rules of :mod:`wikimem.recall.rooms` leave entries out in
the query, never afterwards) and merges the answers under ONE ``limit`` and ONE
token budget, each entry naming the ``person`` whose folder it came from:

- with a ``query``: the hits of every folder ranked by score (each hit with the
  link targets its folder put after it); the character's profile, read once
  per folder, counts once;
- without one: the channel's recent events — the diary entries said in this
  channel during the last ``days`` days, newest first.

Persons without a folder are skipped and reported (``unknown``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from wikimem.errors import BadRequest, InvalidValue, NotFound
from wikimem.limits import MAX_CONTEXT_DAYS, MAX_QUERY_CHARS, MAX_RETRIEVE_LIMIT, check_length
from wikimem.naming import validate_channel_id, validate_present
from wikimem.recall import RetrievedItem, cut
from wikimem.timeparse import resolve_tz

from .layered import PROFILE, hit_groups

if TYPE_CHECKING:
    from .owner import Owner

__all__ = ["ChannelContext", "channel_context", "persons_of"]

_CHARACTER = "char:"
Groups = list[tuple[str | None, list[RetrievedItem]]]  # (whose folder, a hit and the links it brought)


@dataclass
class ChannelContext:
    """One channel's context: ``entries`` as ``(person, entry)`` in injection order (``person`` None for the
    character's own profile), the budget used, who had no folder, what the room left out (``explain``)."""

    channel: str
    character: str | None
    present: list[str]
    query: str | None
    entries: list[tuple[str | None, RetrievedItem]] = field(default_factory=list)
    budget_tokens: int | None = None
    unknown: list[str] = field(default_factory=list)
    dropped: list[tuple[str | None, RetrievedItem]] | None = None
    excluded: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "channel": self.channel, "character": self.character, "present": self.present, "query": self.query,
            "items": [_entry(person, e) for person, e in self.entries], "budget_tokens": self.budget_tokens,
            "budget_used": sum(e.tokens_est for _, e in self.entries), "unknown": self.unknown}
        if self.dropped is not None:
            out["dropped"] = [_entry(person, e) for person, e in self.dropped]
        if self.excluded is not None:
            out["excluded"] = dict(self.excluded)
        return out


def _entry(person: str | None, entry: RetrievedItem) -> dict[str, Any]:
    return {"person": person, **entry.to_dict()}


def persons_of(present: Any) -> tuple[str, ...]:
    """The persons (owner ids) among who is present (``char:`` ids are characters); ``present`` validated."""
    return tuple(one for one in validate_present(present) if not one.startswith(_CHARACTER))


def channel_context(owner: Callable[[str], Owner], channel: Any, present: Any, *, character: str | None,
                    query: str | None = None, limit: int = 10, budget_tokens: int | None = None,
                    budget_strict: bool = False, explain: bool = False, days: int = 7) -> ChannelContext:
    """The context of ``channel`` for who is ``present`` (see the module's docstring); ``owner`` finds a person's
    folder (NotFound: no folder). ``character``: who recalls (its layer, the shared layer, its profile)."""
    channel = validate_channel_id(channel)
    if present is None:
        raise BadRequest("give present: who is in the room (persons' owner ids, char:<character>)")
    room = list(validate_present(present))
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RETRIEVE_LIMIT:
        raise InvalidValue(f"limit must be from 1 to {MAX_RETRIEVE_LIMIT}, got {limit!r}")
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_CONTEXT_DAYS:
        raise InvalidValue(f"days must be from 1 to {MAX_CONTEXT_DAYS}, got {days!r}")
    if query is not None:
        check_length(query, MAX_QUERY_CHARS, "query")
    out = ChannelContext(channel, character, room, query, budget_tokens=budget_tokens)
    folders: list[Owner] = []
    for person in persons_of(room):
        try:
            folders.append(owner(person))
        except NotFound:
            out.unknown.append(person)
    asked = {"character": character, "channel": channel, "present": room, "explain": explain}
    left_out: list[dict[str, int]] = []
    if query is None:
        groups = _recent(folders, asked, left_out, channel, days)
    else:
        groups = _ranked(folders, asked, left_out, query, limit)
    entries = [(person, e) for person, group in groups[:limit] for e in group]
    keep = cut([e for _, e in entries], budget_tokens, strict=budget_strict)
    out.entries = entries[:keep]
    if explain:
        out.dropped = entries[keep:]
        out.excluded = _counted(left_out)
    return out


def _ranked(folders: list[Owner], asked: dict, left_out: list, query: str, limit: int) -> Groups:
    """Every folder's hits for ``query`` in one ranking by score (ties: the order of the persons)."""
    ranked: list[tuple[tuple, str | None, list[RetrievedItem]]] = []
    seen: set[tuple] = set()
    for order, person in enumerate(folders):
        result = person.retrieve(query, limit=limit, **asked)
        left_out.append(result.excluded or {})
        for position, group in enumerate(hit_groups(result.items)):
            hit = group[0]
            if hit.layer == PROFILE:  # the character's own profile: the same in every folder, counted once
                key = (hit.kind, hit.item.file, hit.item.name, hit.item.content)
                if key in seen:
                    continue
                seen.add(key)
            score = hit.score
            whose = None if hit.layer == PROFILE else person.id
            ranked.append(((score is None, -(score or 0.0), order, position), whose, group))
    ranked.sort(key=lambda r: r[0])
    return [(whose, group) for _, whose, group in ranked]


def _recent(folders: list[Owner], asked: dict, left_out: list, channel: str, days: int) -> Groups:
    """The diary entries said in ``channel`` during the last ``days`` days of every folder, newest first."""
    found = []
    for person in folders:
        today = datetime.now(resolve_tz(person.time_zone())).date()
        window = ((today - timedelta(days=days - 1)).isoformat(), today.isoformat())
        result = person.retrieve("", limit=MAX_RETRIEVE_LIMIT, time_range=window, expand_links=False, **asked)
        left_out.append(result.excluded or {})
        found += [(person.id, e) for e in result.items if e.kind == "diary" and e.item.channel == channel]
    found.sort(key=lambda pair: (pair[1].item.file, pair[1].item.name, pair[1].item.ts or ""), reverse=True)
    return [(whose, [e]) for whose, e in found]


def _counted(counts: list[dict[str, int]]) -> dict[str, int]:
    """What the room left out in every folder, by reason (never the text)."""
    reasons = sorted({k for c in counts for k in c})
    return {k: sum(c.get(k, 0) for c in counts) for k in reasons}

