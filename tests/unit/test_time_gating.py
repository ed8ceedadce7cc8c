"""Time gating: the window's diary entries join the ranking; the wiki is never filtered."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from wikimem import MemoryIndex, MemoryStore
from wikimem.recall.lexical.bm25 import BM25Index
from wikimem.recall.tokenizer import tokenize

TZ = "Asia/Shanghai"


@pytest.fixture
def store(store) -> MemoryStore:
    s = store
    s.add("preferences", "likes-the-sea", "Loves the sea.")
    s.add("work", "current-job", "Works at a robotics company.")
    d = s.diary
    d.append("Went to the sea with friends. [[preferences:likes-the-sea]]", date="2026-07-20", time="10:00")
    d.append("Hotpot dinner, very spicy.", date="2026-07-21", time="19:30")
    d.append("Talked about the sea again.", date="2026-07-21", time="21:00")
    d.append("Second note in the same minute about the sea.", date="2026-07-21", time="21:00")
    d.append("Quiet day at work.", date="2026-07-25", time="09:00")
    return s


def hits(result):
    return [(e.kind, e.item.file, e.item.name, e.item.content) for e in result.items]


def test_without_a_window_the_diary_never_enters(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("sea hotpot")
    assert {e.kind for e in result.items} == {"wiki"}
    assert (result.time_range, result.time_range_source, result.time_range_widened) == (None, None, False)


def test_explicit_window_adds_its_entries_and_keeps_the_wiki(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("sea", time_range=("2026-07-21", "2026-07-21"))
    assert result.time_range == ("2026-07-21", "2026-07-21") and result.time_range_source == "explicit"
    got = hits(result)
    diary = [h for h in got if h[0] == "diary"]
    # both same-minute entries, as distinct items; not the window's entry that does not match "sea"
    # (a real word: BM25 alone never returns an entry it does not match, issue 35); nothing from
    # outside the window
    assert sorted(h[3] for h in diary) == ["Second note in the same minute about the sea.",
                                           "Talked about the sea again."]
    assert all(h[1] == "2026-07-21" and h[2] == "21:00" for h in diary)
    assert ("wiki", "preferences", "likes-the-sea", "Loves the sea.") in got  # the wiki is not filtered


def test_window_entries_score_with_the_statistics_of_wiki_and_window_together(store):
    index = MemoryIndex(store, use_jieba=False)
    result = index.retrieve("sea spicy", time_range=("2026-07-20", "2026-07-21"))
    ref = BM25Index()
    for item in store.items():
        ref.add((item.file, item.name), tokenize(item.name + "\n" + item.content, use_jieba=False))
    extra = []
    for n, e in enumerate(store.diary.window("2026-07-20", "2026-07-21")):
        extra.append(((e.date, e.time, n), tokenize(e.time + "\n" + e.content, use_jieba=False)))
    expected = ref.top_k(tokenize("sea spicy", use_jieba=False), 10, extra=extra)
    assert [e.score for e in result.items if e.source == "hit"] == [s for _, s in expected]


def test_parsed_window_from_the_query(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("2026-07-21 hotpot")
    assert result.time_range == ("2026-07-21", "2026-07-21") and result.time_range_source == "parsed"
    assert hits(result)[0] == ("diary", "2026-07-21", "19:30", "Hotpot dinner, very spicy.")
    # the time expression is the gate; an explicit date's words still count (a dated wiki fact, issue 35)
    assert result.query_terms == ["hotpot", "2026", "07", "21"]


def test_parsed_relative_words_follow_tz(tmp_path):
    s = MemoryStore(tmp_path)
    yesterday = (datetime.now(ZoneInfo(TZ)) - timedelta(days=1)).date().isoformat()
    s.diary.append("昨天晚上吃了火锅。", date=yesterday, time="20:00")
    s.add("food", "favourite", "最喜欢吃火锅。")
    result = MemoryIndex(s, use_jieba=False).retrieve("昨天吃了什么", tz=TZ)
    if result.time_range != (yesterday, yesterday):  # the day turned over mid-test
        pytest.skip("date changed during the test")
    assert result.time_range_source == "parsed"
    assert ("diary", yesterday, "20:00") in [(e.kind, e.item.file, e.item.name) for e in result.items]
    assert "昨天" not in result.query_terms


def test_english_words_open_a_window(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("what happened yesterday", tz=TZ)
    assert result.time_range_source == "parsed"
    assert result.query_terms == []  # the frame of a time question is not its topic


def test_a_time_question_keeps_only_its_topic_terms(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("what did we eat on 2026-07-21?")
    assert result.query_terms == ["eat", "2026", "07", "21"]  # the topic, and the explicit date's words


def test_empty_query_with_a_window_returns_it_newest_first(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("", time_range=("2026-07-20", "2026-07-21"))
    assert [(e.item.file, e.item.name, e.item.content[:6]) for e in result.items if e.source == "hit"] == [
        ("2026-07-21", "21:00", "Second"),  # same minute: the later append is newer
        ("2026-07-21", "21:00", "Talked"),
        ("2026-07-21", "19:30", "Hotpot"),
        ("2026-07-20", "10:00", "Went t"),
    ]
    assert all(e.score is None and e.bm25_score is None and e.kind == "diary"
               for e in result.items if e.source == "hit")
    # the diary entry's link is expanded like any hit's
    assert result.items[-1].source == "link" and result.items[-1].via == "10:00"
    assert result.items[-1].via_file == "2026-07-20"


def test_a_query_that_is_only_a_time_expression(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("2026-07-25")
    assert [(e.item.file, e.item.name) for e in result.items] == [("2026-07-25", "09:00")]
    assert result.time_range_source == "parsed" and result.query_terms == ["2026", "07", "25"]


def test_punctuation_with_a_window_is_the_window(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("?!", time_range=("2026-07-25", "2026-07-25"), limit=5)
    assert [e.item.name for e in result.items] == ["09:00"]


def test_limit_and_budget_apply_to_window_entries(store):
    index = MemoryIndex(store, use_jieba=False)
    result = index.retrieve("", time_range=("2026-07-20", "2026-07-21"), limit=2, expand_links=False)
    assert [e.item.name for e in result.items] == ["21:00", "21:00"]
    result = index.retrieve("", time_range=("2026-07-20", "2026-07-21"), budget_tokens=1, explain=True)
    assert len(result.items) == 1 and len(result.dropped) == 4


def test_an_empty_window_is_widened_once(store):
    index = MemoryIndex(store, use_jieba=False)
    result = index.retrieve("", time_range=("2026-07-22", "2026-07-22"))
    assert result.time_range == ("2026-07-21", "2026-07-23") and result.time_range_widened
    assert {e.item.file for e in result.items if e.source == "hit"} == {"2026-07-21"}
    # two days away from anything: widened once, still empty, never more
    result = index.retrieve("", time_range=("2026-07-23", "2026-07-23"))
    assert result.time_range == ("2026-07-22", "2026-07-24") and result.time_range_widened
    assert result.items == []
    # a window with entries is not widened
    result = index.retrieve("sea", time_range=("2026-07-21", "2026-07-21"))
    assert not result.time_range_widened


def test_window_with_a_query_still_ranks_wiki_when_diary_misses(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("robotics", time_range=("2026-07-21", "2026-07-21"))
    assert hits(result) == [("wiki", "work", "current-job", "Works at a robotics company.")]
    # "robotics" is a real word: the window's entries that do not match it stay out (issue 35); a question
    # with question words only is answered with its window, newest first
    asked = MemoryIndex(store, use_jieba=False).retrieve("what happened?", time_range=("2026-07-21", "2026-07-21"))
    assert [(h[1], h[2], h[3][:6]) for h in hits(asked)] == [
        ("2026-07-21", "21:00", "Second"), ("2026-07-21", "21:00", "Talked"), ("2026-07-21", "19:30", "Hotpot")]


def test_reversed_explicit_bounds_are_swapped(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("sea", time_range=["2026-07-21", "2026-07-20"])
    assert result.time_range == ("2026-07-20", "2026-07-21")


def test_explicit_window_wins_over_words_in_the_query(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("2026-07-25 sea", time_range=("2026-07-20", "2026-07-20"))
    assert result.time_range == ("2026-07-20", "2026-07-20") and result.time_range_source == "explicit"
    assert [e.item.file for e in result.items if e.kind == "diary"] == ["2026-07-20"]


def test_a_new_diary_entry_is_seen_at_once(store):
    index = MemoryIndex(store, use_jieba=False)
    window = ("2026-07-25", "2026-07-25")
    assert [e.item.name for e in index.retrieve("", time_range=window).items] == ["09:00"]
    store.diary.append("Evening walk.", date="2026-07-25", time="18:00")
    assert [e.item.name for e in index.retrieve("", time_range=window).items] == ["18:00", "09:00"]


@pytest.mark.parametrize("window", [("0001-01-01", "9999-12-31"), ("0001-01-01", "0001-01-01"),
                                    ("9999-12-31", "9999-12-31")])
def test_windows_at_the_edges_of_the_calendar_widen_without_overflow(store, window):
    result = MemoryIndex(store, use_jieba=False).retrieve("", time_range=window)
    assert result.time_range[0] >= "0001-01-01" and result.time_range[1] <= "9999-12-31"


def test_an_entry_of_the_window_ranks_before_a_wiki_item_that_matches_no_word():
    """What matches no word of the question comes after what does; among it, the window's entries come before the
    wiki's items, whatever the dense ranking said (it failed on the weekdays whose window held an unmatched entry)."""
    from wikimem.models import RecallItem
    from wikimem.recall.fusion import Candidate
    from wikimem.recall.window import window_order

    def cand(key, kind, bm25, content):
        return Candidate(key, RecallItem(file=key[0], name=key[1], content=content), kind, bm25, None, 0.0)

    beach = cand(("2026-12-02", "10:00", 0), "diary", 2.0, "Went to the beach.")
    swim = cand(("2026-12-02", "11:00", 0), "diary", 0.0, "Went swimming.")
    sea = cand(("preferences", "likes-the-sea"), "wiki", 1.5, "Loves the sea.")
    work = cand(("notes", "work"), "wiki", 0.0, "I design robots.")
    ranked = [sea, beach, work, swim]  # (fused: the stray wiki item's cosine put it above the swim)
    order = window_order(ranked, [beach, swim], 8, fallback=False)
    assert [c.key for c in order] == [sea.key, beach.key, swim.key, work.key]
    assert [c.key for c in window_order(ranked, [beach, swim], 3, fallback=False)] == [sea.key, beach.key, swim.key]
