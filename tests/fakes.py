"""Local stand-ins for external services, speaking their real HTTP protocols.

:class:`ScriptedLLM` is the LLM port without HTTP (canned replies, recorded calls).

:class:`FakeOpenAI` is a real ``http.server`` on 127.0.0.1, in a background
thread, that answers the two OpenAI-compatible endpoints wikimem talks to:

- ``POST /v1/chat/completions`` (and ``/chat/completions``): the reply text
  comes from a scripted queue (``fake.replies.append("...")``) or from a
  function of the messages (``fake.reply_fn = lambda messages: "..."``);
  with neither, the reply is ``"[]"``.
- ``POST /v1/embeddings`` (and ``/embeddings``): vectors from
  :func:`fake_embedding`, a deterministic embedder (hashed character bigrams
  plus a small concept table, so paraphrases such as "那天我是不是很沮丧" and
  "他一句话没说，饭也没怎么吃" land near each other although they share no
  word). The vector space depends on the requested model name, so switching
  models really changes the space, as it does with real providers.

Usage::

    with FakeOpenAI(dim=64) as fake:
        client = ChatClient(fake.url, "fake-chat")     # fake.url ends in /v1
        fake.replies.append('[{"content": "..."}]')
        ...
        assert fake.chat_calls == 1

Knobs (plain attributes, may be changed while the server runs):

====================  =======================================================
``delay``             seconds to wait before answering any request
``fail_status``       answer every request with this HTTP status and an
                      OpenAI-style ``{"error": {...}}`` body
``fail_next``         fail only the next N requests (status ``fail_next_status``,
                      else ``fail_status`` or 500), then answer normally again
``retry_after``       a ``Retry-After`` header value sent with those failures
``garbage``           answer 200 with a body that is not JSON
``wrong_count``       embeddings: return this many rows more (or fewer, if
                      negative) than inputs
``wrong_dim``         embeddings: add (or drop, if negative) this many
                      components to every vector
``served_model``      report this model name in responses instead of the
                      requested one (what some gateways do)
``shuffle``           embeddings: return the rows in reverse ``index`` order
                      (default True: clients must re-order by ``index``)
``api_key``           when set, requests without ``Authorization: Bearer
                      <api_key>`` get 401
``respond_with``      a function ``(path, body) -> (status, payload) | None``;
                      a tuple is sent as the JSON answer instead of the
                      normal one (for odd response shapes), None answers
                      normally
====================  =======================================================

Records: ``requests`` (every request: path, headers, parsed body),
``chat_calls``, ``chat_messages`` (the messages of each chat call),
``embed_calls``, ``embedded_texts`` (every text embedded, in order) and
``embed_batches`` (the inputs of each embeddings call).

The module is stdlib only and is shared by several test files (vectors,
fusion, memorize, the host's API tests and demo): keep its interface stable.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["FakeOpenAI", "Request", "fake_embedding", "CONCEPTS", "DEFAULT_EMBED_MODEL"]

DEFAULT_EMBED_MODEL = "fake-embed"

# Phrases that mean the same thing share a concept direction. Small on
# purpose: just enough for the paraphrase tests and the demo data.
CONCEPTS: dict[str, tuple[str, ...]] = {
    "low-mood": ("沮丧", "难过", "伤心", "低落", "郁闷", "不开心", "心情不好", "一句话没说",
                 "没说话", "不说话", "没怎么吃", "没胃口", "吃不下", "sad", "upset",
                 "depressed", "gloomy", "silent", "barely ate"),
    "joy": ("开心", "高兴", "兴奋", "快乐", "激动", "happy", "excited", "glad", "cheerful"),
    "sea": ("海边", "大海", "海滩", "沙滩", "看海", "beach", "sea", "ocean", "seaside"),
    "coffee": ("咖啡", "拿铁", "手冲", "美式", "coffee", "latte", "espresso"),
    "work": ("工作", "上班", "公司", "同事", "加班", "job", "work", "office", "colleague"),
    "pet": ("猫", "狗", "宠物", "cat", "dog", "pet", "kitten", "puppy"),
    "sleep": ("睡觉", "失眠", "睡不着", "熬夜", "sleep", "insomnia", "tired"),
}
_CONCEPT_WEIGHT = 4.0


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


@cache
def _direction(name: str, dim: int) -> tuple[float, ...]:
    """A fixed pseudo-random unit vector for a concept."""
    rng = random.Random(f"{name}/{dim}")
    v = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    n = math.sqrt(sum(x * x for x in v))
    return tuple(x / n for x in v)


@cache
def _model_signs(model: str, dim: int) -> tuple[float, ...] | None:
    """Another model is another space: a fixed sign flip per component."""
    if model == DEFAULT_EMBED_MODEL:
        return None
    rng = random.Random(f"model/{model}/{dim}")
    return tuple(rng.choice((-1.0, 1.0)) for _ in range(dim))


def fake_embedding(text: str, dim: int = 64, model: str = DEFAULT_EMBED_MODEL) -> list[float]:
    """The deterministic unit vector the fake server returns for ``text``."""
    low = text.lower()
    v = [0.0] * dim
    chars = [c for c in low if not c.isspace()]
    for a, b in zip(chars, chars[1:]):
        h = _digest(a + b)
        v[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    for name, phrases in CONCEPTS.items():
        hits = sum(1 for p in phrases if p in low)
        if hits:
            d = _direction(name, dim)
            for i in range(dim):
                v[i] += _CONCEPT_WEIGHT * hits * d[i]
    signs = _model_signs(model, dim)
    if signs is not None:
        v = [x * s for x, s in zip(v, signs)]
    n = math.sqrt(sum(x * x for x in v))
    if n == 0.0:  # empty text: a fixed direction rather than a zero vector
        return list(_direction("<empty>", dim))
    return [x / n for x in v]


@dataclass
class Request:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: object


class ScriptedLLM:
    """The LLM port in its simplest honest form: canned replies (an exception is raised), recorded calls."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls: list[list[dict]] = []

    def chat(self, messages):
        self.calls.append(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


class FakeOpenAI:
    """An OpenAI-compatible chat + embeddings server on 127.0.0.1 (see module doc)."""

    def __init__(self, *, dim: int = 64, api_key: str | None = None):
        self.dim = dim
        self.api_key = api_key
        self.delay = 0.0
        self.fail_status: int | None = None
        self.fail_next = 0
        self.fail_next_status: int | None = None
        self.retry_after: str | None = None
        self.garbage = False
        self.wrong_count = 0
        self.wrong_dim = 0
        self.served_model: str | None = None
        self.shuffle = True
        self.respond_with: Callable[[str, object], tuple[int, object] | None] | None = None
        self.replies: deque[str | None] = deque()
        self.reply_fn: Callable[[list[dict]], str | None] | None = None
        self.requests: list[Request] = []
        self.chat_messages: list[list[dict]] = []
        self.embed_batches: list[list[str]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> FakeOpenAI:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"fake": self})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; wakes any request that is sleeping on ``delay``."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:<port>`` (the endpoints also answer without ``/v1``)."""
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def url(self) -> str:
        """The base URL an OpenAI client is given: ``http://127.0.0.1:<port>/v1``."""
        return self.root_url + "/v1"

    # -- records -----------------------------------------------------------

    @property
    def chat_calls(self) -> int:
        return len(self.chat_messages)

    @property
    def embed_calls(self) -> int:
        return len(self.embed_batches)

    @property
    def embedded_texts(self) -> list[str]:
        return [t for batch in self.embed_batches for t in batch]

    def reset_records(self) -> None:
        """Forget every recorded request (knobs stay as they are)."""
        with self._lock:
            self.requests.clear()
            self.chat_messages.clear()
            self.embed_batches.clear()

    # -- answers -----------------------------------------------------------

    def _failure(self) -> int | None:
        """The status to fail this request with, if any."""
        with self._lock:
            if self.fail_next > 0:
                self.fail_next -= 1
                return self.fail_next_status or self.fail_status or 500
        return self.fail_status

    def _chat(self, body: dict) -> tuple[int, dict]:
        messages = body.get("messages")
        if not isinstance(body.get("model"), str) or not isinstance(messages, list):
            return 400, _error("'model' and 'messages' are required", "invalid_request_error")
        if body.get("stream"):
            return 400, _error("streaming is not supported by this server", "invalid_request_error")
        with self._lock:
            self.chat_messages.append(messages)
            scripted = bool(self.replies)
            content = self.replies.popleft() if scripted else "[]"
            fn = None if scripted else self.reply_fn
        if fn is not None:
            content = fn(messages)  # outside the lock: the function may be slow
        return 200, {
            "id": f"chatcmpl-{len(self.chat_messages)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served_model or body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }

    def _embeddings(self, body: dict) -> tuple[int, dict]:
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if (not isinstance(body.get("model"), str) or not isinstance(texts, list)
                or not texts or not all(isinstance(t, str) for t in texts)):
            return 400, _error("'model' and a non-empty 'input' of strings are required",
                               "invalid_request_error")
        with self._lock:
            self.embed_batches.append(list(texts))
        dim = self.dim + self.wrong_dim
        rows = [fake_embedding(t, self.dim, body["model"]) for t in texts]
        rows = [(r + [0.0] * dim)[:dim] for r in rows]
        if self.wrong_count > 0:
            rows += [rows[-1]] * self.wrong_count
        elif self.wrong_count < 0:
            rows = rows[: len(rows) + self.wrong_count]
        data = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]
        if self.shuffle:
            data.reverse()
        return 200, {"object": "list", "data": data, "model": self.served_model or body["model"],
                     "usage": {"prompt_tokens": 0, "total_tokens": 0}}


