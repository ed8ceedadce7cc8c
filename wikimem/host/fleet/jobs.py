"""Durable background jobs of the host (:class:`JobStore`): memorize without holding a request, bulk work over
owners — jobs of steps in one database (``jobs.sqlite3`` or a cluster's PostgreSQL), keyed by an idempotency
key, claimed by :class:`~wikimem.host.fleet.runner.JobRunner` threads under a lease, fair across tenants and
bounded (:class:`~wikimem.host.fleet.jobtypes.Limits`); the schema and its migration are ``jobschema.py``.
How leases, idempotent handlers and the caps keep a step from running twice or starving a tenant:
docs/explanation/jobs.md.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikimem.errors import BadRequest, Conflict, IdempotencyKeyReused, InvalidName, NotFound, QueueFull

from .jobschema import SCHEMA_VERSION, TABLES, migrate, scope_of
from .jobtypes import (
    DEFAULT_RETENTION,
    JOB_ID_RE,
    JOBS_FILE,
    MAX_KEY,
    MAX_STEPS,
    TURN_FIELDS,
    Job,
    JobPage,
    JobQuery,
    Limits,
    Step,
    iso,
)
from .paging import decode_cursor, encode_cursor
from .sql import Database, Tx, prefix_match

if TYPE_CHECKING:
    from wikimem.host.owner_ids import Within

__all__ = ["JobStore", "validate_job_id", "SCHEMA_VERSION"]

log = logging.getLogger(__name__)

def validate_job_id(job_id: Any) -> str:
    """A job id as :meth:`JobStore.submit` makes them; :class:`InvalidName` otherwise."""
    if not isinstance(job_id, str) or not JOB_ID_RE.fullmatch(job_id):
        raise InvalidName(f"invalid job id {job_id!r}")
    return job_id


def _new_job_id() -> str:
    return f"job_{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}_{secrets.token_hex(6)}"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# -- the store -------------------------------------------------------------------

class JobStore:
    """Jobs and steps in one database, shared by every process of a host — SQLite (WAL, one writer at a time)
    at the data root, or a cluster's PostgreSQL database shared by every host.

    ``host`` names this host (a step submitted here for one of its owners is
    run here first); ``limits`` bound what one tenant may queue.
    """

    def __init__(self, path: Path | str, *, retention: float = DEFAULT_RETENTION, host: str = "",
                 limits: Limits | None = None):
        self.db = Database(path, "jobs", synchronous="FULL")  # a step marked done stays done after a power cut
        self.path = self.db.target
        self.retention = float(retention)
        self.host = host
        self.limits = limits or Limits()
        migrate(self.db)

    @classmethod
    def at(cls, data_root: Path | str, **kwargs: Any) -> JobStore:
        """The job store of a host's data root."""
        Path(data_root).mkdir(parents=True, exist_ok=True)
        return cls(Path(data_root) / JOBS_FILE, **kwargs)

    def __repr__(self) -> str:
        return f"JobStore({self.db.shown!r})"

    @property
    def shared(self) -> bool:
        """Whether the hosts of a cluster share it."""
        return self.db.postgres

    def close(self) -> None:
        """Close this thread's connection."""
        self.db.close()

    # -- jobs ------------------------------------------------------------------

    def submit(self, kind: str, steps: Sequence[Mapping[str, Any]], *, params: Mapping[str, Any] | None = None,
               key: str | None = None, request: Any = None, tenant: str = "",
               homes: Sequence[str | None] | None = None) -> tuple[Job, bool]:
        """``(job, created)``: a new job of ``kind`` with one step per mapping of ``steps``.

        With ``key``, a job already submitted under it is returned instead
        (``created`` False); the same key for a different request is refused
        (:class:`~wikimem.errors.IdempotencyKeyReused`). ``request`` is what
        "the same request" compares (JSON-able; default: kind, steps and params)
        — pass the caller's own input when steps hold values made at submission.
        ``tenant`` is the owner prefix of the submitter: a new job beyond its
        cap of open jobs (or its owner's) is refused with
        :class:`~wikimem.errors.QueueFull`. ``homes`` names, per step, the
        host that should run it (on a shared database; None: any).
        """
        if not isinstance(kind, str) or not kind:
            raise ValueError("kind must be a non-empty string")
        steps = [dict(s) for s in steps]
        if not 1 <= len(steps) <= MAX_STEPS:
            raise ValueError(f"a job has 1 to {MAX_STEPS} steps, got {len(steps)}")
        if key is not None and (not isinstance(key, str) or not key or len(key) > MAX_KEY):
            raise ValueError(f"key must be a non-empty string of at most {MAX_KEY} characters")
        params = dict(params or {})
        same = [kind, steps, params] if request is None else [kind, request]
        fingerprint = hashlib.sha256(_dumps(same).encode()).hexdigest()
        scope, owner = scope_of(kind, params)
        homes = list(homes) if homes is not None else [self.host or None] * len(steps)
        if not self.shared:
            homes = [None] * len(steps)  # one host: any of its processes runs any step
        now = time.time()
        self._keep_budget()
        with self.db.write() as tx:
            if key is not None:
                row = tx.one("SELECT id, fingerprint, kind FROM jobs WHERE key = ?", (key,))
                if row is not None:
                    if row[1] != fingerprint:
                        raise IdempotencyKeyReused(
                            f"Idempotency-Key {key!r} was already used for another {row[2]} job; "
                            "use a new key for a new request")
                    return self._load(tx, row[0]), False
            self._check_caps(tx, tenant, owner)
            job_id = _new_job_id()
            tx.execute("INSERT INTO jobs (id, kind, key, fingerprint, params, state, total, created, updated, tenant, "
                       "scope, owner) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)",
                       (job_id, kind, key, fingerprint, _dumps(params), len(steps), now, now, tenant, scope, owner))
            tx.many("INSERT INTO steps (job, n, params, state, home) VALUES (?, ?, ?, 'pending', ?)",
                    [(job_id, n, _dumps(s), homes[n]) for n, s in enumerate(steps)])
            return self._load(tx, job_id), True

    def _check_caps(self, tx: Tx, tenant: str, owner: str | None) -> None:
        limits = self.limits
        if limits.per_tenant:
            open_jobs = tx.scalar("SELECT count(*) FROM jobs WHERE state IN ('queued', 'running') AND tenant = ?",
                                  (tenant,))
            if open_jobs >= limits.per_tenant:
                raise QueueFull(f"{open_jobs} jobs of owner prefix {tenant!r} are queued or running (the cap is "
                                f"{limits.per_tenant}): wait for some to finish", retry_after=limits.retry_after)
        if limits.per_owner and owner is not None:
            open_jobs = tx.scalar("SELECT count(*) FROM jobs WHERE state IN ('queued', 'running') AND owner = ?",
                                  (owner,))
            if open_jobs >= limits.per_owner:
                raise QueueFull(f"{open_jobs} jobs of owner {owner!r} are queued or running (the cap is "
                                f"{limits.per_owner}): wait for some to finish", retry_after=limits.retry_after)

    def size(self) -> int:
        """Bytes the jobs take (what the size budget compares)."""
        return self.db.size(TABLES)

    def _keep_budget(self) -> None:
        """Over the size budget: finished jobs go, oldest first, whatever their age; still over → QueueFull."""
        budget = self.limits.max_bytes
        if not budget or self.size() <= budget:
            return
        while self.size() > budget * 0.9:
            with self.db.write() as tx:
                ids = [r[0] for r in tx.rows("SELECT id FROM jobs WHERE finished IS NOT NULL ORDER BY finished "
                                             "LIMIT 200")]
                if not ids:
                    break
                tx.execute(f"DELETE FROM jobs WHERE id IN ({','.join('?' * len(ids))})", ids)
        if self.size() > budget:
            raise QueueFull(f"the jobs database is over its size budget ({budget / (1024 * 1024):g} MiB) with "
                            "unfinished jobs: wait for some to finish", retry_after=60)

    def keyed(self, kind: str, within: Within, key: str | None, request: dict, what: str = "request"
              ) -> tuple[str | None, Job | None]:
        """A bulk job's idempotency key scoped to its kind and tenant, and the job already submitted under it
        for this same ``request`` (None: none yet); :class:`IdempotencyKeyReused` when the key named another
        request. Checked before the job's steps are chosen: a retry gets its job even once nothing is left."""
        if key is None:
            return None, None
        from wikimem.host.owner_ids import scope_text

        scoped = f"{kind}\n{scope_text(within)}\n{key}"
        existing = self.by_key(scoped)
        if existing is not None and {k: v for k, v in existing.params.items() if k != "request_id"} != request:
            raise IdempotencyKeyReused(f"Idempotency-Key {key!r} was already used for another {what}; "
                                       "use a new key for a new request")
        return scoped, existing

    def by_key(self, key: str) -> Job | None:
        """The job submitted under idempotency ``key``, or None (a retry that need not rebuild its steps)."""
        row = self.db.one("SELECT id FROM jobs WHERE key = ?", (key,))
        return None if row is None else self._load(None, row[0])

    def get(self, job_id: str) -> Job:
        """The job; :class:`~wikimem.errors.NotFound` if there is none (or it was pruned)."""
        validate_job_id(job_id)
        return self._load(None, job_id)

    _JOB_COLUMNS = "id, kind, state, done, failed, total, params, created, updated, finished, tenant, scope"

    def _load(self, tx: Tx | None, job_id: str, *, steps: bool = True) -> Job:
        q = tx or self.db
        row = q.one(f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        if row is None:
            raise NotFound(f"no job {job_id!r}")
        results = []
        if steps:
            for n, state, result, error in q.rows(
                    "SELECT n, state, result, error FROM steps WHERE job = ? ORDER BY n", (job_id,)):
                entry: dict[str, Any] = {"step": n, "state": state}
                if result is not None:
                    entry["result"] = json.loads(result)
                if error is not None:
                    entry["error"] = json.loads(error)
                results.append(entry)
        return self._job(row, results)

    @staticmethod
    def _job(row: tuple, results: list) -> Job:
        return Job(id=row[0], kind=row[1], state=row[2], done=row[3], failed=row[4], total=row[5],
                   results=results, params=json.loads(row[6]), created=iso(row[7]) or "",
                   updated=iso(row[8]) or "", finished=iso(row[9]), tenant=row[10] or "", scope=row[11] or "")

    def list(self, query: JobQuery | None = None, *, within: Within = "", admin: bool = False, limit: int = 50,
             cursor: str | None = None) -> JobPage:
        """Jobs newest first that a caller limited to owner prefix(es) ``within`` may see: one-owner jobs of its
        owners, and jobs over many owners (bulk) made within its prefixes when ``admin`` (a job made over several
        of them is found by its tenant, the scope it was submitted with)."""
        from wikimem.host.owner_ids import prefixes_of, scope_prefixes, scope_text

        query = query or JobQuery()
        prefixes = scope_prefixes(within, query.owner_prefix)
        if not prefixes:
            return JobPage()
        cond, args = prefix_match("scope", prefixes)
        if len(prefixes_of(within)) > 1 and not query.owner_prefix:
            cond, args = f"({cond} OR tenant = ?)", [*args, scope_text(within)]
        where: list[str] = [cond]
        if not admin:
            where.append("owner IS NOT NULL")
        for column, value in (("kind", query.kind), ("state", query.state)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if query.since is not None:
            where.append("created >= ?")
            args.append(query.since)
        if cursor:
            created, job_id = decode_cursor(cursor, ((int, float), str))
            if not JOB_ID_RE.fullmatch(job_id):
                raise BadRequest(f"invalid cursor {cursor[:40]!r}")
            where.append("(created < ? OR (created = ? AND id < ?))")
            args += [created, created, job_id]
        rows = self.db.rows(f"SELECT {self._JOB_COLUMNS} FROM jobs WHERE {' AND '.join(where)} "
                            "ORDER BY created DESC, id DESC LIMIT ?", [*args, limit + 1])
        more, rows = len(rows) > limit, rows[:limit]
        page = [self._job(r, []) for r in rows]
        return JobPage(page, encode_cursor(rows[-1][7], rows[-1][0]) if more and rows else None)

    def cancel(self, job_id: str) -> Job:
        """Cancel a job none of whose steps has started; :class:`~wikimem.errors.Conflict` once one has."""
        validate_job_id(job_id)
        now = time.time()
        with self.db.write() as tx:
            job = self._load(tx, job_id, steps=False)
            if job.state == "cancelled":
                return self._load(tx, job_id)
            if job.state != "queued":
                raise Conflict(f"job {job_id} is {job.state}: only a queued job can be cancelled")
            tx.execute("UPDATE steps SET state = 'cancelled', finished = ? WHERE job = ? AND state = 'pending'",
                       (now, job_id))
            tx.execute("UPDATE jobs SET state = 'cancelled', updated = ?, finished = ? WHERE id = ?",
                       (now, now, job_id))
            return self._load(tx, job_id)

    # -- steps (the runner's side) -----------------------------------------------

    def claim(self, owner: str, kinds: Sequence[str], *, lease: float, max_attempts: int,
              host: str | None = None, foreign: bool = False) -> Step | None:
        """Take the next runnable step of one of ``kinds`` under a lease for ``owner`` (a runner), or None.

        Runnable: pending (and due), or running under a lease that lapsed or
        whose process is gone; and meant for this ``host`` (or any host), or —
        when ``foreign`` (this host can act on any owner: replication) — meant
        for a host that stopped beating. The next one is the oldest step of the
        tenant served longest ago: tenants take turns, so one tenant's
        thousand steps delay another's one by at most one step per runner. A
        step already tried ``max_attempts`` times is failed instead.
        """
        if not kinds:
            return None
        now = time.time()
        marks = ",".join("?" * len(kinds))
        if not self.db.one("SELECT 1 FROM steps WHERE state IN ('pending', 'running') AND not_before <= ? LIMIT 1",
                           (now,)):
            return None  # nothing to do: no write lock taken (every idle runner polls this)
        where_home, home_args = "s.home IS NULL", []  # type: str, list[Any]
        if host:
            where_home = "(s.home IS NULL OR s.home = ?"
            home_args = [host]
            if foreign:
                where_home += " OR NOT EXISTS (SELECT 1 FROM hosts h WHERE h.name = s.home AND h.seen >= ?)"
                home_args.append(now - lease)
            where_home += ")"
        with self.db.write() as tx:
            dead = [(j, n) for j, n, holder in tx.rows(
                "SELECT job, n, lease_owner FROM steps WHERE state = 'running' AND lease_until >= ?", (now,))
                if _holder_is_gone(holder)]
            for j, n in dead:  # a process of this machine that died: no need to wait for its lease
                tx.execute("UPDATE steps SET lease_until = 0 WHERE job = ? AND n = ?", (j, n))
            while True:
                row = tx.one(
                    f"SELECT s.job, s.n, s.params, s.attempts, j.kind, j.params, j.tenant FROM steps s "
                    f"JOIN jobs j ON j.id = s.job LEFT JOIN tenants t ON t.tenant = j.tenant "
                    f"WHERE j.kind IN ({marks}) AND s.not_before <= ? "
                    f"AND (s.state = 'pending' OR (s.state = 'running' AND s.lease_until < ?)) AND {where_home} "
                    f"ORDER BY coalesce(t.last_claim, 0), j.created, s.n LIMIT 1",
                    (*kinds, now, now, *home_args))
                if row is None:
                    return None
                job_id, n, params, attempts, kind, job_params, tenant = row
                if attempts >= max_attempts:
                    error = {"code": "gave_up", "message": f"gave up after {attempts} attempts: the process "
                                                           "running this step stopped each time"}
                    self._finish(tx, job_id, n, "failed", None, error, now)
                    continue
                tx.execute("UPDATE steps SET state = 'running', lease_owner = ?, lease_until = ?, "
                           "attempts = attempts + 1 WHERE job = ? AND n = ?", (owner, now + lease, job_id, n))
                tx.execute("UPDATE jobs SET state = 'running', updated = ? WHERE id = ? AND state = 'queued'",
                           (now, job_id))
                tx.execute("INSERT INTO tenants (tenant, last_claim) VALUES (?, ?) ON CONFLICT (tenant) "
                           "DO UPDATE SET last_claim = excluded.last_claim", (tenant or "", now))
                return Step(job_id, n, kind, json.loads(params), json.loads(job_params), attempts + 1)

    def heartbeat(self, owner: str, *, lease: float, host: str | None = None) -> int:
        """Extend every lease ``owner`` holds (and say ``host`` is alive); how many it holds."""
        now = time.time()
        with self.db.write() as tx:
            if host:
                tx.execute("INSERT INTO hosts (name, seen) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET "
                           "seen = excluded.seen", (host, now))
            return tx.execute("UPDATE steps SET lease_until = ? WHERE state = 'running' AND lease_owner = ?",
                              (now + lease, owner)).rowcount

    def complete(self, step: Step, owner: str, *, result: Any = None, error: Mapping[str, Any] | None = None) -> bool:
        """Record a step's outcome, if ``owner`` still holds its lease (else nothing; False)."""
        state = "failed" if error is not None else "done"
        with self.db.write() as tx:
            if not self._holds(tx, step, owner):
                return False
            self._finish(tx, step.job, step.n, state, None if error else _dumps(result),
                         None if error is None else dict(error), time.time())
            return True

    def release(self, step: Step, owner: str, *, delay: float) -> bool:
        """Put a step back to be claimed again after ``delay`` seconds (:class:`RetryLater`)."""
        with self.db.write() as tx:
            if not self._holds(tx, step, owner):
                return False
            tx.execute("UPDATE steps SET state = 'pending', lease_owner = NULL, lease_until = NULL, "
                       "not_before = ? WHERE job = ? AND n = ?", (time.time() + max(0.0, delay), step.job, step.n))
            return True

    def progress(self, step: Step, value: Any) -> bool:
        """Report how far a running step got (shown as its ``result`` until it finishes; its final result replaces
        it); False when the step is no longer running."""
        with self.db.write() as tx:
            return tx.execute("UPDATE steps SET result = ? WHERE job = ? AND n = ? AND state = 'running'",
                              (_dumps(value), step.job, step.n)).rowcount > 0

    @staticmethod
    def _holds(tx: Tx, step: Step, owner: str) -> bool:
        row = tx.one("SELECT state, lease_owner FROM steps WHERE job = ? AND n = ?", (step.job, step.n))
        return row is not None and row[0] == "running" and row[1] == owner

    @staticmethod
    def _finish(tx: Tx, job_id: str, n: int, state: str, result: str | None, error: dict | None,
                now: float) -> None:
        tx.execute("UPDATE steps SET state = ?, result = ?, error = ?, lease_owner = NULL, lease_until = NULL, "
                   "finished = ? WHERE job = ? AND n = ?",
                   (state, result, None if error is None else _dumps(error), now, job_id, n))
        failed = 1 if state == "failed" else 0
        tx.execute("UPDATE jobs SET done = done + 1, failed = failed + ?, updated = ?, "
                   "state = CASE WHEN done + 1 < total THEN 'running' "
                   "WHEN failed + ? > 0 THEN 'failed' ELSE 'done' END, "
                   "finished = CASE WHEN done + 1 < total THEN NULL ELSE ? END WHERE id = ?",
                   (failed, now, failed, now, job_id))

    def stats(self) -> builtins.list[tuple[str, str, int, float]]:
        """``(kind, state, jobs, oldest created)`` for every kind and state held (what metrics show)."""
        rows = self.db.rows("SELECT kind, state, COUNT(*), MIN(created) FROM jobs GROUP BY kind, state")
        return [(str(k), str(s), int(n), float(t)) for k, s, n, t in rows]

    # -- housekeeping ------------------------------------------------------------

    def prune(self, *, now: float | None = None) -> int:
        """Delete jobs finished more than ``retention`` seconds ago; how many."""
        cutoff = (time.time() if now is None else now) - self.retention
        with self.db.write() as tx:
            gone = tx.execute("DELETE FROM jobs WHERE finished IS NOT NULL AND finished < ?", (cutoff,)).rowcount
        if gone:
            self.db.compact()  # give the space back to the file system
        return gone

    def forget_turns(self, *, now: float | None = None) -> int:
        """Drop the raw turn of memorize steps finished more than ``limits.turn_keep`` seconds ago (their result
        stays); how many."""
        cutoff = (time.time() if now is None else now) - self.limits.turn_keep
        dropped = 0
        with self.db.write() as tx:
            for kind, key in TURN_FIELDS.items():
                rows = tx.rows("SELECT s.job, s.n, s.params FROM steps s JOIN jobs j ON j.id = s.job "
                               "WHERE j.kind = ? AND s.state IN ('done', 'failed', 'cancelled') AND s.finished < ? "
                               "AND s.params LIKE ?", (kind, cutoff, f'%"{key}":%'))
                for job_id, n, params in rows:
                    kept = {k: v for k, v in json.loads(params).items() if k != key}
                    kept[f"{key}_dropped"] = True
                    tx.execute("UPDATE steps SET params = ? WHERE job = ? AND n = ?", (_dumps(kept), job_id, n))
                    dropped += 1
        return dropped

    def maintain(self) -> dict[str, int]:
        """The periodic housekeeping: old jobs pruned, old turns dropped, the size budget kept."""
        out = {"pruned": self.prune(), "turns_dropped": self.forget_turns()}
        try:
            self._keep_budget()
        except QueueFull:
            log.warning("jobs database over its size budget with unfinished jobs only")
        return out


def _holder_is_gone(holder: str | None) -> bool:
    """Whether a lease holder (``host:pid:token``) was a process of this machine that no longer runs."""
    try:
        host, pid, _ = (holder or "").rsplit(":", 2)
        if host != socket.gethostname():
            return False
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError, OSError):
        return False
    return False
