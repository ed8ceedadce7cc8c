"""``wikimem serve`` (what ``make run`` runs) says whether memorize and the embedder are on, how to change the
port, and, on a busy port, how to pick another (issue 24, item 10). Real processes on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

from wikimem.cli import EXIT_ERROR
from wikimem.cli.hostcmd import service_lines

REPO = Path(__file__).resolve().parents[2]


def clean_env(tmp_path, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_DATA=str(tmp_path / "data"), PYTHONUNBUFFERED="1", **extra)
    return env


def banner(env: dict[str, str], *args: str) -> tuple[subprocess.Popen, str, int]:
    """Start ``wikimem serve``; its banner (up to the port line) and the port it printed."""
    proc = subprocess.Popen([sys.executable, "-m", "wikimem", "serve", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(line.startswith("port:") for line in lines):
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line)
    out = "".join(lines)
    found = re.search(r"http://127\.0\.0\.1:(\d+)/", out)
    assert found, out
    return proc, out, int(found.group(1))


def healthy(port: int) -> bool:
    for _ in range(100):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                return json.loads(r.read()) == {"ok": True}
        except OSError:
            time.sleep(0.1)
    return False


def stop(proc) -> None:
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.slow
def test_the_banner_says_memorize_and_the_embedder_are_off_and_how_to_turn_them_on(tmp_path):
    proc, out, port = banner(clean_env(tmp_path), "--bind", "127.0.0.1:0")
    try:
        assert port > 0 and healthy(port)  # the port the system gave is the one printed
        assert "memorize:    off (POST …/memorize answers 501): set WIKIMEM_LLM_URL and WIKIMEM_LLM_MODEL" in out
        assert "embedder:    off, retrieval is BM25 only: WIKIMEM_EMBEDDER=local, or WIKIMEM_EMBED_URL" in out
        assert f"port:        {port}; another with WIKIMEM_BIND=HOST:PORT (make run too)" in out
        tokens = tmp_path / "data" / "tokens.jsonl"  # beside the data, for this user only, and how to mint into it
        assert f"tokens file: {tokens} (a token minted into it works at once, no restart)" in out
        assert f"token mint my-bot --scope read --scope write --owner-prefix user: --file {tokens}" in out
        assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    finally:
        stop(proc)


@pytest.mark.slow
def test_the_banner_names_the_chat_model_and_the_embeddings_endpoint_without_secrets(tmp_path):
    env = clean_env(tmp_path, WIKIMEM_LLM_URL="http://bot:s3cret@127.0.0.1:9/v1", WIKIMEM_LLM_MODEL="fake-chat",
                    WIKIMEM_LLM_API_KEY="sk-not-shown", WIKIMEM_EMBED_URL="http://127.0.0.1:9/v1",
                    WIKIMEM_EMBED_MODEL="fake-embed", WIKIMEM_BIND="127.0.0.1:0")
    proc, out, port = banner(env)
    try:
        assert "memorize:    on: fake-chat at http://127.0.0.1:9/v1" in out
        assert "embedder:    fake-embed at http://127.0.0.1:9/v1: retrieval fuses BM25 with vectors" in out
        assert "s3cret" not in out and "sk-not-shown" not in out and "bot@" not in out
    finally:
        stop(proc)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["env", "flag"])
def test_a_busy_port_says_how_to_pick_another_and_exits(tmp_path, how):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        bind = f"127.0.0.1:{port}"
        env = clean_env(tmp_path, **({"WIKIMEM_BIND": bind} if how == "env" else {}))
        args = ["--demo"] + (["--bind", bind] if how == "flag" else [])
        done = subprocess.run([sys.executable, "-m", "wikimem", "serve", *args], env=env, capture_output=True,
                              text=True, timeout=60)
    assert done.returncode == EXIT_ERROR
    assert f"wikimem: cannot listen on {bind}: the port is in use" in done.stderr
    # the next free port after the busy one (not always port + 1: a parallel test may hold that one)
    suggested = re.search(r"WIKIMEM_BIND=127\.0\.0\.1:(\d+) make run", done.stderr)
    assert suggested and int(suggested.group(1)) > port, done.stderr
    assert f"wikimem serve --bind 127.0.0.1:{suggested.group(1)}" in done.stderr
    assert "Either identify and stop that program" not in done.stderr + done.stdout  # not werkzeug's hint
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data" / "owners").exists()  # nothing was made before the port was checked


def test_service_lines_of_the_local_model():
    settings = SimpleNamespace(llm_url=None, llm_model=None, embedder="local", embed_url=None, embed_model=None)
    assert service_lines(settings)[1] == ("embedder:    the bundled local model (WIKIMEM_EMBEDDER=local): "
                                          "retrieval fuses BM25 with vectors")
    settings.embedder, settings.embed_url, settings.embed_model = "none", "http://e/v1", "m"
    assert service_lines(settings)[1].startswith("embedder:    off")


def test_the_tutorial_says_how_to_change_the_port_and_what_the_banner_says():
    tutorial = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
    start = tutorial[tutorial.index("## 1. Start the host"):tutorial.index("## 2.")]
    assert "WIKIMEM_BIND=127.0.0.1:8001 make run" in start
    assert "**memorize**" in start and "**embedder**" in start and "**tokens file**" in start
    make = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "wikimem serve --demo" in make and "WIKIMEM_BIND" in make
