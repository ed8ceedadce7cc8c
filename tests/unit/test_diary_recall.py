"""``retrieve(diary="all")``: diary entries ranked with the wiki by topic, indexed incrementally."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from fakes import fake_embedding

import wikimem.recall.diary_index as diary_index_module
from wikimem import MemoryIndex, MemoryStore


@pytest.fixture
def mem(store) -> MemoryStore:
    s = store
    s.add("pets", "biscuit", "Our dog Biscuit, a beagle.")
    s.add("work", "job", "Works as a nurse.")
    s.diary.append("Took Biscuit to the vet, he hates the car.", date="2026-05-02", time="09:30")
    s.diary.append("Long shift at the hospital.", date="2026-05-03", time="20:00")
    s.diary.append("Biscuit learned to sit!", date="2026-06-10", time="18:00")
    return s


def keys(result):
    return [(e.kind, e.item.file, e.item.name) for e in result.items]


def test_window_mode_is_the_seed(mem):
    index = MemoryIndex(mem, use_jieba=False)
    assert keys(index.retrieve("Biscuit vet")) == [("wiki", "pets", "biscuit")]  # no window: no diary
    assert index.retrieve("Biscuit vet").diary == "window"


def test_all_mode_ranks_diary_entries_with_the_wiki(mem):
    result = MemoryIndex(mem, use_jieba=False).retrieve("Biscuit vet", diary="all")
    assert result.diary == "all" and result.to_dict()["diary"] == "all"
    assert keys(result)[0] == ("diary", "2026-05-02", "09:30")  # "vet" only there
    assert ("wiki", "pets", "biscuit") in keys(result) and ("diary", "2026-06-10", "18:00") in keys(result)
    top = result.items[0]
    assert top.item.file == "2026-05-02" and top.item.name == "09:30" and top.matched_terms == ["biscuit", "vet"]


def test_index_default_and_validation(mem):
    index = MemoryIndex(mem, use_jieba=False, diary="all")
    assert keys(index.retrieve("hospital"))[0] == ("diary", "2026-05-03", "20:00")
    assert keys(index.retrieve("hospital", diary="window")) == []
    for bad in ("both", None, 3):
        if bad is None:
            continue
        with pytest.raises(ValueError):
            index.retrieve("x", diary=bad)
    with pytest.raises(ValueError):
        MemoryIndex(mem, diary="every")
    for bad in (-1, True, float("nan"), float("inf"), "7"):
        with pytest.raises(ValueError):
            index.retrieve("x", recency_half_life=bad)
    with pytest.raises(ValueError):
        MemoryIndex(mem, recency_half_life=-3)


def test_the_index_default_recency_prior_and_zero_for_none(mem):
    index = MemoryIndex(mem, use_jieba=False, diary="all", recency_half_life=30)
    assert index.recency_half_life == 30.0
    with_prior = index.retrieve("hospital")
    without = index.retrieve("hospital", recency_half_life=0)
    plain = MemoryIndex(mem, use_jieba=False, diary="all").retrieve("hospital")
    assert [e.score for e in without.items] == [e.score for e in plain.items]
    assert [e.score for e in with_prior.items] != [e.score for e in plain.items]


def test_statistics_cover_wiki_and_diary_together(mem):
    from wikimem.recall.lexical.bm25 import BM25Index
    from wikimem.recall.tokenizer import tokenize

    ref = BM25Index()
    for item in mem.items():
        ref.add((item.file, item.name), tokenize(item.name + "\n" + item.content, use_jieba=False))
    for d in mem.diary.dates():
        for n, e in enumerate(mem.diary.day(d)):
            ref.add((e.date, e.time, n), tokenize(e.time + "\n" + e.content, use_jieba=False))
    expected = {k[:2]: v for k, v in ref.top_k(tokenize("Biscuit the car", use_jieba=False), None)}
    result = MemoryIndex(mem, use_jieba=False).retrieve("Biscuit the car", diary="all", expand_links=False)
    got = {(e.item.file, e.item.name): e.score for e in result.items}
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-12)


def test_a_window_filters_the_diary_candidates(mem):
    index = MemoryIndex(mem, use_jieba=False)
    result = index.retrieve("Biscuit", diary="all", time_range=("2026-06-01", "2026-06-30"))
    assert ("diary", "2026-05-02", "09:30") not in keys(result)
    assert ("diary", "2026-06-10", "18:00") in keys(result) and ("wiki", "pets", "biscuit") in keys(result)
    widened = index.retrieve("Biscuit", diary="all", time_range=("2026-05-01", "2026-05-01"))
    assert widened.time_range_widened and widened.time_range == ("2026-04-30", "2026-05-02")
    assert ("diary", "2026-05-02", "09:30") in keys(widened)
    newest_first = index.retrieve("", diary="all", time_range=("2026-05-01", "2026-05-31"))
    assert keys(newest_first) == [("diary", "2026-05-03", "20:00"), ("diary", "2026-05-02", "09:30")]


def test_appends_are_indexed_incrementally(mem, monkeypatch):
    index = MemoryIndex(mem, use_jieba=False)
    index.retrieve("x", diary="all")
    reads = []
    real_day = mem.diary.day
    monkeypatch.setattr(mem.diary, "day", lambda d: reads.append(d) or real_day(d))
    mem.diary.append("Biscuit stole a sock.", date="2026-06-10", time="07:00")
    result = index.retrieve("sock", diary="all")
    assert keys(result) == [("diary", "2026-06-10", "07:00")]
    assert reads == ["2026-06-10"]  # only the day that changed was read again
    reads.clear()
    index.retrieve("sock", diary="all")
    assert reads == []  # nothing changed: nothing read
    di = index._diary_index
    # keys are stable: the 18:00 entry kept its key although an earlier minute was inserted before it
    assert di.item(("2026-06-10", "18:00", 0)).content == "Biscuit learned to sit!"


def test_same_minute_entries_keep_distinct_keys(mem):
    mem.diary.append("First at nine.", date="2026-07-01", time="09:00")
    mem.diary.append("Second at nine.", date="2026-07-01", time="09:00")
    index = MemoryIndex(mem, use_jieba=False)
    result = index.retrieve("nine", diary="all")
    assert [e.item.content for e in result.items] == ["First at nine.", "Second at nine."]


def test_a_hand_edit_of_a_day_is_seen(mem):
    index = MemoryIndex(mem, use_jieba=False)
    index.retrieve("x", diary="all")
    path = mem.root / "diary" / "2026-05-03.md"
    path.write_text(path.read_text(encoding="utf-8").replace("hospital", "clinic"), encoding="utf-8")
    assert keys(index.retrieve("clinic", diary="all")) == [("diary", "2026-05-03", "20:00")]
    assert keys(index.retrieve("hospital", diary="all")) == []
    (mem.root / "diary" / "2026-05-03.md").unlink()
    assert keys(index.retrieve("clinic", diary="all")) == []


def test_recency_prior_prefers_recent_entries(store):
    today = date.today()
    old, recent = (today - timedelta(days=60)).isoformat(), (today - timedelta(days=1)).isoformat()
    store.diary.append("Walked along the river.", date=old, time="10:00")
    store.diary.append("Walked along the river.", date=recent, time="10:00")
    index = MemoryIndex(store, use_jieba=False)
    plain = index.retrieve("river", diary="all")
    assert [e.item.file for e in plain.items] == [old, recent]  # a tie: by key, oldest first
    prior = index.retrieve("river", diary="all", recency_half_life=7)
    assert [e.item.file for e in prior.items] == [recent, old]
    a, b = prior.items
    assert a.score == pytest.approx(plain.items[1].score * (0.5 + 0.5 * 2 ** (-1 / 7)))
    assert b.score == pytest.approx(plain.items[0].score * (0.5 + 0.5 * 2 ** (-60 / 7)))


def test_a_snapshot_store_without_a_diary_folder_is_read_once(mem):
    class Snapshot:
        def __init__(self, real):
            self.real = real
            self.reads = 0

        def dates(self):
            return self.real.dates()

        def day(self, d):
            self.reads += 1
            return self.real.day(d)

        def window(self, start, end):
            return self.real.window(start, end)

    snap = Snapshot(mem.diary)
    di = diary_index_module.DiaryIndex(snap, use_jieba=False)
    assert di.refresh() is True and len(di) == 3
    assert di.refresh() is False and snap.reads == 3


class Local:
    model = "fake-embed"

    def __init__(self):
        self.texts = []

    def embed(self, texts):
        self.texts += texts
        return [fake_embedding(t, 64) for t in texts]


def test_all_mode_with_fusion_finds_a_paraphrased_event(store, tmp_path):
    store.add("work", "job", "Works at a robotics company.")
    store.diary.append("He said nothing all evening and barely ate.", date="2026-05-02", time="21:00")
    store.diary.append("Went to the seaside with friends.", date="2026-05-04", time="15:00")
    emb = Local()
    index = MemoryIndex(store, use_jieba=False, embedder=emb, vectors_dir=tmp_path / "v")
    result = index.retrieve("was he upset", diary="all")  # no shared word with the entry
    assert result.embedding_used
    assert (result.items[0].item.file, result.items[0].item.name) == ("2026-05-02", "21:00")
    assert result.items[0].cos_score is not None
    emb.texts.clear()
    index.retrieve("the ocean trip", diary="all")
    assert emb.texts == ["the ocean trip"]  # every entry embedded once, ever; only the query now


def test_switching_between_two_windows_embeds_each_entry_once(store, tmp_path):
    """The peer's diary cache: rows accumulate across windows, each entry embedded once, ever."""
    for d in ("2026-07-01", "2026-07-02"):
        for t in ("10:00", "11:00"):
            store.diary.append(f"went to the sea at {t} on {d}", date=d, time=t)
    emb = Local()
    index = MemoryIndex(store, use_jieba=False, embedder=emb, vectors_dir=tmp_path / "v")
    seen = []
    for d in ("2026-07-01", "2026-07-02", "2026-07-01", "2026-07-02"):
        emb.texts.clear()
        assert index.retrieve("sea", time_range=(d, d)).embedding_used
        seen.append([t for t in emb.texts if t != "sea"])
    assert [len(s) for s in seen] == [2, 2, 0, 0]
    from wikimem.vectors.cache import VectorCache

    assert VectorCache(tmp_path / "v" / "diary-vectors").load().rows == 4


