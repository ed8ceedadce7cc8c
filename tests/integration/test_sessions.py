"""Admin UI sessions that can end: logout, account removal, token revocation, absolute lifetime, roles, limits.

The real app (Flask's test client, CSRF on) over a real data root, tokens
file and operator accounts file. Two apps over one data root stand for two
gunicorn workers; two apps over two data roots with one secret key and the
same files stand for two hosts of a cluster. ``test_login_gunicorn.py``
checks the same against real worker processes.
"""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path

import pytest

from webapp import create_app
from webapp.hosting import get_host
from webapp.session import account_line, current_operator, require_role
from wikimem.context import WriteContext
from wikimem.host.access.operators import remove_account, update_account
from wikimem.host.access.tokens import append_token, mint_token, revoke_tokens

ADMIN = "sessions-test-admin-token-0123456789"
OWNER = "user:xnne"
PASSWORDS = {"alice": "alice password 1", "rita": "rita password 1", "adam": "adam password 1"}
ROLES = {"alice": "operator", "rita": "reviewer", "adam": "admin"}


@pytest.fixture(scope="module")
def accounts_text() -> str:
    """The accounts file's lines (hashing is slow: once per module)."""
    return "".join(account_line(name, PASSWORDS[name], "", ROLES[name]) + "\n" for name in PASSWORDS)


class UI:
    """One app (a worker) and helpers to drive its sign-in form."""

    def __init__(self, app):
        self.app = app
        self.client = app.test_client()

    def csrf(self, path: str = "/login") -> str:
        html = self.client.get(path).get_data(as_text=True)
        return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)

    def login(self, addr: str = "127.0.0.1", **form):
        data = {"csrf_token": self.csrf(), "next": "/admin/", **form}
        return self.client.post("/login", data=data, environ_base={"REMOTE_ADDR": addr})

    def password(self, name: str, password: str | None = None, addr: str = "127.0.0.1"):
        return self.login(addr, username=name, password=PASSWORDS.get(name, "x") if password is None else password)

    def token(self, token: str, addr: str = "127.0.0.1"):
        return self.login(addr, token=token)

    def logout(self):
        return self.client.post("/logout", data={"csrf_token": self.csrf("/admin/")})

    def signed_in(self, client=None) -> bool:
        response = (client or self.client).get("/admin/")
        if response.status_code == 302:
            assert "/login" in response.headers["Location"]
            return False
        assert response.status_code == 200
        return True

    def cookie(self) -> str:
        return self.client.get_cookie("session").value

    def with_cookie(self, value: str):
        """A new browser holding a copy of a cookie (a stolen one, say)."""
        other = self.app.test_client()
        other.set_cookie("session", value)
        return other


@pytest.fixture
def files(tmp_path, accounts_text):
    tokens = tmp_path / "tokens.jsonl"
    accounts = tmp_path / "operators.jsonl"
    accounts.write_text(accounts_text, encoding="utf-8")
    return {"TOKENS_FILE": str(tokens), "OPERATORS_FILE": str(accounts)}


def make_app(tmp_path: Path, files: dict, root: str = "data", key: str | None = None, **config):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / root), "ADMIN_TOKEN": ADMIN,
                      "SECRET_KEY": key or "k" * 32 + root, **files, **config})
    return UI(app)


@pytest.fixture
def ui(tmp_path, files) -> UI:
    ui = make_app(tmp_path, files)
    with ui.app.app_context():
        owner, _ = get_host().ensure_owner(OWNER)
        owner.vstore.add("prefs", "sea", "likes the sea", owner=OWNER, ctx=WriteContext(actor="bot"))
        owner.vstore.add("prefs", "sea", "hates the sea", owner=OWNER, ctx=WriteContext(actor="bot", run="run_bad"))
    return ui


def mint_admin(files, name="ops-admin") -> tuple[str, dict]:
    secret, entry = mint_token(name, ["admin"])
    append_token(files["TOKENS_FILE"], entry)
    return secret, entry


