"""A chat import killed mid-job (SIGKILL) is finished by another process, to the same end, without duplicates.

The stand-in model blocks on the Kth call until the test has killed the worker asking it: the turns before
are committed (replayed by the next process from their idempotency keys, without asking the model again),
the Kth turn was asked and never written (asked again once). The end is compared with the same chat imported
without a kill, on another data root.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cardfiles import long_chat, stand_in_reply, v2_card
from fakes import FakeOpenAI
from gunicorn_env import stop_process as stop
from gunicorn_env import wait_for

from wikimem.host import make_host
from wikimem.host.imports import read_chat
from wikimem.host.imports.chatimport import submit_chat
from wikimem.llm import ChatClient

pytestmark = pytest.mark.slow

WORKER = Path(__file__).resolve().parents[1] / "jobworker.py"
TURNS = 12
KILL_AT = 6  # the model call the worker is killed in


def layer_state(owner) -> tuple[dict, dict]:
    """What kai's layer holds: diary entries by day (time, text) and items by file (name, text)."""
    diary = {d: [(e.time, e.content) for e in owner.diary_day(d, "kai")] for d in owner.diary_dates("kai")}
    items = {f: [(i.name, i.content) for i in owner.items(f, character="kai")] for f in owner.files("kai")}
    return diary, items


def prepared(root: Path, url: str):
    host = make_host(root, llm=ChatClient(url, "fake-chat", timeout=30))
    host.imports.import_card(json.dumps(v2_card()).encode())
    return host, host.create_owner("user:ann")


def test_a_killed_import_resumes_to_the_same_end_without_duplicates(tmp_path):
    chat = long_chat(TURNS * 2)
    with FakeOpenAI() as llm:
        llm.reply_fn = stand_in_reply
        # The reference: the same chat, imported without a kill.
        ref_host, ref_ann = prepared(tmp_path / "ref", llm.url)
        job, _, _ = ref_host.imports.import_chat(ref_ann, "kai", chat, tz="UTC")
        wait_for(lambda: ref_host.jobs.get(job.id).state == "done", 60, "the reference import")
        expected = layer_state(ref_ann)
        assert sum(len(v) for v in expected[0].values()) == TURNS

        calls, release = [0], threading.Event()

        def blocking(messages):
            calls[0] += 1
            if calls[0] == KILL_AT:
                release.wait(30)  # the worker asking is killed meanwhile
            return stand_in_reply(messages)

        llm.reply_fn = blocking
        root = tmp_path / "data"
        host, ann = prepared(root, llm.url)
        parsed = read_chat(chat, __import__("datetime").timezone.utc)
        job, _ = submit_chat(host.jobs, "user:ann", "kai", parsed, tz="UTC", run="run_import_kill",
                             context={"actor": "import"})
        env = dict(os.environ, WIKIMEM_LLM_URL=llm.url)
        first = subprocess.Popen([sys.executable, str(WORKER), str(root), "--lease", "2"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert first.stdout.readline().strip() == "ready", first.stderr.read()
            wait_for(lambda: calls[0] >= KILL_AT, 60, "the worker to reach the kill point")
            time.sleep(0.2)
            first.send_signal(signal.SIGKILL)
            first.wait()
        finally:
            release.set()
            stop(first)
        assert host.jobs.get(job.id).state == "running"
        written = len(ann.history(run="run_import_kill", layers=None).entries)
        assert written == KILL_AT - 1  # the turns before the kill, committed; the one being asked, not
        second = subprocess.Popen([sys.executable, str(WORKER), str(root), "--lease", "2"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert second.stdout.readline().strip() == "ready", second.stderr.read()
            wait_for(lambda: host.jobs.get(job.id).state in ("done", "failed"), 60, "the resumed import")
        finally:
            stop(second)
    done = host.jobs.get(job.id)
    assert done.state == "done", done.results
    assert done.results[0]["result"]["replayed"] == KILL_AT - 1 and done.results[0]["result"]["done"] == TURNS
    assert calls[0] == TURNS + 1  # the interrupted turn asked again once; the committed ones never
    assert layer_state(host.owner("user:ann")) == expected  # the same end, nothing twice
    commits = host.owner("user:ann").history(run="run_import_kill", layers=None).entries
    assert len(commits) == TURNS and {c.actor for c in commits} == {"import"}
