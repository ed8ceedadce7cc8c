"""The cheaper smoothing ranks exactly as before (issue 39): the same keys and floats as the straightforward loop it
replaced, ties by key, hidden keys sharing their scores but never returned, no scores asked when every match is a
seed; and the wiki's neighbours kept as one mapping follow every write, hand edit and rebuild. The bounded smoothing
(``smooth_first``) gives the pairs of the full computation, in its order and bit for bit, whatever part of them is
consumed, and asks BM25 only for neighbours that are not seeds; a retrieve whose demotion reads past the limit is
unchanged."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from itertools import islice
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem import MemoryIndex, MemoryStore
from wikimem.recall import index as index_module
from wikimem.recall import smoothing
from wikimem.recall.smoothing import smooth, smooth_first
from wikimem.recall.wiki_index import WikiIndex


def _reference(seeds, weight: float, neighbours: Callable, scores: Callable, hidden=(), limit=None):
    """Smoothing as it was written before (233697b): a dict of every key in play, a loop per key, one sort."""
    raw: dict[Hashable, float] = dict(seeds)
    around = {k: neighbours(k) for k in raw}
    for near in list(around.values()):
        for n in near:
            if n not in around:
                around[n] = () if n in hidden else neighbours(n)
    wanted = set(around)
    for near in around.values():
        wanted.update(near)
    wanted.difference_update(raw)
    if wanted:
        raw.update(scores(wanted))
    ranked = []
    for key, near in around.items():
        if key in hidden:
            continue
        share = 0.0
        for n in near:
            x = raw.get(n, 0.0)
            if x > share:
                share = x
        value = raw.get(key, 0.0) + weight * share
        if value > 0:
            ranked.append((-value, key))
    ranked.sort()
    return [(key, -negated) for negated, key in (ranked if limit is None else ranked[:limit])]


SCORES = st.sampled_from([0.0, 0.5, 1.25, 1.25, 3.0, 0.1 + 0.2, 2.0 / 3.0])


@given(st.dictionaries(st.integers(0, 40), SCORES, max_size=40), st.sampled_from([0.0, 0.2, 0.5, 1.0]),
       st.sets(st.integers(0, 40), max_size=8), st.one_of(st.none(), st.integers(0, 30)), st.integers(1, 30),
       st.booleans())
def test_smoothing_equals_the_loop_it_replaced(raw, weight, hidden, limit, seeds_n, mapping):
    seeds = sorted(((k, s) for k, s in raw.items() if s), key=lambda kv: (-kv[1], kv[0]))[:seeds_n]
    near = {k: tuple(n for n in (k - 1, k + 1) if 0 <= n <= 40) for k in range(41) if k % 7}  # 0, 7, 14..: none
    asked: list[set] = []

    def scores(keys: Iterable) -> dict:
        keys = set(keys)
        asked.append(keys)
        return {k: raw.get(k, 0.0) for k in keys if k % 5}  # (unknown keys left out, as BM25 does)

    def call(k):
        return near.get(k, ())

    want = _reference(seeds, weight, call, scores, hidden=hidden, limit=limit)
    got = smooth(seeds, weight, near if mapping else call, scores, hidden=hidden, limit=limit)
    assert [(k, v.hex()) for k, v in got] == [(k, v.hex()) for k, v in want]  # the same floats, bit for bit
    assert not any(k in hidden for k, _ in got)


def test_ties_are_ordered_by_key_and_cut_at_the_limit():
    seeds = [((f"f{n % 3}", f"t{n:02d}"), 1.0) for n in range(30)]  # every seed the same score, no neighbours
    got = smooth(seeds, 0.2, {}, None, limit=7)
    assert got == sorted(seeds)[:7]
    assert smooth(seeds, 0.2, {}, None) == sorted(seeds)


def test_a_hidden_key_shares_its_score_but_is_not_returned():
    raw = {1: 0.0, 2: 4.0, 3: 0.0, 9: 1.0}
    near = {1: (2,), 2: (1, 3), 3: (2,)}
    got = dict(smooth([(2, 4.0), (9, 1.0)], 0.25, near, lambda keys: {k: raw[k] for k in keys}, hidden={2}))
    assert got == {1: 1.0, 3: 1.0, 9: 1.0}  # 2 itself left out; its neighbours inherit a quarter of its 4.0


def test_no_scores_asked_when_every_match_is_a_seed(tmp_path):
    store = MemoryStore(tmp_path / "mem")
    for n in range(12):
        store.add("s01-chat", f"t{n:02d}", "Maya: the puppy is asleep." if n % 4 == 0 else f"Tom: ok {n}.")
    index = MemoryIndex(store, use_jieba=False, neighbour_smoothing=0.5)
    index.retrieve("tom", expand_links=False)  # (built now: the BM25 index watched below is the one in use)
    asked: list = []
    bm25 = index.wiki.bm25
    original = bm25.scores

    def spy(keys, *args, **kwargs):
        asked.append(list(keys))
        return original(keys, *args, **kwargs)

    bm25.scores = spy
    result = index.retrieve("puppy", limit=10, expand_links=False)
    assert not asked  # three matches, fewer than the seeds asked for: their neighbours score 0
    names = [(e.item.name, e.score) for e in result.items]
    assert names[:3] == [("t00", names[0][1]), ("t04", names[0][1]), ("t08", names[0][1])]  # ties by key
    assert {n for n, _ in names[3:]} == {"t01", "t03", "t05", "t07", "t09"}  # the neighbours' share


def _fresh_near(store) -> dict:
    fresh = WikiIndex(store, use_jieba=False)
    fresh.rebuild()
    return fresh.near()


def test_the_wikis_neighbours_follow_writes_hand_edits_and_rebuilds(tmp_path):
    store = MemoryStore(tmp_path / "mem")
    for n in range(5):
        store.add("s01-chat", f"t{n}", f"Maya: turn {n}.")
    store.add("facts", "tea", "Drinks tea.")
    index = MemoryIndex(store, use_jieba=False, neighbour_smoothing=0.2)
    index.retrieve("turn", expand_links=False)
    wiki = index.wiki
    assert wiki.near() == _fresh_near(store) and ("s01-chat", "t2") in wiki.near()
    assert ("facts", "tea") not in wiki.near()  # (not a conversation)
    store.add("s01-chat", "t5", "Maya: turn 5.")  # a write: seen through store.revision
    store.remove("s01-chat", "t1")
    store.add("s02-chat", "a", "Tom: hello.")
    index.retrieve("turn", expand_links=False)
    assert wiki.near() == _fresh_near(store)
    assert wiki.near()[("s01-chat", "t2")] == (("s01-chat", "t0"), ("s01-chat", "t3"))
    assert ("s01-chat", "t1") not in wiki.near()
    path = store.root / "wiki" / "s01-chat.md"  # a hand edit on disk: t3 taken out, learnt through refresh()
    text = path.read_text()
    start, end = text.index("## t3"), text.index("## t4")
    path.write_text(text[:start] + text[end:])
    index.refresh(["s01-chat"])
    assert wiki.near() == _fresh_near(store)
    assert wiki.near()[("s01-chat", "t2")] == (("s01-chat", "t0"), ("s01-chat", "t4"))
    path.write_text(path.read_text().replace("## t0", "## first"))  # another hand edit, then a full rebuild
    index.rebuild()
    assert wiki.near() == _fresh_near(store) and ("s01-chat", "first") in wiki.near()
    assert ("s01-chat", "t0") not in wiki.near()


# (quarters: many ties, sums tied exactly; and a few values that round)
BOUNDED_SCORES = st.one_of(st.integers(0, 12).map(lambda n: n / 4),
                           st.sampled_from([0.1 + 0.2, 2.0 / 3.0, 7.5, 1e-300]))
KEYS = st.integers(0, 30)


@st.composite
def cases(draw):
    raw = draw(st.dictionaries(KEYS, BOUNDED_SCORES, max_size=31))
    if draw(st.booleans()):  # conversations: each turn's neighbours are the turns just before and after it
        ends = draw(st.sets(KEYS))
        near = {k: tuple(n for n in (k - 1, k + 1) if 0 <= n <= 30 and max(n, k) not in ends) for k in range(31)}
    else:  # any symmetric relation (b a neighbour of a when a is of b), as a mapping
        links: dict[int, tuple] = {}
        for a, b in draw(st.lists(st.tuples(KEYS, KEYS), max_size=40)):
            links[a] = links.get(a, ()) + (b,)
            links[b] = links.get(b, ()) + (a,)
        near = links
    ranked = sorted(((k, s) for k, s in raw.items() if s), key=lambda kv: (-kv[1], kv[0]))
    seeds = ranked[:draw(st.integers(1, 31))]
    complete = len(seeds) == len(ranked) and draw(st.booleans())  # every match a seed: no scores asked
    seeds = draw(st.permutations(seeds))  # (BM25 hands a short list over unsorted)
    hidden = draw(st.sets(KEYS, max_size=8))
    limit = draw(st.integers(0, 40))
    first = draw(st.integers(0, 40))
    taken = draw(st.integers(0, 45))
    weight = draw(st.sampled_from([0.0, 0.2, 0.5, 1.0, 1.0, 1 / 3]))
    return raw, near, seeds, complete, hidden, limit, first, taken, weight


@settings(max_examples=2000, deadline=None)
@given(cases(), st.booleans())
def test_the_first_pairs_are_the_full_lists_whatever_is_consumed(case, mapping):
    raw, near, seeds, complete, hidden, limit, first, taken, weight = case
    seed_keys = {k for k, _ in seeds}
    asked: list[set] = []

    def scores(keys: Iterable) -> dict:  # as BM25's: 0.0 for a key that does not match, unknown keys left out
        keys = set(keys)
        asked.append(keys)
        return {k: raw.get(k, 0.0) for k in keys if k % 5 != 4}

    def call(k):
        return near.get(k, ())

    want = _reference(seeds, weight, call, scores, hidden=hidden, limit=limit)
    asked.clear()
    fetch = None if complete else scores
    with patch.object(smoothing, "_SHARE", 1):  # (the bounds tried whatever the number of seeds)
        got = list(islice(smooth_first(seeds, weight, near if mapping else call, fetch, hidden=hidden, limit=limit,
                                       first=first), taken))
    assert [(k, v.hex()) for k, v in got] == [(k, v.hex()) for k, v in want[:taken]]
    assert not any(keys & seed_keys for keys in asked)  # (a seed's score is known: never asked for)
    assert smooth(seeds, weight, near, fetch, hidden=hidden, limit=limit) == want


def test_a_few_best_are_found_without_asking_every_neighbour():
    seeds = [(n, 300.0 - n) for n in range(0, 200, 2)]  # a conversation whose even turns match
    near = {n: tuple(m for m in (n - 1, n + 1) if 0 <= m < 200) for n in range(200)}
    asked: list = []

    def scores(keys):
        asked.extend(keys)
        return dict.fromkeys(keys, 0.5)

    got = list(islice(smooth_first(seeds, 0.2, near, scores, limit=100, first=5), 5))
    bounded = sorted(asked)
    asked.clear()
    assert got == smooth(seeds, 0.2, near, scores, limit=100)[:5]
    assert len(asked) == 100  # the full computation asks for every odd turn; the bounds for those near the best
    assert bounded == list(range(1, 2 * len(bounded), 2)) and len(bounded) < 50
    asked.clear()
    seeds += [(n, 0.5) for n in range(1, 200, 2)]  # every turn a seed: no score asked for
    assert list(islice(smooth_first(seeds, 0.2, near, scores, limit=100, first=5), 5)) == got
    assert not asked


@pytest.mark.parametrize("seeds, near, raw, hidden, best", [
    # a seed whose bound only ties the first value, and wins the tie by key
    ([(5, 1.0), (1, 0.5), (2, 0.5), (20, 0.25)], {1: (2,), 2: (1,)}, {}, (), (1, 1.0)),
    # a key that is not a seed, next to a seed that is not among the best raw scores, and first
    ([(0, 1.0), (10, 0.75)], {10: (9,), 9: (10,)}, {9: 0.5}, (), (9, 1.25)),
    # a key that is not a seed, first next to a hidden seed: its own score asked for too
    ([(1, 2.0), (5, 1.0), (20, 0.25)], {1: (2,), 2: (1,)}, {2: 0.25}, {1}, (2, 2.25)),
])
def test_the_bounds_hold_at_ties_and_beside_seeds_that_are_not_the_best(seeds, near, raw, hidden, best, monkeypatch):
    monkeypatch.setattr(smoothing, "_SHARE", 1)

    def scores(keys):
        return {k: raw.get(k, 0.0) for k in keys}

    want = smooth(seeds, 1.0, near, scores, hidden=hidden, limit=10)
    assert want[0] == best
    assert list(islice(smooth_first(seeds, 1.0, near, scores, hidden=hidden, limit=10, first=1), 10)) == want


def _chat(tmp_path):
    store = MemoryStore(tmp_path / "mem")
    for n in range(90):  # a few short "thanks!" turns: a rare word, so the best scores, and content-free
        text = "Tom: thanks!" if n % 10 == 3 else f"Maya: the lighthouse trip {n % 7} and the kite {'kite' * (n % 4)}."
        store.add("s01-chat", f"t{n:02d}", text)
    return store


def test_demotion_reading_past_the_limit_ranks_as_the_full_smoothing(tmp_path, monkeypatch):
    index = MemoryIndex(_chat(tmp_path), use_jieba=False, neighbour_smoothing=0.5)
    asks = [(q, limit) for q in ("thanks, what about the kite?", "thanks", "lighthouse trip", "kite thanks lighthouse")
            for limit in (1, 3, 8, 30)]

    def ranked() -> list:
        return [[(e.item.name, e.score) for e in index.retrieve(q, limit=limit, expand_links=False).items]
                for q, limit in asks]

    told: list = []
    wholes: list = []
    original, whole = smoothing._Bounds.best, smoothing.smooth
    monkeypatch.setattr(smoothing._Bounds, "best", lambda self, k: told.append((k, original(self, k))) or told[-1][1])
    monkeypatch.setattr(smoothing, "smooth", lambda *a, **kw: wholes.append(kw["limit"]) or whole(*a, **kw))
    got = ranked()
    assert any(top is not None for _, top in told)  # the bounds told the first ones,
    assert any(k > 1 and told[n - 1][0] < k and top is not None for n, (k, top) in enumerate(told))  # then more,
    assert wholes  # and some took the whole list
    monkeypatch.undo()

    def full(seeds, weight, near, scores, *, hidden, limit, first):  # the whole list, as before the bounds
        told.append(first)
        return iter(smooth(seeds, weight, near, scores, hidden=hidden, limit=limit))

    told.clear()
    monkeypatch.setattr(index_module, "smooth_first", full)
    assert ranked() == got
    assert len(told) == len(asks)


def test_the_neighbours_smoothing_is_given_are_symmetric(tmp_path):
    """What ``smooth_first``'s bounds rely on: a key is a neighbour of each of its neighbours (wiki, diary, window),
    after writes and removals too."""
    store = _chat(tmp_path)
    store.add("facts", "tea", "Drinks tea.")
    for n in range(12):
        store.diary.append(f"the kite {n}" if n % 2 else "thanks!", date=f"2026-03-0{1 + n % 3}", time=f"1{n % 10}:00")
    index = MemoryIndex(store, use_jieba=False, neighbour_smoothing=0.5)
    index.retrieve("kite", diary="all", expand_links=False)
    store.remove("s01-chat", "t05")
    store.add("s01-chat", "t95", "Tom: the kite again.")
    seen: list = []

    def spy(original):
        def spied(seeds, weight, near, scores, **kw):
            get = near.get if isinstance(near, dict) else near
            keys = {n for k, _ in seeds for n in (k, *(get(k) or ()))}
            seen.append({k: tuple(get(k) or ()) for k in keys})
            return original(seeds, weight, near, scores, **kw)
        return spied

    with patch.object(index_module, "smooth_first", spy(smooth_first)), patch.object(index_module, "smooth",
                                                                                      spy(smooth)):
        for diary in ("all", "window", None):
            index.retrieve("the kite on 2026-03-02" if diary == "window" else "kite", diary=diary, limit=3,
                           expand_links=False)
    assert len(seen) == 3 and all(seen)
    every, window, wiki = seen  # (diary days, window entries, wiki turns)
    assert any(len(k) == 3 and every[k] for k in every) and any(len(k) == 3 and window[k] for k in window)
    assert any(len(k) == 2 and wiki[k] for k in wiki)
    for near in seen:
        for key, around in near.items():
            assert all(key in near[n] for n in around), key