# -- sessions end -----------------------------------------------------------------

def test_logout_ends_the_session_even_for_a_copy_of_the_cookie(ui):
    assert ui.token(ADMIN).status_code == 302
    assert ui.signed_in()
    stolen = ui.cookie()
    assert ui.logout().status_code == 302
    assert not ui.signed_in()
    assert not ui.signed_in(ui.with_cookie(stolen))


def test_logout_in_one_worker_ends_the_session_in_another(tmp_path, files, ui):
    other = make_app(tmp_path, files)  # same data root and key: a second worker process
    assert ui.token(ADMIN).status_code == 302
    cookie = ui.cookie()
    assert ui.signed_in(other.with_cookie(cookie))
    ui.logout()
    assert not ui.signed_in(other.with_cookie(cookie))


def test_removing_an_operator_ends_their_session(ui, files):
    assert ui.password("alice").status_code == 302
    assert ui.signed_in()
    assert remove_account(files["OPERATORS_FILE"], "alice")
    assert not ui.signed_in()
    assert ui.password("alice").status_code == 401


@pytest.mark.parametrize("change", [{"role": "reviewer"}, {"password_hash": "new"}])
def test_changing_an_operators_password_or_role_ends_their_session(tmp_path, ui, files, change):
    from webapp.session import hash_password

    if "password_hash" in change:
        change = {"password_hash": hash_password("a new password")}
    assert ui.password("alice").status_code == 302
    rita = make_app(tmp_path, files)
    assert rita.password("rita").status_code == 302
    update_account(files["OPERATORS_FILE"], "alice", **change)
    assert not ui.signed_in()
    assert rita.signed_in()  # nobody else's session moved


def test_revoking_the_token_used_to_sign_in_ends_the_session(ui, files):
    secret, entry = mint_admin(files)
    assert ui.token(secret).status_code == 302
    assert ui.signed_in()
    assert [e.principal.name for e in revoke_tokens(files["TOKENS_FILE"], "ops-admin")] == ["ops-admin"]
    assert not ui.signed_in()
    assert ui.token(secret).status_code == 401


def test_a_revoked_token_stops_working_on_the_api_at_once(ui, files):
    secret, entry = mint_token("worker", ["read"])
    append_token(files["TOKENS_FILE"], entry)
    headers = {"Authorization": f"Bearer {secret}"}
    assert ui.client.get("/api/v1/version", headers=headers).status_code == 200
    revoke_tokens(files["TOKENS_FILE"], entry["sha256"][:8])
    assert ui.client.get("/api/v1/version", headers=headers).status_code == 401


def test_taking_the_admin_scope_from_a_token_ends_its_session(ui, files):
    import json

    secret, entry = mint_admin(files)
    assert ui.token(secret).status_code == 302
    path = Path(files["TOKENS_FILE"])
    path.write_text(json.dumps({**entry, "scopes": ["read", "write"]}) + "\n", encoding="utf-8")
    assert not ui.signed_in()


def test_a_session_has_an_absolute_lifetime_however_often_it_is_used(ui, monkeypatch):
    assert ui.token(ADMIN).status_code == 302
    start = time.time()
    for hours in (1, 6, 11.9):  # used now and then: each use would once have renewed it
        monkeypatch.setattr(time, "time", lambda h=hours: start + h * 3600)
        assert ui.signed_in()
    monkeypatch.setattr(time, "time", lambda: start + 12 * 3600 + 5)
    assert not ui.signed_in()


def _expires_in(response) -> float:
    from email.utils import parsedate_to_datetime

    expires = re.search(r"Expires=([^;]+)", response.headers["Set-Cookie"]).group(1)
    return parsedate_to_datetime(expires).timestamp() - time.time()


def test_the_cookie_expires_when_the_session_does_not_later(ui):
    assert 12 * 3600 - 60 < _expires_in(ui.token(ADMIN)) <= 12 * 3600 + 1
    with ui.client.session_transaction() as sess:  # the sign-in was 6 hours ago
        sess["op"] = {**sess["op"], "iat": sess["op"]["iat"] - 6 * 3600}
    # The first admin page stores the CSRF token in the session: the cookie is written again,
    # with the expiry of the sign-in, not 12 hours from now.
    assert 6 * 3600 - 60 < _expires_in(ui.client.get("/admin/")) <= 6 * 3600 + 1


@pytest.mark.parametrize("path", ["/healthz", "/api/v1/version", "/static/admin.css", "/admin/", "/login"])
def test_responses_do_not_reissue_the_session_cookie(ui, path):
    ui.token(ADMIN)
    ui.client.get("/admin/")  # the first page stores the CSRF token: one Set-Cookie, then none
    response = ui.client.get(path, headers={"Authorization": f"Bearer {ADMIN}"})
    assert response.status_code in (200, 302)
    assert "Set-Cookie" not in response.headers


def test_a_session_signed_on_one_host_is_valid_on_another_and_ends_there_too(tmp_path, files):
    key = secrets.token_hex(32)
    a = make_app(tmp_path, files, root="host-a", key=key)
    b = make_app(tmp_path, files, root="host-b", key=key)  # its own data root, shared key and files
    assert a.password("alice").status_code == 302
    assert b.signed_in(b.with_cookie(a.cookie()))
    remove_account(files["OPERATORS_FILE"], "alice")
    assert not b.signed_in(b.with_cookie(a.cookie()))


def test_a_cookie_signed_with_another_key_is_not_a_session(tmp_path, files):
    a = make_app(tmp_path, files, root="host-a", key=secrets.token_hex(32))
    b = make_app(tmp_path, files, root="host-b", key=secrets.token_hex(32))
    a.token(ADMIN)
    assert not b.signed_in(b.with_cookie(a.cookie()))


def test_a_cookie_of_the_old_format_signs_nobody_in(ui):
    with ui.client.session_transaction() as sess:
        sess["operator"] = {"name": "mallory", "prefix": ""}
        sess.permanent = True
    assert not ui.signed_in()


# -- roles ------------------------------------------------------------------------

def head(ui) -> str:
    with ui.app.app_context():
        return get_host().owner(OWNER).vstore.head()


@pytest.mark.parametrize("who, allowed", [("rita", False), ("alice", True), ("adam", True), (ADMIN, True)])
def test_only_operators_and_admins_may_revert_reviewers_may_look(ui, who, allowed):
    (ui.token(who) if who == ADMIN else ui.password(who))
    commit = head(ui)
    page = f"/admin/owners/{OWNER}/commits/{commit}/revert"
    assert ui.client.get(page).status_code == 200  # everyone may see what it would change
    response = ui.client.post(page, data={"csrf_token": ui.csrf(page)})
    if allowed:
        assert response.status_code == 302 and head(ui) != commit
    else:
        assert response.status_code == 403 and head(ui) == commit
        assert "operator role" in response.get_data(as_text=True)


@pytest.mark.parametrize("who, role", [("rita", "reviewer"), ("alice", "operator"), ("adam", "admin"),
                                       (ADMIN, "admin")])
def test_require_role_knows_each_sign_in(ui, who, role):
    from webapp.auth import Forbidden

    (ui.token(who) if who == ADMIN else ui.password(who))
    with ui.app.test_request_context("/admin/", headers={"Cookie": f"session={ui.cookie()}"}):
        assert current_operator().role == role
        for needed in ("reviewer", "operator", "admin"):
            if current_operator().may(needed):
                assert require_role(needed).name
            else:
                with pytest.raises(Forbidden):
                    require_role(needed)


def test_a_token_without_admin_scope_cannot_sign_in(ui, files):
    secret, entry = mint_token("writer", ["write"])
    append_token(files["TOKENS_FILE"], entry)
    assert ui.token(secret).status_code == 403
    assert not ui.signed_in()


# -- the sign-in form -------------------------------------------------------------

