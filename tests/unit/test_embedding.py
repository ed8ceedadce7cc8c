"""The stdlib embedding layer (roles, no numpy), and the cache's new behaviours.

Roles: queries and memory items embedded differently (e5's ``query:`` /
``passage:``). The cache: ``header()``, ``((file, name), text)`` entries,
partial syncs for background embedding, embedding outside the folder lock.
The tier-1 rerank that grows with the rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import pytest
from fakes import FakeOpenAI, fake_embedding

from wikimem.vectors import VectorMismatch, content_hash, embed_text
from wikimem.vectors.cache import VectorCache
from wikimem.vectors.embedders import EmbeddingError, HttpEmbedder, embed_queries, vector_space
from wikimem.vectors.index import MemmapVectorIndex, rerank_size

DIM = 32


@pytest.fixture
def fake():
    with FakeOpenAI(dim=DIM) as server:
        yield server


class Counting:
    model = "fake-embed"

    def __init__(self, gate: threading.Event | None = None):
        self.texts: list[str] = []
        self.gate = gate
        self.started = threading.Event()

    def embed(self, texts):
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(10), "test gate never opened"
        self.texts += texts
        return [fake_embedding(t, DIM) for t in texts]


def entries(n, prefix="i"):
    return [("notes", f"{prefix}{k}", f"{prefix}{k}\ntext number {k}") for k in range(n)]


# -- no numpy for the HTTP embedder ------------------------------------------------


def test_the_http_embedder_needs_no_numpy():
    code = (
        "import sys\n"
        "sys.modules['numpy'] = None  # import numpy fails, as on a machine without it\n"
        "from wikimem.vectors import HttpEmbedder, Embedder, VectorIndex, EmbeddingError, content_hash\n"
        "from wikimem.vectors.embedders import HttpEmbedder as Same\n"
        "assert HttpEmbedder is Same\n"
        "HttpEmbedder('http://127.0.0.1:9/v1', 'm')\n"
        "try:\n"
        "    from wikimem.vectors import VectorCache\n"
        "except ImportError:\n"
        "    print('numpy parts need numpy')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "numpy parts need numpy"


def test_the_numpy_names_load_on_first_access():
    code = (
        "import sys\n"
        "import wikimem.vectors as v\n"
        "print('numpy' in sys.modules)\n"
        "v.VectorCache, v.MemmapVectorIndex, v.EmbeddingSearch\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_base64_vectors_without_numpy(fake):
    import base64
    import struct

    payload = base64.b64encode(struct.pack("<3f", 0.5, -1.25, 2.0)).decode()
    fake.respond_with = lambda path, body: (200, {"data": [{"index": 0, "embedding": payload}]})
    assert HttpEmbedder(fake.url, "m").embed(["a"]) == [[0.5, -1.25, 2.0]]
    seven = base64.b64encode(b"\0" * 7).decode()
    fake.respond_with = lambda path, body: (200, {"data": [{"index": 0, "embedding": seven}]})
    with pytest.raises(EmbeddingError, match="base64"):  # 7 bytes: not whole floats
        HttpEmbedder(fake.url, "m").embed(["a"])


# -- roles ----------------------------------------------------------------------


def test_without_roles_queries_and_items_are_sent_alike(fake):
    emb = HttpEmbedder(fake.url, "fake-embed")
    emb.embed(["an item"])
    emb.embed_query(["a query"])
    first, second = (r.body for r in fake.requests)
    assert first == {"model": "fake-embed", "input": ["an item"], "encoding_format": "float"}
    assert second == {"model": "fake-embed", "input": ["a query"], "encoding_format": "float"}
    assert vector_space(emb) == "fake-embed"


def test_query_model_and_prefixes(fake):
    emb = HttpEmbedder(fake.url, "e5-passage", query_model="e5-query", query_prefix="query: ",
                       passage_prefix="passage: ")
    emb.embed(["likes the sea"])
    emb.embed_query(["what does she like"])
    first, second = (r.body for r in fake.requests)
    assert (first["model"], first["input"]) == ("e5-passage", ["passage: likes the sea"])
    assert (second["model"], second["input"]) == ("e5-query", ["query: what does she like"])
    assert "input_type" not in first


def test_input_type_roles(fake):
    emb = HttpEmbedder(fake.url, "multilingual-e5-small-q4", input_type=True)
    emb.embed(["x"])
    embed_queries(emb, ["y"])
    assert [r.body["input_type"] for r in fake.requests] == ["passage", "query"]
    assert vector_space(emb) == "multilingual-e5-small-q4 [input_type=passage]"


def test_a_plain_embedder_embeds_queries_with_embed():
    class Plain:
        def embed(self, texts):
            return [[float(len(t))] for t in texts]

    assert embed_queries(Plain(), ["abc"]) == [[3.0]]


def test_changing_the_passage_role_is_a_new_vector_space(tmp_path, fake):
    VectorCache(tmp_path).sync(entries(2), HttpEmbedder(fake.url, "m"))
    with pytest.raises(VectorMismatch, match="passage_prefix"):
        VectorCache(tmp_path).sync(entries(3), HttpEmbedder(fake.url, "m", passage_prefix="passage: "))
    # the query role does not touch the stored vectors
    VectorCache(tmp_path).sync(entries(3), HttpEmbedder(fake.url, "m", query_prefix="query: "))


@pytest.mark.parametrize("kwargs", [{"query_model": " "}, {"query_prefix": 3}, {"timeout": -1}, {"timeout": True}])
def test_role_arguments_are_checked(kwargs):
    with pytest.raises(ValueError):
        HttpEmbedder("http://x/v1", "m", **kwargs)


# -- the cache: header, pairs, partial syncs, the lock ---------------------------------


def test_header_is_the_first_line_as_a_dict(tmp_path):
    cache = VectorCache(tmp_path)
    assert cache.header() == {}  # no cache: an empty header, like a torn one
    cache.sync(entries(2), Counting())
    assert cache.header() == {"vectors_file": "vectors-000001.npy", "model": "fake-embed", "dim": DIM}
    first = json.loads((tmp_path / "vectors.keys.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert cache.header() == first


def test_sync_accepts_pairs(tmp_path):
    emb = Counting()
    got = VectorCache(tmp_path).sync([(("f", "a"), "a\none"), (("f", "b"), "b\ntwo")], emb)
    assert got.keys == [("f", "a", content_hash("a\none")), ("f", "b", content_hash("b\ntwo"))]
    assert emb.texts == ["a\none", "b\ntwo"]
    with pytest.raises(ValueError):
        VectorCache(tmp_path).sync([(("f", "a"), 3)], emb)


def test_a_partial_sync_embeds_at_most_max_new_and_keeps_the_rest_for_later(tmp_path):
    emb, cache = Counting(), VectorCache(tmp_path)
    es = entries(10)
    first = cache.sync(es, emb, max_new=4)
    assert len(emb.texts) == 4 and first.rows == 4
    assert [k[1] for k in first.keys] == ["i0", "i1", "i2", "i3"]
    second = cache.sync(es, emb, max_new=4)
    assert len(emb.texts) == 8 and second.rows == 8
    done = cache.sync(es, emb, max_new=4)
    assert done.keys == [(f, n, content_hash(t)) for f, n, t in es]
    assert np.allclose(done.matrix, [fake_embedding(t, DIM) for _, _, t in es])
    assert cache.sync(es, emb, max_new=4).keys == done.keys
    assert len(emb.texts) == 10  # every text once, nothing more once complete


def test_ensure_is_partial_too(tmp_path):
    emb, cache = Counting(), VectorCache(tmp_path)
    assert cache.ensure(entries(5), emb, max_new=2).rows == 2
    assert cache.ensure(entries(5), emb).rows == 5
    assert len(emb.texts) == 5


def test_embedding_happens_outside_the_folder_lock(tmp_path):
    """A slow model never makes another process (here: another cache object) wait."""
    gate = threading.Event()
    slow = Counting(gate)
    writer = threading.Thread(target=lambda: VectorCache(tmp_path).sync(entries(3), slow))
    writer.start()
    assert slow.started.wait(10)  # the writer is inside embed() now
    reader = threading.Thread(target=lambda: VectorCache(tmp_path).load())
    reader.start()
    reader.join(10)
    finished_while_embedding = not reader.is_alive()
    gate.set()
    writer.join(10)
    assert finished_while_embedding
    assert VectorCache(tmp_path).load().rows == 3


def test_a_row_written_by_another_process_meanwhile_is_reused(tmp_path):
    gate = threading.Event()
    slow = Counting(gate)
    es = entries(4)
    writer = threading.Thread(target=lambda: VectorCache(tmp_path).sync(es, slow))
    writer.start()
    assert slow.started.wait(10)
    other = Counting()
    VectorCache(tmp_path).sync(es[:2], other)  # lands while the first is still embedding
    gate.set()
    writer.join(10)
    final = VectorCache(tmp_path).load()
    assert [k[1] for k in final.keys] == ["i0", "i1", "i2", "i3"]
    assert np.allclose(final.matrix, [fake_embedding(t, DIM) for _, _, t in es])


# -- tier 1 grows with the rows --------------------------------------------------------


def test_rerank_grows_with_the_rows():
    assert rerank_size(20_000, 10) >= 40
    assert rerank_size(100_000, 10) >= 64 * 10 * 0.95
    assert rerank_size(1_000_000, 10) > rerank_size(100_000, 10)
    assert rerank_size(50, 10) == 40 and rerank_size(30, 10) == 30


@pytest.mark.slow
def test_tier1_recall_at_10_stays_high_on_a_large_clustered_matrix():
    rng = np.random.default_rng(3)
    rows, dim = 60_000, 128
    centroids = rng.standard_normal((rows // 50, dim)).astype(np.float32)
    matrix = centroids[rng.integers(0, len(centroids), rows)] + rng.standard_normal((rows, dim)).astype(np.float32)
    index = MemmapVectorIndex(matrix, binary_threshold=10_000)
    assert index.binary
    recalls = []
    for i in rng.integers(0, rows, 30):
        q = matrix[i] + 0.3 * rng.standard_normal(dim).astype(np.float32)
        exact = {r for r, _ in index.exact(q, 10)}
        recalls.append(len(exact & {r for r, _ in index.search(q, 10)}) / 10)
    assert np.mean(recalls) >= 0.95


def test_content_hash_and_embed_text_are_the_same_functions_everywhere():
    import wikimem.vectors as v
    import wikimem.vectors.cache as vc

    assert v.content_hash is vc.content_hash and v.embed_text is embed_text
