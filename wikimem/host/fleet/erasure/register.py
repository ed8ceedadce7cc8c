"""The erasure register and what erasing does to the host's databases (SQLite, or a cluster's PostgreSQL).

Design notes: docs/explanation/erasure.md (``wikimem/host/fleet/erasure/register.py``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..sql import Database, Tx

__all__ = ["ErasureRegister", "erase_jobs", "redact_job", "scrub_jobs", "erase_rows", "mask_id", "vacuum",
           "vacuum_file", "DEFAULT_RECEIPT_RETENTION"]

DEFAULT_RECEIPT_RETENTION = 365 * 24 * 3600.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS erasures (digest TEXT PRIMARY KEY, kind TEXT NOT NULL, started {real} NOT NULL,
    finished {real}, actor TEXT, places TEXT NOT NULL DEFAULT '[]', receipt TEXT, copy {real} NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS erasure_key (id INTEGER PRIMARY KEY, key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS exports (digest TEXT NOT NULL, at {real} NOT NULL, actor TEXT, format TEXT, head TEXT);
CREATE INDEX IF NOT EXISTS exports_digest ON exports (digest, at)
"""
MAX_EXPORTS_KEPT = 1_000  # export records kept per owner (the newest): an erasure's receipt lists them
_ID_CHARS = "A-Za-z0-9._:@-"


def mask_id(text: str, owner_id: str, mask: str) -> str:
    """``text`` with every whole occurrence of ``owner_id`` replaced by ``mask`` (``user:ann`` in ``user:anna``
    is not one)."""
    return re.sub(rf"(?<![{_ID_CHARS}]){re.escape(owner_id)}(?![{_ID_CHARS}])", mask, text)


def _secure(db: Database) -> None:
    """SQLite: this thread's connection zeroes what it frees (a deleted row leaves no bytes in the file)."""
    if not db.postgres:
        db.execute("PRAGMA secure_delete=ON")


def vacuum(db: Database, tables: Iterable[str] = ()) -> bool:
    """Rewrite the database so no freed row stays in it: SQLite ``VACUUM`` then the WAL checkpointed and
    truncated (whether it could be: not while another connection reads); PostgreSQL ``VACUUM`` of ``tables``."""
    if db.postgres:
        for table in tables:
            db.execute(f"VACUUM {table}")
        return True
    _secure(db)
    db.execute("VACUUM")
    for _ in range(40):
        if not db.scalar("PRAGMA wal_checkpoint(TRUNCATE)"):
            return True
        time.sleep(0.05)
    return False


def vacuum_file(path: Path | str) -> bool:
    """:func:`vacuum` of a SQLite file of the data root that no :class:`Database` holds (the auth state)."""
    if not Path(path).exists():
        return True
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("VACUUM")
        for _ in range(40):
            if not conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
                return True
            time.sleep(0.05)
        return False
    finally:
        conn.close()


