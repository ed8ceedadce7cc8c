"""wikimem.vectors: the HTTP embedder, the cache on disk, the two search tiers, EmbeddingSearch."""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from fakes import FakeOpenAI, fake_embedding
from parallel import run_threads

from wikimem import RecallItem
from wikimem.vectors import (
    EmbeddingError,
    EmbeddingSearch,
    HttpEmbedder,
    MemmapVectorIndex,
    VectorCache,
    VectorMismatch,
    content_hash,
    embed_text,
)

DIM = 64


@pytest.fixture
def fake():
    with FakeOpenAI(dim=DIM) as server:
        yield server


@pytest.fixture
def embedder(fake):
    return HttpEmbedder(fake.url, "fake-embed")


class LocalEmbedder:
    """An in-process embedder (same vectors as the fake server), counting what it embeds."""

    def __init__(self, model="fake-embed", dim=DIM):
        self.model, self.dim = model, dim
        self.texts: list[str] = []
        self.lock = threading.Lock()

    def embed(self, texts):
        with self.lock:
            self.texts.extend(texts)
        return [fake_embedding(t, self.dim, self.model) for t in texts]


def entries(n, prefix="item"):
    return [("notes", f"{prefix}-{i}", embed_text(f"{prefix}-{i}", f"内容 {i} about topic {i % 7}")) for i in range(n)]


def header(root: Path) -> dict:
    return json.loads((root / "vectors.keys.jsonl").read_text(encoding="utf-8").splitlines()[0])


def npy_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("vectors-*.npy"))


# -- content hash ------------------------------------------------------------


def test_content_hash_is_sha256_of_the_embedded_text():
    text = embed_text("likes-the-sea", "喜欢海边。")
    assert text == "likes-the-sea\n喜欢海边。"
    assert content_hash(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- HttpEmbedder ------------------------------------------------------------


def test_http_embedder_reorders_by_index(fake, embedder):
    assert fake.shuffle  # the fake answers in reverse index order
    texts = ["一", "二 two", "three 三"]
    got = embedder.embed(texts)
    assert np.allclose(got, [fake_embedding(t, DIM) for t in texts])
    (req,) = fake.requests
    assert req.path == "/v1/embeddings"
    assert req.body["model"] == "fake-embed" and req.body["input"] == texts


def test_http_embedder_without_v1_and_with_a_key(fake):
    fake.api_key = "sk-e"
    got = HttpEmbedder(fake.root_url, "fake-embed", api_key="sk-e").embed(["x"])
    assert np.allclose(got[0], fake_embedding("x", DIM))
    assert fake.requests[0].path == "/embeddings"
    assert fake.requests[0].headers["Authorization"] == "Bearer sk-e"


def test_http_embedder_empty_input_makes_no_request(fake, embedder):
    assert embedder.embed([]) == []
    assert fake.requests == []


def test_http_embedder_records_the_served_model(fake, embedder):
    fake.served_model = "fake-embed-2026-01"
    embedder.embed(["x"])
    assert embedder.served_model == "fake-embed-2026-01"


@pytest.mark.parametrize("extra,match", [(1, "returned 4 vectors for 3 inputs"),
                                         (-1, "returned 2 vectors for 3 inputs")])
def test_http_embedder_wrong_count(fake, embedder, extra, match):
    fake.wrong_count = extra
    with pytest.raises(EmbeddingError, match=match):
        embedder.embed(["a", "b", "c"])


def _answer(data):
    return lambda path, body: (200, {"object": "list", "data": data, "model": "m"})


@pytest.mark.parametrize("data,match", [
    ([{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}], "repeated index"),
    ([{"index": 0, "embedding": [1.0]}, {"index": 2, "embedding": [1.0]}], "bad or repeated index"),
    ([{"index": "0", "embedding": [1.0]}, {"index": 1, "embedding": [1.0]}], "bad or repeated index"),
    ([{"embedding": [1.0]}, {"index": 1, "embedding": [1.0]}], "bad or repeated index"),
    ([{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0]}], "different lengths"),
    ([{"index": 0, "embedding": []}, {"index": 1, "embedding": []}], "finite numbers"),
    ([{"index": 0, "embedding": ["a"]}, {"index": 1, "embedding": [1.0]}], "finite numbers"),
    ([{"index": 0, "embedding": [float("nan")]}, {"index": 1, "embedding": [1.0]}], "finite numbers"),
    ([{"index": 0, "embedding": [True]}, {"index": 1, "embedding": [1.0]}], "finite numbers"),
    ([{"index": 0, "embedding": "%%%"}, {"index": 1, "embedding": [1.0]}], "base64"),
    ([{"index": 0, "embedding": None}, {"index": 1, "embedding": [1.0]}], "finite numbers"),
    ([1, 2], "bad or repeated index"),
])
def test_http_embedder_rejects_malformed_data(fake, embedder, data, match):
    fake.respond_with = _answer(data)
    with pytest.raises(EmbeddingError, match=match):
        embedder.embed(["a", "b"])


