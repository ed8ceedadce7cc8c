"""wikimem.host.fleet.jobs in one process: submit, claim under a lease, outcomes, retries, pruning.

(Processes that die mid-job: tests/integration/test_jobs_processes.py.)
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from wikimem.errors import IdempotencyKeyReused, InvalidName, NotFound
from wikimem.host.fleet import JobRunner, JobStore, RetryLater, Step, validate_job_id


@pytest.fixture
def jobs(tmp_path) -> JobStore:
    return JobStore.at(tmp_path / "data")


def runner(jobs: JobStore, **handlers) -> JobRunner:
    r = JobRunner(jobs, lease=5.0, poll=0.05)
    for kind, fn in handlers.items():
        r.register(kind, fn)
    return r


def drain(r: JobRunner) -> int:
    n = 0
    while r.run_once():
        n += 1
    return n


def test_a_job_runs_its_steps_and_keeps_each_result(jobs):
    job, created = jobs.submit("double", [{"x": 1}, {"x": 2}, {"x": 3}], params={"note": "n"})
    assert created and job.state == "queued" and (job.done, job.total) == (0, 3)
    assert [r["state"] for r in job.results] == ["pending"] * 3
    seen: list[Step] = []

    def double(step: Step):
        seen.append(step)
        return {"y": step.params["x"] * 2}

    assert drain(runner(jobs, double=double)) == 3
    done = jobs.get(job.id)
    assert done.state == "done" and (done.done, done.failed, done.total) == (3, 0, 3)
    assert [r["result"] for r in done.results] == [{"y": 2}, {"y": 4}, {"y": 6}]
    assert done.finished is not None and done.params == {"note": "n"}
    assert [s.key for s in seen] == [f"{job.id}/0", f"{job.id}/1", f"{job.id}/2"]
    assert all(s.attempt == 1 and s.job_params == {"note": "n"} for s in seen)
    assert done.to_dict()["results"] == done.results


def test_the_same_key_is_the_same_job(jobs):
    first, created = jobs.submit("k", [{"a": 1}], key="req-1")
    again, created_again = jobs.submit("k", [{"a": 1}], key="req-1")
    assert created and not created_again and again.id == first.id
    with pytest.raises(IdempotencyKeyReused):
        jobs.submit("k", [{"a": 2}], key="req-1")
    other, created_other = jobs.submit("k", [{"a": 1}], key="req-2")
    assert created_other and other.id != first.id


def test_a_failing_step_fails_the_job_but_not_the_other_steps(jobs):
    def maybe(step):
        if step.params["x"] == 2:
            raise ValueError("two is not allowed")
        if step.params["x"] == 3:
            raise KeyError("a bug")  # not a message meant for clients
        return "ok"

    job, _ = jobs.submit("maybe", [{"x": 1}, {"x": 2}, {"x": 3}])
    drain(runner(jobs, maybe=maybe))
    got = jobs.get(job.id)
    assert got.state == "failed" and (got.done, got.failed) == (3, 2)
    assert got.results[0] == {"step": 0, "state": "done", "result": "ok"}
    assert got.results[1]["error"] == {"code": "invalid_value", "message": "two is not allowed"}
    assert got.results[2]["error"] == {"code": "internal", "message": "internal error"}


def test_retry_later_runs_the_step_again_after_the_delay(jobs):
    calls = []

    def flaky(step):
        calls.append(step.attempt)
        if len(calls) == 1:
            raise RetryLater("busy", delay=0.3)
        return "finally"

    job, _ = jobs.submit("flaky", [{}])
    r = runner(jobs, flaky=flaky)
    assert r.run_once() and not r.run_once()  # not due yet
    assert jobs.get(job.id).results[0]["state"] == "pending"
    time.sleep(0.35)
    assert r.run_once()
    assert calls == [1, 2] and jobs.get(job.id).results[0]["result"] == "finally"


def test_only_registered_kinds_are_claimed(jobs):
    job, _ = jobs.submit("elsewhere", [{}])
    assert not runner(jobs, other=lambda s: None).run_once()
    assert jobs.get(job.id).state == "queued"


def test_a_lapsed_lease_is_taken_over_and_the_late_result_is_dropped(jobs):
    job, _ = jobs.submit("k", [{}])
    first = jobs.claim("host-a:1:x", ["k"], lease=0.2, max_attempts=5)
    assert first is not None and jobs.get(job.id).state == "running"
    assert jobs.claim("host-b:2:y", ["k"], lease=0.2, max_attempts=5) is None  # still leased
    time.sleep(0.25)
    second = jobs.claim("host-b:2:y", ["k"], lease=5, max_attempts=5)
    assert second is not None and second.attempt == 2 and second.key == first.key
    assert not jobs.complete(first, "host-a:1:x", result="late")
    assert jobs.complete(second, "host-b:2:y", result="on time")
    assert jobs.get(job.id).results[0]["result"] == "on time"
    assert not jobs.complete(second, "host-b:2:y", result="twice")  # a done step stays done


def test_a_heartbeat_keeps_the_lease(jobs):
    jobs.submit("k", [{}])
    step = jobs.claim("a:1:x", ["k"], lease=0.3, max_attempts=5)
    for _ in range(4):
        time.sleep(0.15)
        assert jobs.heartbeat("a:1:x", lease=0.3) == 1
        assert jobs.claim("b:2:y", ["k"], lease=0.3, max_attempts=5) is None
    assert jobs.complete(step, "a:1:x", result=1)


def test_a_lease_of_a_dead_local_process_is_taken_at_once(jobs):
    import socket
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    holder = f"{socket.gethostname()}:{int(dead.stdout)}:abcd"
    jobs.submit("k", [{}])
    assert jobs.claim(holder, ["k"], lease=3600, max_attempts=5) is not None
    again = jobs.claim("me:1:x", ["k"], lease=10, max_attempts=5)
    assert again is not None and again.attempt == 2


def test_a_step_whose_process_keeps_dying_gives_up(jobs):
    job, _ = jobs.submit("k", [{}])
    for n in range(2):
        assert jobs.claim(f"h:{n}:x", ["k"], lease=0.01, max_attempts=2) is not None
        time.sleep(0.02)
    assert jobs.claim("h:9:x", ["k"], lease=0.01, max_attempts=2) is None
    got = jobs.get(job.id)
    assert got.state == "failed" and got.results[0]["error"]["code"] == "gave_up"


def test_threads_run_each_step_exactly_once(jobs):
    ran: list[int] = []
    lock = threading.Lock()

    def record(step):
        with lock:
            ran.append(step.params["i"])
        return step.params["i"]

    job, _ = jobs.submit("rec", [{"i": i} for i in range(60)])
    r = JobRunner(jobs, threads=4, lease=5, poll=0.02).start()
    r.register("rec", record)
    try:
        deadline = time.monotonic() + 30
        while jobs.get(job.id).state != "done" and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        r.stop()
    assert sorted(ran) == list(range(60))
    assert [res["result"] for res in jobs.get(job.id).results] == list(range(60))


def test_finished_jobs_are_pruned_after_the_retention(tmp_path):
    jobs = JobStore.at(tmp_path, retention=60)
    old, _ = jobs.submit("k", [{}])
    runner(jobs, k=lambda s: 1).run_once()
    unfinished, _ = jobs.submit("k", [{}])
    assert jobs.prune(now=time.time() + 30) == 0
    assert jobs.prune(now=time.time() + 120) == 1
    with pytest.raises(NotFound):
        jobs.get(old.id)
    assert jobs.get(unfinished.id).state == "queued"
    db = sqlite3.connect(tmp_path / "jobs.sqlite3")
    assert db.execute("SELECT count(*) FROM steps").fetchone()[0] == 1  # its steps went with it


def test_the_database_is_in_wal_mode(jobs):
    assert sqlite3.connect(jobs.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("bad", ["", "job_x", "../etc", None, 7, "job_20260721T000000Z_0123456789aZ"])
def test_job_ids_are_validated(jobs, bad):
    with pytest.raises(InvalidName):
        jobs.get(bad)
    with pytest.raises(InvalidName):
        validate_job_id(bad)


def test_unknown_job_is_not_found(jobs):
    with pytest.raises(NotFound):
        jobs.get("job_20260721T000000Z_0123456789ab")


@pytest.mark.parametrize("kind, steps, key", [("", [{}], None), ("k", [], None), ("k", [{}], ""),
                                              ("k", [{}], "x" * 600)])
def test_bad_submissions_are_refused(jobs, kind, steps, key):
    with pytest.raises(ValueError):
        jobs.submit(kind, steps, key=key)


# -- fair, bounded queues (issue 25) --------------------------------------------------------------

def test_a_tenants_flood_delays_another_tenants_job_by_at_most_one_step_per_runner(tmp_path):
    """Tenants take turns: the step of the tenant served longest ago goes first."""
    from wikimem.host.fleet import Limits

    jobs = JobStore.at(tmp_path, limits=Limits(per_tenant=0, per_owner=0))
    for i in range(50):
        jobs.submit("work", [{"i": i}], params={"owner": f"user:a{i % 5}"}, tenant="user:a")
    order: list[str] = []
    r = runner(jobs, work=lambda step: order.append(step.job_params["owner"]))
    assert r.run_once() and r.run_once()  # the flood is being served
    jobs.submit("work", [{"i": 0}], params={"owner": "user:b1"}, tenant="user:b")
    drain(r)
    assert order.index("user:b1") == 2  # next after the step in flight, not after 48 more
    assert len(order) == 51


def test_open_jobs_past_a_tenants_or_an_owners_cap_are_refused_with_a_retry_after(tmp_path):
    from wikimem.errors import QueueFull
    from wikimem.host.fleet import Limits

    jobs = JobStore.at(tmp_path, limits=Limits(per_tenant=3, per_owner=2, retry_after=7))
    jobs.submit("work", [{}], params={"owner": "user:a1"}, tenant="user:a")
    jobs.submit("work", [{}], params={"owner": "user:a1"}, tenant="user:a", key="k")
    with pytest.raises(QueueFull, match="user:a1") as refused:
        jobs.submit("work", [{}], params={"owner": "user:a1"}, tenant="user:a")
    assert refused.value.retry_after == 7 and refused.value.code == "queue_full"
    again, created = jobs.submit("work", [{}], params={"owner": "user:a1"}, tenant="user:a", key="k")
    assert not created  # a retry of an accepted job is never refused
    jobs.submit("work", [{}], params={"owner": "user:a2"}, tenant="user:a")
    with pytest.raises(QueueFull, match="prefix 'user:a'"):
        jobs.submit("work", [{}], params={"owner": "user:a3"}, tenant="user:a")
    jobs.submit("work", [{}], params={"owner": "user:b1"}, tenant="user:b")  # another tenant
    drain(runner(jobs, work=lambda step: None))
    jobs.submit("work", [{}], params={"owner": "user:a3"}, tenant="user:a")  # finished jobs free the cap


def test_a_finished_memorize_job_drops_its_raw_turn_after_the_window_and_keeps_its_result(tmp_path):
    from wikimem.host.fleet import MEMORIZE, Limits

    jobs = JobStore.at(tmp_path, limits=Limits(turn_keep=600))
    job, _ = jobs.submit(MEMORIZE, [{"owner": "user:a", "turn": "user: my password is hunter2", "run": "r"}],
                         params={"owner": "user:a", "run": "r"})
    queued, _ = jobs.submit(MEMORIZE, [{"owner": "user:a", "turn": "still to do", "run": "r2"}],
                            params={"owner": "user:a", "run": "r2"})
    r = runner(jobs, **{MEMORIZE: lambda step: {"entries": 1, "run": "r"}})
    assert r.run_once()
    assert jobs.forget_turns() == 0  # within the window
    assert jobs.forget_turns(now=time.time() + 601) == 1
    raw = sqlite3.connect(jobs.path).execute("SELECT params FROM steps WHERE job = ?", (job.id,)).fetchone()[0]
    assert "hunter2" not in raw and '"turn_dropped":true' in raw
    assert jobs.get(job.id).results[0]["result"] == {"entries": 1, "run": "r"}
    pending = sqlite3.connect(jobs.path).execute("SELECT params FROM steps WHERE job = ?", (queued.id,)).fetchone()
    assert "still to do" in pending[0]  # an unfinished job keeps what it needs


def test_over_its_size_budget_the_database_drops_finished_jobs_first_then_refuses(tmp_path):
    from wikimem.errors import QueueFull
    from wikimem.host.fleet import Limits

    jobs = JobStore.at(tmp_path, limits=Limits(per_tenant=0, per_owner=0, max_bytes=256 * 1024))
    big = "x" * 4000
    done = [jobs.submit("work", [{"blob": big}])[0].id for _ in range(40)]
    drain(runner(jobs, work=lambda step: None))
    for _ in range(30):  # unfinished jobs push it over: the finished ones go first
        jobs.submit("work", [{"blob": big}])
    assert jobs.size() <= 256 * 1024
    gone = [j for j in done if _missing(jobs, j)]
    assert gone and gone == done[:len(gone)]  # oldest first
    with pytest.raises(QueueFull, match="size budget"):
        for _ in range(200):
            jobs.submit("work", [{"blob": big}])


def _missing(jobs: JobStore, job_id: str) -> bool:
    try:
        jobs.get(job_id)
    except NotFound:
        return True
    return False


def test_a_step_meant_for_another_host_is_taken_over_only_once_that_host_stops_beating(tmp_path, monkeypatch):
    jobs = JobStore.at(tmp_path, host="east")
    monkeypatch.setattr(type(jobs), "shared", property(lambda self: True))  # as on a cluster's database
    job, _ = jobs.submit("work", [{"o": "user:w"}], homes=["west"])
    jobs.heartbeat("west-runner", lease=30, host="west")
    east = JobRunner(jobs, lease=30, poll=0.05, host="east", foreign=True)
    east.register("work", lambda step: "east")
    local = JobRunner(jobs, lease=30, poll=0.05, host="east", foreign=False)
    local.register("work", lambda step: "east")
    assert not east.run_once() and not local.run_once()  # west is alive: its step waits for it
    with jobs.db.write() as tx:
        tx.execute("UPDATE hosts SET seen = ? WHERE name = 'west'", (time.time() - 120,))
    assert not local.run_once()  # a host that cannot reach other hosts' owners never takes it
    assert east.run_once() and jobs.get(job.id).results[0]["result"] == "east"
