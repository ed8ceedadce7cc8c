"""Run a call on a thread of its own: ``asyncio.run`` there never meets an event loop another test left running
in this process (Playwright's sync API keeps one in the main thread for the life of its browser)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def on_fresh_thread(call: Callable[[], T]) -> T:
    """``call()``'s result, or its exception, from a new thread."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="fresh-loop")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