def test_a_wrong_password_keeps_the_name_and_never_echoes_the_password(ui):
    response = ui.password("alice", "not her password")
    html = response.get_data(as_text=True)
    assert response.status_code == 401
    assert 'id="username" name="username" autocomplete="username" value="alice"' in html
    assert "not her password" not in html


def test_the_name_is_escaped_when_it_comes_back(ui):
    html = ui.password('"><script>x()</script>', "whatever pw").get_data(as_text=True)
    assert "<script>x()" not in html and "&lt;script&gt;" in html


# -- rate limits ------------------------------------------------------------------

@pytest.fixture
def hashes(monkeypatch):
    """How many passwords the app hashed (to show refusals come before any hashing)."""
    import webapp.session as s

    calls = []
    real = s.check_password_hash
    monkeypatch.setattr(s, "check_password_hash", lambda h, p: calls.append(1) or real(h, p))
    return calls


def test_sign_in_is_limited_per_address_before_any_password_is_hashed(tmp_path, files, hashes):
    ui = make_app(tmp_path, files, LOGIN_LIMIT_ADDRESS="3/minute", LOGIN_LIMIT_ACCOUNT="100/minute")
    assert [ui.password("alice", "wrong pw!").status_code for _ in range(3)] == [401] * 3
    refused = ui.password("alice")  # even the right password, now
    assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "Too many sign-in attempts" in refused.get_data(as_text=True)
    assert ui.token(ADMIN).status_code == 429  # tokens count against the address too
    assert len(hashes) == 3
    assert ui.password("alice", addr="10.0.0.2").status_code == 302  # another address is not held up


def test_sign_in_is_limited_per_account_whatever_the_address(tmp_path, files, hashes):
    ui = make_app(tmp_path, files, LOGIN_LIMIT_ADDRESS="100/minute", LOGIN_LIMIT_ACCOUNT="2/minute")
    codes = [ui.password("alice", "wrong pw!", addr=f"10.0.0.{i}").status_code for i in range(4)]
    assert codes == [401, 401, 429, 429]
    assert ui.password("ALICE", "wrong pw!", addr="10.0.1.1").status_code == 429  # names are case-folded
    assert len(hashes) == 2
    assert ui.password("rita").status_code == 302  # other accounts are not held up


def test_the_limit_counts_the_attempts_of_every_worker_together(tmp_path, files, hashes):
    limits = {"LOGIN_LIMIT_ADDRESS": "4/minute", "LOGIN_LIMIT_ACCOUNT": "100/minute"}
    workers = [make_app(tmp_path, files, **limits) for _ in range(3)]  # one data root
    codes = [workers[i % 3].password("alice", "wrong pw!").status_code for i in range(9)]
    assert codes == [401] * 4 + [429] * 5


def test_per_process_counters_can_be_asked_for(tmp_path, files):
    limits = {"LOGIN_LIMIT_ADDRESS": "1/minute", "LOGIN_LIMIT_STORAGE": "memory://"}
    a, b = make_app(tmp_path, files, **limits), make_app(tmp_path, files, **limits)
    assert [a.token("x").status_code, b.token("x").status_code, a.token("x").status_code] == [401, 401, 429]


def test_bad_limit_settings_refuse_to_start(tmp_path, files):
    from webapp.config import ConfigError

    with pytest.raises(ConfigError, match="LOGIN_LIMIT_ACCOUNT"):
        make_app(tmp_path, files, LOGIN_LIMIT_ACCOUNT="5 per fortnight")
    with pytest.raises(ConfigError, match="LOGIN_LIMIT_STORAGE"):
        make_app(tmp_path, files, LOGIN_LIMIT_STORAGE="nosuch://x")


def test_one_password_hash_at_a_time_on_a_host(ui):
    from wikimem.locking import FileLock

    slot = FileLock(Path(ui.app.config["DATA_ROOT"]) / "auth" / "password.lock", timeout=None)
    with slot.hold():  # another worker is hashing a password
        busy = ui.password("alice")
    assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
    assert 'value="alice"' in busy.get_data(as_text=True)
    assert ui.password("alice").status_code == 302