@pytest.mark.parametrize("payload", [{"object": "list"}, {"data": "x"}, [], {"data": None}])
def test_http_embedder_rejects_answers_without_data(fake, embedder, payload):
    fake.respond_with = lambda path, body: (200, payload)
    with pytest.raises(EmbeddingError, match="'data' list"):
        embedder.embed(["a"])


def test_http_embedder_accepts_base64_vectors(fake, embedder):
    import base64

    vec = np.array([0.5, -1.25, 2.0], dtype="<f4")
    fake.respond_with = _answer([{"index": 0, "embedding": base64.b64encode(vec.tobytes()).decode()}])
    assert embedder.embed(["a"]) == [[0.5, -1.25, 2.0]]


@pytest.mark.parametrize("knob,match", [
    (("fail_status", 503), "HTTP 503"),
    (("garbage", True), "not JSON"),
    (("delay", 5.0), "timed out"),
])
def test_http_embedder_failures(fake, knob, match):
    setattr(fake, *knob)
    with pytest.raises(EmbeddingError, match=match):
        HttpEmbedder(fake.url, "fake-embed", timeout=0.3).embed(["a"])


@pytest.mark.parametrize("texts", ["one string", [1, 2], None])
def test_http_embedder_input_must_be_a_list_of_strings(embedder, texts):
    with pytest.raises(ValueError):
        embedder.embed(texts)


def test_http_embedder_constructor_checks():
    for kwargs in ({"base_url": "localhost:1", "model": "m"}, {"base_url": "http://x", "model": " "},
                   {"base_url": "http://x", "model": "m", "timeout": 0}):
        with pytest.raises(ValueError):
            HttpEmbedder(**kwargs)
    assert "secret" not in repr(HttpEmbedder("http://x/v1", "m", api_key="secret"))


# -- VectorCache ---------------------------------------------------------------


def test_sync_writes_keys_and_matrix_in_order(tmp_path, embedder):
    cache = VectorCache(tmp_path)
    es = entries(5)
    got = cache.sync(es, embedder)
    assert header(tmp_path) == {"vectors_file": "vectors-000001.npy", "model": "fake-embed", "dim": DIM}
    assert got.keys == [(f, n, content_hash(t)) for f, n, t in es]
    loaded = cache.load()
    assert loaded.keys == got.keys and loaded.model == "fake-embed" and loaded.dim == DIM
    assert isinstance(loaded.matrix, np.memmap)
    assert np.allclose(loaded.matrix, [fake_embedding(t, DIM) for _, _, t in es])


def test_sync_accepts_recall_items(tmp_path, embedder):
    item = RecallItem("preferences", "likes-the-sea", "喜欢海边。")
    got = VectorCache(tmp_path).sync([item], embedder)
    assert got.keys == [("preferences", "likes-the-sea", content_hash("likes-the-sea\n喜欢海边。"))]


def test_no_api_call_and_no_write_when_nothing_changed(tmp_path, fake, embedder):
    cache = VectorCache(tmp_path)
    cache.sync(entries(5), embedder)
    calls, before = fake.embed_calls, (tmp_path / "vectors.keys.jsonl").stat().st_mtime_ns
    again = VectorCache(tmp_path).sync(entries(5), embedder)  # a fresh process: reads from disk
    assert fake.embed_calls == calls
    assert (tmp_path / "vectors.keys.jsonl").stat().st_mtime_ns == before
    assert npy_files(tmp_path) == ["vectors-000001.npy"] and again.vectors_file == "vectors-000001.npy"


def test_exactly_the_changed_rows_are_embedded(tmp_path, fake, embedder):
    cache = VectorCache(tmp_path)
    es = entries(6)
    cache.sync(es, embedder)
    fake.reset_records()
    changed = ("notes", "item-2", embed_text("item-2", "完全不同的内容"))
    added = ("notes", "new", embed_text("new", "新的一条"))
    new = [es[0], es[1], changed, es[3], es[5], added]  # item-4 removed
    got = cache.sync(new, embedder)
    assert fake.embedded_texts == [changed[2], added[2]]
    assert got.keys == [(f, n, content_hash(t)) for f, n, t in new]
    assert np.allclose(got.matrix, [fake_embedding(t, DIM) for _, _, t in new])


