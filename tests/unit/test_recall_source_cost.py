"""What the cheaper ranking of one source keeps (issue 39, point 3): the score order, the diary's neighbours and the
wiki's "any conversation" answer follow every change, and smoothing through a mapping equals it through a call."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wikimem import MemoryIndex, MemoryStore
from wikimem.recall.diary_index import DiaryIndex
from wikimem.recall.lexical import by_score
from wikimem.recall.smoothing import smooth

DAY = "2026-07-21"


@given(st.lists(st.tuples(st.tuples(st.sampled_from("abc"), st.integers(0, 5)), st.sampled_from([0.0, 0.5, 1.25, 3.0])),
                unique_by=lambda kv: kv[0]))
def test_by_score_is_score_descending_then_key(pairs):
    assert by_score(pairs) == sorted(pairs, key=lambda kv: (-kv[1], kv[0]))


@given(st.dictionaries(st.integers(0, 30), st.floats(0.0, 5.0), max_size=25), st.floats(0.0, 1.0))
def test_smoothing_through_a_mapping_equals_through_a_call(raw, weight):
    seeds = sorted(raw.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    near = {k: tuple(n for n in (k - 1, k + 1) if 0 <= n <= 30) for k in range(0, 31, 2)}  # odd keys: none

    def scores(keys):
        return {k: raw[k] for k in keys if k in raw}

    assert smooth(seeds, weight, near, scores) == smooth(seeds, weight, lambda k: near.get(k, ()), scores)


def _neighbours_of(diary) -> dict:
    fresh = DiaryIndex(diary, use_jieba=False)
    fresh.refresh()
    return fresh.near


def test_diary_neighbours_follow_appends_and_hand_edits(tmp_path):
    store = MemoryStore(tmp_path / "mem")
    for time, text in (("09:00", "tea"), ("10:00", "walk"), ("11:00", "lunch")):
        store.diary.append(text, date=DAY, time=time)
    index = DiaryIndex(store.diary, use_jieba=False)
    index.refresh()
    assert index.near == _neighbours_of(store.diary)
    store.diary.append("nap", date=DAY, time="12:00")
    store.diary.append("alone on its day", date="2026-07-22", time="08:00")
    assert index.refresh()
    assert index.near == _neighbours_of(store.diary)
    assert index.neighbours((DAY, "11:00", 0)) == ((DAY, "10:00", 0), (DAY, "12:00", 0))
    day = store.diary.diary_dir / f"{DAY}.md"
    text = day.read_text()
    start, end = text.index("## 10:00"), text.index("## 11:00")
    day.write_text(text[:start] + text[end:])  # a hand edit: the 10:00 entry taken out
    assert index.refresh()
    assert index.near == _neighbours_of(store.diary)
    assert index.neighbours((DAY, "09:00", 0)) == ((DAY, "11:00", 0),)
    assert index.neighbours((DAY, "10:00", 0)) == ()


def _names(result) -> list[tuple[str, str]]:
    return [(e.item.file, e.item.name) for e in result.items]


def test_a_conversation_written_after_the_first_query_is_smoothed(tmp_path):
    store = MemoryStore(tmp_path / "mem")
    store.add("facts", "f0", "Drinks tea.")
    store.diary.append("Walked in the park.", date=DAY, time="09:00")
    index = MemoryIndex(store, use_jieba=False, neighbour_smoothing=0.5, diary="all")
    assert index.diary_ready(None)
    assert _names(index.retrieve("tea", expand_links=False)) == [("facts", "f0")]  # no file is a conversation yet
    for n, turn in enumerate(["Maya: guess what, we adopted a puppy!", "Tom: no way! what did you name him?",
                              "Maya: Biscuit. The kids picked it."]):
        store.add("s01", f"t{n}", turn)
    # t2 holds neither word: only its neighbour's share (smoothing of a conversation) brings it in
    assert ("s01", "t2") in _names(index.retrieve("puppy name", expand_links=False))
