"""Recall that keeps its cues (issue 35): a dated fact is found by its date, and the first k hits do not
depend on the limit asked."""

from __future__ import annotations

import pytest
from fakes import fake_embedding
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikimem import MemoryIndex, MemoryStore

HOST_BM25 = {"query_stopwords": "en", "bm25_b": 0.4, "neighbour_smoothing": 0.2}


class Embedder:
    model = "fake-embed"

    def embed(self, texts):
        return [fake_embedding(t, 32) for t in texts]


PLANS = {
    "en": [("athens", "Paola is going to Athens on the 10th of February 2024 for a wedding."),
           ("oslo", "Paola is going to Oslo on the 3rd of March 2024 for a conference."),
           ("lima", "Paola is going to Lima on the 21st of June 2024 for a concert."),
           ("porto", "Paola is going to Porto on the 9th of October 2024 for a family visit."),
           ("kai-hanoi", "Kai is going to Hanoi on the 10th of February 2024 for a marathon.")],
    "zh": [("athens", "宝拉2024年2月10日要去雅典参加婚礼。"), ("oslo", "宝拉2024年3月3日要去奥斯陆开会。"),
           ("lima", "宝拉2024年6月21日要去利马看演唱会。"), ("porto", "宝拉2024年10月9日要去波尔图看望家人。"),
           ("kai-hanoi", "阿凯2024年2月10日要去河内跑马拉松。")],
}
ASKED = {"en": ["Where is Paola going on the 10th of February 2024?", "Where is Paola going on February 10, 2024?",
                "Where does Paola travel on 2024-02-10?"],
         "zh": ["宝拉2024年2月10日要去哪里？", "2024年2月10号宝拉去哪儿？"]}
CHAT = {"en": ["Paola: I love travelling, I go somewhere every month.", "Kai: Where are you going next?",
               "Paola: Not sure yet, maybe somewhere warm."],
        "zh": ["宝拉：我很喜欢旅行，每个月都去一个地方。", "阿凯：你下次要去哪里？",
               "宝拉：还没定，可能去暖和的地方。"]}
DIARY = {"en": "Paola stayed home and read a book.", "zh": "宝拉在家看了一本书。"}


def dated_store(tmp_path, lang: str, diary: bool) -> MemoryStore:
    store = MemoryStore(tmp_path / f"{lang}-{diary}")
    for name, text in PLANS[lang]:
        store.add("plans", name, text)
    for n, text in enumerate(CHAT[lang]):
        store.add("chat", f"t{n}", text)
    if diary:
        store.diary.append(DIARY[lang], date="2024-02-10", time="20:00")
        store.diary.append(DIARY[lang], date="2024-03-03", time="20:00")
    return store


