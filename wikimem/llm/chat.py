"""An OpenAI-compatible chat-completions client, stdlib only.

The library never needs it (``memorize`` takes any object with a ``chat``
method, see :class:`wikimem.llm.memorizer.LLM`); the host uses it to run memorize
against a configured endpoint. Every failure — unreachable, timeout, an HTTP
error, a body that is not the chat-completions shape — is one exception,
:class:`LLMError`, whose message says what went wrong and where.

:func:`post_json` is the small HTTP helper shared with ``wikimem.vectors``.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from wikimem.errors import WikimemError

__all__ = ["ChatClient", "LLMError", "post_json", "endpoint_url"]

# Bodies bigger than this are not a chat reply or an embeddings batch we asked for.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class LLMError(WikimemError):
    """A chat endpoint that could not give a reply. ``status`` is the HTTP status, if any."""

    code = "llm_error"

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def endpoint_url(base_url: str, path: str) -> str:
    """``base_url`` + ``/path``; the base must be an http(s) URL (``ValueError`` otherwise)."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must be an http:// or https:// URL, got {base_url!r}")
    return base_url.rstrip("/") + "/" + path.lstrip("/")


def _error_message(data: bytes) -> str:
    """The server's own words from an error body (OpenAI shape or plain text)."""
    text = data[:2000].decode("utf-8", errors="replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text[:300] or "(empty body)"
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
        if isinstance(body.get("message"), str):
            return body["message"]
    return text[:300]


def post_json(url: str, payload: Mapping[str, Any], *, api_key: str | None, timeout: float,
              error: type[Exception] = LLMError, what: str = "chat") -> Any:
    """POST ``payload`` as JSON and return the decoded JSON answer.

    Any failure raises ``error(message, status)``. ``timeout`` bounds each
    socket operation (connect, each read), as urllib does.
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "User-Agent": "wikimem"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read(MAX_RESPONSE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        message = _error_message(exc.read() if exc.fp is not None else b"")
        raise error(f"{what} endpoint {url} answered HTTP {exc.code}: {message}", exc.code) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise error(f"{what} endpoint {url} timed out after {timeout:g}s") from None
        raise error(f"cannot reach {what} endpoint {url}: {exc.reason}") from None
    except TimeoutError:
        raise error(f"{what} endpoint {url} timed out after {timeout:g}s") from None
    except (OSError, http.client.HTTPException) as exc:
        raise error(f"{what} endpoint {url} failed: {type(exc).__name__}: {exc}") from None
    if len(raw) > MAX_RESPONSE_BYTES:
        raise error(f"{what} endpoint {url} sent more than {MAX_RESPONSE_BYTES} bytes")
    try:
        return json.loads(raw)
    except ValueError:
        snippet = raw[:200].decode("utf-8", errors="replace")
        raise error(f"{what} endpoint {url} answered with a body that is not JSON: {snippet!r}") from None


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
                 timeout: float = 30.0, *, extra: Mapping[str, Any] | None = None):
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
        body = post_json(self.url, payload, api_key=self.api_key, timeout=self.timeout)
        return _reply_text(body, self.url)
