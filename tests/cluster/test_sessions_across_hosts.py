"""Admin sessions in a cluster: signed in on one host, valid on every host; signed out on one, ended on all.

Two real gunicorn hosts that are peers of each other (shared secret key and
admin token, their own data roots). A session cookie is copied before the
logout, as a thief would keep it: after the logout no host accepts it.
"""

from __future__ import annotations

import json
import re

import pytest
from pages import page_request

pytestmark = pytest.mark.slow


def _sign_in(base: str, token: str) -> str:
    _, page, cookie = page_request(base + "/login")
    csrf = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page).group(1)
    status, _, signed_in = page_request(base + "/login", cookie=cookie, form={"csrf_token": csrf, "token": token})
    assert status == 302 and signed_in
    return signed_in


def _admin(base: str, cookie: str) -> int:
    return page_request(base + "/admin/", cookie=cookie)[0]


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
    _, page, updated = page_request(a.url + "/admin/", cookie=cookie)  # the form's CSRF token joins the session
    cookie = updated or cookie
    csrf = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page).group(1)
    assert page_request(a.url + "/logout", cookie=cookie, form={"csrf_token": csrf})[0] == 302
    assert _admin(a.url, cookie) == 302  # the kept cookie: sent to sign in again, on this host …
    assert _admin(b.url, cookie) == 302  # … and on its peer, which was told
    other = _sign_in(b.url, two_peers.token)  # another session is untouched by that logout
    assert _admin(a.url, other) == 200


@pytest.mark.parametrize("token", ["not a token", None, 7])
def test_a_logout_notice_that_no_peer_signed_is_refused(two_peers, token):
    a = two_peers.hosts[0]
    status, text, _ = page_request(a.url + "/api/v1/peer/revoked", body={"token": token})
    assert status == 403 and json.loads(text)["error"]["code"] == "forbidden"