@pytest.mark.parametrize("options", [{}, HOST_BM25], ids=["library", "host bm25"])
@pytest.mark.parametrize("diary", [False, True], ids=["no diary", "diary in the window"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_dated_wiki_fact_is_found_by_its_date(tmp_path, lang, diary, options):
    index = MemoryIndex(dated_store(tmp_path, lang, diary), use_jieba=False, **options)
    for question in ASKED[lang]:
        result = index.retrieve(question, limit=5)
        widened = ("2024-02-09", "2024-02-11")  # an empty window is widened (and stays empty here)
        assert result.time_range == (("2024-02-10", "2024-02-10") if diary else widened)
        hits = [(e.item.file, e.item.name) for e in result.items if e.source == "hit"]
        assert hits[0] == ("plans", "athens"), (question, hits)  # not the other dates, not Kai's trip that day
        if diary:  # the day's entry is still in the answer (a window keeps its places), and no other day's
            assert ("2024-02-10", "20:00") in hits and ("2024-03-03", "20:00") not in hits


def test_the_dated_fact_ranks_below_the_top_without_its_date(tmp_path):
    """The control: without the date words Paola's trips tie on her name (what stripping them did)."""
    index = MemoryIndex(dated_store(tmp_path, "en", False), use_jieba=False)
    scores = {e.item.name: e.score for e in index.retrieve("Where is Paola going?").items}
    assert len({round(scores[n], 6) for n in ("athens", "oslo", "lima", "porto")}) < 4 or \
        max(scores, key=scores.get) != "athens"


# -- the first k do not depend on the limit ------------------------------------------------

WORDS = ["sea", "beach", "coffee", "tea", "puppy", "dog", "trip", "paris", "rain", "book", "movie", "cake"]
FILLER = ["hello", "ok", "thanks", "haha", "so", "the", "a", "we", "did", "what"]
word = st.sampled_from(WORDS + FILLER)
turn = st.lists(word, min_size=1, max_size=7).map(" ".join)
corpus = st.lists(st.lists(turn, min_size=1, max_size=14), min_size=1, max_size=5)
query = st.lists(st.sampled_from(WORDS + FILLER[:4]), min_size=1, max_size=4).map(" ".join)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
VARIANTS = {
    "library bm25": {},
    "host bm25": HOST_BM25,
    "fused": {"embedder": Embedder(), "fusion_weight": 0.3, "neighbour_context": True, "bm25_b": 0.4,
              "query_stopwords": "en"},
}


def write_corpus(store: MemoryStore, files: list[list[str]], labelled: bool) -> None:
    for f, turns in enumerate(files):
        for n, text in enumerate(turns):
            speaker = ("Maya: " if n % 2 else "Leo: ") if labelled else ""
            store.add(f"file{f}", f"t{n:02d}", speaker + text)


def hits_at(index: MemoryIndex, q: str, limit: int, **kwargs) -> list[tuple[str, str]]:
    result = index.retrieve(q, limit=limit, expand_links=False, **kwargs)
    return [(e.item.file, e.item.name) for e in result.items if e.source == "hit"]


@pytest.mark.parametrize("variant", list(VARIANTS))
@SETTINGS
@given(files=corpus, q=query, labelled=st.booleans(), window=st.booleans())
def test_the_first_hits_are_the_same_whatever_the_limit(tmp_path_factory, variant, files, q, labelled, window):
    store = MemoryStore(tmp_path_factory.mktemp("corpus"))
    write_corpus(store, files, labelled)
    kwargs = {}
    if window:  # a time window whose entries compete (and keep their places)
        for n, text in enumerate(files[0][:6]):
            store.diary.append(text, date="2026-07-21", time=f"1{n}:00")
        kwargs["time_range"] = ("2026-07-21", "2026-07-21")
    index = MemoryIndex(store, use_jieba=False, vectors_dir=store.root / "vectors", **VARIANTS[variant])
    five, ten, fifty = (hits_at(index, q, n, **kwargs) for n in (5, 10, 50))
    assert five == ten[:5] == fifty[:5]
    assert ten == fifty[:10]


# -- content-free turns ----------------------------------------------------------------------

GREETING_CHAT = {
    "en": ["Tom: So the new job, how is it going?", "Maya: Oh, happy to hear that, great!",
           "Maya: The new job at the bakery is going well, the team is friendly and I bake bread every morning.",
           "Tom: My new job is fine too.", "Tom: Any new job news from Leo?", "Maya: Leo has no new job yet.",
           "Tom: A new job is a big change.", "Maya: Yes, a new job."],
    "zh": ["志强：新工作怎么样？", "美玲：哈哈，太好了，真开心！",
           "美玲：新工作在面包店，同事都很友好，我每天早上烤面包，挺开心的。",
           "志强：我的新工作也还行。", "志强：小林有新工作吗？", "美玲：小林还没有新工作。",
           "志强：新工作是个大变化。", "美玲：是啊，新工作。"],
}
GREETING_QUESTION = {"en": "Is Maya happy with her new job?", "zh": "美玲的新工作开心吗？"}


@pytest.mark.parametrize("options", [{}, HOST_BM25,
                                     {"embedder": Embedder(), "fusion_weight": 0.3, "neighbour_context": True}],
                         ids=["library", "host bm25", "fused"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_greeting_does_not_outrank_a_content_turn(tmp_path, lang, options):
    store = MemoryStore(tmp_path / "mem")
    for n, text in enumerate(GREETING_CHAT[lang]):
        store.add("chat", f"t{n}", text)
    index = MemoryIndex(store, use_jieba=False, vectors_dir=tmp_path / "vectors", **options)
    names = [e.item.name for e in index.retrieve(GREETING_QUESTION[lang], expand_links=False).items]
    assert names.index("t2") < names.index("t1") if "t1" in names else "t2" in names, names
    # a question of small talk only ranks them as before (nothing to demote for)
    assert index.retrieve("happy" if lang == "en" else "开心", expand_links=False).items


def test_content_free_turns():
    from wikimem.recall.filler import is_content_free

    names = ["Maya", "Tom", "美玲", "志强"]
    for text in ["Maya: Hello Tom! How are you doing today?", "Tom: Haha, nice!", "ok", "Maya: Thanks for asking!",
                 "美玲：哈哈，好的！", "志强：你好呀美玲，今天过得怎么样？", "嗯嗯", "", "Tom:"]:
        assert is_content_free(text, names), text
    for text in ["Maya: Biscuit. The kids picked it.", "Tom: Lisbon!", "美玲：新工作在面包店。", "海边",
                 "Maya: Hello Tom! We adopted a puppy."]:
        assert not is_content_free(text, names), text
