"""Sign-in state a host shares between its worker processes: ended sessions and attempt counters.

Design notes: docs/explanation/access.md (``wikimem/host/access/authstate.py``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wikimem.errors import StoreBusy
from wikimem.locking import FileLock, while_locked

__all__ = ["AuthState", "STATE_FILE", "SCHEMA_VERSION", "MIGRATIONS", "SchemaTooNew"]

STATE_FILE = Path("auth") / "state.sqlite3"
LOCK_FILE = "state.lock"  # beside it: the counters' writers, one at a time (flock)

# Step n brings a file of version n to version n + 1. Version 0 is the first layout (a file made
# before versions existed says 0 too: its tables are there, IF NOT EXISTS keeps step 0 harmless).
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS revoked (sid TEXT PRIMARY KEY, until REAL NOT NULL);
    CREATE INDEX IF NOT EXISTS revoked_until ON revoked (until);
    CREATE TABLE IF NOT EXISTS hits (key TEXT PRIMARY KEY, count INTEGER NOT NULL, expires REAL NOT NULL);
    CREATE INDEX IF NOT EXISTS hits_expires ON hits (expires);
    """,
    """
    CREATE TABLE IF NOT EXISTS token_use (id TEXT PRIMARY KEY, last_used REAL NOT NULL);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
# A token's last use is written at most this often (seconds) by one process.
TOUCH_EVERY = 60.0
# Counters whose window ended are deleted at most this often (seconds) by one process: a key counted again
# starts its new window in place (_INCR), so the sweep only keeps keys nobody uses from piling up.
SWEEP_EVERY = 60.0


class SchemaTooNew(RuntimeError):
    """The file was written by a newer wikimem (its ``user_version`` is beyond :data:`SCHEMA_VERSION`)."""

# One statement, so atomic across processes: a new window when the old one ended, else one more hit.
_INCR = """
INSERT INTO hits (key, count, expires) VALUES (:key, :amount, :expires)
ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN hits.expires <= :now THEN :amount ELSE hits.count + :amount END,
    expires = CASE WHEN hits.expires <= :now THEN :expires ELSE hits.expires END
