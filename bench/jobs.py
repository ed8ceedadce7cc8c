"""Another tenant's wait under a flood of background jobs (issue 25): fair, bounded queues.

A real gunicorn host (``deploy/gunicorn.conf.py``, ``--workers`` processes,
each with its job runner) and a fake chat endpoint on 127.0.0.1 that answers
at once (``--delay`` to slow it). Two tenants: the *flood* token (write,
owners ``user:a…``) sends ``Prefer: respond-async`` memorize calls from
``--threads`` threads for ``--seconds``; the *calm* token (owners
``user:b…``) sends one, ``--settle`` seconds into the flood, and waits for
it. Printed per run: what the flood got queued, how many calls met 429,
the jobs database's size, and the calm tenant's wait (submit → done):

- ``reference``: no flood, the calm job alone;
- ``flood, capped``: the shipped limits (100 open jobs per token prefix, 20
  per owner): the flood meets 429 + Retry-After past its cap;
- ``flood, no caps``: ``WIKIMEM_JOBS_PER_PREFIX=0 WIKIMEM_JOBS_PER_OWNER=0``,
  the queue the issue measured (1,235 jobs in 20 s): only the round-robin
  claim across tenants keeps the calm job from waiting behind the flood.

Before these changes the calm job waited 28 s behind 1,235 queued jobs with
an instant model (claims were first in, first out). Compare each run with
the reference of the same run. ``.venv/bin/python bench/jobs.py [--seconds 20]``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from fakes import FakeOpenAI  # noqa: E402
from gunicorn_env import free_port, gunicorn_command, json_call, stop_process  # noqa: E402

from wikimem.host.access.tokens import append_token, mint_token  # noqa: E402


class Gunicorn:
    """One host on a free port with two tenant tokens and an admin token."""

    def __init__(self, data: Path, llm_url: str, workers: int, env_extra: dict[str, str]):
        self.port, self.admin = free_port(), secrets.token_urlsafe(16)
        tokens = data.parent / "tokens.jsonl"
        self.tokens = {}
        for name, prefix in (("flood", "user:a"), ("calm", "user:b")):
            secret, entry = mint_token(name, ["read", "write"], prefix)
            append_token(tokens, entry)
            self.tokens[name] = secret
        env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
        env.update(WIKIMEM_DATA=str(data), WIKIMEM_BIND=f"127.0.0.1:{self.port}", WIKIMEM_WORKERS=str(workers),
                   WIKIMEM_ADMIN_TOKEN=self.admin, WIKIMEM_SECRET_KEY=secrets.token_hex(32),
                   WIKIMEM_TOKENS_FILE=str(tokens), WIKIMEM_LLM_URL=llm_url, WIKIMEM_LLM_MODEL="fake",
                   WIKIMEM_LOG_LEVEL="warning", PYTHONPATH=str(REPO), **env_extra)
        self.proc = subprocess.Popen(gunicorn_command() + ["-c", str(REPO / "deploy/gunicorn.conf.py")], cwd=REPO,
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.call("GET", "/healthz", self.admin)
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.1)

    def call(self, method: str, path: str, token: str, body: dict | None = None,
             headers: dict | None = None) -> tuple[int, dict]:
        return json_call(self.port, method, path, token, body, headers)

    def stop(self) -> None:
        stop_process(self.proc)


def memorize(host: Gunicorn, token: str, owner: str, n: int) -> tuple[int, dict]:
    return host.call("POST", f"/api/v1/owners/{owner}/memorize", token, {"turn": f"user: I went surfing ({n})"},
                     {"Prefer": "respond-async"})


def run(name: str, args, llm: FakeOpenAI, flood: bool, env_extra: dict[str, str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="wikimem-bench-jobs-") as tmp:
        data = Path(tmp) / "data"
        host = Gunicorn(data, llm.url, args.workers, env_extra)
        try:
            flood_owners = [f"user:a{i}" for i in range(10)]
            for owner in [*flood_owners, "user:b0"]:
                host.call("PUT", f"/api/v1/owners/{owner}", host.admin)
            counts = {"accepted": 0, "refused": 0, "other": 0}
            lock = threading.Lock()
            stop = time.monotonic() + (args.seconds if flood else 0)

            def flooder(t: int) -> None:
                n = 0
                while time.monotonic() < stop:
                    status, _ = memorize(host, host.tokens["flood"], flood_owners[(t + n) % 10], n)
                    key = "accepted" if status == 202 else "refused" if status == 429 else "other"
                    with lock:
                        counts[key] += 1
                    n += 1
                    if status == 429:
                        time.sleep(0.05)  # a polite client would wait Retry-After; a flood does not

            threads = [threading.Thread(target=flooder, args=(t,)) for t in range(args.threads)] if flood else []
            for t in threads:
                t.start()
            if flood:
                time.sleep(args.settle)
            queued_before = _open_jobs(host)
            started = time.monotonic()
            status, job = memorize(host, host.tokens["calm"], "user:b0", 0)
            assert status == 202, job
            while True:
                status, job = host.call("GET", f"/api/v1/jobs/{job['id']}", host.tokens["calm"])
                if job["state"] in ("done", "failed"):
                    break
                time.sleep(0.02)
            wait = time.monotonic() - started
            for t in threads:
                t.join()
            size = sum(p.stat().st_size for p in data.glob("jobs.sqlite3*"))
            return {"run": name, "accepted": counts["accepted"], "refused": counts["refused"],
                    "other": counts["other"], "queued_at_submit": queued_before, "wait": wait,
                    "state": job["state"], "db_mb": size / 1e6}
        finally:
            host.stop()


def _open_jobs(host: Gunicorn) -> int:
    total = 0
    for state in ("queued", "running"):
        cursor = None
        while True:
            path = f"/api/v1/jobs?state={state}&limit=1000" + (f"&cursor={cursor}" if cursor else "")
            _, page = host.call("GET", path, host.admin)
            total += len(page["jobs"])
            cursor = page["next"]
            if not cursor:
                break
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the flood lasts")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds into the flood the calm job is sent")
    parser.add_argument("--threads", type=int, default=4, help="flooding client threads")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds the fake model takes per call")
    args = parser.parse_args()
    llm = FakeOpenAI().start()
    llm.delay = args.delay
    llm.reply_fn = lambda messages: '[{"content": "Went surfing."}]'
    try:
        rows = [run("reference", args, llm, False, {}),
                run("flood, capped (shipped limits)", args, llm, True, {}),
                run("flood, no caps", args, llm, True, {"WIKIMEM_JOBS_PER_PREFIX": "0",
                                                         "WIKIMEM_JOBS_PER_OWNER": "0"})]
    finally:
        llm.stop()
    ref = rows[0]["wait"]
    print(f"\n{args.workers} workers × 2 job threads, model delay {args.delay:g} s, flood {args.seconds:g} s from "
          f"{args.threads} threads, the calm job sent {args.settle:g} s in\n")
    print("| run | flood jobs accepted | flood calls refused (429) | open jobs when the calm job came | "
          "jobs db | calm job's wait | × reference |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['run']} | {r['accepted']} | {r['refused']} | {r['queued_at_submit']} | {r['db_mb']:.1f} MB | "
              f"{r['wait'] * 1000:.0f} ms ({r['state']}) | {r['wait'] / ref:.1f} |")


if __name__ == "__main__":
    main()
