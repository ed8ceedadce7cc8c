"""How :class:`~wikimem.client.Client` calls the API: :class:`Session` (the request target of a path, the
token and idempotency key, retries with back-off, JSON errors as exceptions), and the quoting of path segments
and ``If-Match`` values. The retry rules: docs/explanation/api-client.md."""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ClientError, TransportError, error_for
from .transport import API, Transport, describe_error, no_answer, refused, retry_after, split_base_url

__all__ = ["Session", "quote_segment", "if_match_header", "unquote_etag", "USER_AGENT"]

RETRY_STATUSES = frozenset({429, 502, 503, 504})
# The host's probes are outside the API: request() sends these paths to the host's root.
ROOT_PATHS = ("/healthz", "/readyz")
# Statuses that prove the server applied nothing (safe to retry a non-deduplicated operation).
_NOTHING_DONE_STATUSES = frozenset({429, 503})
USER_AGENT = "wikimem-client/1"


def quote_segment(segment: str) -> str:
    """One path segment, percent-encoded (``/`` included)."""
    if not isinstance(segment, str) or not segment:
        raise ValueError(f"a path segment must be a non-empty string, got {segment!r}")
    return urllib.parse.quote(segment, safe="")


def if_match_header(if_match: str) -> str:
    """The ``If-Match`` header of an ``if_match=`` argument: ``"abc"``, ``abc`` and ``W/"abc"`` all send ``"abc"``.

    The host compares etags by value and never makes weak ones; a proxy that compresses answers does
    (``W/"abc"``), and the host takes it as ``abc``, so the client does too. ``*`` (any current
    value) goes as it is. Several etags, or one with a quote, space or comma inside, are a ``ValueError``.
    """
    if not isinstance(if_match, str):
        raise ValueError(f"if_match must be an etag or commit id (a string), got {type(if_match).__name__}")
    value = if_match.strip()
    if value == "*":
        return value
    if value[:2] in ("W/", "w/"):
        value = value[2:]
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    if not value or any(c in value for c in '",') or any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(f"if_match must be one etag (\"abc\" or abc) or commit id, got {if_match!r}")
    return f'"{value}"'


def unquote_etag(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip()
    if value.startswith("W/"):
        value = value[2:]
    return value.strip('"') or None


class Session:
    """The API of one host over HTTP, with one token: what every :class:`~wikimem.client.Client` call goes
    through (see :meth:`request`)."""

    def __init__(self, base_url: str, token: str | None, *, timeout: float = 10.0, retries: int = 2,
                 backoff: float = 0.2, max_retry_after: float = 30.0, proxies: Mapping[str, str] | None = None,
                 user_agent: str = USER_AGENT) -> None:
        if retries < 0 or backoff < 0 or timeout <= 0:
            raise ValueError("retries and backoff must be >= 0, timeout > 0")
        scheme, host, port, prefix = split_base_url(base_url)
        self.transport = Transport(scheme, host, port, timeout, proxies)
        self.prefix = prefix
        self.base_url = self.transport.origin + prefix
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self.user_agent = user_agent
        self.sleep: Callable[[float], None] = time.sleep  # tests may replace it

    def close(self) -> None:
        self.transport.close()

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                headers: Mapping[str, str] | None = None, write: bool = False, dedup: bool = True,
                raw: bool = False, retries: int | None = None) -> tuple[Any, Mapping[str, str]]:
        """``(decoded JSON or bytes, headers)`` of one call, retried as the module docstring says.

        ``path`` is relative to the API (``"/owners/user:ann/files"``, as the
        OpenAPI document writes paths); a path that already starts with
        ``/api/v1`` (a ``Location`` header, e.g. ``/api/v1/jobs/<id>``) is
        taken as it is, and ``/healthz`` and ``/readyz`` are the host's
        probes at its root. ``query`` values that are not strings go as JSON.
        ``write`` adds an ``Idempotency-Key`` (one per call, the same on every
        retry); ``dedup=False`` marks a write the server does not deduplicate.
        ``retries`` overrides the client's for this call. A ``body`` of bytes is sent as it is (its
        ``Content-Type`` from ``headers``, else ``application/octet-stream``); anything else as JSON.
        """
        url = self._url(path)
        if query:
            pairs = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in query.items() if v is not None]
            if pairs:
                url += ("&" if "?" in url else "?") + urllib.parse.urlencode(pairs)
        retries = self.retries if retries is None else retries
        send = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.token:
            send["Authorization"] = f"Bearer {self.token}"
        if write:
            send["Idempotency-Key"] = str(uuid.uuid4())
        send.update(headers or {})
        data = None
        if isinstance(body, (bytes, bytearray)):  # a file sent as it is (a person's portable file)
            data = bytes(body)
            send.setdefault("Content-Type", "application/octet-stream")
        elif body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            send["Content-Type"] = "application/json; charset=utf-8"
        attempt = 0
        while True:
            delay = self._backoff(attempt)
            try:
                # A write the server does not deduplicate goes on a new connection: a reused one
                # that fails could not tell "closed while idle" from "died while applying it".
                return self._once(method, url, data, send, raw, fresh=write and not dedup)
            except ClientError as exc:
                moved = exc.status == 409 and exc.code == "remote_moved"  # nothing applied: another host wrote
                if attempt >= retries or (exc.status not in RETRY_STATUSES and not moved):
                    raise
                if write and not dedup and exc.status not in _NOTHING_DONE_STATUSES and not moved:
                    raise
                hinted = retry_after(exc.headers)
                if hinted is not None:
                    delay = min(hinted, self.max_retry_after)
            except (OSError, http.client.HTTPException) as exc:
                if not no_answer(exc):
                    raise
                if attempt >= retries or (write and not dedup and not refused(exc)):
                    raise TransportError(f"{method} {self.transport.origin}{url}: {describe_error(exc)}",
                                         exc) from exc
            attempt += 1
            self.sleep(delay)

    def _url(self, path: str) -> str:
        """The request target of a :meth:`request` path (see there)."""
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError(f"path must start with / and be relative to the API base, e.g. '/owners/user:ann'; "
                             f"got {path!r}")
        bare = path.split("?", 1)[0]
        if self.prefix and (bare == self.prefix + API or bare.startswith(self.prefix + API + "/")):
            return path  # already the full target under a sub-path mount
        if bare == API or bare.startswith(API + "/") or bare in ROOT_PATHS:
            return self.prefix + path
        return self.prefix + API + path

    def _backoff(self, attempt: int) -> float:
        return self.backoff * (2 ** attempt)

    def _once(self, method: str, url: str, data: bytes | None, headers: Mapping[str, str],
              raw: bool, fresh: bool = False) -> tuple[Any, Mapping[str, str]]:
        status, reason, got, payload = self.transport.send(method, url, data, headers, fresh)
        if status >= 300:
            try:
                decoded = json.loads(payload.decode("utf-8")) if payload else None
            except (ValueError, UnicodeDecodeError):
                decoded = None
            if 300 <= status < 400:  # the API never redirects: the base URL points elsewhere
                reason = f"HTTP {status} redirect to {got.get('Location')!r}: is {self.base_url!r} the host's root?"
            raise error_for(status, decoded, got, reason)
        if raw:
            return payload, got
        return (json.loads(payload.decode("utf-8")) if payload else None), got
