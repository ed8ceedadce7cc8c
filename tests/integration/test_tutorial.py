"""The tutorial (docs/tutorial.md), followed as a newcomer would: `make run` in a fresh folder, then its blocks.

The folder holds what a fresh clone gives `make run`: the Makefile and pyproject.toml
(linked), and this environment as its ``.venv`` (linked; ``-o`` keeps make from
reinstalling it). `make run` runs its real recipe there, so the data root is
``var/data`` of that folder, made now. Then the tutorial's shell blocks run in one
bash session, in order, as written: only the port differs. No file is chosen by hand
and the host is never restarted: the token minted in step 3 works at once, on the API
and on ``/mcp``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from docblocks import doc_block
from gunicorn_env import free_port

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not all(shutil.which(p) for p in ("make", "bash", "curl")),
                                 reason="needs make, bash and curl")]

REPO = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)
STEPS = ["tutorial-mint", "tutorial-write", "tutorial-retrieve", "tutorial-mcp", "tutorial-refused",
         "tutorial-rollback"]


def fresh_folder(folder: Path) -> None:
    for name in ("Makefile", "pyproject.toml"):
        (folder / name).symlink_to(REPO / name)
    (folder / ".venv").symlink_to(VENV)


def start_make_run(folder: Path, port: int) -> tuple[subprocess.Popen, Path]:
    command = doc_block("tutorial-start").strip()
    assert command == "make run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    log = folder / "make-run.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["make", "run", "-o", ".venv/.installed-run"], cwd=folder, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**env, "WIKIMEM_BIND": f"127.0.0.1:{port}", "PYTHONUNBUFFERED": "1"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            with opener.open(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return proc, log
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"make run did not start:\n{log.read_text()}")


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)  # make and the host it started (a session of their own)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def test_the_tutorial_from_make_run_to_a_scoped_token_on_mcp(tmp_path):
    fresh_folder(tmp_path)
    port = free_port()
    proc, log = start_make_run(tmp_path, port)
    try:
        script = "\n".join(doc_block(name) for name in STEPS).replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        wrapped = "curl() { command curl \"$@\" -w '\\n@@%{http_code}@@\\n'; }\nset -e\n" + script
        env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
        done = subprocess.run(["bash", "-c", wrapped], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**env, "no_proxy": "*"})
        banner = log.read_text()
    finally:
        stop(proc)
    assert done.returncode == 0, done.stdout + done.stderr
    # make run made the tokens file beside the data, for this user only, and said how to mint into it.
    tokens = tmp_path / "var" / "data" / "tokens.jsonl"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    assert "tokens file: var/data/tokens.jsonl" in banner and "--file var/data/tokens.jsonl" in banner, banner
    mint = re.search(r"mint one:\s+(\S+) token mint (.*)", banner)
    assert mint and doc_block("tutorial-mint").split("token mint ", 1)[1].split()[:7] == mint.group(2).split()[:7]
    assert [json.loads(line)["name"] for line in tokens.read_text().splitlines()] == ["my-bot"]

    answers = [(body, int(status)) for body, status in re.findall(r"(.*?)\n@@(\d{3})@@\n", done.stdout, re.S)]
    statuses = [status for _, status in answers]
    assert statuses == [201, 201, 201, 200, 200, 403, 403, 200, 200], answers
    owner, item, diary, retrieve, mcp, other_owner, undo, preview, rolled = (json.loads(b) for b, _ in answers)
    assert owner["created"] and item["commit"] and diary["entry"]["date"] == "2026-07-21"
    assert retrieve["items"][0]["item"]["content"] == "Loves the sea."
    (content,) = mcp["result"]["content"]
    assert "- [diary 2026-07-21 " in content["text"] and "Went surfing with Mia." in content["text"]
    assert other_owner["error"]["code"] == "forbidden" and undo["error"]["code"] == "forbidden"
    assert len(preview["plan"]["changes"]) == 2 and rolled["commit"]
