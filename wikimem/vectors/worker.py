"""Background embedding: a write never waits for the model, a retrieve never embeds memory.

An :class:`EmbeddingWorker` is one daemon thread that runs *jobs*, each a
callable returning True while it has more to do. Jobs are keyed (one per
memory index): submitting a key that is already queued only marks it for
another run, and a job that has more to do goes to the back of the queue,
so one large memory being embedded does not starve the others.

:class:`~wikimem.MemoryIndex` with ``embed_in_background=True`` submits a
job whenever it sees memory its vectors do not cover; the job embeds a
slice (see ``EMBED_SLICE``) and asks to run again until nothing is left.
Meanwhile retrieval scores with the vectors that exist and reports how far
embedding is (``RetrievalResult.vectors``, ``MemoryIndex.vector_counts``).

The thread starts on the first submit, and again in a forked child (a
pre-forking server's workers do not inherit threads).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

__all__ = ["EmbeddingWorker", "shared_worker"]

log = logging.getLogger(__name__)

Job = Callable[[], bool]


class EmbeddingWorker:
    """One background thread running keyed jobs round-robin (see the module docstring)."""

    def __init__(self, name: str = "wikimem-embed"):
        self.name = name
        self._jobs: OrderedDict[Hashable, Job] = OrderedDict()
        self._resubmit: dict[Hashable, Job] = {}  # submitted while running: run once more
        self._running: Hashable | None = None
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid: int | None = None
        self._stopped = False
        # Told the backlog (jobs queued or running) whenever it changes; e.g. the host's metrics gauge.
        self.on_backlog: list[Callable[[int], None]] = []

    def _told(self, size: int) -> None:
        for listener in self.on_backlog:
            try:
                listener(size)
            except Exception:  # a listener must never stop embedding
                log.exception("embedding backlog listener failed")

    def submit(self, key: Hashable, job: Job) -> None:
        """Queue ``job`` under ``key`` (once; a queued or running key is run again later)."""
        with self._cond:
            if self._stopped:
                return
            if key == self._running:
                self._resubmit[key] = job
            else:
                self._jobs[key] = job  # a queued key keeps its place
            self._ensure_thread()
            self._cond.notify_all()
            size = len(self._jobs) + (self._running is not None)
        self._told(size)

    def idle(self) -> bool:
        """True when nothing is queued or running."""
        with self._cond:
            return not self._jobs and self._running is None

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is queued or running; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._jobs and self._running is None, timeout)

    def stop(self, timeout: float | None = 5.0) -> None:
        """Drop queued jobs, let the running one finish, end the thread."""
        with self._cond:
            self._stopped = True
            self._jobs.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _ensure_thread(self) -> None:
        pid = os.getpid()
        if self._thread is None or self._pid != pid or not self._thread.is_alive():
            self._pid = pid
            self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs or self._stopped)
                if self._stopped:
                    return
                key, job = self._jobs.popitem(last=False)
                self._running = key
            more = self._run(key, job)
            with self._cond:
                self._running = None
                again = self._resubmit.pop(key, None)
                if (more or again is not None) and not self._stopped and key not in self._jobs:
                    self._jobs[key] = again or job  # to the back: round-robin
                self._cond.notify_all()
                size = len(self._jobs)
            self._told(size)

    @staticmethod
    def _run(key: Hashable, job: Job) -> bool:
        try:
            return bool(job())
        except Exception:  # a job failing must never kill the thread; it reports its own state
            log.exception("background embedding job %r failed", key)
            return False


_shared: EmbeddingWorker | None = None
_shared_lock = threading.Lock()


def shared_worker() -> EmbeddingWorker:
    """The process-wide worker (created on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = EmbeddingWorker()
        return _shared
