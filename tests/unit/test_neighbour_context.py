"""Neighbour context: an item scored with the turns around it, ``0.6·cos(item) + 0.4·cos(context)``."""

from __future__ import annotations

import numpy as np
import pytest
from fakes import fake_embedding

from wikimem import MemoryIndex, MemoryStore, RecallItem
from wikimem.vectors import embed_text
from wikimem.vectors.search import CONTEXT_VECTORS_DIR, EmbeddingSearch, NeighbourContext, context_texts

DIM = 64


class Local:
    model = "fake-embed"

    def __init__(self):
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts += texts
        return [fake_embedding(t, DIM) for t in texts]


TURNS = [RecallItem("s1", "t1", "Maya: guess what, we adopted a puppy!"),
         RecallItem("s1", "t2", "Leo: what did you name it?"),
         RecallItem("s1", "t3", "Maya: Biscuit, the kids picked it."),
         RecallItem("s2", "t1", "Leo: coffee later?")]


def test_context_texts_stay_inside_their_file():
    texts = context_texts(TURNS)
    t = [embed_text(i.name, i.content) for i in TURNS]
    assert texts == ["\n".join(t[0:2]), "\n".join(t[0:3]), "\n".join(t[1:3]), t[3]]
    assert context_texts(TURNS, window=2)[0] == "\n".join(t[0:3])


@pytest.mark.parametrize("kwargs", [{"item_weight": 1.5}, {"item_weight": True}, {"window": 0}])
def test_bad_context_settings(kwargs):
    with pytest.raises(ValueError):
        NeighbourContext(**kwargs)


def test_scores_are_the_mixed_cosine(tmp_path):
    es = EmbeddingSearch(Local(), tmp_path, context=NeighbourContext(item_weight=0.6))
    es.sync(TURNS)
    assert (tmp_path / CONTEXT_VECTORS_DIR / "vectors.keys.jsonl").exists()
    query = "what is the name of Maya's dog"
    wiki, _ = es.search(query, 10, candidates=[], diary=[])
    q = np.array(fake_embedding(query, DIM))
    contexts = context_texts(TURNS)
    for item, ctx in zip(TURNS, contexts):
        own = fake_embedding(embed_text(item.name, item.content), DIM)
        expected = 0.6 * q @ own + 0.4 * q @ fake_embedding(ctx, DIM)
        assert wiki[(item.file, item.name)] == pytest.approx(expected, abs=1e-5)


def test_an_edit_re_embeds_the_item_and_the_contexts_around_it(tmp_path):
    emb = Local()
    es = EmbeddingSearch(emb, tmp_path, context=NeighbourContext())
    es.sync(TURNS)
    emb.texts.clear()
    edited = TURNS[:2] + [RecallItem("s1", "t3", "Maya: Biscuit!")] + TURNS[3:]
    es.sync(edited)
    contexts = context_texts(edited)
    assert sorted(emb.texts) == sorted([embed_text("t3", "Maya: Biscuit!"), contexts[1], contexts[2]])
    assert es.embedded(edited) == 4
    assert es.embedded(TURNS) == 2  # s1:t1 (its context t1+t2 did not change) and s2:t1


def test_the_answer_turn_is_found_through_its_neighbour(tmp_path):
    s = MemoryStore(tmp_path / "m")
    s.add("s1", "t1", "Maya: guess what, we adopted a puppy last weekend!")
    s.add("s1", "t2", "Leo: aww, what did you name it?")
    s.add("s1", "t3", "Maya: Biscuit. The kids picked it.")
    for n in range(4, 12):
        s.add("s1", f"t{n}", f"Leo: the weather was nice on day {n}, we walked a lot")
    question = "what name did Maya give her dog"
    plain = MemoryIndex(s, use_jieba=False, embedder=Local(), vectors_dir=tmp_path / "v1", fusion_weight=0.0)
    ctx = MemoryIndex(s, use_jieba=False, embedder=Local(), vectors_dir=tmp_path / "v2", fusion_weight=0.0,
                      neighbour_context=True)

    def rank(r):
        return [e.item.name for e in r.items].index("t3")
    assert rank(ctx.retrieve(question, expand_links=False)) < rank(plain.retrieve(question, expand_links=False))
    result = ctx.retrieve(question, expand_links=False, explain=True)
    assert result.embedding_used and result.vectors == {"embedded": 11, "total": 11}


