"""Several processes writing one owner, and writers killed mid-write (real processes, real repos)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("dulwich")

from wikimem.context import WriteContext  # noqa: E402
from wikimem.versioned import VersionedStore  # noqa: E402

GIT = shutil.which("git")
PROCS, WRITES = 4, 200


def _writer(root: str, proc: int, n: int) -> None:
    vs = VersionedStore(root)
    for j in range(n):
        if j % 2:
            vs.diary_append(f"p{proc} event {j}", ts="2026-07-21T09:00:00Z",
                            ctx=WriteContext(actor=f"worker{proc}"))
        else:
            vs.add(f"shared{j % 3}", f"p{proc}-{j}", f"written by {proc} as {j}",
                   ctx=WriteContext(actor=f"worker{proc}", run=f"run-{proc}"))
    vs.close()


@pytest.mark.skipif(GIT is None, reason="git CLI not installed")
def test_four_processes_lose_no_write_and_make_one_commit_each(tmp_path):
    root = tmp_path / "owner"
    VersionedStore(root).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(root), p, WRITES)) for p in range(PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    vs = VersionedStore(root)
    total = PROCS * WRITES
    for proc in range(PROCS):
        for j in range(0, WRITES, 2):
            assert vs.store.get(f"shared{j % 3}", f"p{proc}-{j}").content == f"written by {proc} as {j}"
    day = [e.content for e in vs.diary.day("2026-07-21")]
    assert len(day) == total // 2
    assert set(day) == {f"p{p} event {j}" for p in range(PROCS) for j in range(1, WRITES, 2)}
    commits = int(subprocess.run([GIT, "rev-list", "--count", "main"], cwd=root, capture_output=True,
                                 text=True, check=True).stdout)
    assert commits == total + 1  # + the initial commit
    journal = (root / "journal.jsonl").read_text().splitlines()
    assert len(journal) == total
    assert all(json.loads(line)["action"] in ("add", "diary") for line in journal)
    assert len(vs.history(limit=10_000).entries) == total + 1
    fsck = subprocess.run([GIT, "fsck", "--strict"], cwd=root, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert subprocess.run([GIT, "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout == ""
    assert vs.verify() == []


_LOOP = """
import sys
from wikimem.context import WriteContext
from wikimem.versioned import VersionedStore
vs = VersionedStore(sys.argv[1])
i = 0
while True:
    vs.add("f", f"n{i % 50}", "x" * (i % 500) + str(i), ctx=WriteContext(actor="doomed"))
    vs.diary_append(f"event {i}", ts="2026-07-21T09:00:00Z")
    i += 1
"""


def test_a_writer_killed_mid_write_leaves_a_repository_that_keeps_working(tmp_path):
    root = tmp_path / "owner"
    VersionedStore(root).close()
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    for round_ in range(4):
        child = subprocess.Popen([sys.executable, "-c", _LOOP, str(root)], env=env)
        time.sleep(0.4 + 0.15 * round_)  # a different moment of the write cycle each round
        child.send_signal(signal.SIGKILL)
        child.wait()
        vs = VersionedStore(root)
        assert vs.verify() == []
        done = vs.add("f", "after", f"round {round_}", ctx=WriteContext(actor="survivor"))
        assert done.commit == vs.head()
        assert vs.external_changes() == []
        # A write killed between its files and its commit is undone (or finished), never committed
        # later as someone's hand edit.
        assert "external-edit" not in {e.action for e in vs.history(limit=10_000).entries}
        assert vs.intent.in_flight() is None
        assert vs.store.get("f", "after").content == f"round {round_}"
        vs.close()
    if GIT:
        fsck = subprocess.run([GIT, "fsck"], cwd=root, capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
        assert subprocess.run([GIT, "status", "--porcelain"], cwd=root, capture_output=True,
                              text=True).stdout == ""
