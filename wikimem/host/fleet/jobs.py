"""Durable background jobs of the host: memorize without holding a request, bulk work over owners.

A **job** is a list of **steps** (one for a memorize; one per owner for a
bulk rollback), stored at the data root in ``jobs.sqlite3`` (SQLite, WAL).
It is keyed by an idempotency key: submitting the same key again returns the
same job. Its state is ``queued`` (no step started), ``running``, ``done``
(every step done) or ``failed`` (every step finished, at least one failed);
``done``/``total`` count finished steps and ``results`` holds each step's
result or error.

Steps are run by a :class:`JobRunner`: background threads inside each host
process, which claim one step at a time under a **lease** and renew it with a
heartbeat. When a process dies, its steps' leases lapse (at once if it ran on
this machine and its pid is gone, else after ``lease`` seconds) and another
process — or the same host after a restart — claims them again. A step marked
done is never run again, and marking it done is conditional on still holding
the lease, so two runs never both record a result.

What remains is the window between a step's effect and its "done" mark: a
process killed right there leaves a step whose effect happened but is not
marked. Handlers close it by making their writes idempotent under
:attr:`Step.key` (the memorize handler passes it as the ``Idempotency-Key`` of
the owner's commit, so the re-run replays the stored result and writes
nothing twice). A step whose process died ``max_attempts`` times fails.

Handlers are registered by kind (``runner.register("memorize", handler)``);
a handler gets a :class:`Step` and returns a JSON-able result, raises
:class:`RetryLater` to be run again after a delay, or raises anything else to
fail the step (a :class:`~wikimem.errors.WikimemError` or ``ValueError``
keeps its message; anything else is logged and reported as ``internal``).
Finished jobs are pruned after ``retention`` seconds (a week by default).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import re
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from wikimem.errors import IdempotencyKeyReused, InvalidName, NotFound, StoreBusy, WikimemError

__all__ = [
    "JobStore", "JobRunner", "Job", "Step", "RetryLater", "Handler",
    "memorize_handler", "submit_memorize", "validate_job_id", "JOBS_FILE", "JOB_STATES",
    "UNFINISHED",
]

log = logging.getLogger(__name__)

JOBS_FILE = "jobs.sqlite3"
JOB_STATES = ("queued", "running", "done", "failed")
UNFINISHED = ("queued", "running")  # a process that looks at such a job helps run it
JOB_ID_RE = re.compile(r"job_\d{8}T\d{6}Z_[0-9a-f]{12}")
MAX_STEPS = 100_000
MAX_KEY = 512
DEFAULT_RETENTION = 7 * 24 * 3600.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    key TEXT UNIQUE,
    fingerprint TEXT NOT NULL,
    params TEXT NOT NULL,
    state TEXT NOT NULL,
    total INTEGER NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    finished REAL
);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished);
CREATE TABLE IF NOT EXISTS steps (
    job TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    n INTEGER NOT NULL,
    params TEXT NOT NULL,
    state TEXT NOT NULL,            -- pending | running | done | failed
    lease_owner TEXT,
    lease_until REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    result TEXT,
    error TEXT,
    PRIMARY KEY (job, n)
);
CREATE INDEX IF NOT EXISTS steps_open ON steps (state, not_before);
"""


def validate_job_id(job_id: Any) -> str:
    """A job id as :meth:`JobStore.submit` makes them; :class:`InvalidName` otherwise."""
    if not isinstance(job_id, str) or not JOB_ID_RE.fullmatch(job_id):
        raise InvalidName(f"invalid job id {job_id!r}")
    return job_id


def _new_job_id() -> str:
    return f"job_{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}_{secrets.token_hex(6)}"


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# -- values ----------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """A job as stored: its state, progress and each step's outcome."""

    id: str
    kind: str
    state: str
    done: int  # finished steps (done or failed)
    failed: int
    total: int
    results: list[dict[str, Any]]  # per step: {"step", "state", "result"?, "error"?}
    params: dict[str, Any]
    created: str
    updated: str
    finished: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "state": self.state, "done": self.done, "failed": self.failed,
                "total": self.total, "results": self.results, "params": self.params, "created": self.created,
                "updated": self.updated, "finished": self.finished}


