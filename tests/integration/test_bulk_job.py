"""Bulk rollback as a durable job: queued with 202 + Location, progress and per-owner results at
``GET /api/v1/jobs/<id>``, one key one job, and a process killed between an owner's commit and its
"done" mark leaves no second commit when another process finishes the job."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from apiworld import ADMIN, auth
from gunicorn_env import wait_for
from operators_world import BAD_ACTOR, bad_deploy

from webapp.hosting import get_host
from wikimem.host import RunQuery, make_host
from wikimem.host.access.tokens import append_token, mint_token
from wikimem.host.fleet.bulk import submit

WORKER = Path(__file__).resolve().parents[1] / "bulkworker.py"


@pytest.fixture
def deploy(world):
    # Not held across the yield: requests made inside an app context would share its ``g`` (and principal).
    with world.app.app_context():
        made = bad_deploy(get_host(), 5)
    yield made
    with world.app.app_context():
        get_host().start_jobs().stop()


def test_bulk_rollback_runs_as_a_job_with_progress_and_results(world, deploy):
    r = world.client.post("/api/v1/bulk/rollback", json={"actor": BAD_ACTOR},
                          headers=auth(ADMIN, **{"Idempotency-Key": "deploy-42"}))
    assert r.status_code == 202, r.get_json()
    job = r.get_json()
    assert r.headers["Location"] == f"/api/v1/jobs/{job['id']}" and job["total"] == 5
    assert job["kind"] == "bulk-rollback" and job["params"]["selection"] == {"actor": BAD_ACTOR}

    def finished():
        body = world.client.get(r.headers["Location"], headers=auth(ADMIN)).get_json()
        return body if body["state"] in ("done", "failed") else None

    done = wait_for(finished, timeout=90, what="the bulk job")
    assert done["state"] == "done" and done["done"] == 5
    by_owner = {s["result"]["owner"]: s["result"] for s in done["results"]}
    assert by_owner[deploy.conflicted]["status"] == "conflict"
    assert {by_owner[o]["status"] for o in deploy.owners[1:]} == {"done"}
    with world.app.app_context():
        owner = get_host().owner(deploy.owners[1])
        assert owner.history(limit=1).entries[0].run == job["id"]  # the commit carries the job id as its run
    # the same key is the same job; the same key for another selection is refused
    again = world.client.post("/api/v1/bulk/rollback", json={"actor": BAD_ACTOR},
                              headers=auth(ADMIN, **{"Idempotency-Key": "deploy-42"}))
    assert again.status_code == 202 and again.get_json()["id"] == job["id"]
    other = world.client.post("/api/v1/bulk/rollback", json={"actor": "someone"},
                              headers=auth(ADMIN, **{"Idempotency-Key": "deploy-42"}))
    assert other.status_code == 422
    # forcing what is left (the conflicted owner) is a new job of one step
    forced = world.client.post("/api/v1/bulk/rollback", json={"actor": BAD_ACTOR, "force": True},
                               headers=auth(ADMIN))
    assert forced.status_code == 202 and forced.get_json()["total"] == 1
    wait_for(lambda: world.client.get(forced.headers["Location"], headers=auth(ADMIN)).get_json()["state"] == "done",
             timeout=90, what="the forced job")
    with world.app.app_context():
        assert get_host().owner(deploy.conflicted).item("preferences", "tea").content.startswith("Drinks oolong")
    assert world.client.post("/api/v1/bulk/rollback", json={"actor": BAD_ACTOR},
                             headers=auth(ADMIN)).status_code == 404  # nothing left to roll back
    # a retry of the first request still gets its job, though its selection is empty now
    assert world.client.post("/api/v1/bulk/rollback", json={"actor": BAD_ACTOR},
                             headers=auth(ADMIN, **{"Idempotency-Key": "deploy-42"})).get_json()["id"] == job["id"]
    # undo the whole action
    undo = world.client.post("/api/v1/bulk/rollback", json={"run": job["id"]}, headers=auth(ADMIN))
    assert undo.status_code == 202
    wait_for(lambda: world.client.get(undo.headers["Location"], headers=auth(ADMIN)).get_json()["state"] == "done",
             timeout=90, what="the undo job")
    with world.app.app_context():
        assert get_host().owner(deploy.owners[1]).item("preferences", "tea").content == "Hates tea."


def test_nothing_to_roll_back_is_404_and_jobs_stay_with_their_admins(world, deploy):
    r = world.client.post("/api/v1/bulk/rollback", json={"actor": "nobody"}, headers=auth(ADMIN))
    assert r.status_code == 404
    job = world.client.post("/api/v1/bulk/rollback", json={"actor": BAD_ACTOR}, headers=auth(ADMIN)).get_json()
    secret, entry = mint_token("lu-admin", ["admin"], "user:lu")
    append_token(world.tmp_path / "tokens.jsonl", entry)
    assert world.client.get(f"/api/v1/jobs/{job['id']}", headers=auth(secret)).status_code == 404
    assert world.client.get(f"/api/v1/jobs/{job['id']}", headers=auth(world.secrets["writer"])).status_code == 403
    # an admin of "user:lu" rolls back within its prefix only: nothing of user:d… matches
    assert world.client.post("/api/v1/bulk/rollback", json={"actor": BAD_ACTOR},
                             headers=auth(secret)).status_code == 404


@pytest.mark.slow
def test_a_worker_killed_after_an_owners_commit_leaves_no_second_commit(tmp_path):
    root = tmp_path / "data"
    host = make_host(root)
    deploy = bad_deploy(host, 6, conflict=False)
    job, _ = submit(host.jobs, host.run_index, RunQuery.parse(actor=BAD_ACTOR), actor="alice")
    first = subprocess.Popen([sys.executable, str(WORKER), str(root), "--lease", "30", "--die-after-step", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.wait(timeout=120) == -signal.SIGKILL  # died between owner 2's commit and its "done"
    finally:
        if first.poll() is None:
            first.kill()
    assert host.jobs.get(job.id).results[2]["state"] == "running"
    second = subprocess.Popen([sys.executable, str(WORKER), str(root), "--lease", "30"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        done = wait_for(lambda: (j := host.jobs.get(job.id)).state in ("done", "failed") and j,
                        timeout=90, what="the job")
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    assert done.state == "done" and done.done == 6
    assert done.results[2]["result"]["replayed"] is True  # the re-run found the commit, wrote nothing
    for owner_id in deploy.owners:
        log = subprocess.run(["git", "-C", str(host.owner_path(owner_id)), "log", "--format=%B"],
                             capture_output=True, text=True, check=True).stdout
        assert log.count(f"Wikimem-Run: {job.id}") == 1, owner_id
        assert host.owner(owner_id).item("preferences", "tea").content == "Drinks oolong tea every morning."
    lines = (root / "steps.log").read_text().splitlines()
    assert [line.split()[2:] for line in lines if line.startswith("2 ")] == [["1", "done", "False"],
                                                                             ["2", "done", "True"]]
