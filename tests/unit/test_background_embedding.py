"""Background embedding: a retrieve never embeds memory; it scores with what is embedded and says so."""

from __future__ import annotations

import threading

import pytest
from fakes import fake_embedding

from wikimem import MemoryIndex, MemoryStore
from wikimem.vectors.worker import EmbeddingWorker

DIM = 64


class Gated:
    """An in-process embedder that blocks passages until the test opens the gate; queries never block."""

    model = "fake-embed"

    def __init__(self):
        self.gate = threading.Event()
        self.passages: list[str] = []
        self.queries: list[str] = []

    def embed(self, texts):
        assert self.gate.wait(20), "test gate never opened"
        self.passages += texts
        return [fake_embedding(t, DIM) for t in texts]

    def embed_query(self, texts):
        self.queries += texts
        return [fake_embedding(t, DIM) for t in texts]


@pytest.fixture
def worker():
    w = EmbeddingWorker(name="test-embed")
    yield w
    w.stop()


@pytest.fixture
def mem(tmp_path) -> MemoryStore:
    s = MemoryStore(tmp_path / "m")
    s.add("mood", "that-evening", "他一句话没说，饭也没怎么吃。")
    s.add("preferences", "likes-the-sea", "喜欢海边，想去海边玩。")
    s.add("work", "job", "在一家机器人公司上班。")
    return s


def retrieve_in_thread(index, *args, **kwargs):
    """Run retrieve in a thread and report whether it returned while the model was blocked."""
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("result", index.retrieve(*args, **kwargs)))
    t.start()
    t.join(10)
    return box.get("result"), not t.is_alive()


def test_a_retrieve_never_waits_for_memory_to_be_embedded(mem, worker):
    emb = Gated()
    index = MemoryIndex(mem, use_jieba=False, embedder=emb, embed_in_background=True, worker=worker)
    result, returned = retrieve_in_thread(index, "海边", explain=True)
    assert returned  # the model is blocked, the query was answered anyway
    assert result.embedding_used is False  # nothing embedded yet: BM25
    assert [e.item.name for e in result.items][:1] == ["likes-the-sea"]
    assert result.vectors == {"embedded": 0, "total": 3}
    emb.gate.set()
    assert worker.wait_idle(10)
    assert index.vector_counts() == (3, 3)
    after = index.retrieve("那天我是不是很沮丧", explain=True)
    assert after.embedding_used and after.items[0].item.name == "that-evening"
    assert after.vectors == {"embedded": 3, "total": 3}


def test_a_new_item_is_ranked_by_bm25_until_its_vector_exists(mem, worker):
    emb = Gated()
    emb.gate.set()
    index = MemoryIndex(mem, use_jieba=False, embedder=emb, embed_in_background=True, worker=worker)
    assert index.wait_for_vectors(10)
    emb.gate.clear()
    mem.add("preferences", "coffee", "只喝手冲咖啡。")  # the write itself never touches the model
    result, returned = retrieve_in_thread(index, "咖啡", explain=True)
    assert returned and result.embedding_used  # the old vectors still score
    top = result.items[0]
    assert top.item.name == "coffee" and top.cos_score is None and top.bm25_score > 0
    assert result.vectors == {"embedded": 3, "total": 4}
    emb.gate.set()
    assert index.wait_for_vectors(10)
    assert index.retrieve("咖啡").items[0].cos_score is not None
    assert emb.passages.count("coffee\n只喝手冲咖啡。") == 1


def test_a_failing_model_is_retried_later_not_on_every_query(mem, worker, monkeypatch):
    import wikimem.recall.semantic as retrieval_vectors

    class Down:
        model = "down"
        calls = 0

        def embed(self, texts):
            Down.calls += 1
            raise RuntimeError("model down")

    index = MemoryIndex(mem, use_jieba=False, embedder=Down(), embed_in_background=True, worker=worker)
    for _ in range(5):
        assert index.retrieve("海边").embedding_used is False
        worker.wait_idle(10)
    assert Down.calls == 1  # one failed step; the next waits EMBED_RETRY_SECONDS
    monkeypatch.setattr(retrieval_vectors, "EMBED_RETRY_SECONDS", 0.0)
    index.vectors.retry_at = 0.0
    index.retrieve("海边")
    worker.wait_idle(10)
    assert Down.calls == 2


