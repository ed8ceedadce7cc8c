"""Two hosts sharing one PostgreSQL database and one git remote: runs and bulk rollbacks of a cluster (issue 22).

Library level (two :class:`Host` objects over their own data roots, a
``file://`` remote per owner, a real PostgreSQL server on 127.0.0.1): an
owner written on one host and then served by the other after a failover is
listed once with its real totals, from either host; a bulk rollback sent to
one host covers the owners of both, with one job and one undo, each step run
by the host holding its owner.
"""

from __future__ import annotations

import time

import pytest

from wikimem.context import WriteContext
from wikimem.host import Host, JobQuery, RunQuery, make_host
from wikimem.host.cluster import Settings

BAD = "Elaina-v12"


@pytest.fixture
def pair(tmp_path, database_url):
    (tmp_path / "remotes").mkdir()
    settings = Settings(f"file://{tmp_path}/remotes/{{owner}}.git", freshness=0)
    hosts = [make_host(tmp_path / name, replication=settings, database=database_url, name=name)
             for name in ("east", "west")]
    yield hosts
    for host in hosts:
        if host._runner is not None:
            host._runner.stop()
        host.run_index.close()


def write(host: Host, owner_id: str, run: str, fact: str, actor: str = BAD) -> str:
    owner, _ = host.ensure_owner(owner_id)
    return owner.add("preferences", "tea", fact, ctx=WriteContext(run=run, actor=actor)).commit


def all_runs(host: Host, query: RunQuery) -> tuple[list, dict]:
    rows, cursor = [], None
    while True:
        page = host.fleet.find_runs(query, limit=2, cursor=cursor)
        rows += page.runs
        if page.next is None:
            return rows, page.total
        cursor = page.next


def test_after_a_failover_each_run_is_listed_once_with_its_totals_and_the_new_holder_plans_them_all(pair):
    east, west = pair
    write(east, "user:x", "run_east", "Hates tea.")  # east holds user:x
    west.owner("user:x")  # the failover: west clones it from the remote...
    write(west, "user:x", "run_west", "Hates coffee.")  # ...and writes there; east keeps its stale copy
    query = RunQuery.parse(actor=BAD)
    for host in (east, west):  # whichever host answers, and after a search on the stale host too
        rows, total = all_runs(host, query)
        assert sorted(r.run for r in rows) == ["run_east", "run_west"], host
        assert total == {"runs": 2, "owners": 1, "commits": 2}
    assert west.run_index.holders(["user:x"]) == {"user:x": "west"}  # the stale copy did not take it back
    plan = west.fleet.preview_bulk_rollback(query)
    assert [(p.part.owner, sorted(p.part.runs)) for p in plan.plans] == [("user:x", ["run_east", "run_west"])]
    assert not plan.plans[0].conflicts and len(plan.plans[0].changes) == 1


def test_a_bulk_rollback_sent_to_one_host_covers_every_hosts_owners_with_one_job_and_one_undo(pair):
    east, west = pair
    for i in range(3):
        write(east, f"user:e{i}", f"run_e{i}", "Hates tea.")
        write(west, f"user:w{i}", f"run_w{i}", "Hates tea.")
    for host in (east, west):
        host.start_jobs()  # every host runs the steps of the owners it holds
    job = east.fleet.start_bulk_rollback(RunQuery.parse(actor=BAD), actor="alice")
    assert job["total"] == 6
    done = _wait(west, job["id"])  # the job's page, from the other host
    assert done.state == "done" and {r["result"]["status"] for r in done.results} == {"done"}
    assert not west.exists("user:e0") and not east.exists("user:w0")  # each step ran where its owner lives
    assert west.fleet.find_runs(RunQuery.parse(actor=BAD)).total["runs"] == 6
    assert all(r.rolled_back_by for r in west.fleet.find_runs(RunQuery.parse(actor=BAD)).runs)
    for owner_id, host in (("user:e1", east), ("user:w1", west)):
        assert not host.owner(owner_id).has_item("preferences", "tea")
    undo = west.fleet.start_bulk_rollback(RunQuery.parse(run=job["id"]), actor="alice")  # undo the whole action
    assert undo["total"] == 6 and _wait(east, undo["id"]).state == "done"
    assert east.owner("user:e2").item("preferences", "tea").content == "Hates tea."
    assert west.owner("user:w2").item("preferences", "tea").content == "Hates tea."
    assert not [r for r in east.fleet.find_runs(RunQuery.parse(actor=BAD)).runs if r.rolled_back_by]
    listed = east.fleet.list_jobs(JobQuery(), admin=True)
    assert [j.id for j in listed.jobs] == [undo["id"], job["id"]]  # one list for the cluster


