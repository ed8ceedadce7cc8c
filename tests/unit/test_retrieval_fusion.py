"""Fusion of BM25 and cosine scores (SPEC §3), and degrading to BM25 when embeddings fail."""

from __future__ import annotations

import pytest
from fakes import FakeOpenAI

from wikimem import MemoryIndex, MemoryStore, RecallItem
from wikimem.recall.fusion import Candidate as _Candidate
from wikimem.recall.fusion import fuse as _fuse


def cand(name: str, bm25: float, cos: float) -> _Candidate:
    return _Candidate(("f", name), RecallItem("f", name, name), "wiki", bm25, cos)


def test_fuse_min_max_normalises_both_sets_over_the_union():
    cands = [cand("a", 10.0, 0.2), cand("b", 4.0, 0.9), cand("c", 0.0, 0.5)]
    fused = _fuse(cands, 0.5)
    # bm25 → a 1.0, b 0.4, c 0.0 ; cos → a 0.0, b 1.0, c 3/7
    expected = {"a": 0.5, "b": 0.5 * 0.4 + 0.5, "c": 0.5 * (0.3 / 0.7)}
    assert [c.key[1] for c in fused] == ["b", "a", "c"]
    for c in fused:
        assert c.score == pytest.approx(expected[c.key[1]])


def test_fusion_weight_moves_between_the_two_rankings():
    def make():
        return [cand("a", 10.0, 0.2), cand("b", 4.0, 0.9), cand("c", 7.0, 0.5)]
    assert [c.key[1] for c in _fuse(make(), 1.0)] == ["a", "c", "b"]  # BM25 alone
    assert [c.key[1] for c in _fuse(make(), 0.0)] == ["b", "c", "a"]  # cosine alone


def test_fuse_without_spread_and_ties():
    single = _fuse([cand("a", 3.0, 0.4)], 0.5)
    assert single[0].score == 1.0
    tied = _fuse([cand("b", 0.0, 0.5), cand("a", 0.0, 0.5)], 0.5)
    assert [c.key[1] for c in tied] == ["a", "b"]  # ties by key
    assert all(c.score == 0.5 for c in tied)  # BM25 all zero → 0, cosine without spread → 1


@pytest.fixture
def store(store) -> MemoryStore:
    s = store
    s.add("mood", "that-evening", "他一句话没说，饭也没怎么吃。")
    s.add("preferences", "likes-the-sea", "喜欢海边，想去海边玩。")
    s.add("preferences", "coffee", "只喝手冲咖啡。")
    s.add("work", "job", "在一家机器人公司上班。")
    s.diary.append("今天很难过，一直不说话。", date="2026-07-21", time="20:00")
    s.diary.append("去看海了。", date="2026-07-21", time="10:00")
    return s


@pytest.fixture
def fake():
    with FakeOpenAI(dim=64) as server:
        yield server


def embedder(fake):
    pytest.importorskip("numpy")
    from wikimem.vectors import HttpEmbedder

    return HttpEmbedder(fake.url, "fake-embed", timeout=5.0)


def test_a_paraphrase_is_found_through_the_embedding(store, fake):
    plain = MemoryIndex(store, use_jieba=False)
    assert plain.retrieve("那天我是不是很沮丧").items == []  # no shared term at all
    index = MemoryIndex(store, use_jieba=False, embedder=embedder(fake))
    result = index.retrieve("那天我是不是很沮丧", limit=2)
    assert result.embedding_used is True
    top = result.items[0]
    assert (top.item.file, top.item.name) == ("mood", "that-evening")
    assert top.cos_score is not None and top.bm25_score == 0.0 and top.score is not None
    assert result.to_dict()["embedding_used"] is True


def test_fused_scores_follow_the_formula(store, fake):
    index = MemoryIndex(store, use_jieba=False, embedder=embedder(fake), fusion_weight=0.3)
    result = index.retrieve("海边", limit=10, expand_links=False)
    assert result.embedding_used
    entries = result.items
    assert len(entries) == 4  # 4 wiki items, all in the vector top k: the union is what we see
    bm, cs = [e.bm25_score for e in entries], [e.cos_score for e in entries]

    def norm(v, xs):
        return (v - min(xs)) / (max(xs) - min(xs))
    for e in entries:
        assert e.score == pytest.approx(0.3 * norm(e.bm25_score, bm) + 0.7 * norm(e.cos_score, cs))
    assert [e.score for e in entries] == sorted((e.score for e in entries), reverse=True)
    top = entries[0]
    assert (top.item.file, top.item.name) == ("preferences", "likes-the-sea")
    assert top.bm25_score > 0 and all(e.bm25_score == 0.0 for e in entries[1:])


def test_window_entries_get_cosine_scores_too(store, fake):
    index = MemoryIndex(store, use_jieba=False, embedder=embedder(fake))
    result = index.retrieve("那天我是不是很沮丧", time_range=("2026-07-21", "2026-07-21"), limit=3)
    assert result.embedding_used
    diary = [e for e in result.items if e.kind == "diary"]
    assert diary and all(e.cos_score is not None for e in diary)
    assert ("2026-07-21", "20:00") in [(e.item.file, e.item.name) for e in result.items[:2]]


def test_a_failing_embedder_degrades_to_bm25_and_recovers(store, fake):
    plain = MemoryIndex(store, use_jieba=False)
    index = MemoryIndex(store, use_jieba=False, embedder=embedder(fake))
    fake.fail_status = 500
    result = index.retrieve("海边", limit=3)
    assert result.embedding_used is False
    as_bm25 = [(e.item.file, e.item.name, e.score) for e in result.items]
    assert as_bm25 == [(e.item.file, e.item.name, e.score) for e in plain.retrieve("海边", limit=3).items]
    assert all(e.cos_score is None for e in result.items)
    fake.fail_status = None
    assert index.retrieve("海边", limit=3).embedding_used is True


def test_garbage_answers_degrade_too(store, fake):
    index = MemoryIndex(store, use_jieba=False, embedder=embedder(fake))
    fake.garbage = True
    assert index.retrieve("海边").embedding_used is False
    fake.garbage = False
    assert index.retrieve("海边").embedding_used is True


def test_a_dimension_mismatch_degrades(store, fake):
    index = MemoryIndex(store, use_jieba=False, embedder=embedder(fake))
    assert index.retrieve("海边").embedding_used is True  # the cache is built with 64 dimensions
    fake.wrong_dim = 3
    with pytest.warns(RuntimeWarning, match="BM25 only"):  # announced by the vector layer
        result = index.retrieve("咖啡")  # a new query: its vector has 67 dimensions
    assert result.embedding_used is False
    assert [e.item.name for e in result.items] == ["coffee"]


class Exploding:
    model = "boom"

    def embed(self, texts):
        raise RuntimeError("embedder down")


def test_an_embedder_that_raises_never_breaks_retrieval(store):
    pytest.importorskip("numpy")
    result = MemoryIndex(store, use_jieba=False, embedder=Exploding()).retrieve("海边")
    assert result.embedding_used is False
    assert [e.item.name for e in result.items][:1] == ["likes-the-sea"]


def test_no_terms_but_an_embedder_ranks_by_cosine(store, fake):
    index = MemoryIndex(store, use_jieba=False, embedder=embedder(fake))
    result = index.retrieve("😢 …", limit=2)
    assert result.query_terms == [] and result.embedding_used
    assert len(result.items) >= 1 and all(e.cos_score is not None for e in result.items if e.source == "hit")
