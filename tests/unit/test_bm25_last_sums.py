"""BM25Index.scores() reads the sums of the ranking just made for the same query and statistics (issue 39: smoothing
asks for its neighbours' raw scores right after ranking): the same floats as an index that ranked nothing, pruned
rankings included, and never a stale sum once the index (or a peer counted in its statistics) changed."""

from __future__ import annotations

import random

import pytest

from wikimem.recall.lexical import BM25Index

WORDS = ["tea", "harbor", "kite", "snow", "river", "violin", "museum", "noodle", "orchard", "lamp"]


def _docs(n: int, seed: int) -> list[tuple[tuple[str, str], list[str]]]:
    rng = random.Random(seed)
    return [((f"f{i % 7}", f"t{i:04d}"), [rng.choice(WORDS[: 3 + i % 8]) for _ in range(1 + rng.randrange(12))])
            for i in range(n)]


def _index(docs) -> BM25Index:
    index = BM25Index(use_numpy=False)
    index.extend(docs)
    return index


def _hex(scores: dict) -> dict:
    return {k: v.hex() for k, v in scores.items()}


@pytest.mark.parametrize("k", [1, 5, 40, None])
@pytest.mark.parametrize("query", [["tea"], ["tea", "kite", "lamp"], ["snow", "snow", "river", "museum", "x"]])
def test_scores_after_a_ranking_equal_an_index_that_ranked_nothing(k, query):
    docs = _docs(600, 3)
    ranked, fresh = _index(docs), _index(docs)
    peer = _index(_docs(50, 4))
    top = ranked.top_k(query, k, peers=[peer])
    keys = [key for key, _ in docs] + [("nowhere", "x")]
    assert _hex(ranked.scores(keys, query, peers=[peer])) == _hex(fresh.scores(keys, query, peers=[peer]))
    assert all(ranked.score(key, query, peers=[peer]) == s for key, s in top)
    assert _hex(ranked.scores(keys, query)) == _hex(fresh.scores(keys, query))  # (other statistics: not reused)


def test_no_stale_sum_after_a_change_of_the_index_or_of_a_peer():
    docs = _docs(300, 5)
    index, peer = _index(docs), _index(_docs(40, 6))
    query = ["tea", "kite"]
    index.top_k(query, 10, peers=[peer])
    index.add(("new", "doc"), ["tea", "tea", "kite"])  # a write: the index's version moves on
    index.remove(docs[0][0])
    expected = _index([*docs[1:], (("new", "doc"), ["tea", "tea", "kite"])])
    keys = [key for key, _ in docs] + [("new", "doc")]
    assert _hex(index.scores(keys, query, peers=[peer])) == _hex(expected.scores(keys, query, peers=[peer]))
    assert index.score(("new", "doc"), query, peers=[peer]) > 0
    index.top_k(query, 10, peers=[peer])
    peer.add(("peer", "more"), ["tea"] * 5)  # a peer's change moves the statistics: its sums are not read
    assert _hex(index.scores(keys, query, peers=[peer])) == _hex(expected.scores(keys, query, peers=[peer]))


@pytest.mark.parametrize("k", [10, 300, 2000, None])
def test_a_loose_ranking_holds_the_same_pairs_sorted_when_cut(k):
    index = _index(_docs(600, 7))
    query = ["tea", "kite"]
    ordered, loose = index.top_k(query, k), index.top_k(query, k, loose=True)
    assert sorted(loose) == sorted(ordered)
    if k is not None and len(ordered) == k:
        assert loose == ordered  # (cut to k: in order, ties by key)
