"""The erasure register and what erasing does to the host's databases.

:class:`ErasureRegister` keeps, in the jobs database (so every host of a
cluster that shares it sees it), one receipt per erasure, named by a keyed
digest of the owner id — never the id — and the key itself (made once,
random). Knowing an id, anyone holding the database can check whether that
owner was erased; nobody can list which ids were. Receipts are deleted after
the erasure-receipt retention.

Scrubbing (every function here leaves no copy of what it removed in the
file: ``secure_delete`` zeroes freed space, then the WAL is checkpointed and
truncated):

- :func:`erase_jobs` — the jobs of an owner deleted (their turns and
  results with them), and its id masked in what other jobs recorded (a bulk
  rollback's per-owner results);
- :func:`redact_job` — a job's parameters replaced (the erase job keeps only
  the digest once it is done);
- :func:`scrub_jobs` — a forgotten item's texts masked in every job of its
  owner, and the raw turns of the memorize runs that wrote it dropped;
- :func:`erase_rows` — rows naming an owner deleted from another SQLite file
  (the auth state's counters), then the file vacuumed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["ErasureRegister", "erase_jobs", "redact_job", "scrub_jobs", "erase_rows", "mask_id", "vacuum",
           "DEFAULT_RECEIPT_RETENTION"]

DEFAULT_RECEIPT_RETENTION = 365 * 24 * 3600.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS erasures (digest TEXT PRIMARY KEY, kind TEXT NOT NULL, started REAL NOT NULL,
    finished REAL, actor TEXT, places TEXT NOT NULL DEFAULT '[]', receipt TEXT, copy REAL NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS erasure_key (id INTEGER PRIMARY KEY CHECK (id = 1), key TEXT NOT NULL);
"""
_ID_CHARS = "A-Za-z0-9._:@-"


def mask_id(text: str, owner_id: str, mask: str) -> str:
    """``text`` with every whole occurrence of ``owner_id`` replaced by ``mask`` (``user:ann`` in ``user:anna``
    is not one)."""
    return re.sub(rf"(?<![{_ID_CHARS}]){re.escape(owner_id)}(?![{_ID_CHARS}])", mask, text)


@contextmanager
def _connect(path: Path | str, *, write: bool = True) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete=ON")  # freed cells and pages zeroed: nothing removed stays in the file
        if write:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        else:
            yield conn
    finally:
        conn.close()


def vacuum(path: Path | str, attempts: int = 20) -> bool:
    """Rewrite a SQLite file whole and truncate its WAL (old versions of rows gone from both); whether the WAL
    could be truncated (not while another connection reads: then the next checkpoint overwrites it)."""
    if not Path(path).exists():
        return True
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete=ON")
        conn.execute("VACUUM")
        for _ in range(attempts):
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                return True
            time.sleep(0.05)
        return False
    finally:
        conn.close()


