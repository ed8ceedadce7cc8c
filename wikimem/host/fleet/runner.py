"""The runner of the durable jobs (:mod:`wikimem.host.fleet.jobs`): background threads of one process that
claim steps under a lease, renew it with a heartbeat, run the handler of their kind and record the outcome,
and do the store's housekeeping (:class:`JobRunner`); a host's jobs, store and runner (:class:`HostJobs`)."""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import socket
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .jobs import JobStore
from .jobtypes import DEFAULT_RETENTION, Handler, Limits, RetryLater, Step, error_of

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["JobRunner", "HostJobs", "JOB_THREADS", "stop_all"]

JOB_THREADS = 2  # background job threads per host process

log = logging.getLogger("wikimem.host.fleet.jobs")

# -- the runner ------------------------------------------------------------------

# Runners started in this process, held weakly: a stopped runner no longer keeps its host (its owners, their
# files) alive, as a bound method registered with atexit did.
_started: weakref.WeakSet[JobRunner] = weakref.WeakSet()


def stop_all(timeout: float | None = 5.0) -> None:
    """Stop every runner this process started (after their steps in flight). At exit: daemon threads are frozen
    mid-call when the interpreter finalizes, and one frozen inside SQLite holds its connection's mutex and hangs
    the exit. A stopped runner starts again on its host's next submit or look at an unfinished job."""
    for runner in list(_started):
        if runner.running:
            runner.stop(timeout)


atexit.register(stop_all)


class JobRunner:
    """Background threads of one process that run the steps of registered kinds.

    ``host`` is the name of this process's host (its steps first; every
    heartbeat says it is alive); ``foreign``: this host may also take the
    steps of a host that stopped beating (it can reach any owner: replication).
    ``maintenance`` are called every ``maintain_every`` seconds from a worker
    thread (the store's housekeeping is always one of them).
    """

    def __init__(self, store: JobStore, *, threads: int = 2, lease: float = 30.0, poll: float = 1.0,
                 max_attempts: int = 5, prune_every: float = 60.0, host: str | None = None, foreign: bool = False,
                 maintenance: Sequence[Callable[[], Any]] = ()):
        if threads < 1 or lease <= 0 or poll <= 0 or max_attempts < 1:
            raise ValueError("threads and max_attempts must be >= 1, lease and poll > 0")
        self.store = store
        self.threads = threads
        self.lease = float(lease)
        self.poll = float(poll)
        self.max_attempts = max_attempts
        self.prune_every = prune_every
        self.host = host or store.host or None
        self.foreign = foreign
        self.maintenance = [store.maintain, *maintenance]
        self.handlers: dict[str, Handler] = {}
        self.id = ""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._pid = 0
        self._lock = threading.Lock()
        self._last_prune = 0.0

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
            _started.add(self)
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
        step = self.store.claim(self.id, sorted(self.handlers), lease=self.lease, max_attempts=self.max_attempts,
                                host=self.host, foreign=self.foreign)
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
            self.store.complete(step, self.id, error=error_of(exc))
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
        while True:
            try:
                self.store.heartbeat(self.id, lease=self.lease, host=self.host)
            except Exception:
                log.exception("job runner: heartbeat failed")
            if self._stop.wait(self.lease / 3):
                return

    def _maybe_prune(self) -> None:
        now = time.monotonic()
        with self._lock:
            if self._last_prune and now - self._last_prune < self.prune_every:
                return
            self._last_prune = now
        for task in self.maintenance:
            try:
                task()
            except Exception:
                log.exception("job runner: housekeeping failed")


class HostJobs:
    """A host's durable jobs: its :class:`JobStore` (opened on first use) and this process's :class:`JobRunner`
    (made and started by the first :meth:`start`), running the kinds and the housekeeping the composition root
    registered. ``count(kind, outcome)`` is told of every step's outcome (``done``, ``failed``, ``retry``)."""

    def __init__(self, target: Path | str, *, host: str, limits: Limits | None = None,
                 retention: float | None = None, foreign: bool = False,
                 count: Callable[[str, str], None] | None = None) -> None:
        self.target = target
        self.host = host
        self.limits = limits
        self.retention = retention
        self.foreign = foreign  # this host may take over the steps of a host that is gone (it replicates)
        self.handlers: dict[str, Handler] = {}
        self.maintenance: list[Callable[[], Any]] = []
        self.runner: JobRunner | None = None  # this process's, once started
        self._count = count
        self._store: JobStore | None = None
        self._lock = threading.Lock()

    @property
    def store(self) -> JobStore:
        """The job store (shared by every process of the host; a cluster's, on a shared database)."""
        store = self._store
        if store is None:
            with self._lock:
                if self._store is None:
                    retention = DEFAULT_RETENTION if self.retention is None else self.retention
                    self._store = JobStore(self.target, host=self.host, limits=self.limits, retention=retention)
                store = self._store
        return store

    def register(self, kind: str, handler: Handler) -> None:
        """Run the steps of ``kind`` with ``handler`` once started (its outcomes counted)."""
        self.handlers[kind] = self._counted(kind, handler)

    @property
    def started(self) -> bool:
        """Whether this process runs jobs (:meth:`start` was called)."""
        return self.runner is not None

    def start(self, threads: int = JOB_THREADS) -> JobRunner:
        """Run jobs in this process (idempotent; again after a fork)."""
        store = self.store  # (takes the lock itself)
        with self._lock:
            if self.runner is None:
                self.runner = JobRunner(store, threads=threads, host=self.host, foreign=self.foreign,
                                        maintenance=self.maintenance)
                for kind, handler in self.handlers.items():
                    self.runner.register(kind, handler)
            runner = self.runner
        return runner.start()

    def wake(self) -> None:
        """Have this process look for work now (a job was just submitted), starting it when it runs none yet."""
        self.start().wake()

    def _counted(self, kind: str, handler: Handler) -> Handler:
        count = self._count
        if count is None:
            return handler

        def run(step: Step) -> Any:
            try:
                result = handler(step)
            except RetryLater:
                count(kind, "retry")
                raise
            except Exception:
                count(kind, "failed")
                raise
            count(kind, "done")
            return result

        return run