def test_reorder_and_rename_with_same_text_cost_nothing(tmp_path, fake):
    emb = LocalEmbedder()
    cache = VectorCache(tmp_path)
    es = entries(4)
    cache.sync(es, emb)
    emb.texts.clear()
    moved = [("other", n, t) for f, n, t in reversed(es)]  # the text (name + content) is unchanged
    got = cache.sync(moved, emb)
    assert emb.texts == []
    assert [k[:2] for k in got.keys] == [("other", n) for _, n, _ in reversed(es)]
    assert np.allclose(got.matrix, [fake_embedding(t, DIM) for _, _, t in moved])


def test_duplicate_texts_are_embedded_once(tmp_path):
    emb = LocalEmbedder()
    same = embed_text("x", "同一段")
    got = VectorCache(tmp_path).sync([("a", "x", same), ("b", "x", same)], emb)
    assert emb.texts == [same]
    assert got.rows == 2 and np.allclose(got.matrix[0], got.matrix[1])


def test_batch_size_splits_requests(tmp_path, fake, embedder):
    VectorCache(tmp_path).sync(entries(10), embedder, batch_size=3)
    assert [len(b) for b in fake.embed_batches] == [3, 3, 3, 1]
    with pytest.raises(ValueError):
        VectorCache(tmp_path / "b").sync(entries(2), embedder, batch_size=0)


def test_new_versions_sweep_the_old(tmp_path):
    emb, cache = LocalEmbedder(), VectorCache(tmp_path)
    for n in (3, 4, 5):
        cache.sync(entries(n), emb)
    assert npy_files(tmp_path) == ["vectors-000003.npy"]
    assert header(tmp_path)["vectors_file"] == "vectors-000003.npy"


def test_an_old_version_that_cannot_be_removed_is_left_behind(tmp_path):
    emb, cache = LocalEmbedder(), VectorCache(tmp_path)
    cache.sync(entries(2), emb)
    (tmp_path / "vectors-000007.npy").mkdir()  # unlink fails on it
    got = cache.sync(entries(3), emb)
    assert got.vectors_file == "vectors-000008.npy"
    assert VectorCache(tmp_path).load().rows == 3


def test_removing_every_entry_keeps_an_empty_cache(tmp_path):
    emb, cache = LocalEmbedder(), VectorCache(tmp_path)
    cache.sync(entries(2), emb)
    got = cache.sync([], emb)
    assert got.rows == 0
    loaded = VectorCache(tmp_path).load()
    assert loaded.rows == 0 and loaded.dim == DIM


def test_nothing_to_cache_writes_nothing(tmp_path):
    got = VectorCache(tmp_path / "v").sync([], LocalEmbedder())
    assert got.rows == 0 and not (tmp_path / "v").exists()


def test_legacy_header_is_accepted_then_upgraded_on_the_next_write(tmp_path):
    emb, cache = LocalEmbedder(), VectorCache(tmp_path)
    es = entries(3)
    cache.sync(es, emb)
    keys_path = tmp_path / "vectors.keys.jsonl"
    lines = keys_path.read_text(encoding="utf-8").splitlines()
    keys_path.write_text("\n".join([json.dumps({"vectors_file": "vectors-000001.npy"})] + lines[1:]) + "\n",
                         encoding="utf-8")
    fresh = VectorCache(tmp_path)
    legacy = fresh.load()
    assert (legacy.model, legacy.dim, legacy.rows) == (None, None, 3)
    emb.texts.clear()
    fresh.sync(es, LocalEmbedder(model="any-model"))  # unchanged: no write, no mismatch
    assert "model" not in header(tmp_path)
    fresh.sync(es + entries(1, "extra"), emb)
    assert emb.texts == [entries(1, "extra")[0][2]]
    assert header(tmp_path) == {"vectors_file": "vectors-000002.npy", "model": "fake-embed", "dim": DIM}


# -- peer compatibility: (keys, matrix) pairs, no-cache and legacy headers (issue 23 item 7) --


class Unnamed:
    """An embedder without a model name (the upstream tests' stub)."""

    def embed(self, texts):
        return [fake_embedding(t, DIM) for t in texts]