class ErasureRegister:
    """Receipts of erasures (and forgets) in the jobs database at ``path``, named by a keyed digest."""

    def __init__(self, path: Path | str, *, retention: float = DEFAULT_RECEIPT_RETENTION):
        self.path = Path(path)
        self.retention = float(retention)
        self._key: bytes | None = None

    def _db(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return _connect(self.path)

    def _ensure(self) -> bytes:
        if self._key is None:
            with self._db() as db:
                for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                    db.execute(statement)
                db.execute("INSERT OR IGNORE INTO erasure_key (id, key) VALUES (1, ?)", (secrets.token_hex(32),))
                (key,) = db.execute("SELECT key FROM erasure_key WHERE id = 1").fetchone()
            self._key = bytes.fromhex(key)
        return self._key

    def digest(self, owner_id: str) -> str:
        """The keyed digest naming an owner's erasure (``er_`` + 32 hex)."""
        return "er_" + hmac.new(self._ensure(), owner_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def begin(self, digest: str, kind: str, actor: str | None, copy: float | None = None) -> float:
        """Record that an erasure started, of the copy made at ``copy`` (None: whichever is recorded; 0 if
        none); the copy it is recorded for. The same copy again changes nothing (the first start time stays);
        another copy (the owner made again under its id since) starts a new record."""
        self._ensure()
        with self._db() as db:
            row = db.execute("SELECT copy FROM erasures WHERE digest = ?", (digest,)).fetchone()
            if row is not None and (copy is None or float(row[0]) == copy):
                return float(row[0])
            db.execute("DELETE FROM erasures WHERE digest = ?", (digest,))
            db.execute("INSERT INTO erasures (digest, kind, started, actor, copy) VALUES (?, ?, ?, ?, ?)",
                       (digest, kind, time.time(), actor, copy or 0.0))
        return copy or 0.0

    def note(self, digest: str, place: dict[str, Any]) -> dict[str, Any]:
        """Record what was done at one place (the first note of a place stays: a re-run finds it done); the
        note kept."""
        with self._db() as db:
            row = db.execute("SELECT places FROM erasures WHERE digest = ?", (digest,)).fetchone()
            places = json.loads(row[0]) if row else []
            for known in places:
                if known.get("place") == place.get("place"):
                    return known
            places.append(place)
            db.execute("UPDATE erasures SET places = ? WHERE digest = ?", (json.dumps(places), digest))
        return place

    def finish(self, digest: str, receipt: dict[str, Any]) -> dict[str, Any]:
        """Store the receipt (once; a re-run gets the first one back)."""
        with self._db() as db:
            row = db.execute("SELECT receipt FROM erasures WHERE digest = ?", (digest,)).fetchone()
            if row is not None and row[0]:
                return json.loads(row[0])
            db.execute("UPDATE erasures SET finished = ?, receipt = ? WHERE digest = ?",
                       (time.time(), json.dumps(receipt, ensure_ascii=False), digest))
        return receipt

    def started(self, digest: str) -> float | None:
        self._ensure()
        with _connect(self.path, write=False) as db:
            row = db.execute("SELECT started FROM erasures WHERE digest = ?", (digest,)).fetchone()
        return None if row is None else float(row[0])

    def receipt(self, digest: str) -> dict[str, Any] | None:
        """The receipt of a finished erasure, or None."""
        self._ensure()
        with _connect(self.path, write=False) as db:
            row = db.execute("SELECT receipt FROM erasures WHERE digest = ?", (digest,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def places(self, digest: str) -> list[dict[str, Any]]:
        self._ensure()
        with _connect(self.path, write=False) as db:
            row = db.execute("SELECT places FROM erasures WHERE digest = ?", (digest,)).fetchone()
        return json.loads(row[0]) if row else []

    def erased(self, owner_id: str, since: float | None = None) -> bool:
        """Whether ``owner_id`` was erased (started after ``since``, when given)."""
        started = self.started(self.digest(owner_id))
        return started is not None and (since is None or started >= since)

    def prune(self, *, now: float | None = None) -> int:
        """Delete receipts older than the retention; how many."""
        self._ensure()
        cutoff = (time.time() if now is None else now) - self.retention
        with self._db() as db:
            return db.execute("DELETE FROM erasures WHERE finished IS NOT NULL AND finished < ?", (cutoff,)).rowcount


# -- the jobs database --------------------------------------------------------------------------------

def _owner_of(params: str) -> Any:
    try:
        return json.loads(params).get("owner")
    except (ValueError, AttributeError):
        return None


def erase_jobs(path: Path | str, owner_id: str, *, keep: str, mask: str) -> dict[str, int]:
    """Delete every job of ``owner_id`` but ``keep`` (their steps, turns and results with them) and mask its id
    in every other job; ``{"deleted": n, "masked": m}``. Then the file is vacuumed."""
    if not Path(path).exists():
        return {"deleted": 0, "masked": 0}
    deleted = masked = 0
    with _connect(path) as db:
        for job_id, params in db.execute("SELECT id, params FROM jobs WHERE params LIKE ?",
                                         (f"%{owner_id}%",)).fetchall():
            if job_id != keep and _owner_of(params) == owner_id:
                db.execute("DELETE FROM steps WHERE job = ?", (job_id,))
                db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
                deleted += 1
        masked += _mask_columns(db, "jobs", "id", ("params",), owner_id, mask, skip=keep)
        masked += _mask_columns(db, "steps", "rowid", ("params", "result", "error"), owner_id, mask,
                                skip_job=keep)
    vacuum(path)
    return {"deleted": deleted, "masked": masked}


def _mask_columns(db: sqlite3.Connection, table: str, key: str, columns: Iterable[str], owner_id: str, mask: str,
                  skip: str | None = None, skip_job: str | None = None) -> int:
    changed = 0
    for column in columns:
        query = f"SELECT {key}, {column} FROM {table} WHERE {column} LIKE ?"
        args: list[Any] = [f"%{owner_id}%"]
        if skip_job is not None:
            query += " AND job != ?"
            args.append(skip_job)
        for row_key, value in db.execute(query, args).fetchall():
            if row_key == skip:
                continue
            new = mask_id(value, owner_id, mask)
            if new != value:
                db.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (new, row_key))
                changed += 1
    return changed


def redact_job(path: Path | str, job_id: str, params: dict[str, Any]) -> None:
    """Replace a job's parameters and its steps' (what a finished erasure keeps of its own job)."""
    text = json.dumps(params, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    with _connect(path) as db:
        db.execute("UPDATE jobs SET params = ? WHERE id = ?", (text, job_id))
        db.execute("UPDATE steps SET params = ? WHERE job = ?", (text, job_id))
    vacuum(path)


def scrub_jobs(path: Path | str, owner_id: str, texts: Iterable[str], runs: Iterable[str], *,
               placeholder: str) -> int:
    """Mask ``texts`` in every job of ``owner_id`` and drop the raw turn of its memorize steps of ``runs``;
    how many rows changed. Then the file is vacuumed."""
    if not Path(path).exists():
        return 0
    forms = sorted({f for t in texts for f in (t, json.dumps(t, ensure_ascii=False)[1:-1]) if f},
                   key=len, reverse=True)
    runs = set(runs)
    changed = 0
    with _connect(path) as db:
        jobs = [j for j, params in db.execute("SELECT id, params FROM jobs WHERE params LIKE ?",
                                             (f"%{owner_id}%",)).fetchall() if _owner_of(params) == owner_id]
        for job_id in jobs:
            for rowid, params, result, error in db.execute(
                    "SELECT rowid, params, result, error FROM steps WHERE job = ?", (job_id,)).fetchall():
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
                    db.execute("UPDATE steps SET params = ?, result = ?, error = ? WHERE rowid = ?", (*new, rowid))
                    changed += 1
    vacuum(path)
    return changed


def erase_rows(path: Path | str, table: str, column: str, owner_id: str) -> int:
    """Delete the rows of ``table`` whose ``column`` names ``owner_id`` (a whole occurrence), then vacuum."""
    if not Path(path).exists():
        return 0
    gone = 0
    with _connect(path) as db:
        for rowid, value in db.execute(f"SELECT rowid, {column} FROM {table} WHERE {column} LIKE ?",
                                       (f"%{owner_id}%",)).fetchall():
            if mask_id(value, owner_id, "") != value:
                db.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
                gone += 1
    vacuum(path)
    return gone