def test_reordering_a_file_changes_contexts(tmp_path):
    """Neighbours are file order: a file rewritten in another order is re-synced."""
    s = MemoryStore(tmp_path / "m")
    for n in range(1, 4):
        s.add("s1", f"t{n}", f"turn number {n}")
    emb = Local()
    index = MemoryIndex(s, use_jieba=False, embedder=emb, vectors_dir=tmp_path / "v", neighbour_context=True)
    index.retrieve("turn")
    items = s.items("s1")
    reordered = [items[2], items[0], items[1]]
    index.wiki.apply_file("s1", reordered)  # what a hand edit reordering the file does
    emb.texts.clear()
    index.retrieve("turn")
    item_texts = {embed_text(i.name, i.content) for i in items}
    assert emb.texts and set(emb.texts) <= set(context_texts(reordered)) - item_texts  # contexts only


def test_neighbour_context_argument_is_checked(tmp_path):
    s = MemoryStore(tmp_path / "m")
    with pytest.raises(ValueError):
        MemoryIndex(s, neighbour_context="yes")
    assert MemoryIndex(s, neighbour_context=NeighbourContext(item_weight=0.5)).neighbour_context.item_weight == 0.5


def test_the_exact_and_the_sign_bit_tiers_mix_alike(tmp_path):
    turns = [RecallItem(f"s{n // 5}", f"t{n}", f"turn {n} about {'dogs' if n % 3 else 'coffee'} and {n * 7}")
             for n in range(40)]
    exact = EmbeddingSearch(Local(), tmp_path / "a", context=NeighbourContext())
    tier1 = EmbeddingSearch(Local(), tmp_path / "b", context=NeighbourContext(), binary_threshold=10)
    exact.sync(turns)
    tier1.sync(turns)
    assert exact._state.mixed is not None and tier1._state.mixed is None
    everyone = [(t.file, t.name) for t in turns]
    a, _ = exact.search("coffee please", 5, candidates=everyone, diary=[])
    b, _ = tier1.search("coffee please", 5, candidates=everyone, diary=[])
    assert a.keys() == b.keys() and all(a[k] == pytest.approx(b[k], abs=1e-5) for k in a)

    def top(scores):
        return sorted(scores, key=lambda k: -scores[k])[:5]
    exact_only, _ = exact.search("coffee please", 5, candidates=[], diary=[])
    assert set(top(exact_only)) == set(top(a))


@pytest.mark.parametrize("binary_threshold", [10_000, 1], ids=["exact", "sign bits"])
def test_conversation_files_take_their_own_item_weight(tmp_path, binary_threshold):
    """Issue 35: 0.4 for the turns of conversation-like files, 0.6 for a list of facts."""
    facts = [RecallItem("prefs", "tea", "likes green tea"), RecallItem("prefs", "sea", "loves the sea")]
    items = TURNS[:3] + facts
    es = EmbeddingSearch(Local(), tmp_path, binary_threshold=binary_threshold,
                         context=NeighbourContext(item_weight=0.6, conversation_weight=0.4))
    es.sync(items, conversations={"s1"})
    query = "what is the name of Maya's dog"
    wiki, _ = es.search(query, 10, candidates=[(i.file, i.name) for i in items], diary=[])
    q = np.array(fake_embedding(query, DIM))
    for item, ctx in zip(items, context_texts(items)):
        w = 0.4 if item.file == "s1" else 0.6
        own = fake_embedding(embed_text(item.name, item.content), DIM)
        assert wiki[(item.file, item.name)] == pytest.approx(w * q @ own + (1 - w) * q @ fake_embedding(ctx, DIM),
                                                             abs=1e-5)


def test_the_index_tells_its_vectors_which_files_are_conversations(tmp_path):
    s = MemoryStore(tmp_path / "m")
    for item in TURNS[:3]:
        s.add(item.file, item.name, item.content)
    s.add("prefs", "tea", "likes green tea")
    index = MemoryIndex(s, use_jieba=False, embedder=Local(), vectors_dir=tmp_path / "v",
                        neighbour_context=NeighbourContext(item_weight=0.6, conversation_weight=0.4))
    assert index.retrieve("dog name").embedding_used
    assert index.wiki.conversations() == {"s1"}
    weights = index.vectors.search()._state.item_weight
    assert sorted(weights.tolist()) == pytest.approx([0.4, 0.4, 0.4, 0.6])
    with pytest.raises(ValueError):
        NeighbourContext(conversation_weight=1.5)