def test_load_and_sync_return_a_keys_matrix_pair(tmp_path):
    cache, emb = VectorCache(tmp_path), LocalEmbedder()
    es = [(("c", "one"), "咖啡"), (("c", "two"), "海边")]
    keys, matrix = cache.sync(es, emb)
    assert [k["name"] for k in keys] == ["one", "two"]  # readable by field, like the upstream key dicts
    assert [k["category"] for k in keys] == ["c", "c"] and keys[0]["hash"] == content_hash("咖啡")
    assert matrix.shape == (2, DIM)
    loaded_keys, loaded_matrix = VectorCache(tmp_path).load()
    assert loaded_keys == keys and np.allclose(loaded_matrix, matrix)
    keys2, matrix2 = cache.sync(es[:1], emb)
    assert len(keys2) == 1 and matrix2.shape[0] == 1
    got = cache.load()  # the attributes callers use are still there
    assert (got.keys, got.rows, got.model, got.dim) == (keys2, 1, "fake-embed", DIM)
    assert got.keys[0] == ("c", "one", content_hash("咖啡")) and got.keys[0].file == "c"
    with pytest.raises(KeyError):
        got.keys[0]["text"]


def test_no_cache_loads_as_an_empty_pair(tmp_path):
    cache = VectorCache(tmp_path / "absent")
    assert cache.load() == ([], None)
    keys, matrix = cache.load()
    assert (keys, matrix) == ([], None) and cache.header() == {}


def test_a_corrupt_key_line_is_no_cache_for_both_readers(tmp_path):
    cache = VectorCache(tmp_path)
    cache.sync([(("wiki", "a"), "hello"), (("wiki", "b"), "world")], Unnamed())
    lines = cache.keys_path.read_text(encoding="utf-8").splitlines()
    lines[2] = "{corrupt"  # a broken key row, the header line and the .npy intact
    cache.keys_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cache.load() == ([], None)
    assert VectorCache(tmp_path).header() == {}


def test_header_leaves_out_what_a_legacy_file_lacks_until_a_write_stamps_it(tmp_path):
    es = entries(3)
    VectorCache(tmp_path).sync(es, Unnamed())
    assert header(tmp_path) == {"vectors_file": "vectors-000001.npy", "dim": DIM}  # no "model": null
    cache = VectorCache(tmp_path)
    assert cache.header() == {"vectors_file": "vectors-000001.npy", "dim": DIM}
    keys_path = tmp_path / "vectors.keys.jsonl"
    lines = keys_path.read_text(encoding="utf-8").splitlines()
    legacy = {"vectors_file": "vectors-000001.npy"}
    keys_path.write_text("\n".join([json.dumps(legacy)] + lines[1:]) + "\n", encoding="utf-8")
    assert VectorCache(tmp_path).header() == legacy
    named = LocalEmbedder(model="bge-m3")
    VectorCache(tmp_path).sync(es, named)  # unlabelled is "unknown", not "wrong"; unchanged: no write
    assert named.texts == [] and VectorCache(tmp_path).header() == legacy
    VectorCache(tmp_path).sync(es + entries(1, "extra"), named)  # the next write stamps both fields
    assert VectorCache(tmp_path).header() == {"vectors_file": "vectors-000002.npy", "model": "bge-m3", "dim": DIM}
    assert named.texts == [entries(1, "extra")[0][2]]  # and re-embeds nothing else


def test_a_header_with_null_fields_reads_as_lacking_them(tmp_path):
    VectorCache(tmp_path).sync(entries(2), LocalEmbedder())
    keys_path = tmp_path / "vectors.keys.jsonl"
    lines = keys_path.read_text(encoding="utf-8").splitlines()
    head = {"vectors_file": "vectors-000001.npy", "model": None, "dim": None}
    keys_path.write_text("\n".join([json.dumps(head)] + lines[1:]) + "\n", encoding="utf-8")
    assert VectorCache(tmp_path).header() == {"vectors_file": "vectors-000001.npy"}


