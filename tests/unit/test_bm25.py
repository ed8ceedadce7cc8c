"""BM25Index: the Okapi formula, in-place updates, pruning, and the numpy path."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wikimem.recall.lexical.bm25 as bm25_module
import wikimem.recall.lexical.postings as postings_module
from wikimem.recall.lexical.bm25 import K1, B, BM25Index, idf
from wikimem.recall.lexical.postings import Postings

CORPUS = {
    "d1": "the sea is calm and the sky is blue".split(),
    "d2": "she likes the sea".split(),
    "d3": "coffee without sugar every morning".split(),
    "d4": "a trip to the sea in august sea sea".split(),
    "d5": "blue sky".split(),
}


def direct_scores(corpus: dict[str, list[str]], query: list[str]) -> dict[str, float]:
    """The formula written out plainly, independent of the index's code."""
    n = len(corpus)
    avgdl = sum(len(d) for d in corpus.values()) / n
    out = {}
    for key, doc in corpus.items():
        total, matched = 0.0, False
        for term in query:  # each query occurrence counts
            tf = doc.count(term)
            if not tf:
                continue
            df = sum(1 for d in corpus.values() if term in d)
            w = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += w * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(doc) / avgdl))
            matched = True
        if matched:
            out[key] = total
    return out


def build(corpus, **kw) -> BM25Index:
    index = BM25Index(**kw)
    for key, terms in corpus.items():
        index.add(key, terms)
    return index


@pytest.mark.parametrize("use_numpy", [False, True])
@pytest.mark.parametrize("query", [["sea"], ["blue", "sky"], ["sea", "sea", "coffee"], ["august", "trip", "the"]])
def test_scores_match_a_direct_computation(query, use_numpy, monkeypatch):
    monkeypatch.setattr(bm25_module, "NUMPY_MIN_POSTINGS", 0)
    index = build(CORPUS, use_numpy=use_numpy)
    expected = direct_scores(CORPUS, query)
    got = dict(index.top_k(query, None))
    assert got.keys() == expected.keys()
    for key in expected:
        assert got[key] == pytest.approx(expected[key], rel=1e-12)
        assert index.score(key, query) == pytest.approx(expected[key], rel=1e-12)


def test_k1_b_and_the_idf_variant():
    assert (K1, B) == (1.5, 0.75)
    assert idf(10, 1) == pytest.approx(math.log(1 + 9.5 / 1.5))
    # a term in every document still weighs > 0 (Lucene variant), and rarer weighs more
    assert idf(10, 10) > 0
    assert idf(10, 1) > idf(10, 5) > idf(10, 10)


def test_a_term_in_every_document_still_ranks_matches_first():
    index = build({"a": ["x", "y"], "b": ["x"], "c": ["x", "z"]})
    assert [k for k, _ in index.top_k(["x", "y"], 3)][0] == "a"
    assert all(s > 0 for _, s in index.top_k(["x"], 3))


def test_agrees_with_bm25s_lucene_up_to_its_constant_factor():
    bm25s = pytest.importorskip("bm25s")
    keys = sorted(CORPUS)
    ref = bm25s.BM25(k1=K1, b=B, method="lucene")
    ref.index([CORPUS[k] for k in keys], show_progress=False)
    index = build(CORPUS)
    for query in (["sea"], ["blue", "sky"], ["coffee", "sea"]):
        theirs = ref.get_scores(query)
        ours = dict(index.top_k(query, None))
        for i, key in enumerate(keys):
            # bm25s (like Lucene) drops the constant (k1 + 1) from the numerator
            assert ours.get(key, 0.0) == pytest.approx(float(theirs[i]) * (K1 + 1), rel=1e-5)


def test_ties_are_broken_by_key_and_k_cuts():
    index = build({"b": ["x"], "a": ["x"], "c": ["x"], "d": ["y"]})
    assert [k for k, _ in index.top_k(["x"], 10)] == ["a", "b", "c"]
    assert [k for k, _ in index.top_k(["x"], 2)] == ["a", "b"]
    assert index.top_k(["x"], 0) == []


def test_unknown_or_empty_query_matches_nothing():
    index = build(CORPUS)
    assert index.top_k([], 5) == []
    assert index.top_k(["nothing-like-this"], 5) == []
    assert index.score("d1", ["nothing"]) == 0.0
    assert index.score("missing", ["sea"]) == 0.0


def test_add_replaces_and_remove_forgets():
    index = build(CORPUS)
    index.add("d3", ["sea", "sea", "sea"])
    assert len(index) == 5 and "d3" in index
    assert "coffee" not in [t for t in index.doc_terms("d3")]
    assert index.top_k(["coffee"], 5) == []
    assert index.remove("d4") is True
    assert index.remove("d4") is False
    assert "d4" not in index and index.df("august") == 0
    fresh = {k: v for k, v in CORPUS.items() if k != "d4"} | {"d3": ["sea", "sea", "sea"]}
    assert index.top_k(["sea", "blue"], None) == build(fresh).top_k(["sea", "blue"], None)