class ErasureRegister:
    """Records of erasures and forgets in the jobs database ``db``, named by a keyed digest."""

    def __init__(self, db: Database, *, retention: float = DEFAULT_RECEIPT_RETENTION):
        self.db = db
        self.retention = float(retention)
        self._key: bytes | None = None

    def _ensure(self) -> bytes:
        if self._key is None:
            self.db.script(_SCHEMA)
            with self.db.write() as tx:
                tx.execute("INSERT INTO erasure_key (id, key) VALUES (1, ?) ON CONFLICT (id) DO NOTHING",
                           (secrets.token_hex(32),))
                key = tx.scalar("SELECT key FROM erasure_key WHERE id = 1")
            self._key = bytes.fromhex(key)
        return self._key

    def _row(self, digest: str, columns: str) -> tuple | None:
        self._ensure()
        return self.db.one(f"SELECT {columns} FROM erasures WHERE digest = ?", (digest,))

    def digest(self, owner_id: str) -> str:
        """The keyed digest naming an owner's erasure (``er_`` + 32 hex)."""
        return "er_" + hmac.new(self._ensure(), owner_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def begin(self, digest: str, kind: str, actor: str | None, copy: float | None = None) -> float:
        """Record that an erasure started, of the copy made at ``copy`` (None: whichever is recorded; 0 if
        none); the copy it is recorded for. The same copy again changes nothing (the first start time stays);
        another copy (the owner made again under its id since) starts a new record."""
        self._ensure()
        with self.db.write() as tx:
            row = tx.one("SELECT copy FROM erasures WHERE digest = ?", (digest,))
            if row is not None and (copy is None or float(row[0]) == copy):
                return float(row[0])
            tx.execute("DELETE FROM erasures WHERE digest = ?", (digest,))
            tx.execute("INSERT INTO erasures (digest, kind, started, actor, copy) VALUES (?, ?, ?, ?, ?)",
                       (digest, kind, time.time(), actor, copy or 0.0))
        return copy or 0.0

    def note(self, digest: str, place: dict[str, Any]) -> dict[str, Any]:
        """Record what was done at one place (the first note of a place stays: a re-run finds it done); the
        note kept."""
        self._ensure()
        with self.db.write() as tx:
            row = tx.one("SELECT places FROM erasures WHERE digest = ?", (digest,))
            places = json.loads(row[0]) if row else []
            for known in places:
                if known.get("place") == place.get("place"):
                    return known
            places.append(place)
            tx.execute("UPDATE erasures SET places = ? WHERE digest = ?", (json.dumps(places), digest))
        return place

    def finish(self, digest: str, receipt: dict[str, Any]) -> dict[str, Any]:
        """Store the receipt (once; a re-run gets the first one back)."""
        self._ensure()
        with self.db.write() as tx:
            row = tx.one("SELECT receipt FROM erasures WHERE digest = ?", (digest,))
            if row is not None and row[0]:
                return json.loads(row[0])
            tx.execute("UPDATE erasures SET finished = ?, receipt = ? WHERE digest = ?",
                       (time.time(), json.dumps(receipt, ensure_ascii=False), digest))
        return receipt

    def started(self, digest: str) -> float | None:
        row = self._row(digest, "started")
        return None if row is None else float(row[0])

    def receipt(self, digest: str) -> dict[str, Any] | None:
        """The receipt of a finished erasure, or None."""
        row = self._row(digest, "receipt")
        return json.loads(row[0]) if row and row[0] else None

    def places(self, digest: str) -> list[dict[str, Any]]:
        row = self._row(digest, "places")
        return json.loads(row[0]) if row else []

    def erased(self, owner_id: str, since: float | None = None) -> bool:
        """Whether an erasure of ``owner_id`` started (after ``since``, when given)."""
        started = self.started(self.digest(owner_id))
        return started is not None and (since is None or started >= since)

    def note_export(self, digest: str, fmt: str, actor: str | None, head: str | None) -> None:
        """Record that the owner named by ``digest`` was exported (as ``fmt``, by ``actor``, at ``head``): a
        later erasure's receipt says which copies left the host before it."""
        self._ensure()
        with self.db.write() as tx:
            tx.execute("INSERT INTO exports (digest, at, actor, format, head) VALUES (?, ?, ?, ?, ?)",
                       (digest, time.time(), actor, fmt, head))
            count = tx.scalar("SELECT count(*) FROM exports WHERE digest = ?", (digest,))
            if count > MAX_EXPORTS_KEPT:
                tx.execute("DELETE FROM exports WHERE digest = ? AND at <= (SELECT at FROM exports WHERE digest = ? "
                           "ORDER BY at DESC LIMIT 1 OFFSET ?)", (digest, digest, MAX_EXPORTS_KEPT))

    def exports(self, digest: str) -> list[dict[str, Any]]:
        """The exports recorded of the owner named by ``digest``, oldest first."""
        self._ensure()
        rows = self.db.rows("SELECT at, actor, format, head FROM exports WHERE digest = ? ORDER BY at", (digest,))
        return [{"at": datetime.fromtimestamp(float(at), timezone.utc).isoformat(timespec="seconds"), "by": actor,
                 "format": fmt, "head": head} for at, actor, fmt, head in rows]

    def forget_exports(self, digest: str) -> int:
        """Drop the export records of an erased owner (its receipt lists them); how many."""
        self._ensure()
        _secure(self.db)
        with self.db.write() as tx:
            return tx.execute("DELETE FROM exports WHERE digest = ?", (digest,)).rowcount

    def prune(self, *, now: float | None = None) -> int:
        """Delete records finished longer ago than the retention; how many."""
        self._ensure()
        cutoff = (time.time() if now is None else now) - self.retention
        _secure(self.db)
        with self.db.write() as tx:
            return tx.execute("DELETE FROM erasures WHERE finished IS NOT NULL AND finished < ?", (cutoff,)).rowcount


# -- the jobs database --------------------------------------------------------------------------------

def _owner_of(params: str) -> Any:
    try:
        found = json.loads(params)
    except ValueError:
        return None
    return found.get("owner") if isinstance(found, dict) else None


def _mask_columns(tx: Tx, table: str, key: tuple[str, ...], columns: Iterable[str], owner_id: str, mask: str,
                  skip_job: str) -> int:
    changed = 0
    job_column = "id" if table == "jobs" else "job"
    for column in columns:
        rows = tx.rows(f"SELECT {', '.join(key)}, {column} FROM {table} WHERE {column} LIKE ? AND {job_column} != ?",
                       (f"%{owner_id}%", skip_job))
        for row in rows:
            value = row[-1]
            new = mask_id(value, owner_id, mask)
            if new != value:
                where = " AND ".join(f"{k} = ?" for k in key)
                tx.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", (new, *row[:-1]))
                changed += 1
    return changed


def erase_jobs(db: Database, owner_id: str, *, keep: str, mask: str) -> dict[str, int]:
    """Delete every job of ``owner_id`` but ``keep`` (its steps, turns and results with them) and mask its id in
    every other job; ``{"deleted": n, "masked": m}``. Then the database is vacuumed."""
    _secure(db)
    with db.write() as tx:
        doomed = [job_id for job_id, owner, params in tx.rows(
            "SELECT id, owner, params FROM jobs WHERE owner = ? OR params LIKE ?", (owner_id, f"%{owner_id}%"))
            if job_id != keep and (owner == owner_id or _owner_of(params) == owner_id)]
        for job_id in doomed:
            tx.execute("DELETE FROM steps WHERE job = ?", (job_id,))
            tx.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
        masked = _mask_columns(tx, "jobs", ("id",), ("params", "scope", "tenant", "key"), owner_id, mask, keep)
        masked += _mask_columns(tx, "steps", ("job", "n"), ("params", "result", "error"), owner_id, mask, keep)
        tx.execute("DELETE FROM tenants WHERE tenant = ?", (owner_id,))
    vacuum(db, ("jobs", "steps", "tenants"))
    return {"deleted": len(doomed), "masked": masked}


def redact_job(db: Database, job_id: str, params: dict[str, Any]) -> None:
    """Replace a job's parameters and its steps' (what a finished erasure keeps of its own job)."""
    text = json.dumps(params, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    _secure(db)
    with db.write() as tx:
        tx.execute("UPDATE jobs SET params = ? WHERE id = ?", (text, job_id))
        tx.execute("UPDATE steps SET params = ? WHERE job = ?", (text, job_id))
    vacuum(db, ("jobs", "steps"))


def scrub_jobs(db: Database, owner_id: str, texts: Iterable[str], runs: Iterable[str], *, placeholder: str) -> int:
    """Mask ``texts`` in every job of ``owner_id`` and drop the raw turn of its memorize steps of ``runs``;
    how many steps changed. Then the database is vacuumed."""
    forms = sorted({f for t in texts for f in (t, json.dumps(t, ensure_ascii=False)[1:-1],
                                                json.dumps(t, ensure_ascii=True)[1:-1]) if f},
                   key=len, reverse=True)
    runs = set(runs)
    changed = 0
    _secure(db)
    with db.write() as tx:
        jobs = [j for j, owner, params in tx.rows("SELECT id, owner, params FROM jobs WHERE owner = ? OR params LIKE ?",
                                                 (owner_id, f"%{owner_id}%"))
                if owner == owner_id or _owner_of(params) == owner_id]
        for job_id in jobs:
            for n, params, result, error in tx.rows("SELECT n, params, result, error FROM steps WHERE job = ?",
                                                    (job_id,)):
                new = [params, result, error]
                loaded = json.loads(params)
                if isinstance(loaded, dict) and loaded.get("run") in runs and "turn" in loaded:
                    loaded = {k: v for k, v in loaded.items() if k != "turn"}
                    loaded["turn_dropped"] = True
                    new[0] = json.dumps(loaded, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
                for i, value in enumerate(new):
                    for form in forms:
                        if value and form in value:
                            value = value.replace(form, placeholder)
                    new[i] = value
                if new != [params, result, error]:
                    tx.execute("UPDATE steps SET params = ?, result = ?, error = ? WHERE job = ? AND n = ?",
                               (*new, job_id, n))
                    changed += 1
    vacuum(db, ("steps",))
    return changed


def erase_rows(path: Path | str, table: str, column: str, owner_id: str) -> int:
    """Delete the rows of ``table`` in the SQLite file ``path`` whose ``column`` names ``owner_id`` (a whole
    occurrence), then rewrite the file; how many."""
    if not Path(path).exists():
        return 0
    gone = 0
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?",
                                 (table,)).fetchone()
            rows = conn.execute(f"SELECT rowid, {column} FROM {table} WHERE {column} LIKE ?",
                                (f"%{owner_id}%",)).fetchall() if found else []
            for rowid, value in rows:
                if mask_id(value, owner_id, "") != value:
                    conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
                    gone += 1
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()
    vacuum_file(path)
    return gone