def _tear(root: Path, how: str) -> None:
    keys = root / "vectors.keys.jsonl"
    lines = keys.read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    if how == "no matrix":
        (root / head["vectors_file"]).unlink()
    elif how == "row count":
        keys.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    elif how == "dim in header":
        keys.write_text("\n".join([json.dumps({**head, "dim": DIM + 1})] + lines[1:]) + "\n", encoding="utf-8")
    elif how == "garbage keys":
        keys.write_text("{not json\n", encoding="utf-8")
    elif how == "bad key row":
        keys.write_text("\n".join(lines[:1] + ['{"file": 1}'] + lines[2:]) + "\n", encoding="utf-8")
    elif how == "path in header":
        keys.write_text("\n".join([json.dumps({**head, "vectors_file": "../vectors-000001.npy"})] + lines[1:]) + "\n",
                        encoding="utf-8")
    elif how == "empty keys":
        keys.write_text("", encoding="utf-8")
    elif how == "corrupt matrix":
        (root / head["vectors_file"]).write_bytes(b"\x93NUMPY garbage")
    elif how == "float64 matrix":
        np.save(root / head["vectors_file"], np.zeros((len(lines) - 1, DIM)))
    elif how == "1-d matrix":
        np.save(root / head["vectors_file"], np.zeros(len(lines) - 1, np.float32))


TEARS = ["no matrix", "row count", "dim in header", "garbage keys", "bad key row", "path in header",
         "empty keys", "corrupt matrix", "float64 matrix", "1-d matrix"]


@pytest.mark.parametrize("how", TEARS)
def test_torn_or_corrupt_state_is_no_cache_and_sync_rebuilds(tmp_path, how):
    emb = LocalEmbedder()
    es = entries(3)
    VectorCache(tmp_path).sync(es, emb)
    _tear(tmp_path, how)
    cache = VectorCache(tmp_path)
    assert cache.load() == ([], None)
    emb.texts.clear()
    got = cache.sync(es, emb)
    assert sorted(emb.texts) == sorted(t for _, _, t in es)
    assert np.allclose(got.matrix, [fake_embedding(t, DIM) for _, _, t in es])
    assert VectorCache(tmp_path).load().rows == 3


def test_model_mismatch_raises_without_calling_or_writing(tmp_path, fake):
    VectorCache(tmp_path).sync(entries(3), HttpEmbedder(fake.url, "model-a"))
    fake.reset_records()
    before = (tmp_path / "vectors.keys.jsonl").read_bytes()
    with pytest.raises(VectorMismatch, match="model-a.*model-b"):
        VectorCache(tmp_path).sync(entries(4), HttpEmbedder(fake.url, "model-b"))
    assert fake.embed_calls == 0
    assert (tmp_path / "vectors.keys.jsonl").read_bytes() == before


def test_dim_mismatch_raises_and_writes_nothing(tmp_path, fake, embedder):
    VectorCache(tmp_path).sync(entries(3), embedder)
    before = (tmp_path / "vectors.keys.jsonl").read_bytes()
    fake.wrong_dim = 8
    with pytest.raises(VectorMismatch, match="64-dimensional.*72"):
        VectorCache(tmp_path).sync(entries(4), HttpEmbedder(fake.url, "fake-embed"))
    assert (tmp_path / "vectors.keys.jsonl").read_bytes() == before
    assert npy_files(tmp_path) == ["vectors-000001.npy"]


def test_a_failure_mid_sync_leaves_the_cache_as_it_was(tmp_path, fake, embedder):
    cache = VectorCache(tmp_path)
    cache.sync(entries(2), embedder)
    before = (tmp_path / "vectors.keys.jsonl").read_bytes()
    calls = {"n": 0}

    def fail_second(path, body):
        calls["n"] += 1
        return (500, {"error": {"message": "second batch down"}}) if calls["n"] == 2 else None

    fake.respond_with = fail_second
    with pytest.raises(EmbeddingError, match="second batch down"):
        cache.sync(entries(8), embedder, batch_size=3)
    assert (tmp_path / "vectors.keys.jsonl").read_bytes() == before
    assert npy_files(tmp_path) == ["vectors-000001.npy"]
    assert not [p for p in tmp_path.iterdir() if "tmp" in p.name]


class BrokenEmbedder:
    model = "broken"

    def __init__(self, result):
        self.result = result

    def embed(self, texts):
        if isinstance(self.result, Exception):
            raise self.result
        return self.result(texts)


@pytest.mark.parametrize("result,match", [
    (RuntimeError("provider SDK exploded"), "provider SDK exploded"),
    (lambda texts: [[float("nan")] * 4 for _ in texts], "NaN"),
    (lambda texts: [[1.0, 2.0] for _ in texts[:-1]], "shape"),
    (lambda texts: [[1.0, 2.0], [1.0]][: len(texts)], "embedder failed"),
    (lambda texts: [[] for _ in texts], "shape"),
    (lambda texts: "not vectors", "embedder failed|shape"),
])
def test_custom_embedder_failures_are_embedding_errors(tmp_path, result, match):
    with pytest.raises(EmbeddingError, match=match):
        VectorCache(tmp_path).sync(entries(2), BrokenEmbedder(result))
    assert VectorCache(tmp_path).load() == ([], None)


