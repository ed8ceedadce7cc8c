"""What a flood of wrong passwords on ``/login`` costs the JSON API (issue 13: 2 ms → 700 ms).

Serves the host with the real gunicorn config on 127.0.0.1 (behind "a
proxy", ``WIKIMEM_PROXIES=1``, so the flood can speak from many client
addresses), and measures the latency of a light API call (``GET
/api/v1/owners/<owner>``, one client, back to back) in three scenarios:

- ``idle``: no flood, the reference of the same run;
- ``healthz (control)``: the same threads asking ``/healthz`` as fast as
  they can: what any flood of cheap requests costs, sign-in or not;
- ``one address``: --threads threads post wrong passwords for one account
  from one address; the rate limits refuse all but the first few attempts
  before any hashing;
- ``many addresses``: the same threads, every attempt from a new address
  and for a new name (a distributed guess no rate limit can stop); only
  the host's one password-hashing slot bounds what it costs.

The flood runs in a process of its own, so its threads do not compete with
the measuring thread for the GIL (they do for the 2 cores).

``--reference DIR`` runs the flood scenarios once more against another
checkout (e.g. the code before this change: ``git worktree add /tmp/ref
<commit>``), served the same way, for comparison.

    .venv/bin/python bench/login_flood.py [--seconds 10 --threads 6 --workers 5 --reference /tmp/ref]

Timings on a shared 2-core machine are noisy; compare the rows of one run.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
OWNER = "user:bench"
sys.path.insert(0, str(REPO / "tests"))

from gunicorn_env import free_port, stop_process  # noqa: E402


def request(port: int, method: str, path: str, headers: dict, body: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.getheaders(), resp.read()
    finally:
        conn.close()


class Server:
    """gunicorn serving the code of ``code`` over a fresh data root with one owner and one account."""

    def __init__(self, code: Path, workers: int, tmp: Path):
        self.port = free_port()
        self.token = secrets.token_urlsafe(24)
        data, accounts = tmp / "data", tmp / "operators.jsonl"
        env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
        env.update(PYTHONPATH=str(code), WIKIMEM_DATA=str(data), WIKIMEM_BIND=f"127.0.0.1:{self.port}",
                   WIKIMEM_WORKERS=str(workers), WIKIMEM_ADMIN_TOKEN=self.token,
                   WIKIMEM_SECRET_KEY=secrets.token_hex(32), WIKIMEM_OPERATORS_FILE=str(accounts),
                   WIKIMEM_PROXIES="1", HOME=str(tmp), WIKIMEM_LOG_LEVEL="warning")
        subprocess.run([sys.executable, "-c", _SEED, str(code), str(accounts)], env=env, check=True)
        gunicorn = Path(sys.executable).with_name("gunicorn")
        self.log = open(tmp / "gunicorn.log", "wb")
        self.proc = subprocess.Popen([str(gunicorn), "-c", str(code / "deploy" / "gunicorn.conf.py"),
                                      "--access-logfile", "/dev/null"], cwd=code, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                if request(self.port, "GET", "/healthz", {})[0] == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"gunicorn did not start: {(tmp / 'gunicorn.log').read_text()[-2000:]}")
            time.sleep(0.1)
        status, _, _ = request(self.port, "PUT", f"/api/v1/owners/{OWNER}", self.auth())
        assert status in (200, 201), status

    def auth(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


_SEED = """
import sys
sys.path.insert(0, sys.argv[1])
from webapp.session import account_line
open(sys.argv[2], "w").write(account_line("alice", "the right password", "") + "\\n")
"""


def flood(port: int, stop, spread: bool | str, counts: Counter) -> None:
    """Post wrong passwords until told to stop (or, for ``spread="healthz"``, just ask ``/healthz``)."""
    if spread == "healthz":
        while not stop.is_set():
            counts[request(port, "GET", "/healthz", {})[0]] += 1
        return
    status, headers, html = request(port, "GET", "/login", {"X-Forwarded-For": "198.51.100.1"})
    cookie = next(v.split(";")[0] for k, v in headers if k.lower() == "set-cookie")
    csrf = re.search(rb'name="csrf_token" value="([^"]+)"', html).group(1).decode()
    n = 0
    while not stop.is_set():
        n += 1
        addr = f"10.{n % 200}.{secrets.randbelow(250)}.{secrets.randbelow(250) + 1}" if spread else "198.51.100.1"
        name = f"guess-{secrets.token_hex(4)}" if spread else "alice"
        body = urlencode({"csrf_token": csrf, "username": name, "password": "wrong password"})
        try:
            status = request(port, "POST", "/login", {
                "Cookie": cookie, "X-Forwarded-For": addr,
                "Content-Type": "application/x-www-form-urlencoded"}, body)[0]
        except OSError:
            status = "error"
        counts[status] += 1


def flood_process(port: int, threads: int, spread: bool | str, stop, started, results) -> None:
    """The flood's threads in a process of their own (so they do not take the measuring thread's GIL)."""
    counts: Counter = Counter()
    local_stop = threading.Event()
    workers = [threading.Thread(target=flood, args=(port, local_stop, spread, counts)) for _ in range(threads)]
    for w in workers:
        w.start()
    time.sleep(1.0)  # let the flood get going (and the limits fill up)
    base = dict(counts)
    started.set()
    stop.wait()
    results.put({k: counts[k] - base.get(k, 0) for k in counts})
    local_stop.set()
    for w in workers:
        w.join()


def api_latency(server: Server, seconds: float) -> list[float]:
    out = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.perf_counter()
        status = request(server.port, "GET", f"/api/v1/owners/{OWNER}", server.auth())[0]
        out.append((time.perf_counter() - t) * 1000)
        assert status == 200, status
    return out


def scenario(server: Server, seconds: float, threads: int, spread: bool | str | None) -> dict:
    ctx = multiprocessing.get_context("spawn")
    stop, started, results = ctx.Event(), ctx.Event(), ctx.Queue()
    proc = None
    if spread is not None:
        proc = ctx.Process(target=flood_process, args=(server.port, threads, spread, stop, started, results))
        proc.start()
        started.wait(60)
    lat = api_latency(server, seconds)
    during = {}
    if proc is not None:
        stop.set()
        during = results.get(timeout=120)
        proc.join()
    q = statistics.quantiles(lat, n=100)
    return {"n": len(lat), "p50": q[49], "p95": q[94], "p99": q[98], "max": max(lat),
            "flood": ", ".join(f"{k}: {v / seconds:.0f}/s" for k, v in sorted(during.items(), key=str)) or "-"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=6)
    ap.add_argument("--workers", type=int, default=5, help="gunicorn workers (the config's default on 2 cores)")
    ap.add_argument("--reference", type=Path, help="another checkout to flood the same way, for comparison")
    args = ap.parse_args()

    rows = []
    trees = [("this", REPO)] + ([("reference", args.reference.resolve())] if args.reference else [])
    for label, code in trees:
        with tempfile.TemporaryDirectory(prefix="wikimem-login-bench-") as tmp:
            server = Server(code, args.workers, Path(tmp))
            try:
                plan = [("idle", None), ("healthz (control)", "healthz"), ("one address", False),
                        ("many addresses", True)]
                for name, spread in plan:
                    rows.append((label, name, scenario(server, args.seconds, args.threads, spread)))
            finally:
                server.stop()

    print(f"\nAPI latency (GET /api/v1/owners/<o>, ms) under {args.threads} threads of wrong passwords, "
          f"{args.workers} gunicorn workers, {os.cpu_count()} cores, {args.seconds:.0f} s each\n")
    print("| code | flood | requests | p50 | p95 | p99 | max | flood responses |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for label, name, r in rows:
        print(f"| {label} | {name} | {r['n']} | {r['p50']:.1f} | {r['p95']:.1f} | {r['p99']:.1f} | "
              f"{r['max']:.1f} | {r['flood']} |")


if __name__ == "__main__":
    main()
