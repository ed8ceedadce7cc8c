"""The one place where errors become HTTP responses.

Design notes: docs/explanation/operations.md (``webapp/errors.py``).
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import sqlite3
import time

from flask import Flask, Response, jsonify, render_template, request
from markupsafe import escape
from werkzeug.exceptions import HTTPException

from wikimem.errors import (
    BadRequest,
    Conflict,
    DamagedFolder,
    InvalidValue,
    LLMNotConfigured,
    NotFound,
    NotPermitted,
    PreconditionFailed,
    QuotaExceeded,
    RemoteError,
    RemoteMoved,
    RemoteUnavailable,
    StoreBusy,
    TooLarge,
    ToolCallError,
    WikimemError,
)
from wikimem.llm import LLMError

from .auth import AuthError, Forbidden
from .requestid import current_request_id

__all__ = ["init_app", "error_status", "error_body"]

log = logging.getLogger(__name__)

_TABLE: list[tuple[type[BaseException], int]] = [
    (AuthError, 401),
    (Forbidden, 403),
    (NotPermitted, 403),
    (BadRequest, 400),
    (ToolCallError, 400),
    (NotFound, 404),
    (Conflict, 409),
    (PreconditionFailed, 412),
    (LLMNotConfigured, 501),
    (LLMError, 502),
    (StoreBusy, 503),
    (RemoteUnavailable, 503),
    (RemoteMoved, 409),
    (RemoteError, 502),
    (TooLarge, 413),
    (DamagedFolder, 500),
    (InvalidValue, 422),
    (ValueError, 422),  # a value the library refuses without a code of its own
]

# Seconds a client is told to wait before retrying a busy store or a full disk.
RETRY_AFTER = {503: "1", 507: "30"}

_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "too_large", 415: "unsupported_media_type",
               429: "rate_limited"}


# The heading of an HTML error page whose exception is the library's (werkzeug's carry their own name).
_TITLES = {401: "Sign in", 403: "Forbidden", 404: "Not found", 409: "Conflict", 412: "Changed meanwhile",
           429: "Too many requests", 503: "Busy", 507: "Disk full"}


def _disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(exc, sqlite3.OperationalError) and "full" in str(exc)


def error_status(exc: BaseException) -> int:
    """The HTTP status of an exception (500 if it is not a known one)."""
    if isinstance(exc, HTTPException):
        return exc.code or 500
    if isinstance(exc, QuotaExceeded):
        return 429 if exc.retry_after else 403
    if _disk_full(exc):
        return 507
    for cls, status in _TABLE:
        if isinstance(exc, cls):
            return status
    return 500


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def error_body(exc: BaseException, status: int) -> dict:
    """The JSON error document of an exception."""
    if status == 500 and isinstance(exc, DamagedFolder):  # one owner's folder: say which file and how to repair
        code, message = exc.code, str(exc)
    elif status == 500:
        code, message = "internal", "internal server error"
    elif status == 507:
        code, message = "storage_full", "the disk of the data root is full: nothing was written; try again later"
    elif isinstance(exc, HTTPException):
        code, message = _HTTP_CODES.get(status, "http_error"), exc.description or exc.name
        if status == 413:
            message = f"request body larger than {request.max_content_length} bytes"
    elif status == 422:
        code = (getattr(exc, "code", None) if isinstance(exc, WikimemError) else None) or "invalid_value"
        message = str(exc)
    else:
        code, message = getattr(exc, "code", "error"), str(exc)
    err: dict = {"code": code, "message": message, "request_id": current_request_id()}
    if isinstance(exc, Conflict):
        err["conflicts"] = [_plain(c) for c in exc.conflicts]
    if isinstance(exc, PreconditionFailed):
        err["current"] = exc.current
        if exc.item is not None:
            err["item"] = exc.item
    return {"error": err}


JSON_PATHS = ("/healthz", "/readyz", "/mcp", "/metrics")  # besides /api/: what programs call, never a browser


def _wants_json() -> bool:
    return request.path.startswith("/api/") or request.path in JSON_PATHS


# A body refused as too large is still read (and dropped) up to this many times the limit, for at most this long:
# a server that closes with unread bytes sends a reset, and a client still sending gets a broken pipe, not the 413.
DRAIN_FACTOR, DRAIN_SECONDS, DRAIN_CHUNK = 4, 2.0, 64 * 1024


def _drain_refused_body() -> None:
    """Read and drop the declared body of a request refused for its size, within the bounds above (what is left
    is the server's to skip or close on: gunicorn skips it before a next request)."""
    length, limit = request.content_length, request.max_content_length
    stream = request.environ.get("wsgi.input")
    if length is None or limit is None or stream is None or length > DRAIN_FACTOR * limit:
        return
    deadline = time.monotonic() + DRAIN_SECONDS
    left = length
    try:
        while left > 0 and time.monotonic() < deadline:
            chunk = stream.read(min(DRAIN_CHUNK, left))
            if not chunk:
                return
            left -= len(chunk)
    except (OSError, ValueError):  # the client went away
        return


def _handle(exc: BaseException):
    status = error_status(exc)
    if status == 413:
        _drain_refused_body()
    if isinstance(exc, DamagedFolder):
        log.error("damaged owner folder on %s %s: %s", request.method, request.path, exc)
    elif status == 500:
        log.exception("unhandled error on %s %s", request.method, request.path)
    body = error_body(exc, status)
    if _wants_json():
        response = jsonify(body)
        response.status_code = status
    else:
        response = _html(status, body["error"]["message"], exc)
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="wikimem"'
    elif isinstance(exc, RemoteError) and (retry := getattr(exc, "retry_after", None)):  # the remote down, or moved
        response.headers["Retry-After"] = str(int(retry))
    elif status in RETRY_AFTER:
        response.headers["Retry-After"] = RETRY_AFTER[status]
    elif isinstance(exc, QuotaExceeded) and exc.retry_after:
        response.headers["Retry-After"] = str(exc.retry_after)
    elif status == 405 and isinstance(exc, HTTPException):
        for key, value in exc.get_headers():
            if key.lower() == "allow":
                response.headers["Allow"] = value
    return response


def _html(status: int, message: str, exc: BaseException) -> Response:
    """The HTML error page as a response object (the caller adds headers such as ``Retry-After`` to it)."""
    title = exc.name if isinstance(exc, HTTPException) else _TITLES.get(status, "Error")
    try:
        page = render_template("error.html", status=status, title=title, message=message)
    except Exception:  # TemplateNotFound or a broken template: the error page must not fail in turn
        page = f"<!doctype html><title>{status}</title><h1>{status} {escape(title)}</h1><p>{escape(message)}</p>"
    return Response(page, status=status, content_type="text/html; charset=utf-8")


def init_app(app: Flask) -> None:
    """Route every exception through :func:`_handle`."""
    app.register_error_handler(Exception, _handle)