def test_embedder_without_a_model_name(tmp_path):
    class Plain:
        def embed(self, texts):
            return [[1.0, float(len(t))] for t in texts]

    VectorCache(tmp_path).sync(entries(2), Plain())
    assert header(tmp_path) == {"vectors_file": "vectors-000001.npy", "dim": 2}  # an unknown model is left out


def test_ensure_adds_only_missing_hashes_and_keeps_the_rest(tmp_path):
    emb, cache = LocalEmbedder(), VectorCache(tmp_path)
    first = cache.ensure(entries(3), emb)
    assert first.rows == 3
    emb.texts.clear()
    got = cache.ensure(entries(2) + entries(2, "more"), emb)
    assert emb.texts == [t for _, _, t in entries(2, "more")]
    assert got.rows == 5
    emb.texts.clear()
    assert cache.ensure(entries(3), emb).rows == 5 and emb.texts == []


def test_concurrent_syncs_from_separate_caches_stay_consistent(tmp_path):
    """Two workers (separate caches, so separate flocks) syncing one folder never tear it."""
    emb = LocalEmbedder()
    sets = [entries(n) for n in (5, 9, 7, 12)]

    def worker(k):
        cache = VectorCache(tmp_path)
        for i in range(6):
            cache.sync(sets[(k + i) % len(sets)], emb)

    assert run_threads(worker, [(k,) for k in range(3)]) == []
    final = VectorCache(tmp_path).load()
    texts = {content_hash(t): t for s in sets for _, _, t in s}
    assert np.allclose(final.matrix, [fake_embedding(texts[h], DIM) for _, _, h in final.keys])
    assert len(npy_files(tmp_path)) == 1


# -- MemmapVectorIndex -----------------------------------------------------------


