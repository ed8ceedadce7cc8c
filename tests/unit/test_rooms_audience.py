"""“Who could have heard this?” (wikimem.recall.audience, issue 34 point 4): the operators' answer agrees with what
retrieve actually recalls in the same rooms, for the shared layer and a character's own."""

from __future__ import annotations

from dataclasses import replace

import pytest

from wikimem import MemoryIndex, MemoryStore, Room
from wikimem.recall import audience
from wikimem.recall.rooms import DIRECT_CHAT, NOT_PRESENT

ANN, BOB = "user:ann", "user:bob"
ENTRIES = {"09:00": ("dm", [ANN, "char:kai"]), "10:00": ("g1", [ANN, BOB, "char:kai"]),
           "11:00": ("g2", [ANN, "char:mira"]), "12:00": (None, []), "13:00": ("g3", [])}


def _store(tmp_path):
    store = MemoryStore(tmp_path)
    for time, (channel, present) in ENTRIES.items():
        room = {"channel": channel, "present": present} if channel else {}
        store.diary.append(f"violin {time}", date="2026-03-01", time=time, **room)
    return store


def _recalled(index, room: Room) -> set[str]:
    found = index.retrieve("violin", room=room, time_range=("2026-03-01", "2026-03-01"), limit=20)
    return {e.item.name for e in found.items if e.kind == "diary"}


@pytest.mark.parametrize("dm_with_others", [False, True])
@pytest.mark.parametrize("own", [None, "kai"])
def test_audience_agrees_with_what_retrieve_recalls(tmp_path, dm_with_others, own):
    store = _store(tmp_path)
    index = MemoryIndex(store, use_jieba=False, diary="all")
    for entry in store.diary.day("2026-03-01"):
        who = audience(entry, person=ANN, layer=own, characters=["kai"], dm_with_others=dm_with_others)
        for r in who.recallers:
            me = (f"char:{r.character}",) if r.character else ()
            base = Room(person=ANN, present=(ANN, *me), character=r.character, dm_with_others=dm_with_others,
                        own=own is not None)
            for verdict, present in ((r.alone, (ANN, *me)), (r.with_others, (ANN, *me, BOB))):
                recalled = entry.time in _recalled(index, replace(base, present=present))
                assert recalled == (verdict is None), (entry.time, r, present)


def test_who_was_there_and_why_each_is_left_out():
    class Entry:
        channel, present = "dm", ("user:ann", "char:kai")

    who = audience(Entry(), person=ANN, layer=None, characters=["mira"])
    assert (who.channel, who.persons, who.characters, who.direct, who.kept_from_others) == \
        ("dm", (ANN,), ("kai",), True, True)
    rows = {r.character: (r.alone, r.with_others) for r in who.recallers}
    assert rows == {None: (None, DIRECT_CHAT), "kai": (None, DIRECT_CHAT), "mira": (NOT_PRESENT, NOT_PRESENT)}
    assert (who.anyone_else.alone, who.anyone_else.with_others) == (NOT_PRESENT, NOT_PRESENT)
    assert who.recallers[1].why_with_others == "said in a direct chat; someone else is in the room"
    allowed = audience(Entry(), person=ANN, layer=None, dm_with_others=True)
    assert not allowed.kept_from_others and allowed.recallers[1].with_others is None
    mine = audience(Entry(), person=ANN, layer="kai", characters=["kai", "mira"])
    assert [r.character for r in mine.recallers] == ["kai"] and mine.anyone_else is None  # no one else reads it


def test_an_entry_that_says_nothing_of_a_room_is_recalled_by_everyone():
    class Plain:
        channel, present = None, ()

    who = audience(Plain(), person=ANN, layer=None, characters=["kai"])
    assert not who.says_room and not who.direct
    assert all(r.alone is None and r.with_others is None for r in (*who.recallers, who.anyone_else))
