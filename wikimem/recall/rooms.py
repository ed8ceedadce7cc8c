"""Recall in a room: which memories may be recalled where the answer will be read (SPEC §11, "Channels").

A retrieve may say where its answer will be read — the ``channel`` and who is
``present`` — and who recalls (a ``character``). Two rules decide, for each
entry that says where it was said (``channel``/``present`` in its metadata):

- what was said in a direct chat (``channel=dm``) is not recalled when anyone
  else is in the room — anyone but the person and the recalling character —
  unless the person allowed it (``dm_with_others``);
- a character does not recall a channel event at which it was not present
  (its ``char:<id>`` is not in the entry's ``present``; an entry of another
  layer that names no one present is not shown to a character either).

Entries that say nothing of a room (older ones, hand-written ones) are always
recalled. :class:`Room` is applied where an index ranks, before the limit
(:class:`~wikimem.recall.index.MemoryIndex`: its seeds reach past what the room
leaves out, :func:`reaching`), never to a finished answer. :func:`audience`
answers an operator's "who could have heard this?" of one entry by the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from wikimem.naming import DM_CHANNEL

__all__ = ["Room", "DIRECT_CHAT", "NOT_PRESENT", "REASONS", "sift", "hidden_items", "reaching", "Audience",
           "Recaller", "audience"]

DIRECT_CHAT = "direct_chat"  # said in a direct chat, and others are in the room
NOT_PRESENT = "not_present"  # the recalling character was not there
REASONS = {DIRECT_CHAT: "said in a direct chat; someone else is in the room",
           NOT_PRESENT: "the recalling character was not present"}


@dataclass(frozen=True)
class Room:
    """Where a retrieve's answer will be read, and by whom (see the module docstring).

    ``person``: the owner whose memory is asked (the other side of its direct
    chats); ``present``: who is in the room now (None: not said — then a
    ``channel`` other than ``dm`` counts as a room with others); ``own``: the
    store asked is the character's own layer or profile, so an entry there that
    names no one present was the character's own.
    """

    person: str | None = None
    channel: str | None = None
    present: tuple[str, ...] | None = None
    character: str | None = None
    dm_with_others: bool = False
    own: bool = False

    @cached_property
    def others(self) -> bool:
        """Whether anyone but the person and the recalling character is in the room."""
        if self.present is None:
            return self.channel is not None and self.channel != DM_CHANNEL
        me = f"char:{self.character}" if self.character is not None else None
        return any(one != self.person and one != me for one in self.present)

    @property
    def active(self) -> bool:
        """Whether any entry could be left out in this room."""
        return self.character is not None or (self.others and not self.dm_with_others)

    def of_layer(self, own: bool) -> Room:
        """This room as seen from a store that is (or is not) the character's own."""
        return self if own == self.own else replace(self, own=own)

    def reason(self, item: Any) -> str | None:
        """Why ``item`` (anything with ``channel`` and ``present``) is left out in this room, or None."""
        channel, present = getattr(item, "channel", None), getattr(item, "present", ())
        if channel is None and not present:
            return None
        if channel == DM_CHANNEL and self.others and not self.dm_with_others:
            return DIRECT_CHAT
        if self.character is not None:
            if present:
                if f"char:{self.character}" not in present:
                    return NOT_PRESENT
            elif not self.own:
                return NOT_PRESENT
        return None


def sift(things: list, room: Room | None, left_out: dict[str, set[int]], item: Any = None) -> list:
    """The ``things`` this room allows (``item(thing)``: the item of one, default itself), in order; what is left
    out is noted by reason in ``left_out`` (the ids of the items, so one seen twice counts once)."""
    if room is None:
        return things
    out = []
    for thing in things:
        one = thing if item is None else item(thing)
        why = room.reason(one)
        if why is None:
            out.append(thing)
        else:
            left_out.setdefault(why, set()).add(id(one))
    return out


