"""Operator sign-in for the admin UI: ``/login``, ``/logout`` and ``/``.

Operators sign in with a token that has the ``admin`` scope (see
:mod:`webapp.auth`), or with an operator account: a name and a password
checked against the hashed accounts file ``OPERATORS_FILE``
(``WIKIMEM_OPERATORS_FILE``), JSON Lines, one account a line::

    {"name": "alice", "password_hash": "scrypt:32768:8:1$…", "owner_prefix": "user:"}

``password_hash`` is werkzeug's ``generate_password_hash`` (salted scrypt);
:func:`account_line` makes such a line. Passwords are never stored.

The signed session cookie remembers who signed in (name and owner-id
prefix), never the token or password itself. Every form is CSRF-protected (Flask-WTF's
``csrf_token`` field); the bearer-token JSON API is exempt, since a browser
never sends it credentials on its own.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import timedelta
from functools import wraps
from urllib.parse import urlsplit

from flask import Blueprint, Flask, current_app, flash, g, redirect, render_template, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
from flask_wtf.csrf import CSRFProtect
from werkzeug.security import check_password_hash, generate_password_hash

__all__ = ["bp", "Operator", "current_operator", "require_operator", "security_headers", "init_app",
           "account_line", "check_account"]

log = logging.getLogger(__name__)

bp = Blueprint("session", __name__)

ADMIN_SCOPE = "admin"
SESSION_LIFETIME = timedelta(hours=12)


@dataclass(frozen=True)
class Operator:
    """Who is signed in, and which owners they may see."""

    name: str
    owner_prefix: str = ""

    def may_see(self, owner_id: str) -> bool:
        return owner_id.startswith(self.owner_prefix)


def current_operator() -> Operator | None:
    """The signed-in operator of this request, or None."""
    data = session.get("operator")
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    return Operator(data["name"], data.get("prefix") or "")


def require_operator():
    """``before_request`` of the admin pages: sign in first, then come back."""
    operator = current_operator()
    if operator is None:
        return redirect(url_for("session.login", next=_here()))
    g.operator = operator
    return None


def operator_required(view):
    """Decorator form of :func:`require_operator` for single views."""
    @wraps(view)
    def wrapped(*args, **kwargs):
        return require_operator() or view(*args, **kwargs)
    return wrapped


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


def _authenticate(token: str):
    from .auth import authenticate

    return authenticate(token)


# Checked against when the name is unknown, so a wrong name costs as long as a wrong password.
_DUMMY_HASH = generate_password_hash("not a password")


def account_line(name: str, password: str, owner_prefix: str = "") -> str:
    """One line of the operator accounts file, with the password salted and hashed."""
    if not name or not password:
        raise ValueError("an operator account needs a name and a password")
    return json.dumps({"name": name, "password_hash": generate_password_hash(password),
                       "owner_prefix": owner_prefix}, ensure_ascii=False)


def _accounts(path: str | None) -> dict[str, dict]:
    """The accounts of the file by name; a malformed line is skipped (and logged), not fatal."""
    if not path:
        return {}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except FileNotFoundError:
        log.warning("operator accounts file %s does not exist", path)
        return {}
    out: dict[str, dict] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            row = json.loads(line)
            if not (isinstance(row.get("name"), str) and isinstance(row.get("password_hash"), str)):
                raise ValueError("needs name and password_hash")
        except (ValueError, AttributeError) as exc:
            log.warning("%s:%d: skipped a malformed operator account (%s)", path, number, exc)
            continue
        out[row["name"]] = row
    return out


def check_account(path: str | None, name: str, password: str) -> Operator | None:
    """The operator if ``name`` and ``password`` match an account of the file, else None."""
    row = _accounts(path).get(name)
    ok = check_password_hash(row["password_hash"] if row else _DUMMY_HASH, password)
    if not (row and ok):
        return None
    prefix = row.get("owner_prefix") if isinstance(row.get("owner_prefix"), str) else ""
    return Operator(name, prefix)


def _operator_from_form(form) -> tuple[Operator | None, str | None, int]:
    """``(operator, error, status)`` from the sign-in form: a token, or a name and password."""
    token = (form.get("token") or "").strip()
    username, password = (form.get("username") or "").strip(), form.get("password") or ""
    if token:
        principal = _authenticate(token)
        if principal is None:
            return None, "That token is not valid.", 401
        if ADMIN_SCOPE not in set(principal.scopes):
            return None, "That token has no admin scope; the admin UI needs one.", 403
        return Operator(principal.name, principal.owner_prefix or ""), None, 200
    if username and password:
        operator = check_account(current_app.config.get("OPERATORS_FILE"), username, password)
        if operator is None:
            return None, "Wrong name or password.", 401
        return operator, None, 200
    return None, "Enter an admin token, or an operator name and password.", 400


@bp.get("/")
def index():
    return redirect(url_for("admin.owners"))


@bp.route("/login", methods=["GET", "POST"])
def login():
    target = safe_next(request.values.get("next"))
    if request.method == "GET":
        if current_operator() is not None:
            return redirect(target)
        return render_template("login.html", next=target, error=None, accounts=_has_accounts())
    operator, error, status = _operator_from_form(request.form)
    if operator is None:
        return render_template("login.html", next=target, error=error, accounts=_has_accounts()), status
    # A fresh session on sign-in: nothing from before (e.g. a planted cookie) survives.
    session.clear()
    session.permanent = True
    session["operator"] = {"name": operator.name, "prefix": operator.owner_prefix}
    return redirect(target)


def _has_accounts() -> bool:
    return bool(current_app.config.get("OPERATORS_FILE"))


@bp.post("/logout")
def logout():
    session.clear()
    flash("Signed out.", "info")
    return redirect(url_for("session.login"))


class TLSAwareSessionInterface(SecureCookieSessionInterface):
    """Marks the session cookie ``Secure`` when configured, or when the request came over TLS.

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


@bp.app_context_processor
def _inject_operator():
    return {"operator": current_operator()}


def security_headers(response):
    """``after_request`` of every UI page."""
    # Defence in depth behind escaping: no inline script can run, no framing.
    response.headers.setdefault(
        "Content-Security-Policy",
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    )
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("Cache-Control", "no-store")
    return response


bp.after_request(security_headers)


def init_app(app: Flask, *, exempt=()) -> None:
    """Set up sessions and CSRF for the UI; ``exempt`` lists blueprints CSRF skips (the API)."""
    app.config["SESSION_COOKIE_HTTPONLY"] = True
    if not app.config.get("SESSION_COOKIE_SAMESITE"):
        app.config["SESSION_COOKIE_SAMESITE"] = "Lax"
    # The signed cookie is only accepted this long after sign-in (Flask checks
    # its age); Flask's own default of 31 days is too long for an admin.
    if app.config.get("PERMANENT_SESSION_LIFETIME") == Flask.default_config["PERMANENT_SESSION_LIFETIME"]:
        app.config["PERMANENT_SESSION_LIFETIME"] = SESSION_LIFETIME
    app.session_interface = TLSAwareSessionInterface()
    csrf = CSRFProtect(app)
    for blueprint in exempt:
        csrf.exempt(blueprint)
