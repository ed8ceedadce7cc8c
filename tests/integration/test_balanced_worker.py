"""The shipped gunicorn worker spreads a burst of kept-alive connections over its workers (webapp/gworker.py).

With gunicorn's own gthread worker, a burst of 16 connections to 2 workers
landed 0/16, 1/15 or 2/14 in three runs of six: one process served (nearly)
every request while the other idled. Here each burst of 8 (2 workers × 4 threads)
must leave no worker holding more than its share and one.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import psutil
import pytest
from gunicorn_env import CONF, Gunicorn, wait_for

pytestmark = pytest.mark.slow

WORKERS, THREADS, BURST = 2, 4, 8


def _held_by_worker(server: Gunicorn, port: int) -> list[int]:
    """Established connections to ``port`` that each worker holds."""
    master = psutil.Process(server.proc.pid)
    return sorted(sum(1 for c in child.net_connections("tcp") if c.status == psutil.CONN_ESTABLISHED
                      and c.laddr and c.laddr.port == port) for child in master.children())


def _burst(port: int) -> list[socket.socket]:
    """BURST connections made at once, then one kept-alive request on each, answered."""
    socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(BURST)]
    for s in socks:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    for s in socks:
        got = b""
        while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
            chunk = s.recv(4096)
            assert chunk, "the connection closed"
            got += chunk
        assert got.startswith(b"HTTP/1.1 200")
    return socks


def _config_marking_ready_workers(tmp_path: Path) -> tuple[str, Path]:
    """The shipped configuration, plus a hook that leaves ``ready-<pid>`` once a worker has loaded the app
    (gunicorn's ``post_worker_init``: the worker enters its loop right after)."""
    ready = tmp_path / "ready"
    ready.mkdir()
    conf = tmp_path / "gunicorn.conf.py"
    conf.write_text(f"exec(compile(open({str(CONF)!r}).read(), {str(CONF)!r}, 'exec'))\n\n"
                    f"def post_worker_init(worker):\n"
                    f"    open(__import__('os').path.join({str(ready)!r}, f'ready-{{worker.pid}}'), 'w').close()\n")
    return str(conf), ready


def test_a_burst_of_connections_is_shared_by_the_workers(tmp_path):
    conf, ready = _config_marking_ready_workers(tmp_path)
    with Gunicorn(tmp_path, args=["-c", conf], WIKIMEM_WORKERS=str(WORKERS), WIKIMEM_THREADS=str(THREADS)) as server:
        port = int(server.base.rsplit(":", 1)[1])
        # Both workers past loading the app: under a loaded machine one may still be importing it when the
        # first /healthz is answered by the other, which then takes every connection (seen once: 0/8 three
        # times), and that is not the imbalance this test is about.
        workers = wait_for(lambda: (pids := {c.pid for c in psutil.Process(server.proc.pid).children()})
                           and len(pids) == WORKERS and pids, what="both workers")
        wait_for(lambda: all((ready / f"ready-{pid}").exists() for pid in workers), what="both workers loaded")
        time.sleep(0.2)  # (each in its loop)
        spreads = []
        for _ in range(3):
            socks = _burst(port)
            try:
                spreads.append(wait_for(lambda: (h := _held_by_worker(server, port)) and sum(h) == BURST and h,
                                        timeout=10, what="every connection held"))
            finally:
                for s in socks:
                    s.close()
            wait_for(lambda: sum(_held_by_worker(server, port)) == 0, timeout=15, what="the burst closed")
        assert all(max(spread) <= THREADS + 1 for spread in spreads), spreads
