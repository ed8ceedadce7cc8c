"""Sign-in limits, logout, account removal and token revocation under a real gunicorn with 3 workers.

Requests go out several at a time so they land on different worker
processes (each wrong password holds a sync worker for a scrypt hash); the
access log's pid column shows which worker served what. What must hold is
what a single process cannot show: the limit counts the attempts of all
workers together, and an ended session or a revoked token is refused by
every worker at once. The host sits behind "a proxy" (``WIKIMEM_PROXIES=1``)
so each test can speak from its own client address.
"""

from __future__ import annotations

import http.client
import os
import re
import secrets
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import pytest
from gunicorn_env import access_pids, stop_process
from gunicorn_env import free_port as _free_port
from gunicorn_env import gunicorn_command as _gunicorn

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "deploy" / "gunicorn.conf.py"
ACCOUNT_LIMIT, ADDRESS_LIMIT = 3, 10
PARALLEL = 6


def _wikimem(*args: str, input: str | None = None, env: dict) -> str:
    done = subprocess.run([sys.executable, "-m", "wikimem", *args], capture_output=True, text=True,
                          input=input, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


class Host:
    def __init__(self, port: int, env: dict, log: Path):
        self.port, self.env, self.log = port, env, log

    def request(self, method: str, path: str, *, addr: str, cookie: str = "", form: dict | None = None,
                token: str | None = None) -> tuple[int, dict, str]:
        headers = {"X-Forwarded-For": addr}
        if cookie:
            headers["Cookie"] = cookie
        if token:
            headers["Authorization"] = f"Bearer {token}"
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read().decode()
        finally:
            conn.close()

    def form_session(self, addr: str, path: str = "/login", cookie: str = "") -> tuple[str, str]:
        """``(cookie, csrf token)`` of a page with a form."""
        status, headers, html = self.request("GET", path, addr=addr, cookie=cookie)
        assert status == 200, (status, html[:200])
        cookie = _cookie(headers) or cookie
        return cookie, re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)

    def sign_in(self, addr: str, **form) -> str:
        cookie, csrf = self.form_session(addr)
        status, headers, _ = self.request("POST", "/login", addr=addr, cookie=cookie,
                                          form={"csrf_token": csrf, "next": "/admin/", **form})
        assert status == 302 and headers["location"].endswith("/admin/"), status
        return _cookie(headers)

    def many(self, n: int, call) -> list:
        with ThreadPoolExecutor(PARALLEL) as pool:
            return list(pool.map(lambda _: call(), range(n)))

    def pids(self, needle: str) -> set[str]:
        return access_pids(self.log.read_text(errors="replace"), needle)


