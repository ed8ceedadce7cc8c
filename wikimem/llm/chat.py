"""An OpenAI-compatible chat-completions client, stdlib only.

The library never needs it (``memorize`` takes any object with a ``chat``
method, see :class:`wikimem.llm.memorizer.LLM`); the host uses it to run memorize
against a configured endpoint. Every failure — unreachable, timeout, an HTTP
error, a body that is not the chat-completions shape — is one exception,
:class:`LLMError`, whose message says what went wrong and where.

The HTTP round trip is :func:`wikimem.endpoint.post_json`, shared with ``wikimem.vectors``.
A call is tried again while the endpoint is briefly down, busy (429) or
failing (5xx), as :class:`ChatRetry` bounds it (``Retry-After`` honoured);
a timeout is not retried here (it already took ``timeout`` seconds).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wikimem.endpoint import endpoint_url, post_json
from wikimem.errors import WikimemError

__all__ = ["ChatClient", "ChatRetry", "LLMError"]


class LLMError(WikimemError):
    """A chat endpoint that could not give a reply. ``status`` is the HTTP status, if any."""

    code = "llm_error"

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status
        self.transient = False  # the endpoint was down, busy or failing: another try may work
        self.timed_out = False
        self.retry_after: float | None = None  # seconds the endpoint asked to wait (Retry-After)


@dataclass(frozen=True)
class ChatRetry:
    """How a chat call is tried again while its endpoint is unavailable.

    Up to ``attempts`` tries in all; before try ``n + 1`` it waits
    ``backoff·2^(n−1)`` seconds, or the endpoint's ``Retry-After`` when longer;
    never a wait over ``max_wait``, nor more than ``budget`` seconds of waits
    in all (then the last error is raised, for the caller — a memorize job —
    to try again later). ``ChatRetry(attempts=1)``: no retry.
    """

    attempts: int = 3
    backoff: float = 0.5
    max_wait: float = 8.0
    budget: float = 12.0

    def wait(self, exc: LLMError, attempt: int, waited: float) -> float | None:
        """Seconds to wait before the next try after ``exc`` on try ``attempt``, or None: give up."""
        if attempt >= self.attempts or not exc.transient or exc.timed_out:
            return None
        wait = max(self.backoff * 2 ** (attempt - 1), exc.retry_after or 0.0)
        if wait > self.max_wait or waited + wait > self.budget:
            return None
        return wait


def _reply_text(body: Any, url: str) -> str:
    """The assistant text of a chat-completions answer, or LLMError."""
    try:
        choice = body["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise LLMError(f"chat endpoint {url} answered without choices[0].message: "
                       f"{json.dumps(body, ensure_ascii=False)[:200]}") from None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content
                          if isinstance(p, dict) and isinstance(p.get("text"), str))
    if not isinstance(content, str):
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        raise LLMError(f"chat endpoint {url} returned no text content (finish_reason={reason!r})")
    return content


class ChatClient:
    """``LLM.chat`` over any OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` is the API root as providers document it, usually ending in
    ``/v1`` (``https://api.openai.com/v1``, ``http://127.0.0.1:11434/v1``).
    ``extra`` fields (``temperature``, ``max_tokens``, ``response_format``...)
    are sent with every request.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None,
                 timeout: float = 30.0, *, extra: Mapping[str, Any] | None = None, retry: ChatRetry | None = None):
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty string")
        if not timeout or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.url = endpoint_url(base_url, "chat/completions")
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.timeout = float(timeout)
        self.extra = dict(extra or {})
        self.retry = retry if retry is not None else ChatRetry()
        reserved = {"model", "messages", "stream"} & set(self.extra)
        if reserved:
            raise ValueError(f"extra may not set {sorted(reserved)}: the client owns them")

    def __repr__(self) -> str:  # never shows the key
        return f"ChatClient({self.base_url!r}, {self.model!r}, timeout={self.timeout:g})"

    def chat(self, messages: list[dict[str, str]]) -> str:
        """Send the messages, return the assistant's reply text (``LLMError`` on failure)."""
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise ValueError("messages must be a list of {'role': ..., 'content': ...} dicts")
        payload = {**self.extra, "model": self.model, "messages": messages}
        attempt, waited = 1, 0.0
        while True:
            try:
                body = post_json(self.url, payload, api_key=self.api_key, timeout=self.timeout, error=LLMError,
                                 what="chat")
                return _reply_text(body, self.url)
            except LLMError as exc:
                wait = self.retry.wait(exc, attempt, waited)
                if wait is None:
                    raise
            time.sleep(wait)
            attempt, waited = attempt + 1, waited + wait