@dataclass(frozen=True)
class Step:
    """One step handed to a handler."""

    job: str
    n: int
    kind: str
    params: dict[str, Any]
    job_params: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1  # 2 and more: an earlier run was cut short (its process died, or RetryLater)

    @property
    def key(self) -> str:
        """The step's idempotency key: the same on every run of this step, unique across steps."""
        return f"{self.job}/{self.n}"


class RetryLater(Exception):
    """Raised by a handler: put the step back, to be run again after ``delay`` seconds."""

    def __init__(self, message: str = "retry later", delay: float = 1.0):
        super().__init__(message)
        self.delay = delay


Handler = Callable[[Step], Any]


def _error_of(exc: BaseException) -> dict[str, str]:
    if isinstance(exc, (WikimemError, ValueError)):
        return {"code": getattr(exc, "code", None) or "invalid_value", "message": str(exc)}
    log.error("job step failed unexpectedly", exc_info=exc)
    return {"code": "internal", "message": "internal error"}


# -- the store -------------------------------------------------------------------

class JobStore:
    """Jobs and steps in one SQLite file, shared by every process of a host (WAL, one writer at a time)."""

    def __init__(self, path: Path | str, *, retention: float = DEFAULT_RETENTION):
        self.path = Path(path)
        self.retention = float(retention)
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db().executescript(_SCHEMA)  # IF NOT EXISTS: safe when several processes start at once

    @classmethod
    def at(cls, data_root: Path | str, **kwargs: Any) -> JobStore:
        """The job store of a host's data root."""
        return cls(Path(data_root) / JOBS_FILE, **kwargs)

    def __repr__(self) -> str:
        return f"JobStore({str(self.path)!r})"

    # -- connections -----------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        """This thread's connection (a new one after a fork: SQLite handles must not cross it)."""
        local = self._local
        db = getattr(local, "db", None)
        if db is None or local.pid != os.getpid():
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a step marked done stays done after a power cut
            db.execute("PRAGMA foreign_keys=ON")
            local.db, local.pid = db, os.getpid()
        return db

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``) so claims never race."""
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def close(self) -> None:
        """Close this thread's connection."""
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # -- jobs ------------------------------------------------------------------

    def submit(self, kind: str, steps: Sequence[Mapping[str, Any]], *, params: Mapping[str, Any] | None = None,
               key: str | None = None, request: Any = None) -> tuple[Job, bool]:
        """``(job, created)``: a new job of ``kind`` with one step per mapping of ``steps``.

        With ``key``, a job already submitted under it is returned instead
        (``created`` False); the same key for a different request is refused
        (:class:`~wikimem.errors.IdempotencyKeyReused`). ``request`` is what
        "the same request" compares (JSON-able; default: kind, steps and params)
        — pass the caller's own input when steps hold values made at submission.
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
        now = time.time()
        with self._tx() as db:
            if key is not None:
                row = db.execute("SELECT id, fingerprint, kind FROM jobs WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    if row[1] != fingerprint:
                        raise IdempotencyKeyReused(
                            f"Idempotency-Key {key!r} was already used for another {row[2]} job; "
                            "use a new key for a new request")
                    return self._load(db, row[0]), False
            job_id = _new_job_id()
            db.execute("INSERT INTO jobs (id, kind, key, fingerprint, params, state, total, created, updated) "
                       "VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?)",
                       (job_id, kind, key, fingerprint, _dumps(params), len(steps), now, now))
            db.executemany("INSERT INTO steps (job, n, params, state) VALUES (?, ?, ?, 'pending')",
                           [(job_id, n, _dumps(s)) for n, s in enumerate(steps)])
            return self._load(db, job_id), True

    def by_key(self, key: str) -> Job | None:
        """The job submitted under idempotency ``key``, or None (a retry that need not rebuild its steps)."""
        row = self._db().execute("SELECT id FROM jobs WHERE key = ?", (key,)).fetchone()
        return None if row is None else self._load(self._db(), row[0])

    def get(self, job_id: str) -> Job:
        """The job; :class:`~wikimem.errors.NotFound` if there is none (or it was pruned)."""
        validate_job_id(job_id)
        return self._load(self._db(), job_id)

    def _load(self, db: sqlite3.Connection, job_id: str) -> Job:
        row = db.execute("SELECT id, kind, state, done, failed, total, params, created, updated, finished "
                         "FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise NotFound(f"no job {job_id!r}")
        results = []
        for n, state, result, error in db.execute(
                "SELECT n, state, result, error FROM steps WHERE job = ? ORDER BY n", (job_id,)):
            entry: dict[str, Any] = {"step": n, "state": state}
            if result is not None:
                entry["result"] = json.loads(result)
            if error is not None:
                entry["error"] = json.loads(error)
            results.append(entry)
        return Job(id=row[0], kind=row[1], state=row[2], done=row[3], failed=row[4], total=row[5],
                   results=results, params=json.loads(row[6]), created=_iso(row[7]), updated=_iso(row[8]),
                   finished=_iso(row[9]))

    # -- steps (the runner's side) -----------------------------------------------

    def claim(self, owner: str, kinds: Sequence[str], *, lease: float, max_attempts: int) -> Step | None:
        """Take the oldest runnable step of one of ``kinds`` under a lease for ``owner``, or None.

        Runnable: pending (and due), or running under a lease that lapsed or
        whose process is gone. A step already tried ``max_attempts`` times
        is failed instead of being handed out again.
        """
        if not kinds:
            return None
        now = time.time()
        marks = ",".join("?" * len(kinds))
        if not self._db().execute("SELECT 1 FROM steps WHERE state IN ('pending', 'running') AND not_before <= ? "
                                  "LIMIT 1", (now,)).fetchone():
            return None  # nothing to do: no write lock taken (every idle runner polls this)
        with self._tx() as db:
            dead = [(j, n) for j, n, holder in db.execute(
                "SELECT job, n, lease_owner FROM steps WHERE state = 'running' AND lease_until >= ?", (now,))
                if _holder_is_gone(holder)]
            for j, n in dead:  # a process of this machine that died: no need to wait for its lease
                db.execute("UPDATE steps SET lease_until = 0 WHERE job = ? AND n = ?", (j, n))
            while True:
                row = db.execute(
                    f"SELECT s.job, s.n, s.params, s.attempts, j.kind, j.params FROM steps s "
                    f"JOIN jobs j ON j.id = s.job WHERE j.kind IN ({marks}) AND s.not_before <= ? "
                    f"AND (s.state = 'pending' OR (s.state = 'running' AND s.lease_until < ?)) "
                    f"ORDER BY j.created, s.n LIMIT 1", (*kinds, now, now)).fetchone()
                if row is None:
                    return None
                job_id, n, params, attempts, kind, job_params = row
                if attempts >= max_attempts:
                    error = {"code": "gave_up", "message": f"gave up after {attempts} attempts: the process "
                                                           "running this step stopped each time"}
                    self._finish(db, job_id, n, "failed", None, error, now)
                    continue
                db.execute("UPDATE steps SET state = 'running', lease_owner = ?, lease_until = ?, "
                           "attempts = attempts + 1 WHERE job = ? AND n = ?", (owner, now + lease, job_id, n))
                db.execute("UPDATE jobs SET state = 'running', updated = ? WHERE id = ? AND state = 'queued'",
                           (now, job_id))
                return Step(job_id, n, kind, json.loads(params), json.loads(job_params), attempts + 1)

    def heartbeat(self, owner: str, *, lease: float) -> int:
        """Extend every lease ``owner`` holds; how many it holds."""
        with self._tx() as db:
            return db.execute("UPDATE steps SET lease_until = ? WHERE state = 'running' AND lease_owner = ?",
                              (time.time() + lease, owner)).rowcount

    def complete(self, step: Step, owner: str, *, result: Any = None, error: Mapping[str, Any] | None = None) -> bool:
        """Record a step's outcome, if ``owner`` still holds its lease (else nothing; False)."""
        state = "failed" if error is not None else "done"
        with self._tx() as db:
            if not self._holds(db, step, owner):
                return False
            self._finish(db, step.job, step.n, state, None if error else _dumps(result),
                         None if error is None else dict(error), time.time())
            return True

    def release(self, step: Step, owner: str, *, delay: float) -> bool:
        """Put a step back to be claimed again after ``delay`` seconds (:class:`RetryLater`)."""
        with self._tx() as db:
            if not self._holds(db, step, owner):
                return False
            db.execute("UPDATE steps SET state = 'pending', lease_owner = NULL, lease_until = NULL, "
                       "not_before = ? WHERE job = ? AND n = ?", (time.time() + max(0.0, delay), step.job, step.n))
            return True

    @staticmethod
    def _holds(db: sqlite3.Connection, step: Step, owner: str) -> bool:
        row = db.execute("SELECT state, lease_owner FROM steps WHERE job = ? AND n = ?", (step.job, step.n)).fetchone()
        return row is not None and row[0] == "running" and row[1] == owner

    @staticmethod
    def _finish(db: sqlite3.Connection, job_id: str, n: int, state: str, result: str | None,
                error: dict | None, now: float) -> None:
        db.execute("UPDATE steps SET state = ?, result = ?, error = ?, lease_owner = NULL, lease_until = NULL "
                   "WHERE job = ? AND n = ?", (state, result, None if error is None else _dumps(error), job_id, n))
        failed = 1 if state == "failed" else 0
        db.execute("UPDATE jobs SET done = done + 1, failed = failed + ?, updated = ?, "
                   "state = CASE WHEN done + 1 < total THEN 'running' "
                   "WHEN failed + ? > 0 THEN 'failed' ELSE 'done' END, "
                   "finished = CASE WHEN done + 1 < total THEN NULL ELSE ? END WHERE id = ?",
                   (failed, now, failed, now, job_id))

    def prune(self, *, now: float | None = None) -> int:
        """Delete jobs finished more than ``retention`` seconds ago; how many."""
        cutoff = (time.time() if now is None else now) - self.retention
        with self._tx() as db:
            gone = db.execute("DELETE FROM jobs WHERE finished IS NOT NULL AND finished < ?", (cutoff,)).rowcount
        if gone:
            self._db().execute("PRAGMA wal_checkpoint(TRUNCATE)")  # give the space back to the file system
        return gone


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