def test_vector_counts_without_an_embedder(mem):
    assert MemoryIndex(mem, use_jieba=False).vector_counts() == (0, 3)


def test_the_foreground_mode_embeds_before_answering(mem):
    emb = Gated()
    emb.gate.set()
    index = MemoryIndex(mem, use_jieba=False, embedder=emb)
    result = index.retrieve("海边", explain=True)
    assert result.embedding_used and result.vectors == {"embedded": 3, "total": 3}
    assert result.to_dict()["vectors"] == {"embedded": 3, "total": 3}


# -- the worker -------------------------------------------------------------------


def test_jobs_with_more_to_do_take_turns(worker):
    order = []
    left = {"a": 3, "b": 2}

    def job(key):
        def run():
            order.append(key)
            left[key] -= 1
            return left[key] > 0
        return run

    gate = threading.Event()
    worker.submit("gate", lambda: gate.wait(10) and False)
    worker.submit("a", job("a"))
    worker.submit("b", job("b"))
    worker.submit("a", job("a"))  # already queued: not twice
    gate.set()
    assert worker.wait_idle(10)
    assert order == ["a", "b", "a", "b", "a"]


def test_a_job_submitted_while_running_runs_again(worker):
    runs = []
    started, release = threading.Event(), threading.Event()

    def job():
        runs.append(1)
        if len(runs) == 1:
            started.set()
            release.wait(10)
        return False

    worker.submit("k", job)
    assert started.wait(10)
    worker.submit("k", job)
    release.set()
    assert worker.wait_idle(10)
    assert len(runs) == 2


def test_a_failing_job_does_not_kill_the_worker(worker):
    done = threading.Event()
    worker.submit("bad", lambda: 1 / 0)
    worker.submit("good", lambda: done.set() or False)
    assert done.wait(10)


def test_one_process_at_a_time_embeds_a_folder_in_the_background(mem, tmp_path):
    """Two indexes on one vectors folder (two gunicorn workers): the new texts are embedded once."""
    first_worker, second_worker = EmbeddingWorker(name="w1"), EmbeddingWorker(name="w2")
    try:
        emb_a, emb_b = Gated(), Gated()
        emb_b.gate.set()
        a = MemoryIndex(mem, use_jieba=False, embedder=emb_a, embed_in_background=True, worker=first_worker,
                        vectors_dir=tmp_path / "shared")
        b = MemoryIndex(mem, use_jieba=False, embedder=emb_b, embed_in_background=True, worker=second_worker,
                        vectors_dir=tmp_path / "shared")
        a.vector_counts()  # a's step starts and blocks inside the model, holding the claim
        deadline = threading.Event()
        while not first_worker.idle() and not emb_a.passages and not deadline.wait(0.05):
            if (search := a.vectors.search()) is not None and search._claim.path.exists():
                break
        b.vector_counts()
        assert second_worker.wait_idle(10)
        assert emb_b.passages == []  # b saw the folder claimed and left it to a
        emb_a.gate.set()
        assert first_worker.wait_idle(10)
        assert sorted(emb_a.passages) == sorted(f"{i.name}\n{i.content}" for i in mem.items())
        b.vectors.retry_at = 0.0
        assert b.wait_for_vectors(10)  # b picks up a's vectors from the folder, embedding nothing
        assert emb_b.passages == []
    finally:
        first_worker.stop()
        second_worker.stop()


def test_window_entries_are_embedded_in_the_background_too(mem, worker):
    mem.diary.append("今天很难过，一直不说话。", date="2026-07-21", time="20:00")
    emb = Gated()
    emb.gate.set()
    index = MemoryIndex(mem, use_jieba=False, embedder=emb, embed_in_background=True, worker=worker)
    assert index.wait_for_vectors(10)
    window = ("2026-07-21", "2026-07-21")
    first = index.retrieve("那天我是不是很沮丧", time_range=window)
    diary = [e for e in first.items if e.kind == "diary"]
    assert first.embedding_used and diary and diary[0].cos_score is None  # not embedded yet: BM25 for it
    assert worker.wait_idle(10)
    again = index.retrieve("那天我是不是很沮丧", time_range=window)
    assert [e.cos_score is not None for e in again.items if e.kind == "diary"] == [True]
    assert emb.passages.count("20:00\n今天很难过，一直不说话。") == 1
