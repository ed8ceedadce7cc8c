"""Recall in a room: the rules of wikimem.recall.rooms applied where the index ranks (SPEC §11, "Channels")."""

from __future__ import annotations

import pytest

from wikimem import MemoryIndex, MemoryStore, Room
from wikimem.recall.rooms import DIRECT_CHAT, NOT_PRESENT

ANN, BOB = "user:ann", "user:bob"
KAI, MIRA = "char:kai", "char:mira"


def _store(tmp_path):
    store = MemoryStore(tmp_path)
    store.diary.append("Ann told Kai the secret: the violin audition", channel="dm", present=[ANN, KAI],
                       date="2026-03-01", time="10:00")
    store.diary.append("In the group Ann, Bob and Kai planned the violin concert", channel="g1",
                       present=[ANN, BOB, KAI], date="2026-03-01", time="11:00")
    store.diary.append("Ann practised violin alone", date="2026-03-01", time="12:00")  # says nothing of a room
    return store


def _times(result):
    return sorted(e.item.name for e in result.items if e.kind == "diary")


@pytest.mark.parametrize("mode", ["window", "all"])
def test_direct_chat_is_not_recalled_in_front_of_others(tmp_path, mode):
    index = MemoryIndex(_store(tmp_path), use_jieba=False, diary=mode)
    ask = dict(time_range=("2026-03-01", "2026-03-01"), limit=10, explain=True)
    alone = index.retrieve("violin", room=Room(person=ANN, channel="dm", present=(ANN, KAI), character="kai",
                                               own=True), **ask)
    assert _times(alone) == ["10:00", "11:00", "12:00"]
    assert alone.excluded == {}
    group = index.retrieve("violin", room=Room(person=ANN, channel="g1", present=(ANN, BOB, KAI), character="kai",
                                               own=True), **ask)
    assert _times(group) == ["11:00", "12:00"]
    assert group.excluded == {DIRECT_CHAT: 1}
    assert "secret" not in str(group.to_dict())


def test_group_channel_without_present_counts_as_others(tmp_path):
    index = MemoryIndex(_store(tmp_path), use_jieba=False, diary="all")
    result = index.retrieve("violin", room=Room(person=ANN, channel="g1"))
    assert _times(result) == ["11:00", "12:00"]


def test_person_may_allow_direct_chat_with_others(tmp_path):
    index = MemoryIndex(_store(tmp_path), use_jieba=False, diary="all")
    room = Room(person=ANN, channel="g1", present=(ANN, BOB), dm_with_others=True)
    assert _times(index.retrieve("violin", room=room)) == ["10:00", "11:00", "12:00"]


def test_character_does_not_recall_what_it_did_not_witness(tmp_path):
    index = MemoryIndex(_store(tmp_path), use_jieba=False, diary="all")
    result = index.retrieve("violin", room=Room(person=ANN, character="mira"), explain=True)
    assert _times(result) == ["12:00"]
    assert result.excluded == {NOT_PRESENT: 2}
    kai = index.retrieve("violin", room=Room(person=ANN, character="kai"))
    assert _times(kai) == ["10:00", "11:00", "12:00"]


def test_unknown_witnesses_are_left_out_for_a_character_outside_its_own_layer(tmp_path):
    store = MemoryStore(tmp_path)
    store.diary.append("A chat somewhere about the violin", channel="g7", date="2026-03-01", time="10:00")
    index = MemoryIndex(store, use_jieba=False, diary="all")
    assert _times(index.retrieve("violin", room=Room(person=ANN, character="kai"))) == []
    assert _times(index.retrieve("violin", room=Room(person=ANN, character="kai", own=True))) == ["10:00"]
    assert _times(index.retrieve("violin")) == ["10:00"]  # no room: the library's retrieve as before


def test_hidden_entries_do_not_shorten_the_answer(tmp_path):
    store = MemoryStore(tmp_path)
    for n in range(120):  # more better matches than the ranking's pool (POOL), all said in a direct chat
        store.diary.append("violin violin violin secret", channel="dm", present=[ANN, KAI], date="2026-03-02",
                           time=f"{10 + n // 60}:{n % 60:02d}")
    for minute in range(5):
        store.diary.append(f"violin lesson number {minute} with a long tail of other words", channel="g1",
                           present=[ANN, BOB, KAI], date="2026-03-03", time=f"09:{minute:02d}")
    index = MemoryIndex(store, use_jieba=False, diary="all")
    room = Room(person=ANN, channel="g1", present=(ANN, BOB, KAI), character="kai")
    result = index.retrieve("violin", room=room, limit=5, explain=True)
    assert len(result.items) == 5 and all("secret" not in e.item.content for e in result.items)
    assert result.excluded == {DIRECT_CHAT: 120}


def test_wiki_fact_learnt_in_a_direct_chat_follows_the_same_rule_and_links_do_not_bring_it_in(tmp_path):
    store = MemoryStore(tmp_path)
    store.add("health", "audition", "Ann's violin audition is on Friday", channel="dm", present=[ANN, KAI])
    store.add("hobbies", "violin", "Ann plays the violin, see [[health:audition]]")
    index = MemoryIndex(store, use_jieba=False)
    alone = index.retrieve("violin", room=Room(person=ANN, channel="dm", present=(ANN, KAI), character="kai"))
    assert {e.item.name for e in alone.items} == {"audition", "violin"}
    group = index.retrieve("violin", room=Room(person=ANN, channel="g1", present=(ANN, BOB, KAI), character="kai"),
                           explain=True)
    assert [e.item.name for e in group.items] == ["violin"]
    assert group.unresolved_links == [] and group.excluded == {DIRECT_CHAT: 1}


def test_room_rules_as_a_table():
    dm_entry = type("E", (), {"channel": "dm", "present": (ANN, KAI)})()
    group_entry = type("E", (), {"channel": "g1", "present": (ANN, BOB, KAI)})()
    plain = type("E", (), {"channel": None, "present": ()})()
    assert Room(person=ANN, present=(ANN,)).reason(dm_entry) is None
    assert Room(person=ANN, present=(ANN, MIRA)).reason(dm_entry) == DIRECT_CHAT  # a character is someone else too
    assert Room(person=ANN, present=(ANN, KAI), character="kai").reason(dm_entry) is None
    assert Room(person=ANN, channel="dm").reason(dm_entry) is None
    assert Room(person=ANN, character="mira").reason(group_entry) == NOT_PRESENT
    assert Room(person=BOB, channel="g1", present=(BOB, KAI), character="kai").reason(group_entry) is None
    assert all(Room(person=ANN, channel="g1", character="mira").reason(plain) is None for _ in range(2))
    assert not Room(person=ANN, present=(ANN,)).active and Room(character="kai").active
