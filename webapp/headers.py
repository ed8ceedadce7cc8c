"""Response headers every page carries, and what a worker stopped mid-request answers.

- :func:`security_headers` (``after_request`` of the whole app): every HTML
  page — admin, sign-in, and every error page, a 404 anywhere included —
  gets the content security policy and its companions; every response gets
  ``nosniff``.
- :class:`AbortAsJson` (WSGI middleware): gunicorn's sync worker stops a
  request that outlives ``timeout`` by raising ``SystemExit`` inside it; an
  API client then gets the JSON error shape (503, ``Retry-After``) instead
  of gunicorn's HTML page. The write it was doing never committed — or, if
  it had, the client's retry with its Idempotency-Key replays it.
"""

from __future__ import annotations

import json
import sys

__all__ = ["security_headers", "AbortAsJson"]

_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def security_headers(response):
    """Defence in depth behind escaping: no inline script can run, no framing, nothing sniffed."""
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    if response.mimetype == "text/html":
        response.headers.setdefault("Content-Security-Policy", _CSP)
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("Cache-Control", "no-store")
    return response


class AbortAsJson:
    """Answer an API request that the worker is being stopped in with a JSON 503."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        try:
            return self.app(environ, start_response)
        except SystemExit:
            if not environ.get("PATH_INFO", "").startswith("/api/"):
                raise
            rid = environ.get("wikimem.request_id")  # (webapp.requestid's ENVIRON_KEY; set before the view ran)
            body = json.dumps({"error": {
                "code": "timeout",
                "message": "the request ran past the worker timeout and was stopped; retry it "
                           "(with the same Idempotency-Key for a write)", "request_id": rid}}).encode()
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body))), ("Retry-After", "1")]
            if rid:
                headers.append(("X-Request-Id", rid))
            start_response("503 Service Unavailable", headers, sys.exc_info())
            return [body]