def _cookie(headers: dict) -> str:
    raw = headers.get("set-cookie", "")
    match = re.match(r"(session=[^;]*)", raw)
    return match.group(1) if match else ""


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("login-gunicorn")
    port, log = _free_port(), tmp / "gunicorn.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_DATA=str(tmp / "data"), WIKIMEM_BIND=f"127.0.0.1:{port}", WIKIMEM_WORKERS="3",
               WIKIMEM_ADMIN_TOKEN=secrets.token_urlsafe(24), WIKIMEM_SECRET_KEY=secrets.token_hex(32),
               WIKIMEM_TOKENS_FILE=str(tmp / "tokens.jsonl"), WIKIMEM_OPERATORS_FILE=str(tmp / "operators.jsonl"),
               WIKIMEM_LOGIN_LIMIT_ACCOUNT=f"{ACCOUNT_LIMIT}/hour", WIKIMEM_LOGIN_LIMIT_ADDRESS=f"{ADDRESS_LIMIT}/hour",
               WIKIMEM_PROXIES="1", HOME=str(tmp))
    for name in ("alice", "bob"):
        _wikimem("operator", "add", name, "--role", "operator", input=f"{name} password\n", env=env)
    with open(log, "wb") as out:
        # Sync workers (one thread: gunicorn turns a threaded sync worker into gthread) take one connection at
        # a time, so concurrent sign-ins must spread over the processes; threaded workers may all be served by
        # whichever process wakes first. What is tested, counters shared by processes, is the same.
        single = ["--worker-class", "sync", "--threads", "1"]
        proc = subprocess.Popen(_gunicorn() + ["-c", str(CONF), *single], cwd=REPO, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    h = Host(port, env, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"gunicorn exited:\n{log.read_text(errors='replace')}")
            try:
                if h.request("GET", "/healthz", addr="127.0.0.1")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"gunicorn did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.1)
        yield h
    finally:
        stop_process(proc)


def test_the_sign_in_limit_holds_across_worker_processes(host):
    addr = "203.0.113.7"
    cookie, csrf = host.form_session(addr)

    def attempt(name: str) -> int:
        form = {"csrf_token": csrf, "username": name, "password": "not the password"}
        return host.request("POST", "/login", addr=addr, cookie=cookie, form=form)[0]

    # Per account: twice the limit for alice at once; only the limit's worth gets to a password check
    # (401, or 503 when the host's one password-hashing slot stayed busy), the rest is refused (429).
    alice = host.many(2 * ACCOUNT_LIMIT, lambda: attempt("alice"))
    assert sum(code != 429 for code in alice) == ACCOUNT_LIMIT, alice
    assert set(alice) <= {401, 429, 503}
    # Per address: what is left of the address's limit, whatever names it tries.
    names = iter(f"guess-{i}" for i in range(100))
    guesses = host.many(ADDRESS_LIMIT, lambda: attempt(next(names)))
    assert sum(code != 429 for code in guesses) == ADDRESS_LIMIT - 2 * ACCOUNT_LIMIT, guesses
    # The attempts were spread over several workers: per-process counters would have let more through.
    assert len(host.pids('"POST /login')) >= 2
    # Another address and another account are not held up.
    assert host.sign_in("203.0.113.8", username="bob", password="bob password")


def test_logout_ends_the_session_in_every_worker(host):
    addr = "203.0.113.20"
    cookie = host.sign_in(addr, token=host.env["WIKIMEM_ADMIN_TOKEN"])
    cookie, csrf = host.form_session(addr, "/admin/", cookie)  # the page holds the logout form
    assert set(host.many(12, lambda: host.request("GET", "/admin/", addr=addr, cookie=cookie)[0])) == {200}
    status, _, _ = host.request("POST", "/logout", addr=addr, cookie=cookie, form={"csrf_token": csrf})
    assert status == 302
    after = host.many(12, lambda: host.request("GET", "/admin/", addr=addr, cookie=cookie))
    assert all(code == 302 and "/login" in headers["location"] for code, headers, _ in after)


def test_removing_an_operator_ends_their_session_in_every_worker(host):
    addr = "203.0.113.21"
    _wikimem("operator", "add", "carol", "--role", "reviewer", input="carol password\n", env=host.env)
    cookie = host.sign_in(addr, username="carol", password="carol password")
    assert set(host.many(12, lambda: host.request("GET", "/admin/", addr=addr, cookie=cookie)[0])) == {200}
    _wikimem("operator", "remove", "carol", env=host.env)
    assert set(host.many(12, lambda: host.request("GET", "/admin/", addr=addr, cookie=cookie)[0])) == {302}


def test_a_revoked_token_is_refused_by_every_worker_at_once(host):
    secret = _wikimem("token", "mint", "bot-7", "--scope", "read", env=host.env).strip()

    def version() -> int:
        return host.request("GET", "/api/v1/version", addr="203.0.113.30", token=secret)[0]

    assert set(host.many(24, version)) == {200}
    token_id = _wikimem("token", "list", env=host.env).splitlines()[-1].split()[0]
    _wikimem("token", "revoke", token_id, env=host.env)
    assert set(host.many(24, version)) == {401}