# -- the runner ------------------------------------------------------------------

class JobRunner:
    """Background threads of one process that run the steps of registered kinds."""

    def __init__(self, store: JobStore, *, threads: int = 2, lease: float = 30.0, poll: float = 1.0,
                 max_attempts: int = 5, prune_every: float = 3600.0):
        if threads < 1 or lease <= 0 or poll <= 0 or max_attempts < 1:
            raise ValueError("threads and max_attempts must be >= 1, lease and poll > 0")
        self.store = store
        self.threads = threads
        self.lease = float(lease)
        self.poll = float(poll)
        self.max_attempts = max_attempts
        self.prune_every = prune_every
        self.handlers: dict[str, Handler] = {}
        self.id = ""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._pid = 0
        self._lock = threading.Lock()
        self._last_prune = 0.0
        self._atexit = False

    def register(self, kind: str, handler: Handler) -> None:
        """Run the steps of ``kind`` with ``handler`` (a :class:`Step` → a JSON-able result)."""
        if not isinstance(kind, str) or not kind or not callable(handler):
            raise ValueError("register(kind, handler): a non-empty kind and a callable")
        self.handlers[kind] = handler
        self.wake()

    def wake(self) -> None:
        """Look for work now (a job was just submitted in this process)."""
        self._wake.set()

    @property
    def running(self) -> bool:
        return self._pid == os.getpid() and any(t.is_alive() for t in self._threads)

    def start(self) -> JobRunner:
        """Start the threads in this process (again after a fork; idempotent otherwise)."""
        with self._lock:
            if self.running:
                return self
            self._pid = os.getpid()
            self.id = f"{socket.gethostname()}:{self._pid}:{secrets.token_hex(4)}"
            self._stop.clear()
            self._threads = [threading.Thread(target=self._work, name=f"wikimem-job-{i}", daemon=True)
                             for i in range(self.threads)]
            self._threads.append(threading.Thread(target=self._beat, name="wikimem-job-heartbeat", daemon=True))
            for t in self._threads:
                t.start()
            if not self._atexit:
                # Daemon threads are frozen mid-call when the interpreter finalizes; one frozen inside
                # SQLite holds its connection's mutex and hangs the exit. Stop them first.
                atexit.register(self.stop, timeout=5.0)
                self._atexit = True
        return self

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop after the steps in flight (their leases lapse if they do not finish in ``timeout``)."""
        self._stop.set()
        self._wake.set()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def run_once(self) -> bool:
        """Claim and run one step in the calling thread; whether there was one."""
        if not self.id:
            self.id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        step = self.store.claim(self.id, sorted(self.handlers), lease=self.lease, max_attempts=self.max_attempts)
        if step is None:
            return False
        self._run(step)
        return True

    def _run(self, step: Step) -> None:
        try:
            result = self.handlers[step.kind](step)
        except RetryLater as exc:
            self.store.release(step, self.id, delay=exc.delay)
            return
        except Exception as exc:  # a failed step, not a dead runner
            self.store.complete(step, self.id, error=_error_of(exc))
            return
        if not self.store.complete(step, self.id, result=result):
            log.warning("job %s step %d finished after its lease was taken over; result dropped", step.job, step.n)

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                did = self.run_once()
            except Exception:  # the database busy or unreadable, a step's row damaged: never kill the thread
                log.exception("job runner: claiming or recording a step failed")
                did = False
            if not did:
                self._wake.wait(self.poll)
                self._wake.clear()
            self._maybe_prune()

    def _beat(self) -> None:
        while not self._stop.wait(self.lease / 3):
            try:
                self.store.heartbeat(self.id, lease=self.lease)
            except Exception:
                log.exception("job runner: heartbeat failed")

    def _maybe_prune(self) -> None:
        now = time.monotonic()
        if now - self._last_prune < self.prune_every:
            return
        self._last_prune = now
        try:
            self.store.prune()
        except sqlite3.Error:
            log.exception("job runner: pruning old jobs failed")


# -- handlers ----------------------------------------------------------------------

MEMORIZE = "memorize"
# Step parameters of a memorize job that make its WriteContext; the rest go to Owner.memorize.
_CONTEXT_FIELDS = ("run", "actor", "source_conv", "idempotency_key", "fingerprint")


def submit_memorize(store: JobStore, owner: str, turn: str, *, key: str | None = None,
                    **memorize_kwargs: Any) -> tuple[Job, bool]:
    """Submit a memorize of one turn as a one-step job; ``(job, created)``.

    ``memorize_kwargs`` are :meth:`Owner.memorize`'s (``character``,
    ``prompt``, ``ts``, ``tz``) and the write context's (``run``, ``actor``,
    ``source_conv``). The turn's time (``ts``, default now) and the run id
    (default a new one) are fixed here, at submission: entries are dated from
    when the turn was told, not from when the job ran, and the run id is
    known at once. ``key`` (the request's Idempotency-Key) is scoped to the
    owner, names the job, and is the memorize's own idempotency key, so a
    memorize already applied under it synchronously is replayed, not redone.
    """
    from wikimem.format import normalize_ts
    from wikimem.host.owner import new_run_id

    params = {k: v for k, v in memorize_kwargs.items() if v is not None}
    request = {"owner": owner, "turn": turn, **params}
    params["ts"] = normalize_ts(params.get("ts"))
    params.setdefault("run", new_run_id())
    if key is not None:
        params["idempotency_key"] = key
    step = {"owner": owner, "turn": turn, **params}
    scoped = None if key is None else f"{MEMORIZE}\n{owner}\n{key}"
    return store.submit(MEMORIZE, [step], params={"owner": owner, "run": params["run"]}, key=scoped,
                        request=request)


def memorize_handler(host: Any) -> Handler:
    """Steps made by :func:`submit_memorize` → ``MemorizeResult.to_dict()``.

    The memorize's idempotency key is the request's, else the step key: a
    step re-run after its process died between the commit and the "done"
    mark replays the commit's result instead of asking the model and writing
    again.
    """
    from wikimem.context import WriteContext

    def run(step: Step) -> dict[str, Any]:
        params = dict(step.params)
        owner, turn = params.pop("owner"), params.pop("turn")
        ctx = WriteContext.of(**{k: params.pop(k, None) for k in _CONTEXT_FIELDS})
        ctx = WriteContext.of(ctx, idempotency_key=ctx.idempotency_key or step.key)
        try:
            return host.owner(owner).memorize(turn, ctx=ctx, **params).to_dict()
        except StoreBusy as exc:
            raise RetryLater(str(exc), delay=1.0) from None

    return run
