"""Admin sessions in a cluster: signed in on one host, valid on every host; signed out on one, ended on all.

Two real gunicorn hosts that are peers of each other (shared secret key and
admin token, their own data roots). A session cookie is copied before the
logout, as a thief would keep it: after the logout no host accepts it.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

pytestmark = pytest.mark.slow


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)


def _request(url: str, *, cookie: str = "", form: dict | None = None, body: dict | None = None):
    """(status, text, the session cookie it set or '') without following redirects."""
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


def _sign_in(base: str, token: str) -> str:
    _, page, cookie = _request(base + "/login")
    csrf = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page).group(1)
    status, _, signed_in = _request(base + "/login", cookie=cookie, form={"csrf_token": csrf, "token": token})
    assert status == 302 and signed_in
    return signed_in


def _admin(base: str, cookie: str) -> int:
    return _request(base + "/admin/", cookie=cookie)[0]


@pytest.fixture
def two_peers(make_cluster):
    from engines import free_port

    ports = [free_port() for _ in range(2)]
    peers = ",".join(f"http://127.0.0.1:{p}" for p in ports)
    return make_cluster(2, ports=ports, env={"WIKIMEM_PEERS": peers})


def test_a_logout_on_one_host_ends_the_session_on_every_host(two_peers):
    a, b = two_peers.hosts
    cookie = _sign_in(a.url, two_peers.token)
    assert _admin(a.url, cookie) == 200 and _admin(b.url, cookie) == 200  # one session, every host
    _, page, updated = _request(a.url + "/admin/", cookie=cookie)  # the form's CSRF token joins the session
    cookie = updated or cookie
    csrf = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page).group(1)
    assert _request(a.url + "/logout", cookie=cookie, form={"csrf_token": csrf})[0] == 302
    assert _admin(a.url, cookie) == 302  # the kept cookie: sent to sign in again, on this host …
    assert _admin(b.url, cookie) == 302  # … and on its peer, which was told
    other = _sign_in(b.url, two_peers.token)  # another session is untouched by that logout
    assert _admin(a.url, other) == 200


@pytest.mark.parametrize("token", ["not a token", None, 7])
def test_a_logout_notice_that_no_peer_signed_is_refused(two_peers, token):
    a = two_peers.hosts[0]
    status, text, _ = _request(a.url + "/api/v1/peer/revoked", body={"token": token})
    assert status == 403 and json.loads(text)["error"]["code"] == "forbidden"
