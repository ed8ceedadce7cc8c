"""Silent-peer benchmark (issue 25): what a peer that accepts TCP and never answers costs a cluster host.

One gunicorn host (2 workers, ``deploy/gunicorn.conf.py`` with its defaults) whose ``WIKIMEM_PEERS``
lists itself and a silent peer (a socket on 127.0.0.1 that accepts and never answers). Measured:

- the first owner listing, then the next ``--listings`` (each on a new connection, so both workers);
- ``--concurrent`` listings at once, and the latency of ``/healthz`` sent while they run.

``--repo DIR`` runs another checkout's ``deploy/gunicorn.conf.py`` and app (e.g. the code before the
breaker: ``git archive arch | tar -x -C /tmp/before``) with this virtualenv.

    .venv/bin/python bench/silent_peer.py [--repo DIR] [--listings 10] [--concurrent 32]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "tests"))

from gunicorn_env import free_port, gunicorn_command, host_env, stop_process  # noqa: E402
from silentpeer import SilentPeer  # noqa: E402

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get(url: str, token: str | None = None, method: str = "GET") -> float:
    req = urllib.request.Request(url, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    start = time.monotonic()
    with _OPENER.open(req, timeout=60) as resp:
        resp.read()
    return time.monotonic() - start


def run(repo: Path, listings: int, concurrent: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, SilentPeer() as silent:
        port = free_port()
        me = f"http://127.0.0.1:{port}"
        env = host_env(Path(tmp), WIKIMEM_BIND=f"127.0.0.1:{port}", WIKIMEM_WORKERS="2",
                       WIKIMEM_PEERS=f"{me},{silent.url}", WIKIMEM_SELF=me)
        token = env["WIKIMEM_ADMIN_TOKEN"]
        log = open(Path(tmp) / "gunicorn.log", "wb")
        proc = subprocess.Popen(gunicorn_command() + ["-c", str(repo / "deploy" / "gunicorn.conf.py")], cwd=repo,
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    _get(me + "/healthz")
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise SystemExit((Path(tmp) / "gunicorn.log").read_text()) from None
                    time.sleep(0.1)
            _get(me + "/api/v1/owners/user:bench", token, "PUT")
            url = me + "/api/v1/owners?limit=10"
            first = _get(url, token)
            later = [_get(url, token) for _ in range(listings)]
            with ThreadPoolExecutor(concurrent) as pool:
                futures = [pool.submit(_get, url, token) for _ in range(concurrent)]
                time.sleep(0.05)
                healthz = _get(me + "/healthz")
                burst = [f.result() for f in futures]
            return {"first_listing_s": round(first, 3), "next_listings_median_s": round(statistics.median(later), 3),
                    "next_listings_max_s": round(max(later), 3), "concurrent": concurrent,
                    "concurrent_max_s": round(max(burst), 3), "healthz_during_s": round(healthz, 3),
                    "silent_peer_connections": silent.accepted}
        finally:
            stop_process(proc)
            log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=HERE)
    parser.add_argument("--listings", type=int, default=10)
    parser.add_argument("--concurrent", type=int, default=32)
    args = parser.parse_args()
    print(json.dumps({"repo": str(args.repo), **run(args.repo.resolve(), args.listings, args.concurrent)},
                     indent=2))


if __name__ == "__main__":
    main()
