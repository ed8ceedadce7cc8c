"""One request of a WSGI view served by an ASGI handler: the MCP SDK's streamable-HTTP transport.

The SDK's server is asynchronous (anyio) and serves only inside its session
manager's ``run()``. :class:`AsgiBridge` keeps, per worker process, one event
loop in a daemon thread (an anyio blocking portal) with ``run()`` entered,
started by the first request that process serves — after gunicorn forked it,
so no loop thread is ever copied into a child. A view hands it one request:
the body already read (bounded by ``MAX_CONTENT_LENGTH``), the answer
collected whole. That is exact for the mode the host uses (stateless, JSON
responses: one JSON-RPC answer per POST, nothing streams), and it keeps the
app one WSGI app behind gunicorn's sync or threaded workers.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AsgiBridge", "Answer"]

Scope = dict[str, Any]


@dataclass
class Answer:
    """What the ASGI handler sent: a status, its headers (text), the body."""

    status: int = 500
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


class AsgiBridge:
    """Serve requests with the handler a ``factory`` makes: ``factory() -> (handler, lifespan)``.

    ``handler`` is an ASGI callable, ``lifespan`` an async context manager
    it must run inside (the SDK's ``session_manager.run()``). Both are made
    once per process: the SDK's session manager runs only once.
    """

    def __init__(self, factory: Callable[[], tuple[Callable, contextlib.AbstractAsyncContextManager]]):
        self._factory = factory
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._stack: contextlib.ExitStack | None = None
        self._portal: Any = None
        self._handler: Callable | None = None

    def _started(self) -> tuple[Any, Callable]:
        with self._lock:
            if self._pid != os.getpid():  # first use in this process (a forked worker starts its own)
                from anyio.from_thread import start_blocking_portal

                handler, lifespan = self._factory()
                stack = contextlib.ExitStack()
                portal = stack.enter_context(start_blocking_portal(name="wikimem-mcp"))
                stack.enter_context(portal.wrap_async_context_manager(lifespan))
                self._stack, self._portal, self._handler, self._pid = stack, portal, handler, os.getpid()
            assert self._handler is not None
            return self._portal, self._handler

    def call(self, scope: Scope, body: bytes) -> Answer:
        """Run one HTTP request (``scope`` as ASGI has it, the whole ``body``) and return the answer."""
        portal, handler = self._started()
        return portal.call(_serve, handler, scope, body)

    def close(self) -> None:
        """Leave the lifespan and stop the loop (tests; a worker's loop ends with its process)."""
        with self._lock:
            if self._stack is not None and self._pid == os.getpid():
                self._stack.close()
            self._stack = self._portal = self._handler = self._pid = None


async def _serve(handler: Callable, scope: Scope, body: bytes) -> Answer:
    import anyio

    answer = Answer()
    done = anyio.Event()
    given = False

    async def receive() -> dict:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()  # the client is there until the answer is whole
        return {"type": "http.disconnect"}

    chunks: list[bytes] = []

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            answer.status = int(message["status"])
            answer.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                done.set()

    try:
        await handler(scope, receive, send)
    finally:
        done.set()
    answer.body = b"".join(chunks)
    return answer
