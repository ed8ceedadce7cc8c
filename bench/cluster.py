"""Cluster benchmark (issue 14): the replication transport, then the cluster on loopback.

Section ``transport`` (the choice between dulwich's client and the git CLI):
for each remote kind — ``file://``, smart HTTP (nginx + fcgiwrap + ``git
http-backend``, fsck on receive) and ``git://`` (``git daemon``) — the
median and p90 latency of

- a compare-and-swap push of one new commit (dulwich ``send_pack`` with the
  advertised-value check vs ``git push --force-with-lease=main:<old>``),
- a fetch of one new commit into a clone that is one commit behind
  (dulwich ``fetch`` vs ``git fetch … main:refs/remotes/origin/main``),
- reading the remote head (dulwich ``get_refs`` vs ``git ls-remote``),

next to the reference measured in the same run: one unreplicated write
(``VersionedStore.add``), so "sync replication costs at most 2x a write"
can be read off directly.

Section ``writes``: write latency (sequential ``PUT`` items) and throughput (4 threads) of one
gunicorn host through the API with no remote vs sync replication to a ``file://`` remote and to
the smart-HTTP git server, in the same run (ratio to no remote).

Section ``async``: one host in async mode under a write load; the lag (``/api/v1/replication``)
sampled during the load, and the time to drain it afterwards.

Section ``failover``: three hosts behind nginx (passive checks), sync replication; the time from
SIGKILL of an owner's host to the first successful write of that owner through nginx.

Section ``retrieve``: retrieve throughput through nginx with 3 hosts vs 1 host (wrk, 30 owners x
100 items). On a 2-core machine this is CPU-bound: the per-core figure is printed too.

Section ``killrun`` (not in the default set; ``--section killrun --duration 300``): the long
kill/restart run — a write load over 50 owners through nginx while a random host is SIGKILLed
every ``--kill-every`` seconds and restarted, then every acknowledged write is looked up on the
remote (lost, duplicated) and every remote repository gets ``git fsck --strict``.

    .venv/bin/python bench/cluster.py [--samples 40] [--pushes 600] [--section transport]

and a growth table: push latency of a file:// remote over ``--pushes``
pushes: :class:`Remote` (loose objects in-process) vs dulwich's LocalGitClient
(one pack per push in the remote) vs git's receive-pack.

Figures on the shared 2-core machine are noisy: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "cluster"))

from engines import Balancer, GitDaemon, GitHttpServer, HostProcess, bare_repo, free_port, wait_until  # noqa: E402

from wikimem.versioned import VersionedStore  # noqa: E402
from wikimem.versioned.replication import Remote  # noqa: E402


def fmt(samples: list[float]) -> str:
    s = sorted(samples)
    return f"{statistics.median(s) * 1000:7.2f} ms (p90 {s[int(len(s) * 0.9)] * 1000:6.2f})"


def med(samples: list[float]) -> float:
    return statistics.median(samples)


@contextmanager
def scratch(name: str) -> Iterator[Path]:
    """A temporary folder for one section, removed after it."""
    tmp = Path(tempfile.mkdtemp(prefix=f"wikimem-bench-{name}-"))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def table(title: str, header: list[str], rows: list[list[str]], intro: str = "") -> None:
    """One section of the report: its heading, an optional line of text, a markdown table."""
    print(f"\n## {title}\n")
    if intro:
        print(intro + "\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


class CliTransport:
    """The git CLI doing what :class:`Remote` does: the same CAS push, fetch and head read."""

    def __init__(self, url: str):
        self.url = url

    def _git(self, repo: Path | None, *args: str) -> str:
        argv = ["git"] + (["-C", str(repo)] if repo else []) + list(args)
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def remote_head(self) -> str | None:
        out = self._git(None, "ls-remote", self.url, "refs/heads/main").split()
        return out[0] if out else None

    def push(self, repo: Path, new: str, expected: str | None) -> None:
        self._git(repo, "push", "-q", "--porcelain", f"--force-with-lease=refs/heads/main:{expected or ''}",
                  self.url, f"{new}:refs/heads/main")

    def fetch(self, repo: Path) -> None:
        self._git(repo, "fetch", "-q", "--no-tags", self.url, "+refs/heads/main:refs/remotes/origin/main")


def make_transport(client: str, url: str):
    """``dulwich``: :class:`Remote` as the product uses it (file://: loose objects written in-process);
    ``LocalGitClient``: dulwich's in-process client (one pack per push); ``git receive-pack``: dulwich's
    client speaking to git's receive-pack/upload-pack programs; ``git CLI``: :class:`CliTransport`."""
    if client == "git CLI":
        return CliTransport(url)
    remote = Remote(url)
    if client in ("LocalGitClient", "git receive-pack"):
        from dulwich.client import LocalGitClient, SubprocessGitClient

        remote._client = LocalGitClient() if client == "LocalGitClient" else SubprocessGitClient()
        remote.scheme = f"file via {client}"  # bench only: take the client path, not the in-process one
    return remote


def transport_rows(kind: str, client: str, url: str, tmp: Path, samples: int) -> list[tuple[str, str, str, float]]:
    """(remote kind, operation, figures, median) of one client against one fresh, empty remote."""
    transport = make_transport(client, url)
    writer = VersionedStore(tmp / f"{kind[:4]}-{client}-w", auto_pack=False)
    reader = tmp / f"{kind[:4]}-{client}-r"
    writer.add("f", "seed", "first memory")
    transport.push(writer.root, writer.head(), None)
    Remote(url).clone(reader)
    push, fetch, head = [], [], []
    for i in range(samples):
        before = writer.head()
        writer.add(f"f{i % 10}", f"item{i}", f"memory number {i}: she mentioned the sea again.")
        push.append(timed(lambda before=before: transport.push(writer.root, writer.head(), before)))
        fetch.append(timed(lambda: transport.fetch(reader)))
        head.append(timed(transport.remote_head))
    writer.close()
    return [(kind, f"push (CAS) · {client}", fmt(push), med(push)),
            (kind, f"fetch · {client}", fmt(fetch), med(fetch)),
            (kind, f"remote head · {client}", fmt(head), med(head))]


def section_transport(args) -> None:
    with scratch("cluster") as tmp:
        local = VersionedStore(tmp / "reference", auto_pack=False)
        local.add("f", "seed", "x")
        ref = [timed(lambda i=i: local.add(f"f{i % 10}", f"item{i}", f"memory number {i}: the sea."))
               for i in range(args.samples)]
        local.close()
        rows = []
        with GitHttpServer(tmp / "http").start() as http, GitDaemon(tmp / "daemon").start() as daemon:
            for kind, url_of in (("file://", lambda n: f"file://{bare_repo(tmp / 'file' / f'{n}.git')}"),
                                 ("http (nginx+git http-backend)", lambda n: f"{http.url}/{n}.git"),
                                 ("git:// (git daemon)", lambda n: f"{daemon.url}/{bare_repo(daemon.repo(n)).name}")):
                clients = (("dulwich", "LocalGitClient", "git receive-pack", "git CLI") if kind == "file://"
                           else ("dulwich", "git CLI"))
                for n, client in enumerate(clients):
                    rows += transport_rows(kind, client, url_of(f"bench-{n}"), tmp, args.samples)
        table(f"Transport: dulwich client vs git CLI ({args.samples} samples each, one commit per push)",
              ["remote", "operation · client", "latency median (p90)", "÷ unreplicated write"],
              [[kind, op, figures, f"{m / med(ref):.1f}x"] for kind, op, figures, m in rows],
              intro=f"reference: one unreplicated write (VersionedStore.add): {fmt(ref)}")
        growth(tmp, args.pushes)


def growth(tmp: Path, pushes: int) -> None:
    """Push latency of a file:// remote over its life: the first and the last 50 of ``pushes`` pushes."""
    print(f"\n## file:// remote over {pushes} pushes (one commit each): first 50 vs last 50\n")
    print("| client | first 50 | last 50 | packs in the remote |")
    print("|---|---|---|---|")
    for client in ("dulwich", "LocalGitClient", "git receive-pack"):
        bare = bare_repo(tmp / "growth" / f"{client.replace(' ', '-')}.git")
        remote = make_transport(client, f"file://{bare}")
        writer = VersionedStore(tmp / "growth" / f"{client.replace(' ', '-')}-w", auto_pack=False)
        writer.add("f", "seed", "x")
        remote.push(writer.root, writer.head(), None)
        lat = []
        for i in range(pushes):
            before = writer.head()
            writer.add(f"f{i % 10}", f"item{i}", f"memory {i}")
            lat.append(timed(lambda w=writer, r=remote, b=before: r.push(w.root, w.head(), b)))
        writer.close()
        packs = len(list((bare / "objects" / "pack").glob("*.pack")))
        print(f"| {client} | {fmt(lat[:50])} | {fmt(lat[-50:])} | {packs} |")


# -- the cluster on loopback ------------------------------------------------------------

TOKEN = "bench-cluster-" + "0" * 24
SECRET = "bench-cluster-secret-" + "1" * 32


def start_hosts(root: Path, n: int, env: dict, workers: int = 2, ports: list[int] | None = None) -> list[HostProcess]:
    shared = {"WIKIMEM_ADMIN_TOKEN": TOKEN, "WIKIMEM_SECRET_KEY": SECRET, **env}
    hosts = [HostProcess(root / f"host{i}", env=shared, workers=workers, port=(ports[i] if ports else 0))
             for i in range(n)]
    for h in hosts:
        h.start(wait=False)
    for h in hosts:
        h.wait_ready()
    return hosts


def api_client(url: str, retries: int = 2, timeout: float = 30.0):
    from wikimem.client import Client

    return Client(url, TOKEN, timeout=timeout, retries=retries, proxies={})


def _write_latencies(url: str, owner: str, n: int) -> list[float]:
    c = api_client(url)
    c.create_owner(owner)
    return [timed(lambda i=i: c.add(f"f{i % 10}", f"item{i}", f"memory {i}: she mentioned the sea.", owner=owner))
            for i in range(n)]


def _throughput(url: str, owners: list[str], seconds: float, threads: int = 4) -> float:
    import threading

    c = api_client(url)
    for o in owners:
        c.create_owner(o)
    done, stop = [0] * threads, time.monotonic() + seconds

    def run(k: int) -> None:
        cl = api_client(url)
        i = 0
        while time.monotonic() < stop:
            cl.add("notes", f"t{k}-{i}", f"note {i}", owner=owners[(k + i) % len(owners)])
            done[k] += 1
            i += 1

    ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(done) / seconds


def section_writes(args) -> None:
    rows = []
    with scratch("writes") as tmp:
        with GitHttpServer(tmp / "git").start() as git:
            (tmp / "replicas").mkdir()
            configs = [("no remote", {}),
                       ("sync -> file://", {"WIKIMEM_REMOTE": f"file://{tmp}/replicas/{{owner}}.git"}),
                       ("sync -> http (git http-backend)", {"WIKIMEM_REMOTE": git.template()})]
            for k, (name, env) in enumerate(configs):
                host = start_hosts(tmp / f"config{k}", 1, env)[0]
                try:
                    lat = _write_latencies(host.url, "user:bench-lat", args.samples)
                    tput = _throughput(host.url, [f"user:bench-t{i}" for i in range(8)], args.duration)
                finally:
                    host.stop()
                rows.append((name, lat, tput))
        ref_lat, ref_tput = med(rows[0][1]), rows[0][2]
        table(f"Writes: one host (2 workers), sync replication vs none ({args.samples} sequential PUTs; "
              f"throughput of 4 threads over {args.duration:.0f} s)",
              ["remote", "write latency median (p90)", "x no remote", "writes/s (4 threads)", "x no remote"],
              [[name, fmt(lat), f"{med(lat) / ref_lat:.2f}x", f"{tput:.1f}", f"{tput / ref_tput:.2f}x"]
               for name, lat, tput in rows])


def section_async(args) -> None:
    import json as _json
    import threading
    import urllib.request

    with scratch("async") as tmp:
        with GitHttpServer(tmp / "git").start() as git:
            host = start_hosts(tmp, 1, {"WIKIMEM_REMOTE": git.template(), "WIKIMEM_REPLICATION": "async"})[0]
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

            def lag() -> int:
                req = urllib.request.Request(host.url + "/api/v1/replication",
                                             headers={"Authorization": f"Bearer {TOKEN}"})
                with opener.open(req, timeout=10) as resp:
                    return int(_json.load(resp)["lag"]["total"])

            try:
                owners = [f"user:async{i}" for i in range(8)]
                samples: list[int] = []
                result: dict = {}
                t = threading.Thread(target=lambda: result.setdefault(
                    "tput", _throughput(host.url, owners, args.duration)))
                t.start()
                while t.is_alive():
                    samples.append(lag())
                    time.sleep(0.5)
                t.join()
                started = time.monotonic()
                wait_until(lambda: lag() == 0, 120, "the lag to drain")
                drained = time.monotonic() - started
            finally:
                host.stop()
        table(f"Async replication under load (4 threads, {args.duration:.0f} s, remote = git http-backend)",
              ["writes/s", "lag samples", "lag median", "lag max", "drained after the load"],
              [[f"{result['tput']:.1f}", str(len(samples)), f"{statistics.median(samples):.0f} commits",
                f"{max(samples)} commits", f"{drained:.1f} s"]])


def _cluster(tmp: Path, git: GitHttpServer, n: int = 3, env: dict | None = None) -> tuple[list, Balancer]:
    ports = [free_port() for _ in range(n)]
    peers = ",".join(f"http://127.0.0.1:{p}" for p in ports)
    hosts = start_hosts(tmp, n, {"WIKIMEM_REMOTE": git.template(), "WIKIMEM_PEERS": peers,
                                 "WIKIMEM_REMOTE_TIMEOUT": "5", **(env or {})}, ports=ports)
    balancer = Balancer(tmp / "balancer", [h.address for h in hosts]).start()
    return hosts, balancer


def section_failover(args) -> None:
    from wikimem.host.owner_ids import encode_owner_id

    times = []
    with scratch("failover") as tmp:
        with GitHttpServer(tmp / "git").start() as git:
            hosts, balancer = _cluster(tmp, git)
            try:
                c = api_client(balancer.url, retries=0, timeout=10)
                for round_ in range(args.rounds):
                    owner = f"user:failover{round_}"
                    c.create_owner(owner)
                    c.add("prefs", "sea", "likes the sea", owner=owner)
                    folder = encode_owner_id(owner)
                    victim = next(h for h in hosts if (h.data / "owners" / folder / ".git").is_dir())
                    victim.kill()
                    killed = time.monotonic()
                    deadline = killed + 60
                    while time.monotonic() < deadline:
                        try:
                            c.add("prefs", "tea", f"after kill {round_}", owner=owner)
                            break
                        except Exception:
                            time.sleep(0.05)
                    times.append(time.monotonic() - killed)
                    victim.start()
            finally:
                balancer.stop()
                for h in hosts:
                    h.stop()
        table(f"Failover: SIGKILL of an owner's host -> first successful write of that owner through nginx "
              f"({args.rounds} rounds; target < 15 s)", ["round", "seconds"],
              [[str(i), f"{t:.2f}"] for i, t in enumerate(times)] + [["max", f"{max(times):.2f}"]])


_WRK_SCRIPT = """
local owners = {}
for i = 0, %(n)d - 1 do owners[#owners + 1] = string.format("user%%%%3Aretr%%02d", i) end
local queries = {"sea", "tea", "the old library", "jazz piano", "rainy mornings", "green tea and the sea"}
local k = 0
request = function()
  k = k + 1
  local path = "/api/v1/owners/" .. owners[(k %% #owners) + 1] .. "/retrieve"
  local body = '{"query": "' .. queries[(k %% #queries) + 1] .. '", "limit": 5}'
  return wrk.format("POST", path, {["Content-Type"] = "application/json",
                                   ["Authorization"] = "Bearer %(token)s"}, body)
end
"""


def _wrk(url: str, script: Path, seconds: float, connections: int) -> tuple[float, str]:
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{int(seconds)}s", "-s", str(script), url],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = next((float(line.split()[1]) for line in out.splitlines() if line.startswith("Requests/sec")), 0.0)
    non2xx = next((line.strip() for line in out.splitlines() if "Non-2xx" in line), "")
    return rps, non2xx


def section_retrieve(args) -> None:
    from wikimem.client import Client

    tmp = Path(tempfile.mkdtemp(prefix="wikimem-bench-retrieve-"))
    n_owners = 30
    script = tmp / "retrieve.lua"
    script.write_text(_WRK_SCRIPT % {"n": n_owners, "token": TOKEN})
    rows = []
    try:
        with GitHttpServer(tmp / "git").start() as git:
            for n in (1, 3):
                hosts, balancer = _cluster(tmp / f"n{n}", git)
                try:
                    c = Client(balancer.url, TOKEN, timeout=60, proxies={})
                    for i in range(n_owners):
                        owner = f"user:retr{i:02d}"
                        c.create_owner(owner)
                        c.batch([{"op": "add", "file": f"f{j % 10}", "name": f"item{j}",
                                  "content": f"memory {j}: the sea, green tea, jazz piano, rainy mornings {i}"}
                                 for j in range(100)], owner=owner)
                    _wrk(balancer.url, script, 3, 8)  # warm every worker's indexes
                    rps, non2xx = _wrk(balancer.url, script, args.duration, 16)
                    rows.append((n, rps, non2xx))
                finally:
                    balancer.stop()
                    for h in hosts:
                        h.stop()
        cores = os.cpu_count() or 1
        table(f"Retrieve throughput through nginx, 3 hosts vs 1 (2 gunicorn workers each, {n_owners} owners x "
              f"100 items, wrk -t2 -c16 {args.duration:.0f} s, {cores} cores shared by everything)",
              ["hosts", "retrieves/s", "x 1 host", "per core", "errors"],
              [[str(n), f"{rps:.1f}", f"{rps / rows[0][1]:.2f}x", f"{rps / cores:.1f}", non2xx or "none"]
               for n, rps, non2xx in rows])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def section_killrun(args) -> None:
    import random

    from clusterload import Load, check_remote

    tmp = Path(tempfile.mkdtemp(prefix="wikimem-bench-killrun-"))
    try:
        with GitHttpServer(tmp / "git").start() as git:
            hosts, balancer = _cluster(tmp, git, env={"WIKIMEM_REMOTE_FRESHNESS": "1"})
            kills = 0
            try:
                c = api_client(balancer.url, retries=5)
                owners = [f"user:kill{i:02d}" for i in range(50)]
                for o in owners:
                    c.create_owner(o)
                load = Load(balancer.url, TOKEN, owners, threads=4).start()
                rng = random.Random(14)
                end = time.monotonic() + args.duration
                while time.monotonic() + args.kill_every < end:
                    time.sleep(args.kill_every - 10)
                    victim = rng.choice(hosts)
                    victim.kill()
                    kills += 1
                    time.sleep(10)
                    victim.start(wait=False)
                time.sleep(max(0.0, end - time.monotonic()))
                result = load.stop()
                for h in hosts:
                    h.wait_ready()
                report = check_remote(result, git.repo)
            finally:
                balancer.stop()
                for h in hosts:
                    h.stop()
        lat = result.latencies
        p99 = sorted(lat)[int(len(lat) * 0.99)] if lat else 0
        table(f"Long kill/restart run: {args.duration:.0f} s, 3 hosts, 50 owners, 4 writer threads through nginx, "
              f"a random host SIGKILLed every {args.kill_every:.0f} s and restarted 10 s later",
              ["acknowledged writes", "not acknowledged", "kills", "lost", "duplicated", "fsck --strict problems",
               "write latency median (p99)"],
              [[str(result.acked), str(sum(map(len, result.failed.values()))), str(kills), str(len(report["lost"])),
                str(len(report["duplicated"])), str(len(report["fsck"])),
                f"{statistics.median(lat) * 1000:.0f} ms ({p99 * 1000:.0f} ms)"]])
        if result.errors:
            print(f"\nerrors seen by the clients (after their retries): {dict(result.errors)}")
        if report["lost"] or report["duplicated"] or report["fsck"]:
            print(f"\nPROBLEMS: {report}")
    finally:
        if args.keep:
            print(f"\n(kept {tmp}: host logs in host*/host.log)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


SECTIONS = {"transport": section_transport, "writes": section_writes, "async": section_async,
            "failover": section_failover, "retrieve": section_retrieve, "killrun": section_killrun}
DEFAULT = ["transport", "writes", "async", "failover", "retrieve"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--pushes", type=int, default=600, help="pushes of the file:// growth table")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of each load (killrun: of the run)")
    ap.add_argument("--rounds", type=int, default=3, help="failover rounds")
    ap.add_argument("--kill-every", type=float, default=30.0, help="killrun: seconds between kills (> 10)")
    ap.add_argument("--keep", action="store_true", help="killrun: keep the run's folder (host logs)")
    ap.add_argument("--section", choices=sorted(SECTIONS), action="append")
    args = ap.parse_args()
    for name in args.section or DEFAULT:
        SECTIONS[name](args)


if __name__ == "__main__":
    main()
