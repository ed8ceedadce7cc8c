"""Sign-in state a host shares between its worker processes: ended sessions and attempt counters.

One SQLite file at the data root, ``<data root>/auth/state.sqlite3`` (WAL
mode: a reader never waits for a writer). Every worker process of the host
opens the same file, so

- a logout ends the session in every worker at once (table ``revoked``:
  session id → the time its absolute lifetime ends anyway, after which the
  row is purged);
- the sign-in rate limit counts the attempts that all workers saw together
  (table ``hits``: fixed-window counters, the storage behind the ``limits``
  rate limiter of :mod:`webapp.ratelimit`). Counters in each process's
  memory would multiply the limit by the number of workers.

Each host of a cluster has its own data root and so its own file; see
:mod:`webapp.session` for what that means for logout. SQLite wants a local
filesystem, as the owners' file locks do. Standard library only.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

__all__ = ["AuthState", "STATE_FILE"]

STATE_FILE = Path("auth") / "state.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS revoked (sid TEXT PRIMARY KEY, until REAL NOT NULL);
CREATE INDEX IF NOT EXISTS revoked_until ON revoked (until);
CREATE TABLE IF NOT EXISTS hits (key TEXT PRIMARY KEY, count INTEGER NOT NULL, expires REAL NOT NULL);
CREATE INDEX IF NOT EXISTS hits_expires ON hits (expires);
"""

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

    def _db(self) -> sqlite3.Connection:
        """This thread's connection (a new one after a fork: connections must not cross processes)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # a crash may lose the last logouts, never corrupt
        conn.executescript(_SCHEMA)
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    # -- ended sessions ---------------------------------------------------

    def revoke(self, sid: str, until: float) -> None:
        """End session ``sid``; the record is kept until ``until`` (when the session would end anyway)."""
        db = self._db()
        db.execute("INSERT OR REPLACE INTO revoked (sid, until) VALUES (?, ?)", (sid, float(until)))
        db.execute("DELETE FROM revoked WHERE until < ?", (time.time(),))

    def is_revoked(self, sid: str) -> bool:
        """Whether session ``sid`` was ended."""
        return self._db().execute("SELECT 1 FROM revoked WHERE sid = ?", (sid,)).fetchone() is not None

    # -- fixed-window counters ----------------------------------------------

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        """Add ``amount`` to ``key``'s counter (a new window of ``expiry`` seconds if none is open); the new count."""
        now = time.time()
        db = self._db()
        # fetchall: the statement must run to its end, or its write transaction stays open.
        [(count,)] = db.execute(_INCR, {"key": key, "amount": amount, "expires": now + expiry, "now": now}).fetchall()
        db.execute("DELETE FROM hits WHERE expires <= ?", (now,))
        return int(count)

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
