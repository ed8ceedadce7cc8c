"""A bulk approve of one staged run across 60 owners is one durable job: its worker SIGKILLed right after an
owner's approval (the commit made, the step not marked done), another worker finishes the job, and every owner is
approved exactly once."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from gunicorn_env import wait_for

from wikimem.context import WriteContext
from wikimem.host import make_host

WORKER = Path(__file__).resolve().parents[1] / "bulkworker.py"
OWNERS = [f"user:p{i:02d}" for i in range(60)]
RUN = "run_prompt_v7"


@pytest.mark.slow
def test_a_bulk_approve_survives_a_sigkill_of_its_worker_and_approves_each_owner_once(tmp_path):
    root = tmp_path / "data"
    host = make_host(root)
    for owner_id in OWNERS:
        owner = host.create_owner(owner_id)
        owner.add("preferences", "tea", "Drinks green tea.")
        owner.diary_append(f"{owner_id} told the new prompt about the sea.", date="2026-07-21", time="10:00",
                           ctx=WriteContext(run=RUN, actor="memorize-v7", staged=True))
    job = host.probation.submit("approve", RUN, actor="alice", idempotency_key="ui-1")
    assert job["total"] == len(OWNERS)
    first = subprocess.Popen([sys.executable, str(WORKER), str(root), "--kind", "approve", "--lease", "30",
                              "--die-after-step", "7"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.wait(timeout=300) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
    assert host.jobs.get(job["id"]).results[7]["state"] == "running"
    second = subprocess.Popen([sys.executable, str(WORKER), str(root), "--kind", "approve", "--lease", "30"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        done = wait_for(lambda: (j := host.jobs.get(job["id"])).state in ("done", "failed") and j,
                        timeout=300, what="the job")
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    assert done.state == "done" and done.done == len(OWNERS)
    statuses = {r["result"]["owner"]: r["result"]["status"] for r in done.results}
    assert statuses[OWNERS[7]] == "settled"  # the re-run found it approved already: nothing written again
    assert set(statuses.values()) <= {"done", "settled"}
    for owner_id in OWNERS:
        folder = host.owner_path(owner_id)
        log = subprocess.run(["git", "-C", str(folder), "log", "--format=%B", "main"], capture_output=True,
                             text=True, check=True).stdout
        assert log.count("Wikimem-Action: approve") == 1, owner_id
        assert "Wikimem-Approved-By: alice" in log
        assert subprocess.run(["git", "-C", str(folder), "for-each-ref", "refs/heads/staged/"], capture_output=True,
                              text=True, check=True).stdout == ""
        entries = host.owner(owner_id).diary_day("2026-07-21")
        assert [e.content for e in entries] == [f"{owner_id} told the new prompt about the sea."]
    assert {r["state"] for r in host.probation.owners_of(RUN)} == {"approved"}
    lines = (root / "steps.log").read_text().splitlines()
    assert [line.split()[2:4] for line in lines if line.startswith("7 ")] == [["1", "done"], ["2", "settled"]]
