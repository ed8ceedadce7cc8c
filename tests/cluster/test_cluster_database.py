"""A cluster whose hosts share one PostgreSQL database (``WIKIMEM_DATABASE_URL``): runs and bulk rollbacks of every
host from any host (issue 22 finding 5).

Real engines on 127.0.0.1: two gunicorn hosts (own data roots, peers of each
other), nginx + fcgiwrap + ``git http-backend`` as the remote, a PostgreSQL
server started by the test (``tests/pgserver.py``). An owner written on one
host, then on the other (which clones it), then read again on the first
(which fast-forwards) is listed once with its real totals by either host; a
bulk rollback sent to one host covers the owners of both, with one job page
and one undo.
"""

from __future__ import annotations

import pytest
from engines import free_port, wait_until
from test_cluster import call

from wikimem.client import Client

pytestmark = pytest.mark.slow

BAD = "Elaina-v12"


@pytest.fixture
def shared(make_cluster, git_http, database_url):
    ports = [free_port() for _ in range(2)]
    peers = ",".join(f"http://127.0.0.1:{p}" for p in ports)
    return make_cluster(2, ports=ports, env={"WIKIMEM_REMOTE": git_http.template(), "WIKIMEM_PEERS": peers,
                                             "WIKIMEM_REMOTE_FRESHNESS": "0", "WIKIMEM_REMOTE_TIMEOUT": "5",
                                             "WIKIMEM_DATABASE_URL": database_url},
                        remote=git_http)


def runs(host, token: str, **query) -> list[dict]:
    found, cursor = [], None
    while True:
        qs = "&".join(f"{k}={v}" for k, v in {**query, "limit": 2, "cursor": cursor}.items() if v)
        status, page, _ = call(f"{host.url}/api/v1/runs?{qs}", token=token)
        assert status == 200, page
        found += page["runs"]
        cursor = page["next"]
        if not cursor:
            return found, page["total"]


def test_an_owner_that_moved_between_hosts_is_listed_once_with_its_totals_by_either_host(shared):
    a, b = shared.hosts
    owner = "user:moved"
    Client(a.url, shared.token, proxies={}).create_owner(owner)
    Client(a.url, shared.token, proxies={}).add("prefs", "tea", "hates tea", owner=owner, actor=BAD, run="run_on_a")
    Client(b.url, shared.token, proxies={}).add("prefs", "sea", "hates the sea", owner=owner, actor=BAD,
                                                run="run_on_b")  # b clones it from the remote, then writes
    assert sorted(i.name for i in Client(a.url, shared.token, proxies={}).items(owner=owner)) == ["sea", "tea"]
    for host in (a, b):
        found, total = runs(host, shared.token, actor=BAD)
        assert sorted(r["run"] for r in found) == ["run_on_a", "run_on_b"], host.url
        assert total == {"runs": 2, "owners": 1, "commits": 2}
    status, plan, _ = call(f"{b.url}/api/v1/bulk/rollback", "POST", {"actor": BAD, "preview": True},
                           token=shared.token)
    assert status == 200 and [sorted(o["runs"]) for o in plan["owners"]] == [["run_on_a", "run_on_b"]]


def test_a_bulk_rollback_sent_to_one_host_covers_both_hosts_owners_with_one_job_and_one_undo(shared):
    a, b = shared.hosts
    api = Client(shared.url, shared.token, timeout=30.0, proxies={})
    owners: list[str] = []
    held: dict[str, list] = {}
    # at least 8 owners, until nginx has put some on each host (the ring's places follow the hosts' random ports:
    # 8 names all on one host happen about once in 128 runs; at most 24)
    while len(owners) < 8 or ({id(h[0]) for h in held.values()} != {id(a), id(b)} and len(owners) < 24):
        owner = f"user:bulk{len(owners):02d}"
        api.create_owner(owner)
        api.add("prefs", "tea", "hates tea", owner=owner, actor=BAD, run=f"run_{owner[-2:]}")
        owners.append(owner)
        held[owner] = shared.host_holding(owner)
    assert {id(h[0]) for h in held.values()} == {id(a), id(b)}  # nginx spread them over both hosts
    n = len(owners)
    status, job, headers = call(f"{a.url}/api/v1/bulk/rollback", "POST", {"actor": BAD}, token=shared.token)
    assert status == 202 and job["total"] == n
    page = f"{b.url}{headers['Location']}"  # the job's one page, from the other host

    def finished() -> bool:
        return call(page, token=shared.token)[1]["state"] in ("done", "failed")

    wait_until(finished, 120, "the bulk job")
    done = call(page, token=shared.token)[1]
    assert done["state"] == "done" and {r["result"]["status"] for r in done["results"]} == {"done"}
    assert all(shared.host_holding(o) == held[o] for o in owners)  # each step ran where its owner lives
    found, total = runs(b, shared.token, actor=BAD)
    assert total["runs"] == n and all(r["rolled_back_by"] for r in found)
    status, undo, headers = call(f"{b.url}/api/v1/bulk/rollback", "POST", {"run": job["id"]}, token=shared.token)
    assert status == 202 and undo["total"] == n
    wait_until(lambda: call(f"{a.url}{headers['Location']}", token=shared.token)[1]["state"] == "done", 120,
               "the undo")
    assert all(api.fetch("prefs", "tea", owner=o).item.content == "hates tea" for o in owners)
    status, listed, _ = call(f"{a.url}/api/v1/jobs?kind=bulk-rollback", token=shared.token)
    assert [j["id"] for j in listed["jobs"]] == [undo["id"], job["id"]]