def test_none_key_is_refused():
    with pytest.raises(ValueError):
        BM25Index().add(None, ["x"])


def test_extra_documents_score_as_if_indexed():
    index = build(CORPUS)
    extra = [("e1", ["sea", "trip"]), ("e2", ["coffee"])]
    combined = build(dict(CORPUS) | dict(extra))
    for query in (["sea"], ["coffee", "trip"], ["sky"]):
        assert index.top_k(query, None, extra=extra) == combined.top_k(query, None)
        assert index.top_k(query, 2, extra=extra) == combined.top_k(query, 2)
        assert index.score("d1", query, extra=extra) == combined.score("d1", query)
    # the extra documents are gone afterwards
    assert index.top_k(["trip"], None) == build(CORPUS).top_k(["trip"], None)


def _zipf_corpus(rng: random.Random, n_docs: int, vocab: int = 300) -> dict[tuple, list[str]]:
    words = [f"w{i}" for i in range(vocab)]
    weights = [1 / (i + 1) for i in range(vocab)]
    return {("f", f"{i:05d}"): rng.choices(words, weights, k=rng.randint(1, 25)) for i in range(n_docs)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_numpy_and_pure_python_rank_identically(seed, monkeypatch):
    pytest.importorskip("numpy")
    monkeypatch.setattr(bm25_module, "NUMPY_MIN_POSTINGS", 0)
    rng = random.Random(seed)
    corpus = _zipf_corpus(rng, 1500)
    py, np_ = build(corpus, use_numpy=False), build(corpus, use_numpy=True)
    words = sorted({w for d in corpus.values() for w in d})
    queries = [rng.sample(words, rng.randint(1, 6)) for _ in range(60)]
    queries += [["w0", "w1", "w2"], ["w0"], ["w1", "w250"]]  # common terms: dense rows and pruning
    for _ in range(3):
        for q in queries:
            for k in (1, 10, None):
                assert py.top_k(q, k) == np_.top_k(q, k), (q, k)  # scores equal bit for bit
        # change the collection in place and compare again (stale caches must not leak)
        for key in rng.sample(sorted(corpus), 200):
            if rng.random() < 0.5:
                py.remove(key)
                np_.remove(key)
            else:
                terms = rng.choices(words, k=rng.randint(1, 20))
                py.add(key, terms)
                np_.add(key, terms)


@pytest.mark.parametrize("use_numpy", [False, True])
def test_pruned_top_k_equals_the_exhaustive_ranking(use_numpy, monkeypatch):
    monkeypatch.setattr(bm25_module, "NUMPY_MIN_POSTINGS", 0)
    rng = random.Random(7)
    index = build(_zipf_corpus(rng, 3000, vocab=80), use_numpy=use_numpy)
    for _ in range(80):
        q = [f"w{rng.randrange(80)}" for _ in range(rng.randint(2, 7))]
        everything = index.top_k(q, None)
        for k in (1, 3, 10, 50):
            assert index.top_k(q, k) == everything[:k]


def test_tombstones_are_swept_and_slots_renumbered(monkeypatch):
    monkeypatch.setattr(bm25_module, "RENUMBER_SLACK", 10)
    calls = Counter()
    renumber, compact = BM25Index._renumber, Postings.compact
    monkeypatch.setattr(BM25Index, "_renumber", lambda self: (calls.update(["renumber"]), renumber(self))[1])
    monkeypatch.setattr(Postings, "compact", lambda p, remap=None: (
        calls.update(["sweep" if remap is None else "renumbered"]), compact(p, remap))[1])
    rng = random.Random(5)
    corpus = _zipf_corpus(rng, 400, vocab=40)
    index = build(corpus)
    live = dict(corpus)
    for round_ in range(6):
        for key in rng.sample(sorted(live), 150):
            if rng.random() < 0.6:
                index.remove(key)
                del live[key]
            else:
                live[key] = rng.choices([f"w{i}" for i in range(40)], k=rng.randint(1, 12))
                index.add(key, live[key])
        # slot space stays bounded, and ranking equals a fresh index
        assert len(index._keys) <= 3 * len(index) + 10 + 1
        fresh = build(live)
        for q in (["w0"], ["w1", "w3"], ["w7", "w0", "w20"]):
            assert index.top_k(q, None) == fresh.top_k(q, None)
        if len(live) < 160:
            extra = _zipf_corpus(rng, 200, vocab=40)
            for key, terms in extra.items():
                key = ("g", f"{round_}-{key[1]}")
                live[key] = terms
                index.add(key, terms)
    assert calls["renumber"] > 0 and calls["sweep"] > 0  # both paths really ran


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 12),
                          st.lists(st.sampled_from(list("abcdefg")), max_size=8)), max_size=40),
       st.lists(st.sampled_from(list("abcdefgh")), min_size=1, max_size=4))
