"""Retrieves ranked a few at a time per process, the others waiting their turn in order.

Ranking is Python holding the GIL. With eight request threads ranking at once
the GIL decides who runs, and it is not fair: under 16 connections most
retrieves took 10–20 ms but one in a hundred 120–180 ms (bench/served.py).
:class:`RankingSlots` lets ``size`` threads rank at once and queues the rest
first come, first served, so a retrieve waits for the ones before it and not
for luck; the process ranks as many per second as before. A thread embedding
its query (a model or an endpoint: no Python of ours, perhaps a network wait)
lets its place go meanwhile (:meth:`RankingSlots.embedder`), so one slow
endpoint never holds the others back.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["RankingSlots", "UNLIMITED"]


class RankingSlots:
    """At most ``size`` threads inside :meth:`hold` at once, the rest admitted in arrival order (0: no limit)."""

    def __init__(self, size: int = 0):
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"the ranking slots' size must be an integer from 0, got {size!r}")
        self.size = size
        self._lock = threading.Lock()
        self._free = size
        self._waiting: deque[threading.Lock] = deque()  # one locked lock per waiting thread, oldest first
        self._mine = threading.local()  # .depth: how many holds this thread is inside

    @contextmanager
    def hold(self) -> Iterator[float]:
        """Inside, this thread has a place (a hold within a hold is the same place); yields the seconds it waited."""
        depth = getattr(self._mine, "depth", 0)
        waited = self._enter() if depth == 0 and self.size else 0.0
        self._mine.depth = depth + 1
        try:
            yield waited
        finally:
            self._mine.depth = depth
            if depth == 0 and self.size:
                self._leave()

    @contextmanager
    def released(self) -> Iterator[None]:
        """This thread's place, if it holds one, given to the next in line for the block, and taken back after
        (waiting in line again)."""
        depth = getattr(self._mine, "depth", 0)
        if not depth or not self.size:
            yield
            return
        self._mine.depth = 0
        self._leave()
        try:
            yield
        finally:
            self._enter()
            self._mine.depth = depth

    def embedder(self, inner: Any) -> Any:
        """``inner`` whose calls let this thread's place go while they run (None stays None; no limit: ``inner``)."""
        return inner if inner is None or not self.size else _Releasing(inner, self)

    @property
    def waiting(self) -> int:
        """Threads in line now."""
        with self._lock:
            return len(self._waiting)

    def _enter(self) -> float:
        with self._lock:
            if self._free > 0 and not self._waiting:
                self._free -= 1
                return 0.0
            turn = threading.Lock()
            turn.acquire()
            self._waiting.append(turn)
        start = time.perf_counter()
        turn.acquire()  # released by _leave when this thread's turn comes: the place is handed over, not freed
        return time.perf_counter() - start

    def _leave(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().release()
            else:
                self._free += 1


UNLIMITED = RankingSlots(0)


class _Releasing:
    """An embedder whose calls hold no ranking place; everything else (``model``, ``dim`` …) is ``inner``'s."""

    def __init__(self, inner: Any, slots: RankingSlots):
        self.inner = inner
        self._slots = slots

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"

    def embed(self, texts: list[str]) -> Any:
        with self._slots.released():
            return self.inner.embed(texts)

    def embed_query(self, texts: list[str]) -> Any:
        from wikimem.vectors import embed_queries

        with self._slots.released():
            return embed_queries(self.inner, texts)
