"""Running test code in several threads at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable


def run_threads(target: Callable[..., object], calls: Iterable[tuple]) -> list[BaseException]:
    """Run ``target(*args)`` for every ``args`` of ``calls``, each in its own thread, all at once.

    Waits for every thread; returns what they raised (empty when none did), so a
    test asserts ``== []`` instead of losing an exception to a thread's stderr.
    """
    errors: list[BaseException] = []

    def run(*args) -> None:
        try:
            target(*args)
        except BaseException as exc:  # handed to the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=tuple(args)) for args in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors
