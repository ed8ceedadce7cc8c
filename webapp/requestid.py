"""Request ids: one per request, echoed in the response, every JSON error body, every log line, and its jobs.

The id is the ``X-Request-Id`` header when it comes from a trusted proxy
(``WIKIMEM_PROXIES`` > 0: nginx sets it, see ``deploy/nginx.conf``) and
holds 1–128 characters of ``[A-Za-z0-9._:@/+=-]``; otherwise — no proxy
trusted, no header, or a value outside that set — a new random one
(32 hex digits). It is kept in Flask's ``g`` (:func:`current_request_id`)
and in the WSGI environ (``wikimem.request_id``, for what runs outside the
app context: :class:`webapp.headers.AbortAsJson`), sent back as
``X-Request-Id``, added to every JSON error body by :mod:`webapp.errors`,
to every log line by :class:`webapp.logs.RequestIdFilter` (gunicorn's
access line reads the response header), and to the params of the jobs the
request submits (memorize with ``Prefer: respond-async``, bulk rollback).
"""

from __future__ import annotations

import re
import secrets

from flask import Flask, current_app, g, has_app_context, has_request_context, request

__all__ = ["HEADER", "ENVIRON_KEY", "current_request_id", "init_app", "valid_request_id"]

HEADER = "X-Request-Id"
ENVIRON_KEY = "wikimem.request_id"
_VALID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")


def valid_request_id(value: str | None) -> str | None:
    """``value`` if it may be used as a request id, else None."""
    return value if isinstance(value, str) and _VALID.fullmatch(value) else None


def current_request_id() -> str | None:
    """The id of the request being served, or None outside a request."""
    if has_app_context():
        rid = g.get("request_id")
        if rid:
            return rid
    if has_request_context():
        return request.environ.get(ENVIRON_KEY)
    return None


def _assign() -> None:
    trusted = int(current_app.config.get("PROXIES") or 0) > 0
    rid = valid_request_id(request.headers.get(HEADER)) if trusted else None
    rid = rid or secrets.token_hex(16)
    g.request_id = request.environ[ENVIRON_KEY] = rid


def _echo(response):
    rid = current_request_id()
    if rid:
        response.headers[HEADER] = rid
    return response


def init_app(app: Flask) -> None:
    """Give every request an id first (before any other ``before_request``), and echo it last."""
    app.before_request_funcs.setdefault(None, []).insert(0, _assign)
    app.after_request(_echo)
