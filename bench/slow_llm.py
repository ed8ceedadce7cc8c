"""Retrieve latency while memorize calls wait on a slow model (issue 15 item 1), three ways.

A fake OpenAI-compatible chat server on 127.0.0.1 answers after ``--delay``
seconds. For each mode, gunicorn (``deploy/gunicorn.conf.py``, ``--workers``
processes) gets ``--inflight`` concurrent memorize calls for one owner and,
while they wait on the model, ``--retrieves`` sequential retrieves for
another owner. Printed: the retrieves' p50 and max, and how long the
memorize calls took.

- ``sync``: sync workers (``-k sync --threads 1``), the configuration before
  this change: every memorize holds a whole process;
- ``gthread``: the shipped configuration (threads per worker);
- ``jobs``: the shipped configuration with ``Prefer: respond-async``: the
  request returns at once and a background job asks the model.

Run: ``.venv/bin/python bench/slow_llm.py [--delay 5 --workers 2 --inflight 4]``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from fakes import FakeOpenAI  # noqa: E402  (a real HTTP server speaking the chat-completions protocol)
from gunicorn_env import CONF, free_port, gunicorn_command, json_call, stop_process  # noqa: E402


class Host:
    def __init__(self, data: Path, llm_url: str, workers: int, extra: list[str], threads: int | None = None):
        self.port, self.token = free_port(), secrets.token_urlsafe(16)
        env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
        env.update(WIKIMEM_DATA=str(data), WIKIMEM_BIND=f"127.0.0.1:{self.port}", WIKIMEM_WORKERS=str(workers),
                   WIKIMEM_ADMIN_TOKEN=self.token, WIKIMEM_SECRET_KEY=secrets.token_hex(32),
                   WIKIMEM_LLM_URL=llm_url, WIKIMEM_LLM_MODEL="fake", WIKIMEM_LLM_TIMEOUT="50",
                   WIKIMEM_LOG_LEVEL="warning", PYTHONPATH=str(REPO))
        if threads:
            env["WIKIMEM_THREADS"] = str(threads)
        self.proc = subprocess.Popen(gunicorn_command() + ["-c", str(CONF), *extra], cwd=REPO,
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.call("GET", "/healthz")
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.1)

    def call(self, method: str, path: str, body: dict | None = None, headers: dict | None = None,
             timeout: float = 120) -> tuple[int, dict]:
        return json_call(self.port, method, path, self.token, body, headers, timeout)

    def stop(self) -> None:
        stop_process(self.proc)


def _warm(host: Host, workers: int) -> None:
    """Concurrent retrieves on new connections until every worker has loaded the index and the tokenizer."""
    def some():
        for _ in range(5):
            host.call("POST", "/api/v1/owners/user:reader/retrieve", {"query": "sea 海边"})

    warmers = [threading.Thread(target=some) for _ in range(4 * workers)]
    for t in warmers:
        t.start()
    for t in warmers:
        t.join()


def run_mode(mode: str, args, llm: FakeOpenAI) -> dict:
    with tempfile.TemporaryDirectory(prefix="wikimem-bench-slow-llm-") as tmp:
        extra = ["-k", "sync", "--threads", "1"] if mode == "sync" else []
        host = Host(Path(tmp) / "data", llm.url, args.workers, extra, args.threads)
        try:
            for owner in ("user:writer", "user:reader"):
                host.call("PUT", f"/api/v1/owners/{owner}")
            for n in range(50):
                host.call("PUT", f"/api/v1/owners/user:reader/items/notes/n{n}",
                          {"content": f"note {n} about the sea and coffee, 海边和咖啡 {n}"})
            _warm(host, args.workers)
            headers = {"Prefer": "respond-async"} if mode == "jobs" else {}
            took: list[float] = []

            def memorize(n: int) -> None:
                started = time.monotonic()
                status, body = host.call("POST", "/api/v1/owners/user:writer/memorize",
                                         {"turn": f"user: turn {n}"}, headers)
                if mode == "jobs":
                    while body.get("state") not in ("done", "failed"):
                        time.sleep(0.2)
                        status, body = host.call("GET", f"/api/v1/jobs/{body['id']}")
                took.append(time.monotonic() - started)

            threads = [threading.Thread(target=memorize, args=(n,)) for n in range(args.inflight)]
            for t in threads:
                t.start()
            time.sleep(min(1.0, args.delay / 4))  # the calls are with the model now
            latencies = []
            for _ in range(args.retrieves):
                started = time.monotonic()
                status, _ = host.call("POST", "/api/v1/owners/user:reader/retrieve", {"query": "海边 coffee"})
                assert status == 200, status
                latencies.append(time.monotonic() - started)
            for t in threads:
                t.join()
        finally:
            host.stop()
    return {"mode": mode, "p50": statistics.median(latencies), "max": max(latencies),
            "memorize": max(took) if took else float("nan")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=5.0, help="seconds the model takes per call")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--inflight", type=int, default=4, help="concurrent memorize calls")
    ap.add_argument("--retrieves", type=int, default=5)
    ap.add_argument("--modes", default="sync,gthread,jobs")
    ap.add_argument("--threads", type=int, default=None, help="WIKIMEM_THREADS (default: the config's)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each mode (which worker accepts what varies)")
    args = ap.parse_args()
    with FakeOpenAI() as llm:
        llm.delay = args.delay
        rows = [run_mode(mode, args, llm) for mode in args.modes.split(",") for _ in range(args.repeat)]
    print(f"\n{args.inflight} memorize calls in flight (model: {args.delay:g} s per call), "
          f"{args.workers} gunicorn workers ({args.threads or 'default'} threads), "
          f"{args.retrieves} retrieves of another owner meanwhile\n")
    print("| mode | retrieve p50 | retrieve max | slowest memorize (until its entries are written) |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['p50'] * 1000:.0f} ms | {r['max'] * 1000:.0f} ms | {r['memorize']:.1f} s |")


if __name__ == "__main__":
    main()
