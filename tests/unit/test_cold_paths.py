"""No cold stalls: the diary index is built in the background and a large memory is embedded in the background.

A query never waits longer than :data:`~wikimem.recall.index.DIARY_WAIT` for the diary index's first
build (it answers with the diary through its time window, and says so), and a foreground embedder never
embeds more than :data:`~wikimem.recall.semantic.FOREGROUND_EMBED_MAX` texts on a query's path.
"""

from __future__ import annotations

import threading
import time

from fakes import fake_embedding

from wikimem import MemoryIndex, MemoryStore
from wikimem.recall import diary_index as diary_index_module
from wikimem.recall.semantic import FOREGROUND_EMBED_MAX


def _diary(tmp_path, days: int = 3) -> MemoryStore:
    store = MemoryStore(tmp_path / "m")
    store.add("prefs", "tea", "likes green tea")
    for d in range(days):
        store.diary.append(f"walked the puppy on day {d}", date=f"2026-07-{d + 1:02d}", time="09:00")
    return store


def test_a_query_never_waits_for_the_diary_index_and_says_so(tmp_path, monkeypatch):
    store = _diary(tmp_path)
    gate = threading.Event()
    real = diary_index_module.DiaryIndex.refresh

    def slow_refresh(self):
        assert gate.wait(20), "test gate never opened"
        return real(self)

    monkeypatch.setattr(diary_index_module.DiaryIndex, "refresh", slow_refresh)
    index = MemoryIndex(store, diary="all", diary_wait=0.05)
    t = time.perf_counter()
    first = index.retrieve("puppy")
    assert time.perf_counter() - t < 2
    assert first.diary_index == "building" and first.to_dict()["diary_index"] == "building"
    assert [i.item.name for i in first.items] == []  # the diary is not ranked before its index exists
    windowed = index.retrieve("puppy", time_range=("2026-07-02", "2026-07-02"))
    assert [i.item.file for i in windowed.items] == ["2026-07-02"]  # a window still reads its days
    gate.set()
    assert index.diary_ready(10)
    done = index.retrieve("puppy")
    assert done.diary_index is None and "diary_index" not in done.to_dict()
    assert len([i for i in done.items if i.item.file.startswith("2026-07")]) == 3


def test_the_diary_index_follows_appends_once_built(tmp_path):
    store = _diary(tmp_path)
    index = MemoryIndex(store, diary="all")  # (the library waits for the build)
    assert index.retrieve("puppy").diary_index is None
    store.diary.append("the puppy met a heron", date="2026-07-09", time="10:00")
    assert "2026-07-09" in [i.item.file for i in index.retrieve("heron").items]


def test_a_failed_build_is_tried_again_later(tmp_path, monkeypatch):
    store = _diary(tmp_path)
    calls = []

    def broken(self):
        calls.append(1)
        raise OSError("disk gone")

    monkeypatch.setattr(diary_index_module.DiaryIndex, "refresh", broken)
    index = MemoryIndex(store, diary="all", diary_wait=1)
    assert index.retrieve("puppy").diary_index == "building"  # never an error
    assert index.retrieve("puppy").diary_index == "building"
    assert len(calls) == 1  # not hammered: the next try waits for the retry delay


class Counting:
    """A foreground embedder that counts the memory texts it embeds."""

    model = "fake-count"

    def __init__(self):
        self.passages = 0
        self.lock = threading.Lock()

    def embed(self, texts):
        with self.lock:
            self.passages += len(texts)
        return [fake_embedding(t, 32) for t in texts]

    def embed_query(self, texts):
        return [fake_embedding(t, 32) for t in texts]


def test_a_foreground_query_embeds_at_most_one_batch_of_a_large_memory(tmp_path):
    from wikimem.vectors.worker import EmbeddingWorker

    store = MemoryStore(tmp_path / "m")
    with store.batch():
        for i in range(FOREGROUND_EMBED_MAX * 3):
            store.add("notes", f"n{i}", f"note number {i} about the sea")
    embedder = Counting()
    worker = EmbeddingWorker(name="test-cold")
    try:
        index = MemoryIndex(store, embedder=embedder, vectors_dir=tmp_path / "v", worker=worker)
        result = index.retrieve("sea")
        assert embedder.passages <= 2 * FOREGROUND_EMBED_MAX  # (items and their neighbour context rows)
        assert result.items  # answered, with what exists
        assert index.wait_for_vectors(30)  # the rest came from the background worker
        assert index.vector_counts() == (FOREGROUND_EMBED_MAX * 3, FOREGROUND_EMBED_MAX * 3)
    finally:
        worker.stop()