def hidden_items(room: Room, *roomed: dict) -> dict[Any, tuple[str, Any]]:
    """The items that say where they were said (the indexes' ``roomed`` maps, by key) this room leaves out:
    ``{key: (reason, item)}``."""
    return {key: (why, one) for items in roomed for key, one in items.items() if (why := room.reason(one)) is not None}


def reaching(ranked: list[tuple[Any, float]], hidden: dict | None, wanted: int,
             left_out: dict[str, set[int]]) -> tuple[list[tuple[Any, float]], bool]:
    """The first of ``ranked`` up to the one that makes ``wanted`` keys not in ``hidden`` (``{key: (reason,
    item)}``), and whether it got that far; each hidden one among them is noted by reason in ``left_out``."""
    if not hidden:
        return ranked[:wanted], True
    seen = 0
    for n, (key, _) in enumerate(ranked):
        gone = hidden.get(key)
        if gone is None:
            seen += 1
            if seen == wanted:
                return ranked[:n + 1], True
        else:
            left_out.setdefault(gone[0], set()).add(id(gone[1]))
    return ranked, False


@dataclass(frozen=True)
class Recaller:
    """Whether one recaller (``character`` None: a retrieve without a character) recalls an entry alone with the
    person, and in a room with someone else too: None when it does, else the reason (:data:`REASONS`)."""

    character: str | None
    alone: str | None
    with_others: str | None

    @property
    def why_alone(self) -> str | None:
        return REASONS.get(self.alone or "")

    @property
    def why_with_others(self) -> str | None:
        return REASONS.get(self.with_others or "")


@dataclass(frozen=True)
class Audience:
    """Who could have heard an entry, and who may recall it (see :func:`audience`)."""

    channel: str | None
    persons: tuple[str, ...]  # the persons present (owner ids)
    characters: tuple[str, ...]  # the characters present (ids, without ``char:``)
    direct: bool  # said in a direct chat
    kept_from_others: bool  # direct, and not recalled when anyone else is in the room (dm_with_others unset)
    recallers: tuple[Recaller, ...]
    anyone_else: Recaller | None  # any other character (an entry of the shared layer); None: a character's layer

    @property
    def says_room(self) -> bool:
        return self.channel is not None or bool(self.persons or self.characters)


# Stand-ins no entry names: someone else in the room, and a character not named anywhere (ids never hold a space).
_SOMEONE, _ANY_OTHER = " someone else", " any other"


def audience(item: Any, *, person: str, layer: str | None, characters: tuple[str, ...] | list[str] = (),
             dm_with_others: bool = False) -> Audience:
    """Who was there when ``item`` (an entry of ``person``'s folder, of ``layer``: a character's, None the shared
    one) was said, and by :class:`Room`'s rules who may recall it: the characters present, ``characters`` (those
    with a layer in the folder) and a retrieve without a character for an entry of the shared layer (its own
    character alone for a character's layer: another character's layer is never read)."""
    channel, present = getattr(item, "channel", None), tuple(getattr(item, "present", ()) or ())
    named = tuple(one[5:] for one in present if one.startswith("char:"))
    candidates: list[str | None] = [layer] if layer is not None else [None, *sorted({*named, *characters})]

    def recaller(character: str | None) -> Recaller:
        me = (f"char:{character}",) if character is not None else ()
        room = Room(person=person, present=(person, *me), character=character, dm_with_others=dm_with_others,
                    own=layer is not None and character == layer)
        alone = room.reason(item)  # (one not recalled alone is not recalled with others either: say why once)
        return Recaller(None if character == _ANY_OTHER else character, alone,
                        alone or replace(room, present=(person, *me, _SOMEONE)).reason(item))

    direct = channel == DM_CHANNEL
    return Audience(channel, tuple(one for one in present if not one.startswith("char:")), named, direct,
                    direct and not dm_with_others, tuple(recaller(c) for c in candidates),
                    recaller(_ANY_OTHER) if layer is None else None)
