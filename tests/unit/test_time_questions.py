"""Time questions through the library: answered from their window, with and without an embedder (issue 23).

Each question is asked right after the writes: with an embedder in the
background nothing is embedded yet, and the answer must not depend on it.
"""

from __future__ import annotations

import pytest
from fakes import FakeOpenAI
from timequestions import TZ, WIKI, check_answers, diary_entries, questions, today

from wikimem import MemoryIndex, MemoryStore
from wikimem.vectors import HttpEmbedder, LocalEmbedder
from wikimem.vectors.worker import EmbeddingWorker


def write(root) -> tuple[MemoryStore, list]:
    store = MemoryStore(root)
    for file, name, content in WIKI:
        store.add(file, name, content)
    entries = diary_entries(today())
    for day, hhmm, content in entries:
        store.diary.append(content, date=day, time=hhmm)
    return store, entries


@pytest.fixture(scope="module")
def fake():
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def worker():
    w = EmbeddingWorker()
    yield w
    w.stop()


def make(kind: str, store: MemoryStore, fake, worker) -> MemoryIndex:
    if kind == "bm25":
        return MemoryIndex(store, use_jieba=False)
    if kind == "bm25 host":  # the host's query options without an embedder
        return MemoryIndex(store, use_jieba=False, query_stopwords="en", bm25_b=0.4)
    if kind == "http":
        return MemoryIndex(store, use_jieba=False, embedder=HttpEmbedder(fake.url, "fake-embed"))
    if kind == "http background":
        return MemoryIndex(store, use_jieba=False, embedder=HttpEmbedder(fake.url, "fake-embed"),
                           embed_in_background=True, worker=worker)
    return MemoryIndex(store, use_jieba=False, embedder=LocalEmbedder(), embed_in_background=True,
                       worker=worker, neighbour_context=True, query_stopwords="en")


@pytest.mark.parametrize("kind", ["bm25", "bm25 host", "http", "http background", "local background"])
def test_time_questions_answer_from_their_window(tmp_path, fake, worker, kind):
    store, entries = write(tmp_path / "mem")
    index = make(kind, store, fake, worker)
    day = today()
    answers = {q: index.retrieve(q, tz=TZ).to_dict() for q, _ in questions(day)}
    check_answers(answers, entries, day)


def test_matching_entries_rank_first(tmp_path):
    store, _ = write(tmp_path / "mem")
    result = MemoryIndex(store, use_jieba=False).retrieve("前天晚上吃的什么", tz=TZ)
    first = result.items[0]
    assert first.kind == "diary" and "火锅" in first.item.content and first.bm25_score > 0


def test_a_topic_shared_with_the_wiki_keeps_both(tmp_path):
    store, _ = write(tmp_path / "mem")
    result = MemoryIndex(store, use_jieba=False).retrieve("上周三去海边了吗", tz=TZ)
    got = [(e.kind, e.item.name) for e in result.items if e.source == "hit"]
    assert ("wiki", "likes-the-sea") in got and any(k == "diary" for k, _ in got)


def test_the_window_keeps_half_the_places_against_many_matching_wiki_items(tmp_path):
    store = MemoryStore(tmp_path / "mem")
    for n in range(12):
        store.add("movies", f"m{n}", f"Dinner and a movie, number {n}.")
    store.diary.append("Went to the beach.", date="2026-07-21", time="10:00")
    store.diary.append("Bought shells.", date="2026-07-21", time="11:00")
    index = MemoryIndex(store, use_jieba=False)
    result = index.retrieve("dinner", time_range=("2026-07-21", "2026-07-21"), limit=4)
    # its i-th entry at the latest at place 2i (newest first: a question word, so the whole window)
    assert [(e.kind, e.item.name) for e in result.items] == [
        ("wiki", "m0"), ("diary", "11:00"), ("wiki", "m1"), ("diary", "10:00")]
    # and the first k are the same whatever the limit
    answers = [[(e.kind, e.item.name) for e in index.retrieve("dinner", time_range=("2026-07-21", "2026-07-21"),
                                                               limit=n).items] for n in range(1, 9)]
    assert all(longer[:len(shorter)] == shorter for shorter, longer in zip(answers, answers[1:]))


def test_a_real_word_gets_only_the_entries_that_match_it(tmp_path):
    """Upstream's contract: BM25 alone never returns a diary entry the query does not match; the window comes
    back whole only when the words left are question words (issue 35)."""
    store = MemoryStore(tmp_path / "mem")
    store.add("movies", "m0", "Watched a movie about the sea.")
    store.diary.append("Went to the beach.", date="2026-07-21", time="10:00")
    store.diary.append("Bought a movie ticket.", date="2026-07-21", time="11:00")
    index = MemoryIndex(store, use_jieba=False)
    window = ("2026-07-21", "2026-07-21")
    assert [e.item.name for e in index.retrieve("movie", time_range=window).items] == ["11:00", "m0"]
    assert index.retrieve("quantum", time_range=window).items == []
    assert [e.item.name for e in index.retrieve("what did I do?", time_range=window).items] == ["11:00", "10:00"]
    assert [e.item.name for e in index.retrieve("what did I have for dinner", time_range=window).items] == [
        "11:00", "10:00"]  # a generic ask (dinner, eat, 吃, 聊): the window
    assert [e.item.name for e in index.retrieve("2026-07-21 quantum").items] == []  # parsed: the same rule


def test_without_a_window_nothing_changes(tmp_path):
    store, _ = write(tmp_path / "mem")
    result = MemoryIndex(store, use_jieba=False).retrieve("火锅")
    assert {e.kind for e in result.items} == {"wiki"}
