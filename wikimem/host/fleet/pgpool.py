"""PostgreSQL connections of a process: one pool per database (``psycopg_pool``), and a lost link retried once.

Every :class:`~wikimem.host.fleet.sql.Database` of one URL in one process
(the jobs, the run index, the staged-run index, the erasure register) shares
one :class:`psycopg_pool.ConnectionPool` of at most :func:`pool_size`
connections (``WIKIMEM_DATABASE_POOL``, set once by the composition root;
one warm). A statement borrows a connection for its own time only; a write
transaction for its own. So a host holds at most ``workers ×
WIKIMEM_DATABASE_POOL`` connections, whatever its threads do (the deploy
docs add a cluster's up).

A connection the server dropped (a restart, a failover, an idle timeout)
fails once; the pool then checks its idle connections (dropping the dead
ones) and the statement — or the transaction's ``BEGIN`` — runs once more on
a fresh one. No connection left, or none within :data:`POOL_WAIT` seconds:
:class:`~wikimem.errors.StoreBusy` (503 with Retry-After), never a 500.
Pools are per process (a connection never crosses a fork).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from wikimem.errors import StoreBusy

__all__ = ["DEFAULT_POOL_SIZE", "POOL_WAIT", "set_pool_size", "pool_size", "pool", "run", "begin", "give_back"]

DEFAULT_POOL_SIZE = 4
POOL_WAIT = 10.0  # seconds a statement waits for a free connection (or for the server to come back)
_size = DEFAULT_POOL_SIZE
_pools: dict[tuple[int, str], Any] = {}
_lock = threading.Lock()
T = TypeVar("T")


def set_pool_size(size: int) -> None:
    """The most connections one process opens to one database (pools made from now on)."""
    global _size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"the database pool size must be a positive integer, got {size!r}")
    _size = size


def pool_size() -> int:
    return _size


def pool(url: str) -> Any:
    """This process's pool of ``url`` (made at its first use)."""
    key = (os.getpid(), url)
    with _lock:
        found = _pools.get(key)
        if found is None:
            from psycopg_pool import ConnectionPool

            found = ConnectionPool(url, min_size=1, max_size=_size, open=True, timeout=POOL_WAIT,
                                   kwargs={"autocommit": True, "connect_timeout": 10},
                                   name=f"wikimem-{os.getpid()}", num_workers=1)
            _pools[key] = found
    return found


def _lost(conn: Any) -> bool:
    return conn is None or conn.closed or conn.broken


def _busy(shown: str, exc: BaseException) -> StoreBusy:
    return StoreBusy(f"the database {shown} cannot be used now ({type(exc).__name__}: {str(exc).strip()[:200]}); "
                     "try again shortly")


def run(url: str, shown: str, work: Callable[[Any], T]) -> T:
    """``work(connection)`` on a borrowed connection, once more on a fresh one if the first had lost its link."""
    import psycopg
    from psycopg_pool import PoolTimeout

    found = pool(url)
    for attempt in (0, 1):
        conn = None
        try:
            with found.connection() as conn:
                return work(conn)
        except psycopg.OperationalError as exc:
            if attempt == 0 and _lost(conn):
                found.check()  # the dead idle ones dropped: the next borrow gets a live or a new connection
                continue
            raise _busy(shown, exc) from None
        except PoolTimeout as exc:
            raise _busy(shown, exc) from None
    raise AssertionError("unreachable")


def begin(url: str, shown: str, lock_key: int) -> Any:
    """A borrowed connection inside ``BEGIN`` holding the transaction's advisory lock ``lock_key`` (give it back with
    :func:`give_back`); a connection that lost its link is replaced once, as :func:`run` does."""
    import psycopg
    from psycopg_pool import PoolTimeout

    found = pool(url)
    for attempt in (0, 1):
        try:
            conn = found.getconn()
        except PoolTimeout as exc:
            raise _busy(shown, exc) from None
        try:
            conn.execute("BEGIN")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key,))
            return conn
        except psycopg.OperationalError as exc:
            lost = _lost(conn)
            give_back(url, conn)
            if attempt == 0 and lost:
                found.check()
                continue
            raise _busy(shown, exc) from None
        except BaseException:
            give_back(url, conn)
            raise
    raise AssertionError("unreachable")


def give_back(url: str, conn: Any) -> None:
    """Return a connection of :func:`begin` (rolled back if a transaction is still open; dropped if broken)."""
    import psycopg

    if not _lost(conn) and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        try:
            conn.execute("ROLLBACK")
        except psycopg.Error:
            pass
    pool(url).putconn(conn)
