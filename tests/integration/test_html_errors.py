"""Error pages outside ``/api/``: the status the error has, its headers, never a 500 of its own (issue 24, item 21).

The HTML error page used to come back as a ``(body, status, headers)``
tuple that the handler then set headers on: every page with a header to
add (401, 405, 429, 503, 507) turned into a 500 with two tracebacks.
"""

from __future__ import annotations

import errno
import logging
import re
import sqlite3

import pytest
from apiworld import ADMIN

from webapp import create_app


@pytest.fixture
def app(tmp_path):
    return create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN})


def csrf(html: str) -> str:
    return re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html).group(1)


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("POST", "/healthz", "GET"),
    ("PUT", "/admin/", "GET"),
    ("DELETE", "/login", "GET"),
    ("POST", "/favicon.ico", "GET"),
    ("PATCH", "/readyz", "GET"),
])
def test_a_wrong_method_is_405_with_allow_not_500(app, caplog, method, path, allowed):
    with caplog.at_level(logging.ERROR):
        r = app.test_client().open(path, method=method)
    assert r.status_code == 405, r.get_data(as_text=True)[:300]
    assert allowed in r.headers["Allow"]
    if path in ("/healthz", "/readyz"):  # the probes answer machines: JSON, like the API
        assert r.mimetype == "application/json" and r.get_json()["error"]["code"]
    else:
        assert r.mimetype == "text/html" and "405" in r.get_data(as_text=True)
    assert not [rec for rec in caplog.records if rec.exc_info], "an error page logged a traceback"


def test_an_unknown_page_is_an_html_404(app):
    r = app.test_client().get("/no-such-page")
    assert r.status_code == 404 and r.mimetype == "text/html"


def test_a_busy_sign_in_is_503_with_retry_after(app, monkeypatch):
    from wikimem.errors import StoreBusy

    client = app.test_client()
    token = csrf(client.get("/login").get_data(as_text=True))
    limiter = app.extensions["wikimem.login_limiter"]
    monkeypatch.setattr(limiter, "attempt", lambda *a, **k: (_ for _ in ()).throw(StoreBusy("auth state busy")))
    r = client.post("/login", data={"csrf_token": token, "token": ADMIN})
    assert r.status_code == 503 and r.headers["Retry-After"]
    assert r.mimetype == "text/html"


@pytest.mark.parametrize("full", [
    OSError(errno.ENOSPC, "No space left on device"),
    sqlite3.OperationalError("database or disk is full"),
])
def test_sign_in_on_a_full_disk_is_507_not_500(app, monkeypatch, caplog, full):
    client = app.test_client()
    token = csrf(client.get("/login").get_data(as_text=True))

    def disk_full(*args, **kwargs):
        raise full

    # The sign-in limiter records every attempt in the data root's SQLite: the first write a sign-in makes.
    monkeypatch.setattr(app.extensions["wikimem.login_limiter"], "attempt", disk_full)
    with caplog.at_level(logging.ERROR):
        r = client.post("/login", data={"csrf_token": token, "token": ADMIN})
    assert r.status_code == 507, r.get_data(as_text=True)[:300]
    assert r.headers["Retry-After"] and r.mimetype == "text/html"
    assert "disk" in r.get_data(as_text=True)
    assert not [rec for rec in caplog.records if rec.exc_info]


def test_an_admin_page_for_a_signed_out_browser_still_redirects_to_sign_in(app):
    r = app.test_client().get("/admin/")
    assert r.status_code == 302 and "/login" in r.headers["Location"]
