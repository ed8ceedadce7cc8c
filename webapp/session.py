"""Operator sign-in for the admin UI (``/login``, ``/logout``, ``/``) and the check of every admin request.

Design notes: docs/explanation/access.md (``webapp/session.py``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit

from flask import Blueprint, Flask, current_app, flash, g, redirect, render_template, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
from flask_wtf.csrf import CSRFProtect
from werkzeug.security import check_password_hash, generate_password_hash

from wikimem.errors import StoreBusy
from wikimem.host.access import LEGACY_ROLE, Account, AuthState, OperatorsFile, check_name, check_role, role_at_least
from wikimem.locking import FileLock

from .auth import AuthError, Forbidden
from .peering import tell_revoked

__all__ = ["bp", "Operator", "current_operator", "require_operator", "require_role", "revoke",
           "init_app", "hash_password", "account_line", "check_account"]

bp = Blueprint("session", __name__)

ADMIN_SCOPE = "admin"
SESSION_LIFETIME = timedelta(hours=12)
MIN_PASSWORD = 8
CLOCK_SKEW = 300  # seconds a session may seem to come from the future (hosts' clocks differ a little)
# Seconds a sign-in waits for the host's one password-hashing slot. Short: a sync worker that
# waits serves nobody else, so a long wait would hand the API's workers to a flood of sign-ins.
PASSWORD_WAIT = 0.05

_STATE = "wikimem.authstate"
_OPERATORS = "wikimem.operators"
_LIMITER = "wikimem.login_limiter"
_HASH_SLOT = "wikimem.password_slot"
_NO_OPERATOR = object()


@dataclass(frozen=True)
class Operator:
    """Who is signed in, which owners they may see, and what they may do."""

    name: str
    owner_prefix: str = ""
    role: str = LEGACY_ROLE

    def may_see(self, owner_id: str) -> bool:
        return owner_id.startswith(self.owner_prefix)

    def may(self, role: str) -> bool:
        """Whether this operator's role includes ``role`` (reviewer < operator < admin)."""
        return role_at_least(self.role, role)


# -- passwords and the accounts file -------------------------------------------

# Checked against when the name is unknown, so a wrong name costs as long as a wrong password.
_DUMMY_HASH = generate_password_hash("not a password")


def hash_password(password: str) -> str:
    """The stored form of a password (werkzeug's salted scrypt); ValueError if it is too short."""
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        raise ValueError(f"a password needs at least {MIN_PASSWORD} characters")
    return generate_password_hash(password)


def account_line(name: str, password: str, owner_prefix: str = "", role: str = LEGACY_ROLE) -> str:
    """One line of the operator accounts file, with the password salted and hashed."""
    account = Account(check_name(name), hash_password(password), check_role(role), owner_prefix)
    return json.dumps(account.row(), ensure_ascii=False)


def _verify(account: Account | None, password: str) -> bool:
    ok = check_password_hash(account.password_hash if account else _DUMMY_HASH, password)
    return bool(account and ok)


def check_account(path: str | Path | None, name: str, password: str) -> Operator | None:
    """The operator if ``name`` and ``password`` match an account of the file, else None."""
    account = OperatorsFile(path).get(name)
    ok = _verify(account, password)  # hashes even when there is no such account: the same time either way
    return Operator(name, account.owner_prefix, account.role) if ok and account is not None else None


# -- the session ----------------------------------------------------------------

def _now() -> float:
    return time.time()


def _lifetime() -> float:
    return current_app.permanent_session_lifetime.total_seconds()


