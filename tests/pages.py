"""An HTTP request as a browser without redirects makes it, for tests that talk to a real server (gunicorn,
a cluster's hosts): ``(status, text, the session cookie it set or "")``."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)


def page_request(url: str, *, cookie: str = "", form: dict | None = None,
                 body: dict | None = None) -> tuple[int, str, str]:
    """GET ``url``, or POST ``form`` (urlencoded) or ``body`` (JSON); redirects are answers, not followed."""
    data, headers = None, {"Cookie": cookie} if cookie else {}
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data is not None else "GET")
    try:
        resp = _OPENER.open(req, timeout=30)
    except urllib.error.HTTPError as exc:
        resp = exc
    with resp:
        text = resp.read().decode("utf-8", "replace")
        set_cookie = next((v.split(";")[0] for k, v in resp.headers.items()
                           if k.lower() == "set-cookie" and v.startswith("session=")), "")
        return resp.status, text, set_cookie
