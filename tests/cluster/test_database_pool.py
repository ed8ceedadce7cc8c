"""A cluster's PostgreSQL connections: pooled per worker, within a stated budget, and a server restart costs no 500.

Three gunicorn hosts with gunicorn's default worker count (``deploy/gunicorn.conf.py``: cores + 1, at most 8)
share one PostgreSQL server started by the test with PostgreSQL's default ``max_connections`` (100). Bot-like
load on every host — writes, run searches, job listings, from many threads at once — while the server's own
``pg_stat_activity`` is sampled: it never holds more than the budget the deploy docs state, hosts × workers ×
``WIKIMEM_DATABASE_POOL`` (+ one a process for a command), and no request answers 500. Then the server
restarts (every connection cut): the next requests on every host answer as before, no 500.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from engines import free_port
from pgserver import PgServer, unavailable
from test_cluster import call

pytestmark = pytest.mark.slow

POOL = 4  # WIKIMEM_DATABASE_POOL's default
HOSTS = 3


def default_workers() -> int:
    """gunicorn.conf.py's default: cores + 1, at most 8."""
    return min(len(os.sched_getaffinity(0)) + 1, 8)


@pytest.fixture
def server():
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    made = PgServer().start(max_connections=100)  # PostgreSQL's default
    try:
        yield made
    finally:
        made.stop()


def connections(server: PgServer, database: str) -> int:
    import psycopg

    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        return int(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                                (database,)).fetchone()[0])


def load(hosts, token: str, seconds: float, statuses: list[int], threads: int = 8) -> None:
    """Each host: ``threads`` clients writing, searching runs and listing jobs for ``seconds``."""
    stop = time.monotonic() + seconds

    def client(host, k: int) -> None:
        i = 0
        while time.monotonic() < stop:
            owner = f"user:p{k % 4}"
            if i % 3 == 0:
                status, _, _ = call(f"{host.url}/api/v1/owners/{owner}/items/notes/n{k}-{i}", "PUT",
                                    {"content": f"note {i}", "actor": "bot", "run": f"run_{k}_{i // 10}"},
                                    token=token)
            elif i % 3 == 1:
                status, _, _ = call(f"{host.url}/api/v1/runs?actor=bot&limit=5", token=token)
            else:
                status, _, _ = call(f"{host.url}/api/v1/jobs?limit=5", token=token)
            statuses.append(status)
            i += 1

    workers = [threading.Thread(target=client, args=(h, k)) for h in hosts for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def test_three_hosts_stay_within_the_connection_budget_and_a_restart_costs_no_500(make_cluster, server):
    database = "wikimem_pool"
    import psycopg

    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    url = server.url(database)
    workers = default_workers()
    budget = HOSTS * workers * POOL
    ports = [free_port() for _ in range(HOSTS)]
    cluster = make_cluster(HOSTS, workers=workers, ports=ports, env={"WIKIMEM_DATABASE_URL": url})
    for host in cluster.hosts:
        for k in range(4):
            call(f"{host.url}/api/v1/owners/user:p{k}", "PUT", token=cluster.token)
    peak, statuses, done = [0], [], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], connections(server, database))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        load(cluster.hosts, cluster.token, 8.0, statuses)
    finally:
        done.set()
        sampler.join()
    assert statuses and 500 not in statuses, sorted(set(statuses))
    assert peak[0] <= budget, (peak[0], budget)  # hosts × workers × WIKIMEM_DATABASE_POOL

    server.restart(down=1.0)  # every pooled connection is cut
    after: list[int] = []
    load(cluster.hosts, cluster.token, 3.0, after, threads=3)
    assert after and set(after) <= {200, 201}, sorted(set(after))  # no 500, nor a 503: the pools reconnected
