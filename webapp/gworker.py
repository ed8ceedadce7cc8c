"""gunicorn's threaded worker, leaving a new connection to a less loaded worker first.

gthread workers share one listening socket, and whichever worker's loop is
awake accepts. A burst of connections (a bot pool starting, nginx's upstream
keep-alive, wrk) lands in a few hundred microseconds, so the worker that woke
first took most: measured at 16 connections and 2 workers, six runs each,
0/16, 1/15 or 2/14 in three runs of retrieves and 0/16 to 4/12 in four runs
of /healthz, one process serving (nearly) every request while the other sat
idle, and requests queued behind seven others.

:class:`BalancedThreadWorker` holds at most ``threads`` connections before it
defers: past that, the next connection is left in the kernel's queue for
:data:`PAUSE` seconds, for a worker holding fewer to take; if none does, this
worker accepts it then. Nothing waits longer than that pause, and no
connection is refused. It overrides three hooks of gthread's event loop
(gunicorn 24 and later: ``accept``, ``set_accept_enabled``,
``wait_for_and_dispatch_events``).
"""

from __future__ import annotations

import time

from gunicorn.workers.gthread import ThreadWorker

__all__ = ["BalancedThreadWorker", "PAUSE"]

PAUSE = 0.005  # seconds a worker past its share leaves a new connection to the others


class BalancedThreadWorker(ThreadWorker):
    """gthread that defers a connection past ``threads`` held (its own kept-alive ones are served as before)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.deferred_at: float | None = None  # when this worker last left a connection to the others

    def accept(self, listener) -> None:
        if self.nr_conns >= self.cfg.threads and self.deferred_at is None:
            self.deferred_at = time.monotonic()
            self.set_accept_enabled(False)
            return
        self.deferred_at = None  # (its share not reached, or the pause over: take it)
        super().accept(listener)

    def set_accept_enabled(self, enabled: bool) -> None:
        # run() asks on every turn of its loop; during a pause the listener stays off
        super().set_accept_enabled(enabled and self._remaining() == 0.0)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        remaining = self._remaining()
        super().wait_for_and_dispatch_events(min(timeout, remaining) if remaining else timeout)

    def _remaining(self) -> float:
        """Seconds left of the current pause (0.0: none)."""
        if self.deferred_at is None:
            return 0.0
        return max(0.0, self.deferred_at + PAUSE - time.monotonic())
