"""The shipped gunicorn worker spreads a burst of kept-alive connections over its workers (webapp/gworker.py).

With gunicorn's own gthread worker, a burst of 16 connections to 2 workers
landed 0/16, 1/15 or 2/14 in three runs of six: one process served (nearly)
every request while the other idled. Here each burst of 8 (2 workers × 4 threads)
must leave no worker holding more than its share and one.
"""

from __future__ import annotations

import socket
import time

import psutil
import pytest
from gunicorn_env import Gunicorn, wait_for

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


def test_a_burst_of_connections_is_shared_by_the_workers(tmp_path):
    with Gunicorn(tmp_path, WIKIMEM_WORKERS=str(WORKERS), WIKIMEM_THREADS=str(THREADS)) as server:
        port = int(server.base.rsplit(":", 1)[1])
        wait_for(lambda: len(psutil.Process(server.proc.pid).children()) == WORKERS, what="both workers")
        time.sleep(0.5)  # (both workers in their loops, not importing the app)
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