def clustered(n, dim, seed=0, offset=0.0):
    """Rows around topic centroids, like real embeddings; ``offset`` adds a shared component."""
    rng = np.random.default_rng(seed)
    centroids = rng.standard_normal((max(8, n // 50), dim)).astype(np.float32)
    rows = centroids[rng.integers(0, len(centroids), n)] + rng.standard_normal((n, dim)).astype(np.float32)
    return rows + offset * rng.standard_normal(dim).astype(np.float32), rng


def brute_force(matrix, q, k):
    m = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    s = m @ (q / np.linalg.norm(q))
    order = np.argsort(-s, kind="stable")[:k]
    return [int(i) for i in order], s


def test_exact_tier_matches_brute_force(tmp_path):
    matrix, rng = clustered(500, 48)
    index = MemmapVectorIndex(matrix, binary_threshold=10_000)
    assert not index.binary and index.signatures is None
    for _ in range(5):
        q = rng.standard_normal(48)
        got = index.search(q, 7)
        rows, s = brute_force(matrix, q, 7)
        assert [r for r, _ in got] == rows
        assert np.allclose([v for _, v in got], s[rows], atol=1e-5)


def test_search_edge_cases():
    matrix = np.array([[1, 0], [0, 1], [0, 0], [-1, 0]], np.float32)
    index = MemmapVectorIndex(matrix)
    assert index.search([1, 0], 0) == []
    got = index.search([2, 0], 10)  # top_k beyond the rows: every row
    assert [r for r, _ in got] == [0, 1, 2, 3]
    assert [round(s, 6) for _, s in got] == [1.0, 0.0, 0.0, -1.0]  # the zero row scores 0, not NaN
    assert MemmapVectorIndex(np.zeros((0, 0), np.float32)).search([1.0], 3) == []
    with pytest.raises(ValueError, match="dimensions"):
        index.search([1, 0, 0], 2)
    assert np.allclose(index.scores([0, 3], [3, 1]), [0.0, 1.0])


@pytest.mark.parametrize("dim,offset", [(384, 0.0), (384, 3.0), (200, 0.0), (1024, 0.0)])
def test_binary_tier_recall_of_the_top_10_against_exact(dim, offset):
    matrix, rng = clustered(3000, dim, seed=dim, offset=offset)
    index = MemmapVectorIndex(matrix, binary_threshold=1000)
    assert index.binary
    recalls = []
    for i in rng.integers(0, len(matrix), 40):
        q = matrix[i] + 0.3 * rng.standard_normal(dim).astype(np.float32)
        exact = index.exact(q, 10)
        got = index.search(q, 10)
        recalls.append(len({r for r, _ in exact} & {r for r, _ in got}) / 10)
        # the rerank is exact: every returned score is the true cosine
        assert np.allclose([s for _, s in got], index.scores(q, [r for r, _ in got]))
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert np.mean(recalls) >= 0.95


def test_binary_tier_equals_exact_when_the_rerank_covers_everything():
    matrix, rng = clustered(300, 64)
    index = MemmapVectorIndex(matrix, binary_threshold=100)
    q = rng.standard_normal(64)
    assert index.search(q, 100) == index.exact(q, 100)


def test_binary_tier_keeps_signatures_in_ram_and_the_matrix_on_disk(tmp_path):
    matrix, _ = clustered(2000, 384)
    cache = VectorCache(tmp_path)
    emb = BrokenEmbedder(lambda texts: matrix[: len(texts)].tolist())
    cached = cache.sync([("f", f"n{i}", f"t{i}") for i in range(2000)], emb, batch_size=2000)
    index = MemmapVectorIndex(cached.matrix, binary_threshold=1000)
    assert isinstance(index.matrix, np.memmap)
    assert index.signatures.shape == (2000, 6) and index.signatures.dtype == np.uint64
    assert index.resident_bytes == 2000 * 6 * 8 + 2000 * 4 + 384 * 4
    q = matrix[5]
    assert index.search(q, 1)[0][0] == 5


def test_concurrent_searches_agree_with_sequential():
    matrix, rng = clustered(2500, 128)
    index = MemmapVectorIndex(matrix, binary_threshold=1000)
    queries = [rng.standard_normal(128) for _ in range(16)]
    expected = [index.search(q, 10) for q in queries]
    results = [None] * len(queries)

    def run(i):
        results[i] = index.search(queries[i], 10)

    assert run_threads(run, [(i,) for i in range(len(queries))]) == []
    assert results == expected


# -- EmbeddingSearch -------------------------------------------------------------


WIKI = [
    RecallItem("mood", "那天晚饭", "他一句话没说，饭也没怎么吃。"),
    RecallItem("preferences", "likes-the-sea", "喜欢海边，提到过想去看海。"),
    RecallItem("preferences", "手冲咖啡", "只喝手冲咖啡，从不加糖。"),
    RecallItem("work", "current-job", "在一家做机器人的公司上班。"),
]


def test_search_before_sync_raises(tmp_path, embedder):
    with pytest.raises(EmbeddingError, match="sync"):
        EmbeddingSearch(embedder, tmp_path).search("x", 3, candidates=[], diary=[])


def test_search_scores_the_top_k_and_every_candidate(tmp_path, fake, embedder):
    es = EmbeddingSearch(embedder, tmp_path)
    es.sync(WIKI)
    wiki, diary = es.search("那天我是不是很沮丧", 1, candidates=[("work", "current-job"), ("nope", "missing")],
                            diary=[])
    assert set(wiki) == {("mood", "那天晚饭"), ("work", "current-job")}
    q = fake_embedding("那天我是不是很沮丧", DIM)
    for key, score in wiki.items():
        item = next(i for i in WIKI if (i.file, i.name) == key)
        expected = float(np.dot(q, fake_embedding(embed_text(item.name, item.content), DIM)))
        assert score == pytest.approx(expected, abs=1e-5)
    assert diary == []
    assert not (tmp_path / "diary-vectors").exists()  # no window reached the diary


def test_a_repeated_query_is_embedded_once(tmp_path, fake, embedder):
    es = EmbeddingSearch(embedder, tmp_path)
    es.sync(WIKI)
    fake.reset_records()
    es.search("海边", 2, candidates=[], diary=[])
    es.search("海边", 2, candidates=[], diary=[])
    assert fake.embedded_texts == ["海边"]


def test_diary_vectors_are_embedded_lazily_once_per_hash(tmp_path, fake, embedder):
    es = EmbeddingSearch(embedder, tmp_path)
    es.sync(WIKI)
    fake.reset_records()
    day = [RecallItem("2026-07-21", "14:30", "他看起来很难过。"),
           RecallItem("2026-07-21", "14:30", "晚上一起去了海边。"),  # same minute, other event
           RecallItem("2026-07-21", "14:30", "他看起来很难过。")]     # same minute, same text
    _, scores = es.search("沮丧", 5, candidates=[], diary=day)
    assert fake.embedded_texts == ["沮丧", "14:30\n他看起来很难过。", "14:30\n晚上一起去了海边。"]
    q = fake_embedding("沮丧", DIM)
    assert scores == pytest.approx([float(np.dot(q, fake_embedding(embed_text(d.name, d.content), DIM))) for d in day],
                                   abs=1e-5)
    assert scores[0] == pytest.approx(scores[2]) and scores[0] > scores[1]
    fake.reset_records()
    es.search("海边", 5, candidates=[], diary=day[:2])
    assert fake.embedded_texts == ["海边"]  # the diary rows are cached
    later = EmbeddingSearch(embedder, tmp_path)  # another process
    later.sync(WIKI)
    fake.reset_records()
    later.search("海边", 5, candidates=[], diary=day)
    assert fake.embedded_texts == ["海边"]
    assert header(tmp_path / "diary-vectors")["model"] == "fake-embed"


def test_sync_mismatch_warns_once_and_raises(tmp_path, fake):
    EmbeddingSearch(HttpEmbedder(fake.url, "model-a"), tmp_path).sync(WIKI)
    es = EmbeddingSearch(HttpEmbedder(fake.url, "model-b"), tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with pytest.raises(VectorMismatch):
                es.sync(WIKI)
            with pytest.raises(EmbeddingError):
                es.search("x", 3, candidates=[], diary=[])
    assert len(caught) == 1 and "model-a" in str(caught[0].message) and "BM25" in str(caught[0].message)
    for p in list(tmp_path.glob("vectors*")):  # the documented way out: delete the cache
        p.unlink()
    es.sync(WIKI)
    assert es.search("海边", 1, candidates=[], diary=[])[0]


def test_query_dim_mismatch_warns_once(tmp_path, fake, embedder):
    es = EmbeddingSearch(embedder, tmp_path)
    es.sync(WIKI)
    fake.wrong_dim = -16
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for query in ("a", "b"):
            with pytest.raises(VectorMismatch, match="64-dimensional.*48"):
                es.search(query, 2, candidates=[], diary=[])
    assert len(caught) == 1


def test_diary_cache_of_another_model_is_a_mismatch(tmp_path, fake):
    day = [RecallItem("2026-07-21", "09:00", "早上喝了咖啡。")]
    a = EmbeddingSearch(HttpEmbedder(fake.url, "model-a"), tmp_path)
    a.sync([])  # an empty wiki writes no wiki cache
    a.search("咖啡", 1, candidates=[], diary=day)
    assert not (tmp_path / "vectors.keys.jsonl").exists()
    b = EmbeddingSearch(HttpEmbedder(fake.url, "model-b"), tmp_path)
    b.sync([])
    with pytest.warns(RuntimeWarning, match="model-a"):
        with pytest.raises(VectorMismatch):
            b.search("咖啡", 1, candidates=[], diary=day)


def test_a_failed_sync_disables_search_until_one_succeeds(tmp_path, fake, embedder):
    es = EmbeddingSearch(embedder, tmp_path)
    es.sync(WIKI)
    fake.fail_status = 500
    changed = WIKI[:3] + [RecallItem("work", "current-job", "换工作了。")]
    with pytest.raises(EmbeddingError):
        es.sync(changed)
    with pytest.raises(EmbeddingError, match="sync"):
        es.search("工作", 2, candidates=[], diary=[])
    fake.fail_status = None
    es.sync(changed)
    assert ("work", "current-job") in es.search("工作", 4, candidates=[], diary=[])[0]


def test_empty_query_raises(tmp_path, embedder):
    es = EmbeddingSearch(embedder, tmp_path)
    es.sync(WIKI)
    with pytest.raises(EmbeddingError, match="empty"):
        es.search("  ", 3, candidates=[], diary=[])


def test_concurrent_searches_and_syncs(tmp_path):
    es = EmbeddingSearch(LocalEmbedder(), tmp_path)
    es.sync(WIKI)
    day = [RecallItem("2026-07-21", f"1{i}:00", f"第{i}件事") for i in range(6)]
    errors = []

    def searcher(i):
        try:
            for j in range(10):
                wiki, scores = es.search(f"查询 {i} {j}", 2, candidates=[("work", "current-job")], diary=day)
                assert ("work", "current-job") in wiki and len(scores) == len(day)
        except Exception as exc:
            errors.append(exc)

    def syncer():
        try:
            for j in range(5):
                es.sync(WIKI + [RecallItem("extra", f"n{j}", f"内容{j}")])
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=searcher, args=(i,)) for i in range(4)] + [threading.Thread(target=syncer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