def _error(message: str, kind: str) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


_ROUTES = {
    "/v1/chat/completions": "_chat",
    "/chat/completions": "_chat",
    "/v1/embeddings": "_embeddings",
    "/embeddings": "_embeddings",
}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._send(404, _error(f"no route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        fake = self.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        with fake._lock:
            fake.requests.append(Request("POST", self.path, dict(self.headers), body))
        if fake.delay and fake._stopping.wait(fake.delay):
            return
        route = _ROUTES.get(self.path.split("?", 1)[0])
        if route is None:
            return self._send(404, _error(f"no route POST {self.path}", "not_found"))
        if fake.api_key is not None and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
            return self._send(401, _error("invalid api key", "invalid_api_key"))
        status = fake._failure()
        if status is not None:
            extra = {"Retry-After": fake.retry_after} if fake.retry_after is not None else {}
            return self._send(status, _error(f"injected failure {status}", "server_error"), extra)
        if fake.garbage:
            return self._send_raw(200, b"<html>502 bad gateway</html>", "text/html")
        custom = fake.respond_with(self.path, body) if fake.respond_with else None
        if custom is not None:
            return self._send(*custom)
        if not isinstance(body, dict):
            return self._send(400, _error("body must be a JSON object", "invalid_request_error"))
        self._send(*getattr(fake, route)(body))

    def _send(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), "application/json", headers)

    def _send_raw(self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
