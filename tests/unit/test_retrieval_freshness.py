"""The index follows the store: incremental updates, refresh, rebuild, threads."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wikimem.recall.index as retrieval_module
import wikimem.recall.wiki_index as wiki_index_module
from wikimem import MemoryIndex, MemoryStore


class SpyStore:
    """A real MemoryStore seen through the interface MemoryIndex may use, counting reads."""

    def __init__(self, store: MemoryStore, *, forget_changes: bool = False):
        self._store = store
        self.forget_changes = forget_changes
        self.full_reads = 0
        self.file_reads: list[str] = []

    @property
    def root(self):
        return self._store.root

    @property
    def revision(self):
        return self._store.revision

    @property
    def diary(self):
        return self._store.diary

    def files(self):
        return self._store.files()

    def items(self, file=None):
        if file is None:
            self.full_reads += 1
        else:
            self.file_reads.append(file)
        return self._store.items(file)

    def get(self, file, name):
        return self._store.get(file, name)

    def changed_files_since(self, revision):
        return None if self.forget_changes else self._store.changed_files_since(revision)


def ranking(index: MemoryIndex, query: str, **kw):
    return [(e.source, e.item.file, e.item.name, e.item.content, e.score)
            for e in index.retrieve(query, **kw).items]


@pytest.fixture
def store(store) -> MemoryStore:
    s = store
    for n in range(30):
        s.add("notes", f"note-{n:02d}", f"note number {n} about topic{n % 5} and shared words")
    s.add("other", "sea", "the sea is calm")
    return s


def test_writes_are_seen_by_the_next_retrieve_without_a_rebuild(store):
    spy = SpyStore(store)
    index = MemoryIndex(spy, use_jieba=False)
    assert index.retrieve("zebra").items == []
    assert spy.full_reads == 1  # the first build
    store.add("notes", "zebra", "a zebra crossing")
    assert [e.item.name for e in index.retrieve("zebra").items] == ["zebra"]
    store.add("notes", "zebra", "now about lions")
    assert index.retrieve("zebra").items[0].item.name == "zebra"  # its name still says zebra
    assert index.retrieve("lions").items[0].item.content == "now about lions"
    store.remove("notes", "zebra")
    assert index.retrieve("zebra lions").items == []
    assert spy.full_reads == 1  # never rebuilt
    assert set(spy.file_reads) == {"notes"}  # only the changed file was re-read


def test_an_update_retokenises_only_the_changed_item(store, monkeypatch):
    index = MemoryIndex(store, use_jieba=False)
    index.retrieve("sea")
    calls = []
    real = retrieval_module.tokenize
    for module in (retrieval_module, wiki_index_module):  # the query's terms, the items' terms
        monkeypatch.setattr(module, "tokenize", lambda text, **kw: (calls.append(text), real(text, **kw))[1])
    store.add("notes", "note-07", "rewritten note about whales")
    result = index.retrieve("whales")
    assert [e.item.name for e in result.items] == ["note-07"]
    # the query, and the one changed item of a 30-item file: nothing else
    assert calls == ["whales", "note-07\nrewritten note about whales"]


def test_provenance_only_changes_keep_terms_and_show_new_metadata(store):
    index = MemoryIndex(store, use_jieba=False)
    index.retrieve("calm")
    store.add("other", "sea", "the sea is calm", owner="user:x", source_conv="c1")
    hit = index.retrieve("calm").items[0]
    assert (hit.item.owner, hit.item.source_conv) == ("user:x", "c1")


def test_removing_a_whole_file(store):
    index = MemoryIndex(store, use_jieba=False)
    assert index.retrieve("calm").items
    store.remove("other", "sea")
    assert index.retrieve("calm").items == []
    assert len(index) == 30


def test_outside_edits_need_refresh_or_rebuild(store):
    index = MemoryIndex(store, use_jieba=False)
    assert index.retrieve("penguin").items == []
    path = Path(store.root) / "wiki" / "other.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n## penguin\n\nan emperor penguin\n", encoding="utf-8")
    assert index.retrieve("penguin").items == []  # the revision did not move: not seen yet
    index.refresh(["other"])
    assert [e.item.name for e in index.retrieve("penguin").items] == ["penguin"]
    (Path(store.root) / "wiki" / "birds.md").write_text("# birds\n\n## owl\n\nan owl at night\n", encoding="utf-8")
    index.rebuild()
    assert [e.item.name for e in index.retrieve("owl").items] == ["owl"]


def test_refresh_of_an_invalid_name_changes_nothing(store):
    index = MemoryIndex(store, use_jieba=False)
    before = ranking(index, "sea note")
    (Path(store.root) / "wiki" / "other.md").write_text("# other\n\n## sea\n\nchanged text\n", encoding="utf-8")
    with pytest.raises(ValueError):
        index.refresh(["other", "zz/../escape"])  # sorts after "other"
    assert ranking(index, "sea note") == before  # "other" was not applied either


def test_refresh_of_unknown_files_is_harmless(store):
    index = MemoryIndex(store, use_jieba=False)
    before = ranking(index, "sea note")
    index.refresh(["no-such-file"])
    index.refresh("other")  # a single name is accepted too
    assert ranking(index, "sea note") == before


def test_unknown_change_history_means_a_full_rebuild(store):
    spy = SpyStore(store, forget_changes=True)
    index = MemoryIndex(spy, use_jieba=False)
    index.retrieve("sea")
    store.add("notes", "whale", "a whale")
    assert [e.item.name for e in index.retrieve("whale").items] == ["whale"]
    assert spy.full_reads == 2


def test_diary_writes_do_not_touch_the_wiki_index(store):
    spy = SpyStore(store)
    index = MemoryIndex(spy, use_jieba=False)
    index.retrieve("sea")
    store.diary.append("went to the sea", date="2026-07-21", time="10:00")
    index.retrieve("sea")
    assert spy.full_reads == 1 and spy.file_reads == []


FILES = ["a", "b", "c"]
NAMES = ["n0", "n1", "n2", "n3"]
WORDS = ["sun", "sea", "tea", "cat", "dog", "run"]
QUERIES = ["sea", "sun tea", "cat dog run", "sea sea cat"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(
    st.sampled_from(["add", "add", "remove", "retrieve"]),
    st.sampled_from(FILES), st.sampled_from(NAMES),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
), min_size=1, max_size=25))
def test_incremental_index_ranks_exactly_like_a_fresh_one(ops):
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(tmp)
        index = MemoryIndex(store, use_jieba=False)
        for op, file, name, words in ops:
            if op == "add":
                store.add(file, name, " ".join(words) + f" [[{FILES[len(words) % 3]}:n0]]")
            elif op == "remove":
                store.remove(file, name)
            else:
                index.retrieve(" ".join(words))  # the index catches up here, incrementally
        fresh = MemoryIndex(store, use_jieba=False)
        for query in QUERIES:
            for kw in ({}, {"limit": 2}, {"budget_tokens": 8, "explain": True}):
                assert ranking(index, query, **kw) == ranking(fresh, query, **kw)
        assert len(index) == len(fresh)


def test_concurrent_retrieves_during_writes(tmp_path):
    store = MemoryStore(tmp_path)
    for n in range(50):
        store.add("base", f"item-{n}", f"alpha beta item {n}")
    index = MemoryIndex(store, use_jieba=False)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                result = index.retrieve("alpha gamma", limit=20)
                scores = [e.score for e in result.items if e.source == "hit"]
                assert scores == sorted(scores, reverse=True)
                for e in result.items:
                    # every hit really holds a query term: the index was consistent
                    assert e.source == "link" or e.matched_terms
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for n in range(60):
        store.add("live", f"w-{n % 20}", f"gamma {n} delta")
        if n % 7 == 0:
            store.remove("base", f"item-{n}")
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    fresh = MemoryIndex(store, use_jieba=False)
    assert ranking(index, "alpha gamma", limit=50) == ranking(fresh, "alpha gamma", limit=50)
