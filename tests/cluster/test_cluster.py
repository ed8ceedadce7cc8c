"""Three hosts behind nginx, every owner replicated to a real git server: the cases of issue 14 item 4.

All real engines on 127.0.0.1: nginx with ``hash $owner consistent`` over
three gunicorn hosts (own data roots), nginx + fcgiwrap + ``git
http-backend`` as the remote (``receive.fsckObjects``), plus a ``file://``
remote; the ``git`` command line witnesses what the remotes hold.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
from clusterload import DATE, Load, check_remote, remote_entries
from engines import GitHttpServer, wait_until

from wikimem.client import Client
from wikimem.host.owner_ids import encode_owner_id

pytestmark = pytest.mark.slow

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def call(url: str, method: str = "GET", body: dict | None = None, token: str | None = None,
         timeout: float = 30) -> tuple[int, dict, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(
                                     {"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, json.load(resp), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.load(exc), dict(exc.headers)


def q(owner: str) -> str:
    return owner.replace(":", "%3A")


@pytest.fixture
def cluster(make_cluster, git_http):
    """Three sync-replicating hosts (peers of each other) behind the balancer, remote = the git server."""
    from engines import free_port

    ports = [free_port() for _ in range(3)]
    peers = ",".join(f"http://127.0.0.1:{p}" for p in ports)
    return make_cluster(3, ports=ports, env={"WIKIMEM_REMOTE": git_http.template(), "WIKIMEM_PEERS": peers,
                                             "WIKIMEM_REMOTE_FRESHNESS": "1", "WIKIMEM_REMOTE_TIMEOUT": "5"},
                        remote=git_http)


def test_every_write_is_on_the_remote_and_a_dead_hosts_owner_is_served_elsewhere(cluster, git_http):
    api = Client(cluster.url, cluster.token, timeout=30.0, proxies={})
    owner = "user:failover"
    api.create_owner(owner)
    for i in range(3):
        done = api.diary_append(f"entry {i}", owner=owner, date=DATE, time="09:00")
        bare = git_http.repo(encode_owner_id(owner))
        assert subprocess.run(["git", "-C", str(bare), "rev-parse", "main"], capture_output=True,
                              text=True).stdout.strip() == done.commit
    home = cluster.host_holding(owner)[0]
    home.kill()
    started = time.monotonic()
    entries = api.diary_day(DATE, owner=owner)  # another host clones it from the remote and serves it
    assert [e.content for e in entries] == ["entry 0", "entry 1", "entry 2"]
    api.diary_append("after the failover", owner=owner, date=DATE, time="09:00")
    assert time.monotonic() - started < 15
    assert remote_entries(git_http.repo(encode_owner_id(owner)))[-1] == "after the failover"


def test_remote_down_answers_503_nothing_unreplicated_is_acknowledged_and_it_recovers(make_cluster, tmp_path):
    server = GitHttpServer(tmp_path / "git").start()
    try:
        cluster = make_cluster(1, env={"WIKIMEM_REMOTE": server.template(), "WIKIMEM_REMOTE_TIMEOUT": "3"})
        host = cluster.hosts[0]
        api = Client(cluster.url, cluster.token, timeout=30.0, proxies={}, retries=0)
        owner = "user:down"
        api.create_owner(owner)
        api.add("prefs", "sea", "likes the sea", owner=owner)
        assert call(host.url + "/readyz")[0] == 200
        server.stop()
        status, body, headers = call(f"{cluster.url}/api/v1/owners/{q(owner)}/items/prefs/tea", "PUT",
                                     {"content": "green tea"}, cluster.token)
        assert status == 503 and body["error"]["code"] == "remote_unavailable" and int(headers["Retry-After"]) > 0
        assert call(host.url + "/readyz")[0] == 503
        status, body, _ = call(f"{cluster.url}/api/v1/owners/{q(owner)}/items?file=prefs", token=cluster.token)
        assert status == 200 and [i["name"] for i in body["items"]] == ["sea"]  # reads go on; tea not kept
        server.start()  # same port
        wait_until(lambda: call(host.url + "/readyz")[0] == 200, 20, "ready again")
        api.add("prefs", "tea", "green tea", owner=owner)
        names = subprocess.run(["git", "-C", str(server.repo(encode_owner_id(owner))), "show", "main:wiki/prefs.md"],
                               capture_output=True, text=True).stdout
        assert "## tea" in names and "## sea" in names
    finally:
        server.stop()


def test_two_hosts_writing_one_owner_at_once_keep_both_writes_in_one_linear_history(cluster, git_http):
    """Routing changed mid-flight: two hosts take writes of the same owner at the same time."""
    owner = "user:both"
    Client(cluster.url, cluster.token, proxies={}).create_owner(owner)
    a, b = cluster.hosts[0], cluster.hosts[1]
    results: dict[str, list] = {"a": [], "b": []}

    def writer(host, tag: str) -> None:
        c = Client(host.url, cluster.token, timeout=30.0, proxies={}, retries=3)
        for i in range(8):
            results[tag].append(c.diary_append(f"{tag}{i}", owner=owner, date=DATE, time="09:00").commit)

    threads = [threading.Thread(target=writer, args=(h, t)) for h, t in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results["a"]) == len(results["b"]) == 8
    bare = git_http.repo(encode_owner_id(owner))
    assert sorted(remote_entries(bare)) == sorted([f"a{i}" for i in range(8)] + [f"b{i}" for i in range(8)])
    parents = subprocess.run(["git", "-C", str(bare), "rev-list", "--parents", "main"], capture_output=True,
                             text=True).stdout.splitlines()
    assert all(len(line.split()) <= 2 for line in parents)  # linear: no merge, no overwrite
    assert set(results["a"] + results["b"]) <= {line.split()[0] for line in parents}  # every ack'd commit kept


def test_a_host_restored_from_the_remote_alone_serves_every_owner(cluster, git_http):
    api = Client(cluster.url, cluster.token, timeout=30.0, proxies={})
    owners = [f"user:restore{i}" for i in range(9)]
    for owner in owners:
        api.create_owner(owner)
        api.add("prefs", "sea", f"{owner} likes the sea", owner=owner)
    victim = cluster.host_holding(owners[0])[0]
    held = [o for o in owners if victim in cluster.host_holding(o)]
    victim.kill()
    subprocess.run(["rm", "-rf", str(victim.data)], check=True)  # the disk is gone
    victim.start()
    for owner in held:
        assert api.get("prefs", "sea", owner=owner).content == f"{owner} likes the sea"
    assert all(victim in cluster.host_holding(o) for o in held)  # back on the same host, from the remote


def test_the_owner_listing_spans_every_host(cluster):
    api = Client(cluster.url, cluster.token, timeout=30.0, proxies={})
    owners = [f"user:list{i:02d}" for i in range(12)]
    for owner in owners:
        api.create_owner(owner)
    assert len({id(cluster.host_holding(o)[0]) for o in owners}) > 1
    for host in cluster.hosts:  # whichever host answers, the page has all of them, in order
        page = Client(host.url, cluster.token, proxies={}).owners(prefix="user:list", limit=5)
        assert [o.id if hasattr(o, "id") else o["id"] for o in page.entries] == owners[:5]
    seen, cursor = [], None
    while True:
        page = api.owners(prefix="user:list", limit=5, cursor=cursor)
        seen += [o.id if hasattr(o, "id") else o["id"] for o in page.entries]
        cursor = page.next
        if not cursor:
            break
    assert seen == owners


def test_the_run_search_spans_every_host_and_names_a_host_that_did_not_answer(cluster):
    """Issue 16 item 1: "actor X from T1 to T2" across every owner of the cluster, whichever host answers."""
    api = Client(cluster.url, cluster.token, timeout=30.0, proxies={})
    owners = [f"user:runs{i:02d}" for i in range(12)]
    for i, owner in enumerate(owners):
        api.create_owner(owner)
        api.add("prefs", "tea", f"hates tea {i}", owner=owner, actor="Elaina-v12", run=f"run_bad_{i:02d}")
        api.add("prefs", "sea", "likes the sea", owner=owner, actor="Elaina-v11")
    holders = {id(cluster.host_holding(o)[0]) for o in owners}
    assert len(holders) > 1
    expected = {(o, f"run_bad_{i:02d}") for i, o in enumerate(owners)}
    for host in cluster.hosts:  # any host's answer holds every host's runs, paged in one order
        found, cursor = [], None
        while True:
            url = f"{host.url}/api/v1/runs?actor=Elaina-v12&since=2000-01-01&limit=5"
            status, page, _ = call(url + (f"&cursor={cursor}" if cursor else ""), token=cluster.token)
            assert status == 200 and page["total"] == {"runs": 12, "owners": 12, "commits": 12}
            assert "unreachable" not in page
            found += page["runs"]
            cursor = page["next"]
            if not cursor:
                break
        assert {(r["owner"], r["run"]) for r in found} == expected and len(found) == 12
        assert all(a["last"] >= b["last"] for a, b in zip(found, found[1:]))  # newest first, across hosts
        status, counts, _ = call(f"{host.url}/api/v1/runs?actor=Elaina-v12&by=owner&limit=50", token=cluster.token)
        assert [c["owner"] for c in counts["owners"]] == owners and counts["next"] is None
    victim = cluster.host_holding(owners[0])[0]
    victim.kill()
    alive = next(h for h in cluster.hosts if h is not victim)
    status, page, _ = call(f"{alive.url}/api/v1/runs?actor=Elaina-v12&limit=50", token=cluster.token)
    assert status == 200 and page["unreachable"] == [victim.url]  # a partial page says so, never an error
    assert owners[0] not in {r["owner"] for r in page["runs"]} and 0 < page["total"]["owners"] < 12


def test_write_load_while_a_host_is_killed_and_restarted_loses_and_duplicates_nothing(cluster, git_http):
    api = Client(cluster.url, cluster.token, timeout=30.0, proxies={})
    owners = [f"user:load{i:02d}" for i in range(50)]
    for owner in owners:
        api.create_owner(owner)
    load = Load(cluster.url, cluster.token, owners, threads=4).start()
    time.sleep(4)
    victim = cluster.hosts[1]
    victim.kill()
    time.sleep(6)
    victim.start(wait=False)
    time.sleep(6)
    result = load.stop()
    victim.wait_ready()
    assert result.acked > 20
    report = check_remote(result, git_http.repo)
    assert report == {"lost": [], "duplicated": [], "fsck": []}, (report, result.errors)
    for owner in owners[:10]:  # served by whichever host nginx picks, with every acknowledged write
        got = [e.content for e in api.diary_day(DATE, owner=owner)] if owner in result.acknowledged else []
        assert set(result.acknowledged.get(owner, [])) <= set(got)


def test_async_lag_is_exposed_bounded_and_a_restart_resumes_pushing(make_cluster, tmp_path):
    server = GitHttpServer(tmp_path / "git").start()
    try:
        cluster = make_cluster(1, env={"WIKIMEM_REMOTE": server.template(), "WIKIMEM_REPLICATION": "async",
                                       "WIKIMEM_REPLICATION_MAX_LAG": "5", "WIKIMEM_REMOTE_TIMEOUT": "3"})
        host = cluster.hosts[0]
        api = Client(host.url, cluster.token, timeout=30.0, proxies={}, retries=0)
        api.create_owner("user:async")
        wait_until(lambda: call(host.url + "/api/v1/replication", token=cluster.token)[1]["lag"]["total"] == 0,
                   10, "the new owner pushed")
        server.stop()  # the remote goes away: writes are acknowledged, the lag grows
        for i in range(4):
            api.diary_append(f"async {i}", owner="user:async", date=DATE, time="09:00")
        status = call(host.url + "/api/v1/replication", token=cluster.token)[1]
        assert status["mode"] == "async" and status["lag"]["owners"]["user:async"] == 4 == status["lag"]["total"]
        api.diary_append("async 4", owner="user:async", date=DATE, time="09:00")
        code, body, headers = call(f"{host.url}/api/v1/owners/{q('user:async')}/diary", "POST",
                                   {"content": "one too many", "date": DATE, "time": "09:00"}, cluster.token)
        assert code == 503 and body["error"]["code"] == "replication_lagging" and "Retry-After" in headers
        host.kill()  # nothing pushed yet
        server.start()
        host.start()  # the restart finds the unpushed commits and pushes them
        bare = server.repo(encode_owner_id("user:async"))
        wait_until(lambda: remote_entries(bare) == [f"async {i}" for i in range(5)], 30, "the resumed pushes")
        wait_until(lambda: call(host.url + "/api/v1/replication", token=cluster.token)[1]["lag"]["total"] == 0,
                   10, "lag 0")
    finally:
        server.stop()


def test_run_totals_count_an_owner_two_hosts_hold_once(make_cluster, tmp_path):
    """Without a shared database each host indexes the copies it holds: one owner with two runs, held by both
    hosts, is 2 runs of 1 owner whichever host answers."""
    from engines import free_port

    (tmp_path / "remotes").mkdir()
    ports = [free_port() for _ in range(2)]
    cluster = make_cluster(2, ports=ports, env={"WIKIMEM_REMOTE": f"file://{tmp_path}/remotes/{{owner}}.git",
                                                "WIKIMEM_PEERS": ",".join(f"http://127.0.0.1:{p}" for p in ports),
                                                "WIKIMEM_REMOTE_FRESHNESS": "0"})
    a, b = cluster.hosts
    owner = "user:twice"
    assert call(f"{a.url}/api/v1/owners/{q(owner)}", "PUT", token=cluster.token)[0] == 201
    for run in ("run_one", "run_two"):
        status, _, _ = call(f"{a.url}/api/v1/owners/{q(owner)}/items/prefs/{run}", "PUT",
                            {"content": "likes the sea", "run": run, "actor": "kai"}, token=cluster.token)
        assert status == 201
    assert call(f"{b.url}/api/v1/owners/{q(owner)}/items?file=prefs", token=cluster.token)[0] == 200  # b clones it
    assert len(cluster.host_holding(owner)) == 2
    for host in (a, b):
        status, page, _ = call(f"{host.url}/api/v1/runs?actor=kai", token=cluster.token)
        assert status == 200 and page["total"] == {"runs": 2, "owners": 1, "commits": 2}, page
        assert page["complete"] and sorted(r["run"] for r in page["runs"]) == ["run_one", "run_two"]
        assert "by_owner" not in page