def test_diary_neighbours_are_the_entries_next_on_their_day_after_every_change(tmp_path):
    store = MemoryStore(tmp_path)
    for i in range(12):
        store.diary.append(f"entry {i}", date=f"2026-04-0{1 + i % 3}", time=f"10:{i:02d}")
    store.diary.append("same minute", date="2026-04-01", time="10:00")
    index = diary_index_module.DiaryIndex(store.diary, use_jieba=False)

    def expected():
        out = {}
        for day in ("2026-04-01", "2026-04-02", "2026-04-03"):
            keys = [key for key, _ in index.keyed(day, day)]
            for at, key in enumerate(keys):
                out[key] = tuple(keys[i] for i in (at - 1, at + 1) if 0 <= i < len(keys))
        return out

    for change in (None, "append", "drop a middle entry", "drop a day"):
        if change == "append":
            store.diary.append("late", date="2026-04-02", time="09:00")
        elif change == "drop a middle entry":
            path = tmp_path / "diary" / "2026-04-01.md"
            text = path.read_text()
            start = text.index("## 10:03")
            path.write_text(text[:start] + text[text.index("## ", start + 3):])
        elif change == "drop a day":
            (tmp_path / "diary" / "2026-04-03.md").unlink()
        index.refresh()
        want = expected()
        assert want and {key: index.neighbours(key) for key in want} == want, change
    assert index.neighbours(("2026-04-03", "10:02", 0)) == ()  # (its day is gone)
    assert index.neighbours(("2026-04-01", "10:03", 0)) == ()