def _fingerprint(*parts: str) -> str:
    """An HMAC of a credential as stored, under the app's secret key (never reversible to the hash)."""
    key = str(current_app.secret_key).encode("utf-8")
    return hmac.new(key, "\0".join(parts).encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def _credential(kind: str, cid: str) -> tuple[str, Operator] | None:
    """``(fingerprint, operator)`` of a credential as the files hold it now, or None if it is gone."""
    if kind == "token":
        from .auth import token_file

        entry = token_file().find(cid)
        if entry is None or ADMIN_SCOPE not in entry.principal.scopes or entry.principal.character:
            return None
        p = entry.principal
        fp = _fingerprint("token", entry.sha256, p.name, ",".join(sorted(p.scopes)), p.tenant)
        return fp, Operator(p.name, p.owner_prefix, "admin")
    if kind == "account":
        account = current_app.extensions[_OPERATORS].get(cid)
        if account is None:
            return None
        fp = _fingerprint("account", account.name, account.password_hash, account.role, account.owner_prefix)
        return fp, Operator(account.name, account.owner_prefix, account.role)
    return None


def _session_record(data) -> tuple[str, float, str, str, str] | None:
    if not isinstance(data, dict):
        return None
    sid, iat, kind, cid, fp = (data.get(k) for k in ("sid", "iat", "kind", "cid", "fp"))
    if not (isinstance(sid, str) and isinstance(iat, (int, float)) and not isinstance(iat, bool)
            and isinstance(kind, str) and isinstance(cid, str) and isinstance(fp, str)):
        return None
    return sid, float(iat), kind, cid, fp


def _validate(data) -> Operator | None:
    record = _session_record(data)
    if record is None:
        return None
    sid, iat, kind, cid, fp = record
    now = _now()
    if not (iat - CLOCK_SKEW <= now < iat + _lifetime()):
        return None
    found = _credential(kind, cid)
    if found is None or not hmac.compare_digest(found[0], fp):
        return None
    if current_app.extensions[_STATE].is_revoked(sid):
        return None
    return found[1]


def current_operator() -> Operator | None:
    """The signed-in operator of this request, or None (checked once per request: lifetime, credential, logout)."""
    cached = g.get("checked_operator", _NO_OPERATOR)
    if cached is _NO_OPERATOR:
        cached = g.checked_operator = _validate(session.get("op"))
    return cached


def _start_session(kind: str, cid: str) -> None:
    credential = _credential(kind, cid)
    assert credential is not None  # _attempt found it just before
    fp, _operator = credential
    # A fresh session on sign-in: nothing from before (e.g. a planted cookie) survives.
    session.clear()
    session.permanent = True
    session["op"] = {"sid": secrets.token_urlsafe(18), "iat": int(_now()), "kind": kind, "cid": cid, "fp": fp}
    g.pop("checked_operator", None)


def revoke(sid: str, until: float, *, tell_peers: bool = True) -> None:
    """End session ``sid``; the record is kept until ``until`` (when it would end anyway).

    The one place that records a logout: on this host, and (``tell_peers``)
    on every peer of a cluster, each with its own data root.
    """
    current_app.extensions[_STATE].revoke(sid, until)
    if tell_peers:
        tell_revoked(sid, until)


def _end_session() -> None:
    record = _session_record(session.get("op"))
    if record is not None:
        sid, iat = record[0], record[1]
        revoke(sid, iat + _lifetime())
    session.clear()
    g.checked_operator = None


def require_operator():
    """``before_request`` of the admin pages: sign in first, then come back."""
    operator = current_operator()
    if operator is None:
        if "op" in session:  # a session that ended: drop the cookie, say why
            session.clear()
            flash("Your session has ended; please sign in again.", "info")
        return redirect(url_for("session.login", next=_here()))
    g.operator = operator
    return None


def require_role(role: str) -> Operator:
    """The signed-in operator, if their role includes ``role``; else 401/403 (for views that change things)."""
    check_role(role)
    operator = current_operator()
    if operator is None:
        raise AuthError("sign in first")
    if not operator.may(role):
        raise Forbidden(f"this needs the {role} role; {operator.name} is a {operator.role}")
    return operator


def _here() -> str:
    path = request.full_path
    return path[:-1] if path.endswith("?") else path


def safe_next(target: str | None) -> str:
    """Only a path on this site may be the redirect after sign-in (no open redirect)."""
    default = url_for("admin.owners")
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return default
    return target


# -- the views ------------------------------------------------------------------

@dataclass
class _Outcome:
    """What a sign-in attempt came to: a session to start, or an error to show."""

    kind: str = ""
    cid: str = ""
    error: str | None = None
    status: int = 200
    retry_after: int | None = None


def _sign_in_with_token(token: str) -> _Outcome:
    from .auth import authenticate

    principal = authenticate(token)
    if principal is None:
        return _Outcome(error="That token is not valid.", status=401)
    if ADMIN_SCOPE not in set(principal.scopes):
        return _Outcome(error="That token has no admin scope; the admin UI needs one.", status=403)
    if principal.character:
        return _Outcome(error="That token speaks as a character; the admin UI needs an admin token without one.",
                        status=403)
    return _Outcome("token", principal.token_id)


def _sign_in_with_password(name: str, password: str) -> _Outcome:
    account = current_app.extensions[_OPERATORS].get(name)
    try:
        # One hash at a time on this host: a flood of sign-ins takes at most one core from the API.
        with current_app.extensions[_HASH_SLOT].hold():
            ok = _verify(account, password)
    except StoreBusy:
        return _Outcome(error="Another sign-in is being checked; try again in a moment.", status=503,
                        retry_after=1)
    if not ok:
        return _Outcome(error="Wrong name or password.", status=401)
    return _Outcome("account", account.name)


def _attempt(form) -> _Outcome:
    token = (form.get("token") or "").strip()
    name, password = (form.get("username") or "").strip(), form.get("password") or ""
    if not token and not (name and password):
        return _Outcome(error="Enter an admin token, or an operator name and password.", status=400)
    wait = current_app.extensions[_LIMITER].attempt(request.remote_addr or "", None if token else name)
    if wait is not None:
        return _Outcome(error=f"Too many sign-in attempts; try again in {wait} s.", status=429, retry_after=wait)
    return _sign_in_with_token(token) if token else _sign_in_with_password(name, password)


def _login_page(target: str, outcome: _Outcome | None = None, username: str = ""):
    page = render_template("login.html", next=target, error=outcome.error if outcome else None,
                           accounts=bool(current_app.extensions[_OPERATORS]), username=username)
    response = current_app.make_response((page, outcome.status if outcome else 200))
    if outcome and outcome.retry_after:
        response.headers["Retry-After"] = str(outcome.retry_after)
    return response


@bp.get("/")
def index():
    return redirect(url_for("admin.owners"))


@bp.route("/login", methods=["GET", "POST"])
def login():
    target = safe_next(request.values.get("next"))
    if request.method == "GET":
        if current_operator() is not None:
            return redirect(target)
        if "op" in session:  # a session that ended: forget it
            session.pop("op")
        return _login_page(target)
    outcome = _attempt(request.form)
    if outcome.error is not None:
        # The name stays in its field; a token or password is never sent back.
        return _login_page(target, outcome, username=(request.form.get("username") or "").strip()[:200])
    _start_session(outcome.kind, outcome.cid)
    return redirect(target)


@bp.post("/logout")
def logout():
    _end_session()
    flash("Signed out.", "info")
    return redirect(url_for("session.login"))


class SessionInterface(SecureCookieSessionInterface):
    """Flask's signed cookie, expiring with the session's absolute lifetime, ``Secure`` over TLS.

    Behind a proxy, TLS shows as ``request.is_secure`` once the app trusts
    ``X-Forwarded-Proto`` (werkzeug's ProxyFix).
    """

    def get_cookie_secure(self, app: Flask) -> bool:
        if super().get_cookie_secure(app):
            return True
        try:
            return request.is_secure
        except RuntimeError:  # outside a request
            return False

    def get_expiration_time(self, app: Flask, session) -> datetime | None:
        record = _session_record(session.get("op"))
        if record is None:
            return super().get_expiration_time(app, session)
        return datetime.fromtimestamp(record[1], timezone.utc) + app.permanent_session_lifetime


@bp.app_context_processor
def _inject_operator():
    """``operator`` and ``can(role)`` for templates: a page shows an action only to roles that may take it
    (the view still checks with :func:`require_role`; hiding is a courtesy, not the gate)."""
    operator = current_operator()
    return {"operator": operator, "can": lambda role: operator is not None and operator.may(role)}



def init_app(app: Flask, *, exempt=()) -> None:
    """Set up sessions, sign-in limits and CSRF for the UI; ``exempt`` lists blueprints CSRF skips (the API)."""
    from .ratelimit import make_login_limiter

    app.config["SESSION_COOKIE_HTTPONLY"] = True
    if not app.config.get("SESSION_COOKIE_SAMESITE"):
        app.config["SESSION_COOKIE_SAMESITE"] = "Lax"
    # A session lasts this long after sign-in, however often it is used; Flask's
    # own default of 31 days is too long for an admin.
    if app.config.get("PERMANENT_SESSION_LIFETIME") == Flask.default_config["PERMANENT_SESSION_LIFETIME"]:
        app.config["PERMANENT_SESSION_LIFETIME"] = SESSION_LIFETIME
    # Re-issuing the cookie on every response would slide its expiry forever.
    app.config["SESSION_REFRESH_EACH_REQUEST"] = False
    app.session_interface = SessionInterface()
    root = Path(app.config["DATA_ROOT"])
    state = app.extensions.setdefault(_STATE, AuthState(root))  # (webapp.auth made it first: one per app)
    app.extensions[_OPERATORS] = OperatorsFile(app.config.get("OPERATORS_FILE"))
    app.extensions[_LIMITER] = make_login_limiter(app.config, state)
    app.extensions[_HASH_SLOT] = FileLock(root / "auth" / "password.lock", timeout=PASSWORD_WAIT)
    csrf = CSRFProtect(app)
    for blueprint in exempt:
        csrf.exempt(blueprint)
