"""MemoryIndex.retrieve: ranking, link expansion, budget, explain, validation, to_dict."""

from __future__ import annotations

import json

import pytest

from wikimem import MemoryIndex, MemoryStore, RetrievalResult, RetrievedItem, est_tokens
from wikimem.recall.lexical.bm25 import BM25Index
from wikimem.recall.tokenizer import tokenize


@pytest.fixture
def store(store) -> MemoryStore:
    s = store
    s.add("preferences", "likes-the-sea", "Loves the sea and wants a beach trip. [[daily_life:beach-trip-plan]]")
    s.add("daily_life", "beach-trip-plan",
          "Plans a trip to the coast in August. [[daily_life:packing]] [[gone:missing]]")
    s.add("daily_life", "packing", "Packs a towel and sunscreen.")
    s.add("preferences", "coffee", "Only drinks pour-over coffee, never with sugar.")
    s.add("work", "current-job", "Works at a robotics company; the sea view office.")
    return s


def names(result: RetrievalResult) -> list[tuple[str, str, str]]:
    return [(e.source, e.item.file, e.item.name) for e in result.items]


def bm25_reference(store: MemoryStore, query: str) -> list[tuple[tuple[str, str], float]]:
    """BM25 computed by a fresh BM25Index over the same items, for comparison."""
    ref = BM25Index()
    for item in store.items():
        ref.add((item.file, item.name), tokenize(item.name + "\n" + item.content, use_jieba=False))
    return ref.top_k(tokenize(query, use_jieba=False), None)


def test_hits_are_ranked_by_bm25_over_name_and_content(store):
    index = MemoryIndex(store, use_jieba=False)
    result = index.retrieve("sea", expand_links=False)
    expected = bm25_reference(store, "sea")
    assert [(e.item.file, e.item.name) for e in result.items] == [k for k, _ in expected]
    assert [e.score for e in result.items] == [s for _, s in expected]
    assert all(e.source == "hit" and e.bm25_score == e.score and e.cos_score is None for e in result.items)
    assert result.embedding_used is False
    # the name counts: "coffee" is the name and in the content
    assert names(index.retrieve("coffee"))[0] == ("hit", "preferences", "coffee")


def test_link_targets_follow_their_hit_once_without_recursion(store):
    index = MemoryIndex(store, use_jieba=False)
    result = index.retrieve("loves beach", limit=1)
    assert names(result) == [
        ("hit", "preferences", "likes-the-sea"),
        ("link", "daily_life", "beach-trip-plan"),  # right after its hit
    ]  # packing is a link of the link: no recursion
    link = result.items[1]
    assert (link.via, link.via_file, link.score, link.bm25_score) == ("likes-the-sea", "preferences", None, None)
    assert result.unresolved_links == []  # only hits' links are followed


def test_a_target_already_present_is_not_injected_again(store):
    index = MemoryIndex(store, use_jieba=False)
    result = index.retrieve("trip", limit=5)
    keys = [(e.item.file, e.item.name) for e in result.items]
    assert len(keys) == len(set(keys))
    # beach-trip-plan is itself a hit, so the link from likes-the-sea does not repeat it
    assert [e.source for e in result.items if e.item.name == "beach-trip-plan"] == ["hit"]
    assert ("link", "daily_life", "packing") in names(result)


def test_two_hits_linking_one_target_inject_it_once(tmp_path):
    s = MemoryStore(tmp_path)
    s.add("a", "one", "apple [[t:target]]")
    s.add("a", "two", "apple pie [[t:target]] [[t:target]]")
    s.add("t", "target", "the target")
    result = MemoryIndex(s, use_jieba=False).retrieve("apple")
    assert [e.item.name for e in result.items].count("target") == 1


def test_self_link_and_whitespace_in_link_names(tmp_path):
    s = MemoryStore(tmp_path)
    s.add("a", "hello world", "greeting [[a:hello world]] [[ b :  other   item ]]")
    s.add("b", "other item", "the other")
    result = MemoryIndex(s, use_jieba=False).retrieve("greeting")
    assert names(result) == [("hit", "a", "hello world"), ("link", "b", "other item")]


def test_dangling_links_are_reported_as_raw_text_once(store):
    store.add("misc", "two-dangling", "trip notes [[gone:missing]] [[nope:none]]")
    result = MemoryIndex(store, use_jieba=False).retrieve("trip", limit=10)
    assert result.unresolved_links == ["[[gone:missing]]", "[[nope:none]]"]


