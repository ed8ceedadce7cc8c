"""An inter-process lock on a file (``flock``), released if the holder dies.

Because the kernel drops an ``flock`` when the process holding it exits, a
crashed writer never leaves a lock behind: the lock *file* may remain, but it
is no obstacle. On platforms without ``fcntl`` the lock only serialises the
threads of this process (documented limitation).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import StoreBusy
from .fsio import open_regular

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileLock", "while_locked"]


class FileLock:
    """Exclusive lock on ``path``; ``timeout=None`` waits as long as it takes.

    ``make_parent=False`` refuses (FileNotFoundError) when the lock's folder
    is gone instead of creating it again — for a folder another process may
    delete (an owner).
    """

    def __init__(self, path: Path | str, timeout: float | None = 60.0, *, make_parent: bool = True):
        self.path = Path(path)
        self.timeout = timeout
        self.make_parent = make_parent
        self._local = threading.Lock()

    @contextmanager
    def hold(self) -> Iterator[None]:
        if not self._local.acquire(timeout=-1 if self.timeout is None else self.timeout):
            raise StoreBusy(f"timed out waiting for {self.path}")
        try:
            if fcntl is None:  # pragma: no cover
                yield
                return
            if self.make_parent:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            # Never through a link (it could lock another owner), never waiting on a FIFO's other end.
            fd = open_regular(self.path, os.O_RDWR | os.O_CREAT)
            try:
                self._acquire(fd)
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        finally:
            self._local.release()

    def _acquire(self, fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if self.timeout is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
                return
        deadline = time.monotonic() + self.timeout
        delay = 0.0005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError as exc:
                if time.monotonic() >= deadline:
                    raise StoreBusy(f"timed out after {self.timeout}s waiting for {self.path}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.002)


def while_locked(step: Callable[[], object], timeout: float) -> None:
    """Run ``step`` (a SQLite connection's set-up: WAL mode, a migration), again while SQLite says the database is
    locked, for at most ``timeout`` seconds (backoff 5–200 ms).

    Two connections that switch a file to WAL at once (a process just started beside another, or one recovering
    after a kill) deadlock on the lock upgrade: SQLite answers one of them "database is locked" at once, without
    waiting on its busy timeout. The loser waits and tries again.
    """
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
