"""Lexical neighbour smoothing: conversation-like files only (issue 23)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wikimem import MemoryIndex, MemoryStore
from wikimem.models import RecallItem
from wikimem.recall.smoothing import is_transcript, smooth


def items(*contents: str) -> list[RecallItem]:
    return [RecallItem("f", f"t{n}", c) for n, c in enumerate(contents)]


@pytest.mark.parametrize("file, contents, expected", [
    ("s01", ["Maya: we adopted a puppy!", "Tom: what did you name him?", "Maya: Biscuit."], True),
    ("s01", ["美玲：我们养了一只小狗！", "志强：叫什么名字？", "美玲：饼干。"], True),
    ("preferences", ["Loves the sea.", "Drinks oolong tea.", "Allergic to peanuts."], False),
    ("s01", ["Maya: hi", "Tom: hello"], False),  # too short to tell
    ("chat-2026-07", ["Loves the sea."], True),  # marked by its name
    ("session_transcript", ["a", "b"], True),
    ("chatter", ["a", "b", "c"], False),  # a word that only starts like the mark
    ("notes", ["Time: 10:00 is when we meet", "Drinks tea.", "Likes the sea.", "Reads."], False),
])
def test_conversation_like_files(file, contents, expected):
    assert is_transcript(file, items(*contents)) is expected


@pytest.fixture
def chats(tmp_path) -> MemoryStore:
    s = MemoryStore(tmp_path / "mem")
    turns = ["Maya: guess what, we adopted a puppy!", "Tom: no way! what did you name him?",
             "Maya: Biscuit. The kids picked it.", "Tom: love it.", "Maya: how is work?", "Tom: busy as always."]
    for n, t in enumerate(turns):
        s.add("s01", f"t{n}", t)
    for n, fact in enumerate(["Has a puppy at home.", "Biscuit is a cookie brand she likes.", "Drinks tea."]):
        s.add("facts", f"f{n}", fact)
    return s


def names(result):
    return [(e.item.file, e.item.name) for e in result.items]


def test_a_turn_next_to_the_match_joins_the_candidates(chats):
    plain = MemoryIndex(chats, use_jieba=False).retrieve("puppy name", expand_links=False)
    smoothed = MemoryIndex(chats, use_jieba=False, neighbour_smoothing=0.5).retrieve("puppy name", expand_links=False)
    assert ("s01", "t2") not in names(plain)
    assert ("s01", "t2") in names(smoothed)
    score = {k: e.score for k, e in zip(names(smoothed), smoothed.items)}
    assert score[("s01", "t2")] > 0


def test_a_list_of_facts_is_not_smoothed(chats):
    plain = MemoryIndex(chats, use_jieba=False).retrieve("puppy", expand_links=False)
    smoothed = MemoryIndex(chats, use_jieba=False, neighbour_smoothing=0.5).retrieve("puppy", expand_links=False)
    facts = lambda r: [(e.item.name, e.score) for e in r.items if e.item.file == "facts"]  # noqa: E731
    assert facts(plain) == facts(smoothed) == [("f0", facts(plain)[0][1])]


def test_a_host_may_say_which_files_are_transcripts(chats):
    index = MemoryIndex(chats, use_jieba=False, neighbour_smoothing=0.5, transcripts=lambda f, i: f == "facts")
    got = names(index.retrieve("puppy", expand_links=False))
    assert ("facts", "f1") in got and ("s01", "t1") not in got


def test_diary_days_are_smoothed_in_both_modes(tmp_path):
    s = MemoryStore(tmp_path / "mem")
    s.diary.append("Went to the night market.", date="2026-07-21", time="19:00")
    s.diary.append("Ate stinky tofu there.", date="2026-07-21", time="19:30")
    s.diary.append("Slept early.", date="2026-07-22", time="22:00")
    for mode in ("window", "all"):
        index = MemoryIndex(s, use_jieba=False, neighbour_smoothing=0.4, diary=mode)
        got = names(index.retrieve("night market", time_range=("2026-07-20", "2026-07-23"), expand_links=False))
        assert got[:2] == [("2026-07-21", "19:00"), ("2026-07-21", "19:30")], mode
    found = MemoryIndex(s, use_jieba=False, neighbour_smoothing=0.4, diary="all").retrieve("night market")
    assert names(found) == [("2026-07-21", "19:00"), ("2026-07-21", "19:30")]


def test_a_file_edit_is_seen_by_the_detection(chats):
    index = MemoryIndex(chats, use_jieba=False, neighbour_smoothing=0.5)
    assert ("facts", "f1") not in names(index.retrieve("puppy", expand_links=False))
    chats.add("facts", "f3", "Tom: the puppy is cute")
    chats.add("facts", "f0", "Maya: has a puppy at home.")
    chats.add("facts", "f2", "Maya: drinks tea.")
    chats.add("facts", "f1", "Maya: Biscuit is a cookie brand she likes.")
    assert ("facts", "f1") in names(index.retrieve("puppy", expand_links=False))


def test_smoothing_must_be_a_weight(chats):
    with pytest.raises(ValueError, match="neighbour_smoothing"):
        MemoryIndex(chats, neighbour_smoothing=2)


def _smooth_reference(seeds, weight, neighbours, scores):
    """smooth() as it was before issue 39 made it cheaper: every key in play scored, sorted with a key function."""
    raw = dict(seeds)
    around = {}
    for k, _ in seeds:
        around.setdefault(k, neighbours(k))
    for k, _ in seeds:
        for n in around[k]:
            if n not in around:
                around[n] = neighbours(n)
    wanted = {n for k, near in around.items() for n in (k, *near) if n not in raw}
    if wanted:
        raw.update(scores(wanted))
    out = []
    for key, near in around.items():
        value = raw.get(key, 0.0) + weight * max([raw.get(n, 0.0) for n in near], default=0.0)
        if value > 0:
            out.append((key, value))
    out.sort(key=lambda kv: (-kv[1], kv[0]))
    return out


@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.25]), min_size=1, max_size=40),
       st.lists(st.integers(0, 39), max_size=15, unique=True), st.integers(1, 12), st.sampled_from([0.2, 0.5]))
def test_smooth_ranks_as_the_reference(raw_scores, seed_rows, limit, weight):
    """The same keys, order (ties by key) and scores as the plain implementation, cut at ``limit`` or not."""
    keys = [("f" if i % 3 else "g", f"t{i:02d}") for i in range(len(raw_scores))]
    score = dict(zip(keys, raw_scores))
    seeds = sorted([(keys[i], score[keys[i]]) for i in seed_rows if i < len(keys) and score[keys[i]] > 0],
                   key=lambda kv: (-kv[1], kv[0]))
    index = {k: i for i, k in enumerate(keys)}

    def neighbours(key):  # neighbours in the same file only, as in a transcript
        i = index[key]
        return tuple(keys[j] for j in (i - 1, i + 1) if 0 <= j < len(keys) and keys[j][0] == key[0])

    def scores(wanted):
        return {k: score[k] for k in wanted}

    want = _smooth_reference(seeds, weight, neighbours, scores)
    assert smooth(seeds, weight, neighbours, scores) == want
    assert smooth(seeds, weight, neighbours, scores, limit=limit) == want[:limit]