def test_no_links_option(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("loves beach", limit=1, expand_links=False)
    assert names(result) == [("hit", "preferences", "likes-the-sea")]
    assert result.unresolved_links == []


def test_limit_applies_to_hits_before_expansion(store):
    index = MemoryIndex(store, use_jieba=False)
    full = index.retrieve("sea trip", expand_links=False)
    assert len(full.items) >= 3
    assert names(index.retrieve("sea trip", limit=2, expand_links=False)) == names(full)[:2]
    assert index.retrieve("sea trip", limit=0).items == []


def test_matched_terms_and_token_estimates(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("the SEA, beach!", limit=1)
    hit, link = result.items
    assert hit.matched_terms == ["beach", "sea", "the"]  # sorted query terms present in the item
    assert link.matched_terms == ["beach", "the"]  # its name counts too
    for e in result.items:
        assert e.tokens_est == est_tokens(e.item.name + "\n" + e.item.content)
    assert result.budget_used == sum(e.tokens_est for e in result.items)
    assert result.query_terms == ["the", "sea", "beach"]


def test_budget_is_a_prefix_cut_in_injection_order(store):
    index = MemoryIndex(store, use_jieba=False)
    full = index.retrieve("trip sea", explain=True)
    sizes = [e.tokens_est for e in full.items]
    assert len(sizes) >= 4
    budget = sizes[0] + sizes[1] + sizes[2] - 1  # the third no longer fits
    cut = index.retrieve("trip sea", budget_tokens=budget, explain=True)
    assert names(cut) == names(full)[:2]
    assert [(e.item.file, e.item.name) for e in cut.dropped] == [(e.item.file, e.item.name) for e in full.items[2:]]
    assert cut.budget_used == sizes[0] + sizes[1] <= budget
    assert cut.budget_tokens == budget


def test_prefix_cut_does_not_skip_ahead_to_smaller_entries(tmp_path):
    s = MemoryStore(tmp_path)
    s.add("a", "big", "alpha " + "word " * 50)
    s.add("a", "huge", "alpha alpha " + "word " * 80)
    s.add("a", "tiny", "alpha")
    index = MemoryIndex(s, use_jieba=False)
    order = [e.item.name for e in index.retrieve("alpha").items]
    assert order[-1] != order[0]
    first = index.retrieve("alpha").items[0].tokens_est
    result = index.retrieve("alpha", budget_tokens=first + 1, explain=True)
    assert len(result.items) == 1 and len(result.dropped) == 2  # "tiny" would fit but comes after a cut


def test_the_first_entry_survives_any_budget(store):
    index = MemoryIndex(store, use_jieba=False)
    for budget in (0, 1):
        result = index.retrieve("sea", budget_tokens=budget, explain=True)
        assert len(result.items) == 1
        assert result.budget_used == result.items[0].tokens_est > budget
        assert result.dropped


def test_dropped_is_only_filled_with_explain(store):
    index = MemoryIndex(store, use_jieba=False)
    assert index.retrieve("sea", budget_tokens=0).dropped == []
    assert index.retrieve("sea", budget_tokens=0, explain=True).dropped != []
    assert index.retrieve("sea", explain=True).dropped == []  # no budget, nothing dropped


@pytest.mark.parametrize("query", ["", "   ", "!!! ...", "？？。"])
def test_queries_without_terms_return_nothing(store, query):
    result = MemoryIndex(store, use_jieba=False).retrieve(query)
    assert result.items == [] and result.time_range is None and result.query_terms == []


def test_unknown_words_return_nothing(store):
    assert MemoryIndex(store, use_jieba=False).retrieve("zebra quantum").items == []


def test_empty_store(tmp_path):
    index = MemoryIndex(MemoryStore(tmp_path / "never-written"), use_jieba=False)
    assert index.retrieve("anything").items == []
    assert len(index) == 0


@pytest.mark.parametrize("kwargs", [
    {"limit": -1}, {"limit": "10"}, {"limit": True}, {"limit": 2.5},
    {"budget_tokens": -5}, {"budget_tokens": "100"}, {"budget_tokens": False},
    {"time_range": "2026-07-21"}, {"time_range": ("2026-07-21",)},
    {"time_range": ("2026-07-21", "yesterday")}, {"time_range": ("2026-02-30", "2026-03-01")},
    {"tz": "Mars/Olympus"},
])
def test_bad_arguments_are_clear_errors_and_change_nothing(store, kwargs):
    before = {(i.file, i.name): i.content for i in store.items()}
    with pytest.raises(ValueError):
        MemoryIndex(store, use_jieba=False).retrieve("sea", **kwargs)
    assert {(i.file, i.name): i.content for i in store.items()} == before


@pytest.mark.parametrize("query", [None, 42, b"sea", ["sea"]])
def test_non_string_query_is_an_error(store, query):
    with pytest.raises(ValueError):
        MemoryIndex(store).retrieve(query)


@pytest.mark.parametrize("weight", [-0.1, 1.5, "0.5", True])
def test_bad_fusion_weight_is_an_error(store, weight):
    with pytest.raises(ValueError):
        MemoryIndex(store, fusion_weight=weight)


def test_chinese_retrieval_with_bigrams(tmp_path):
    s = MemoryStore(tmp_path)
    s.add("preferences", "likes-the-sea", "喜欢海边，提到过想去海边玩。")
    s.add("preferences", "手冲咖啡", "只喝手冲咖啡，从不加糖。")
    index = MemoryIndex(s, use_jieba=False)
    assert names(index.retrieve("海边")) == [("hit", "preferences", "likes-the-sea")]
    assert names(index.retrieve("咖啡加糖吗"))[0] == ("hit", "preferences", "手冲咖啡")


def test_to_dict_is_plain_json(store):
    result = MemoryIndex(store, use_jieba=False).retrieve("trip", budget_tokens=10, explain=True,
                                                          time_range=("2026-07-21", "2026-07-20"))
    data = json.loads(json.dumps(result.to_dict()))
    assert set(data) == {"items", "budget_tokens", "budget_used", "embedding_used", "dropped",
                         "unresolved_links", "time_range", "time_range_source", "time_range_widened",
                         "query_terms"}
    assert data["time_range"] == ["2026-07-19", "2026-07-22"]  # swapped, then widened (no diary)
    first = data["items"][0]
    assert set(first) == {"item", "source", "score", "bm25_score", "cos_score", "via", "via_file",
                          "matched_terms", "tokens_est", "kind"}
    assert set(first["item"]) == {"file", "name", "content", "owner", "source_conv", "ts"}
    assert first["item"]["name"] == result.items[0].item.name
    assert len(data["dropped"]) == len(result.dropped) > 0


def test_retrieved_item_to_dict_of_a_link():
    from wikimem import RecallItem

    entry = RetrievedItem(item=RecallItem("a", "b", "c"), source="link", via="x", via_file="f", tokens_est=3)
    d = entry.to_dict()
    assert d["source"] == "link" and d["via"] == "x" and d["score"] is None and d["kind"] == "wiki"
    assert d["item"] == {"file": "a", "name": "b", "content": "c", "owner": None, "source_conv": None, "ts": None}


def test_a_target_linked_from_an_earlier_hit_stays_a_link_when_it_is_also_a_later_hit(tmp_path):
    """The peer library's rule: the first entry in injection order survives."""
    s = MemoryStore(tmp_path)
    s.add("a", "first", "apple apple apple [[b:second]]")
    s.add("b", "second", "apple pie [[c:third]]")
    s.add("c", "third", "the third one")
    s.add("d", "other", "an apple among many more words in a long sentence about nothing much at all")
    result = MemoryIndex(s, use_jieba=False).retrieve("apple", limit=3)
    hits = [e.item.name for e in MemoryIndex(s, use_jieba=False).retrieve("apple", limit=3, expand_links=False).items]
    assert hits == ["first", "second", "other"]  # "second" is a later hit
    assert names(result) == [
        ("hit", "a", "first"),
        ("link", "b", "second"),  # injected right after "first"; not repeated as a hit
        ("link", "c", "third"),   # the later hit's own links are still followed
        ("hit", "d", "other"),
    ]
    second = result.items[1]
    assert (second.via, second.via_file, second.score) == ("first", "a", None)


def test_a_strict_budget_drops_even_the_first_entry(store):
    index = MemoryIndex(store, use_jieba=False)
    loose = index.retrieve("sea", budget_tokens=1)
    assert len(loose.items) == 1 and loose.budget_used > 1  # the seed's rule: the first entry survives
    strict = index.retrieve("sea", budget_tokens=1, budget_strict=True, explain=True)
    assert strict.items == [] and strict.budget_used == 0 and strict.dropped
