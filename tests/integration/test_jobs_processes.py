"""Jobs survive the death of the process running them: SIGKILL mid-job, another process finishes it.

Every step's effect happens exactly once: steps finished before the kill are
not run again, the interrupted one is run again by the next process, and a
step whose effect was made just before the kill (not yet marked done) is
re-run without repeating its effect (the step key makes it idempotent).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fakes import FakeOpenAI
from gunicorn_env import stop_process as stop
from gunicorn_env import wait_for

from wikimem.host.fleet import JobStore, submit_memorize

pytestmark = pytest.mark.slow

WORKER = Path(__file__).resolve().parents[1] / "jobworker.py"


def start_worker(root: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(WORKER), str(root), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, **(env or {})))
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc



def log_lines(root: Path) -> list[list[str]]:
    path = root / "effects.log"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def wait_done(jobs: JobStore, job_id: str, timeout: float = 60):
    return wait_for(lambda: (j := jobs.get(job_id)).state in ("done", "failed") and j, timeout, "the job")


def test_sigkill_mid_job_another_process_finishes_each_step_once(tmp_path):
    root = tmp_path / "data"
    jobs = JobStore.at(root)
    job, _ = jobs.submit("effect", [{"n": n, "sleep": 0.4} for n in range(6)], key="bulk-1")
    first = start_worker(root, "--lease", "1")
    try:
        # Kill it while it is inside step 2, after steps 0 and 1 are marked done.
        wait_for(lambda: ["start", "2"] in [line[:2] for line in log_lines(root)], what="step 2 to start")
        assert jobs.get(job.id).done == 2
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        stop(first)
    assert jobs.get(job.id).state == "running"
    second = start_worker(root, "--lease", "1")
    try:
        done = wait_done(jobs, job.id)
    finally:
        stop(second)
    assert done.state == "done" and (done.done, done.failed, done.total) == (6, 0, 6)
    lines = log_lines(root)
    effects = [line[1] for line in lines if line[0] == "effect"]
    assert sorted(effects) == [str(n) for n in range(6)]  # each effect exactly once
    starts = {n: [line for line in lines if line[:2] == ["start", str(n)]] for n in range(6)}
    assert len(starts[0]) == len(starts[1]) == 1  # finished steps never ran again
    assert [line[2] for line in starts[2]] == [str(first.pid), str(second.pid)]  # resumed by the other
    assert [line[3] for line in starts[2]] == ["1", "2"]
    assert all(len(starts[n]) == 1 for n in (3, 4, 5))
    assert {r["result"]["pid"] for r in done.results[2:]} == {second.pid}
    # The same key is still the same job, finished.
    assert jobs.submit("effect", [{"n": n, "sleep": 0.4} for n in range(6)], key="bulk-1")[0].id == job.id


def test_a_step_whose_effect_was_made_before_the_kill_is_not_repeated(tmp_path):
    root = tmp_path / "data"
    jobs = JobStore.at(root)
    job, _ = jobs.submit("effect", [{"n": n} for n in range(3)])
    first = subprocess.Popen([sys.executable, str(WORKER), str(root), "--lease", "30", "--die-after-effect", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.wait(timeout=60) == -signal.SIGKILL  # died right after step 1's effect
    finally:
        stop(first)
    assert jobs.get(job.id).results[1]["state"] == "running"
    # A 30 s lease, but the holder's pid is gone: the next process takes the step at once.
    second = start_worker(root, "--lease", "30")
    try:
        done = wait_done(jobs, job.id, timeout=20)
    finally:
        stop(second)
    assert done.state == "done"
    lines = log_lines(root)
    assert sorted(line[1] for line in lines if line[0] == "effect") == ["0", "1", "2"]
    assert [line[3] for line in lines if line[:2] == ["start", "1"]] == ["1", "2"]


@pytest.fixture
def owner_root(tmp_path):
    pytest.importorskip("dulwich")
    from wikimem.host import make_host

    root = tmp_path / "data"
    make_host(root).create_owner("user:ann")
    return root


def _git_log(root: Path) -> list[str]:
    from wikimem.host.owner_ids import encode_owner_id

    repo = root / "owners" / encode_owner_id("user:ann")
    out = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_memorize_killed_while_the_model_thinks_is_finished_by_the_next_process(owner_root):
    root = owner_root
    jobs = JobStore.at(root)
    gate = threading.Event()  # the model answers only once the first process is dead

    def reply(messages):
        gate.wait(30)
        return json.dumps([{"content": "上周三我们去了海边。"}], ensure_ascii=False)

    with FakeOpenAI() as llm:
        llm.reply_fn = reply
        job, _ = submit_memorize(jobs, "user:ann", "user: 上周三我们去了海边", key="turn-1",
                                 ts="2026-07-23T10:00:00+08:00", tz="Asia/Shanghai")
        env = {"WIKIMEM_LLM_URL": llm.url}
        first = start_worker(root, "--lease", "30", env=env)
        try:
            wait_for(lambda: llm.chat_calls >= 1, what="the model to be asked")
            first.send_signal(signal.SIGKILL)
            first.wait()
        finally:
            stop(first)
            gate.set()
        second = start_worker(root, "--lease", "30", env=env)
        try:
            done = wait_done(jobs, job.id)
        finally:
            stop(second)
    assert done.state == "done", done.results
    result = done.results[0]["result"]
    assert [(e["date"], e["content"]) for e in result["entries"]] == [("2026-07-15", "上周三我们去了海边。")]
    assert result["run"] == done.params["run"]
    assert _git_log(root).count("memorize 1 diary entry") == 1


def test_memorize_killed_after_its_commit_is_replayed_not_written_twice(owner_root):
    root = owner_root
    jobs = JobStore.at(root)
    with FakeOpenAI() as llm:
        llm.reply_fn = lambda messages: json.dumps([{"content": "她开始学冲浪了。"}], ensure_ascii=False)
        job, _ = submit_memorize(jobs, "user:ann", "user: 我开始学冲浪了")
        env = {"WIKIMEM_LLM_URL": llm.url}
        first = subprocess.Popen([sys.executable, str(WORKER), str(root), "--lease", "30", "--die-after-memorize"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, **env))
        try:
            assert first.wait(timeout=60) == -signal.SIGKILL
        finally:
            stop(first)
        assert jobs.get(job.id).state == "running" and llm.chat_calls == 1
        second = start_worker(root, "--lease", "30", env=env)
        try:
            done = wait_done(jobs, job.id)
        finally:
            stop(second)
        assert llm.chat_calls == 1  # the re-run replayed the committed result: no second call
    assert done.state == "done"
    assert done.results[0]["result"]["replayed"] is True
    assert [e["content"] for e in done.results[0]["result"]["entries"]] == ["她开始学冲浪了。"]
    assert _git_log(root).count("memorize 1 diary entry") == 1
    assert [line[3] for line in log_lines(root) if line[0] == "memorized"] == ["1", "2"]


def test_processes_with_busy_runners_exit_promptly(tmp_path):
    """Runner threads polling one database from several processes never hang the interpreter's exit."""
    root = tmp_path / "data"
    JobStore.at(root).submit("effect", [{"n": n} for n in range(200)])
    repo = str(Path(__file__).resolve().parents[2])
    script = (f"import sys, time; sys.path.insert(0, {repo!r})\n"
              "from wikimem.host.fleet import JobRunner, JobStore\n"
              f"r = JobRunner(JobStore.at({str(root)!r}), threads=4, lease=5, poll=0.01)\n"
              "r.register('effect', lambda step: time.sleep(0.001) or step.n)\n"
              "r.start(); time.sleep(0.5)\n")
    procs = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(4)]
    for proc in procs:
        try:
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