def test_an_owner_deleted_on_one_host_is_not_indexed_back_from_an_older_copy_on_another(pair):
    east, west = pair
    write(east, "user:gone", "run_1", "Hates tea.")
    west.owner("user:gone")  # west keeps a copy of it
    write(east, "user:gone", "run_2", "Hates coffee.")
    east.delete_owner("user:gone")
    assert west.exists("user:gone")  # (its copy is older than the deletion: it has not looked since)
    west.fleet.sweep_run_index()
    for host in (east, west):
        assert host.fleet.find_runs(RunQuery.parse(owner_prefix="user:gone")).total["runs"] == 0
    assert "user:gone" not in {p.owner for p in west.fleet.bulk_parts(RunQuery.parse(actor=BAD))}


def test_a_step_whose_host_is_gone_is_taken_over_by_another(pair):
    east, west = pair
    write(west, "user:w", "run_w", "Hates tea.")
    west.start_jobs().stop()  # west beat once, then went away
    with west.jobs.db.write() as tx:
        tx.execute("UPDATE hosts SET seen = ? WHERE name = 'west'", (time.time() - 3600,))
    east.start_jobs()
    job = east.fleet.start_bulk_rollback(RunQuery.parse(actor=BAD), actor="alice")
    done = _wait(east, job["id"])
    assert done.state == "done" and done.results[0]["result"]["status"] == "done"
    assert east.exists("user:w")  # east cloned it from the remote to act on it


def _wait(host: Host, job_id: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        job = host.jobs.get(job_id)
        if job.state in ("done", "failed"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.1)


def test_the_job_store_on_postgresql_migrates_claims_in_turns_caps_and_cancels(database_url):
    """The SQL of the jobs runs unchanged on PostgreSQL (one dialect-neutral layer)."""
    from wikimem.errors import QueueFull
    from wikimem.host.fleet import JobRunner, JobStore, Limits
    from wikimem.host.fleet.jobs import SCHEMA_VERSION

    jobs = JobStore(database_url, host="east", limits=Limits(per_tenant=30, per_owner=0, turn_keep=0))
    assert jobs.db.version() == SCHEMA_VERSION and JobStore(database_url).db.version() == SCHEMA_VERSION
    for i in range(30):
        jobs.submit("memorize", [{"owner": "user:a", "turn": f"t{i}"}], params={"owner": "user:a"}, tenant="user:a")
    with pytest.raises(QueueFull):
        jobs.submit("memorize", [{"owner": "user:a", "turn": "x"}], params={"owner": "user:a"}, tenant="user:a")
    order: list[str] = []
    runner = JobRunner(jobs, lease=30, poll=0.05, host="east")
    runner.register("memorize", lambda step: order.append(step.params["owner"]) or {"ok": 1})
    assert runner.run_once()
    calm, _ = jobs.submit("memorize", [{"owner": "user:b", "turn": "hi"}], params={"owner": "user:b"},
                          tenant="user:b")
    late, _ = jobs.submit("memorize", [{"owner": "user:c", "turn": "hi"}], params={"owner": "user:c"},
                          tenant="user:c")
    assert jobs.cancel(late.id).state == "cancelled"
    while runner.run_once():
        pass
    assert order.index("user:b") == 1 and "user:c" not in order and len(order) == 31
    assert jobs.get(calm.id).state == "done" and jobs.forget_turns(now=time.time() + 1) == 32  # (the cancelled one too)
    listed = jobs.list(JobQuery(owner_prefix="user:b"), admin=True)
    assert [j.id for j in listed.jobs] == [calm.id]
    page1 = jobs.list(JobQuery(), admin=True, limit=20)
    page2 = jobs.list(JobQuery(), admin=True, limit=20, cursor=page1.next)
    assert len({j.id for j in page1.jobs + page2.jobs}) == 32 and page2.next is None
    assert jobs.size() > 0