RETURNING count
"""


class AuthState:
    """The shared sign-in state of the data root ``root`` (the file is made on first use)."""

    def __init__(self, root: Path | str, busy_timeout: float = 10.0):
        self.path = Path(root) / STATE_FILE
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._touched: dict[str, float] = {}  # token id → when this process last wrote its use
        # Counter writes one at a time across the host's threads and processes, in a lock that hands over at
        # once: writers that met in SQLite's lock each slept in its busy handler's backoff (1, 2, 5, 10 … 100 ms;
        # measured: 84–110 ms at p99 of an API request under 16 connections, 530 ms at worst).
        self._writing = (os.getpid(), self._new_lock())
        self._swept = 0.0  # when this process last deleted ended windows

    def _db(self) -> sqlite3.Connection:
        """This thread's connection (a new one after a fork: connections must not cross processes)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                               check_same_thread=False)
        self._prepare(conn)
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """WAL mode and the schema migration, retried while another process does the same
        (:func:`~wikimem.locking.while_locked`), for at most the busy timeout."""

        def prepare() -> None:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # a crash may lose the last logouts, never corrupt
            migrate(conn, self.path)

        while_locked(prepare, self.busy_timeout)

    def version(self) -> int:
        """The file's schema version (after the migration its opening ran)."""
        return int(self._db().execute("PRAGMA user_version").fetchone()[0])

    # -- ended sessions ---------------------------------------------------

    def revoke(self, sid: str, until: float) -> None:
        """End session ``sid``; the record is kept until ``until`` (when the session would end anyway)."""
        db = self._db()
        db.execute("INSERT OR REPLACE INTO revoked (sid, until) VALUES (?, ?)", (sid, float(until)))
        db.execute("DELETE FROM revoked WHERE until < ?", (time.time(),))

    def is_revoked(self, sid: str) -> bool:
        """Whether session ``sid`` was ended."""
        return self._db().execute("SELECT 1 FROM revoked WHERE sid = ?", (sid,)).fetchone() is not None

    # -- tokens' last use ---------------------------------------------------

    def touch_token(self, token_id: str, now: float | None = None) -> bool:
        """Record that token ``token_id`` was used now; written at most every :data:`TOUCH_EVERY` s per process.

        Whether it was written. Cheap on the hot path: a dict look-up on most
        requests, one small upsert a minute per token otherwise.
        """
        now = time.time() if now is None else now
        last = self._touched.get(token_id)
        if last is not None and now - last < TOUCH_EVERY:
            return False
        self._touched[token_id] = now
        self._db().execute("INSERT INTO token_use (id, last_used) VALUES (?, ?) ON CONFLICT (id) DO UPDATE "
                           "SET last_used = max(last_used, excluded.last_used)", (token_id, now))
        return True

    def last_used(self) -> dict[str, float]:
        """``{token id: time of its last recorded use}``."""
        return {row[0]: float(row[1]) for row in self._db().execute("SELECT id, last_used FROM token_use")}

    # -- fixed-window counters ----------------------------------------------

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        """Add ``amount`` to ``key``'s counter (a new window of ``expiry`` seconds if none is open); the new count.

        One write transaction, one writer at a time across the host's threads and processes (:meth:`_write_lock`)."""
        db = self._db()
        with self._write_lock():
            now = time.time()
            # fetchall: the statement must run to its end, or its write transaction stays open.
            [(count,)] = db.execute(_INCR, {"key": key, "amount": amount, "expires": now + expiry,
                                            "now": now}).fetchall()
            if not 0 <= now - self._swept < SWEEP_EVERY:
                self._swept = now
                db.execute("DELETE FROM hits WHERE expires <= ?", (now,))
        return int(count)

    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        """The lock of counter writes (a new one after a fork: a parent's thread may have held its thread lock);
        not taken within the busy timeout: SQLite's own "database is locked", as a busy file would say."""
        pid, lock = self._writing
        if pid != os.getpid():
            self._writing = pid, lock = os.getpid(), self._new_lock()
        try:
            with lock.hold():
                yield
        except StoreBusy as exc:
            raise sqlite3.OperationalError(f"database is locked ({exc})") from exc

    def _new_lock(self) -> FileLock:
        return FileLock(self.path.with_name(LOCK_FILE), timeout=self.busy_timeout)

    def count(self, key: str) -> int:
        """The count of ``key``'s open window (0 if none)."""
        row = self._db().execute("SELECT count FROM hits WHERE key = ? AND expires > ?",
                                 (key, time.time())).fetchone()
        return int(row[0]) if row else 0

    def expiry(self, key: str) -> float:
        """When ``key``'s window ends (now, if none is open)."""
        now = time.time()
        row = self._db().execute("SELECT expires FROM hits WHERE key = ? AND expires > ?", (key, now)).fetchone()
        return float(row[0]) if row else now

    def clear(self, key: str) -> None:
        self._db().execute("DELETE FROM hits WHERE key = ?", (key,))

    def clear_all(self) -> int:
        """Forget every counter; how many there were."""
        return self._db().execute("DELETE FROM hits").rowcount

    def check(self) -> bool:
        """Whether the file can be used."""
        try:
            self._db().execute("SELECT 1").fetchone()
            return True
        except sqlite3.Error:
            return False


def migrate(conn: sqlite3.Connection, path: Path | str = "") -> int:
    """Bring an open state file to :data:`SCHEMA_VERSION` (one transaction; safe when workers race); its version."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version == SCHEMA_VERSION:
        return version
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])  # another worker may have done it
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(f"{path} has schema version {version}; this wikimem knows up to {SCHEMA_VERSION} "
                               "(was it opened by a newer release?)")
        for step in MIGRATIONS[version:]:
            for statement in filter(str.strip, step.split(";")):
                conn.execute(statement)  # (executescript would commit the transaction half-way)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return SCHEMA_VERSION