def test_incremental_equals_fresh_under_random_updates(ops, query):
    index, live = BM25Index(use_numpy=False), {}
    for op, n, terms in ops:
        key = f"k{n:02d}"
        if op == "add":
            index.add(key, terms)
            live[key] = terms
        else:
            assert index.remove(key) == (key in live)
            live.pop(key, None)
    fresh = build(live, use_numpy=False)
    assert index.top_k(query, None) == fresh.top_k(query, None)
    assert index.top_k(query, 3) == fresh.top_k(query, 3)
    assert len(index) == len(live)
    for key, terms in live.items():
        assert sorted(index.doc_terms(key)) == sorted(Counter(terms))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10), st.lists(st.sampled_from(list("abcdef")), max_size=6)), max_size=25),
       st.integers(0, 25))
def test_extend_equals_adding_one_by_one(docs, split):
    one_by_one, bulk = BM25Index(use_numpy=False), BM25Index(use_numpy=False)
    for n, terms in docs:
        one_by_one.add(f"k{n}", terms)
    for n, terms in docs[:split]:  # extend also works on an index that holds documents
        bulk.add(f"k{n}", terms)
    bulk.extend((f"k{n}", terms) for n, terms in docs[split:])  # repeated keys replace
    for q in (["a"], ["b", "c"], ["a", "d", "f", "e"]):
        assert bulk.top_k(q, None) == one_by_one.top_k(q, None)
    assert len(bulk) == len(one_by_one)


@pytest.mark.parametrize("use_numpy", [False, True])
def test_impact_caches_stay_under_their_bound_and_rank_the_same(use_numpy, monkeypatch):
    monkeypatch.setattr(postings_module, "IMPACT_CACHE_MIN_BYTES", 4000)
    monkeypatch.setattr(postings_module, "IMPACT_CACHE_BYTES_PER_DOC", 1)
    if use_numpy:
        monkeypatch.setattr(bm25_module, "NUMPY_MIN_POSTINGS", 1)
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(300)]
    corpus = {f"d{i}": rng.choices(vocab, k=12) for i in range(400)}
    index = build(corpus, use_numpy=use_numpy)
    queries = [rng.sample(vocab, 3) for _ in range(200)]
    for q in queries:  # every term gets cached once; the bound evicts the least recent
        index.top_k(q, 10)
        assert 0 < index.cached_impact_bytes <= 4000
    for q in queries[:40] + queries[-10:]:  # evicted and still cached terms alike
        assert index.top_k(q, 10) == build(corpus, use_numpy=use_numpy).top_k(q, 10)


# -- peers: one collection kept in two indexes --------------------------------------


@pytest.mark.parametrize("use_numpy", [False, True])
@pytest.mark.parametrize("query", [["sea"], ["sea", "blue"], ["coffee", "sky", "sea"], ["nothing"], ["sea", "sea"]])
def test_peers_score_as_one_collection(query, use_numpy):
    first, second = {k: CORPUS[k] for k in ("d1", "d3", "d5")}, {k: CORPUS[k] for k in ("d2", "d4")}
    a, b = BM25Index(use_numpy=use_numpy), BM25Index(use_numpy=use_numpy)
    for key, doc in first.items():
        a.add(key, doc)
    for key, doc in second.items():
        b.add(key, doc)
    expected = direct_scores(CORPUS, query)
    got = dict(a.top_k(query, None, peers=[b])) | dict(b.top_k(query, None, peers=[a]))
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-12)
    assert set(dict(a.top_k(query, None, peers=[b]))) <= set(first)  # a peer's documents are not returned


def test_peer_statistics_follow_the_peers_changes():
    a, b = BM25Index(), BM25Index()
    a.add("x", ["sea", "sky"])
    b.add("y", ["sea"])
    before = a.top_k(["sea"], None, peers=[b])
    b.add("z", ["sea", "sea"])  # df(sea) and avgdl change: cached impacts must not be reused
    after = a.top_k(["sea"], None, peers=[b])
    corpus = {"x": ["sea", "sky"], "y": ["sea"], "z": ["sea", "sea"]}
    assert after[0][1] == pytest.approx(direct_scores(corpus, ["sea"])["x"], rel=1e-12)
    assert after[0][1] != before[0][1]


def test_scores_of_many_keys_equal_one_by_one():
    index = BM25Index()
    for key, doc in CORPUS.items():
        index.add(key, doc)
    query = ["sea", "blue", "sea"]
    many = index.scores(["d1", "d2", "d3", "nope"], query)
    assert "nope" not in many and many["d3"] == 0.0
    assert many == {k: index.score(k, query) for k in ("d1", "d2", "d3")}
    assert many["d1"] == pytest.approx(direct_scores(CORPUS, query)["d1"], rel=1e-12)


def test_the_index_has_no_clear():
    # clear() re-ran __init__ on a live index (dead code, and unsafe with the caches): removed
    assert not hasattr(BM25Index, "clear")
