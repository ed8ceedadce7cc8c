"""Query-time function words: the filter, its fallback, and MemoryIndex(query_stopwords=True)."""

from __future__ import annotations

import pytest

from wikimem import MemoryIndex, MemoryStore, tokenize
from wikimem.recall.stopwords import content_terms, is_function_term


@pytest.mark.parametrize("query, expected", [
    ("What did Caroline say about the trip?", ["caroline", "say", "trip"]),
    ("When is her sister's birthday", ["sister", "birthday"]),
    ("what did you do?", ["what", "did", "you", "do"]),  # only function words: all kept
    ("", []),
])
def test_english_function_words_leave_the_query(query, expected):
    assert content_terms(tokenize(query, use_jieba=False)) == expected


@pytest.mark.parametrize("query, gone, kept", [
    ("他的狗叫什么名字", {"他的", "叫什", "什么"}, {"的狗", "狗叫", "名字"}),
    ("我们上次去海边是什么时候", {"我们", "什么", "时候"}, {"海边", "上次"}),
    ("咖啡", set(), {"咖啡"}),
])
def test_chinese_function_bigrams_leave_the_query(query, gone, kept):
    terms = content_terms(tokenize(query, use_jieba=False))
    assert not gone & set(terms)
    assert kept <= set(terms)


def test_a_chinese_query_of_function_words_only_is_kept():
    terms = tokenize("是不是这样", use_jieba=False)
    assert content_terms(terms) == terms


@pytest.mark.parametrize("term, function", [
    ("the", True), ("didn", True), ("sea", False), ("trip", False),
    ("的", True), ("我们", True), ("什么", True), ("海边", False), ("一起", True), ("起床", False),
])
def test_is_function_term(term, function):
    assert is_function_term(term) is function


@pytest.fixture
def chatter(tmp_path) -> MemoryStore:
    s = MemoryStore(tmp_path / "m")
    s.add("s1", "t1", "Caroline: What did you get from the market?")
    s.add("s1", "t2", "Melanie: Sounds lovely, I am so happy for you.")
    s.add("s1", "t3", "Caroline: We adopted a puppy. The shelter had so many dogs waiting for a home, "
                      "we could not choose at first, but this one came straight to us.")
    for n in range(4, 9):
        s.add("s1", f"t{n}", f"Melanie: Lovely weather again, number {n}.")
    return s


def test_function_words_no_longer_decide_the_ranking(chatter):
    question = "What did Caroline get from the shelter?"
    plain = MemoryIndex(chatter, use_jieba=False).retrieve(question, expand_links=False)
    filtered = MemoryIndex(chatter, use_jieba=False, query_stopwords=True).retrieve(question, expand_links=False)
    assert plain.items[0].item.name == "t1"  # "what", "did", "get", "from", "the" outweigh "shelter"
    assert filtered.items[0].item.name == "t3"
    assert filtered.query_terms == ["caroline", "shelter"]
    assert "what" not in filtered.items[0].matched_terms


def test_the_index_keeps_every_term(chatter):
    index = MemoryIndex(chatter, use_jieba=False, query_stopwords=True)
    index.retrieve("shelter")
    assert "the" in index.wiki.bm25.doc_terms(("s1", "t3"))  # only queries are filtered
    result = index.retrieve("what did you do")  # function words only: searched as they are
    assert result.query_terms == ["what", "did", "you", "do"] and result.items
