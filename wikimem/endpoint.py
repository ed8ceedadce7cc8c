"""One JSON round trip to an OpenAI-compatible endpoint (chat, embeddings), stdlib only.

:func:`endpoint_url` joins a base URL and a path; :func:`post_json` posts and
decodes, turning every failure into the caller's own exception type, marked
for whoever retries it: ``transient`` (the endpoint is down, busy or failing:
no answer, HTTP 408, 425, 429 or 5xx), ``timed_out``, and ``retry_after`` (the
seconds of a ``Retry-After`` header, or None).
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

__all__ = ["endpoint_url", "post_json", "retry_after", "MAX_RESPONSE_BYTES", "TRANSIENT_STATUSES"]

# Bodies bigger than this are not a chat reply or an embeddings batch we asked for.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
# Answers that say "not now" rather than "never": worth another try.
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


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
              error: type[Exception], what: str) -> Any:
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
        raise _marked(error(f"{what} endpoint {url} answered HTTP {exc.code}: {message}", exc.code),
                      transient=exc.code in TRANSIENT_STATUSES, retry=retry_after(exc.headers)) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise _marked(error(f"{what} endpoint {url} timed out after {timeout:g}s"), timed_out=True) from None
        raise _marked(error(f"cannot reach {what} endpoint {url}: {exc.reason}")) from None
    except TimeoutError:
        raise _marked(error(f"{what} endpoint {url} timed out after {timeout:g}s"), timed_out=True) from None
    except (OSError, http.client.HTTPException) as exc:
        raise _marked(error(f"{what} endpoint {url} failed: {type(exc).__name__}: {exc}")) from None
    if len(raw) > MAX_RESPONSE_BYTES:
        raise error(f"{what} endpoint {url} sent more than {MAX_RESPONSE_BYTES} bytes")
    try:
        return json.loads(raw)
    except ValueError:
        snippet = raw[:200].decode("utf-8", errors="replace")
        raise error(f"{what} endpoint {url} answered with a body that is not JSON: {snippet!r}") from None


def _marked(exc: Exception, *, transient: bool = True, timed_out: bool = False, retry: float | None = None
            ) -> Exception:
    """``exc`` with what a retry needs to know (see the module docstring)."""
    exc.transient = transient  # type: ignore[attr-defined]
    exc.timed_out = timed_out  # type: ignore[attr-defined]
    exc.retry_after = retry  # type: ignore[attr-defined]
    return exc


def retry_after(headers: Any) -> float | None:
    """The seconds a ``Retry-After`` header asks for (a number, or an HTTP date), or None."""
    value = headers.get("Retry-After") if headers is not None else None
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    import time

    return max(0.0, when.timestamp() - time.time())
