"""Bearer-token auth of the JSON API, and what the admin UI uses to check a token.

Design notes: docs/explanation/access.md (``webapp/auth.py``).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from flask import current_app, g, request

from wikimem.host.access import AuthState, Principal, TokenFile

__all__ = ["Principal", "authenticate", "require", "allowed", "current_principal", "AuthError", "Forbidden", "init_app",
           "token_file", "auth_state", "bearer_principal"]

log = logging.getLogger(__name__)

_EXT = "wikimem.tokens"
_STATE = "wikimem.authstate"
_API_LIMITER = "wikimem.api_limiter"


class AuthError(Exception):
    """401: no credentials, or credentials that are not valid."""

    code = "unauthorized"


class Forbidden(Exception):
    """403: valid credentials without the right scope or owner prefix."""

    code = "forbidden"


def init_app(app) -> None:
    from .hosting import METRICS_KEY as METRICS
    from .ratelimit import make_api_limiter

    app.extensions[_EXT] = TokenFile(app.config.get("TOKENS_FILE"), app.config.get("ADMIN_TOKEN"))
    state = app.extensions.setdefault(_STATE, AuthState(Path(app.config["DATA_ROOT"])))
    app.extensions[_API_LIMITER] = make_api_limiter(app.config, state, app.extensions.get(METRICS))


def token_file() -> TokenFile:
    """The tokens of this app (the file and ``WIKIMEM_ADMIN_TOKEN``)."""
    return current_app.extensions[_EXT]


def auth_state() -> AuthState:
    """The host's shared sign-in state (logouts, rate counters, tokens' last use)."""
    return current_app.extensions[_STATE]


def authenticate(token: str | None) -> Principal | None:
    """The principal a token secret belongs to, or None (needs an app context)."""
    return token_file().authenticate(token)


def _bearer() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def bearer_principal() -> Principal | None:
    """The principal of this request's bearer token if it is valid, else None (nothing counted, nothing raised)."""
    token = _bearer()
    return authenticate(token) if token is not None else None


def current_principal() -> Principal:
    """The authenticated principal of this request (401 if there is none; 429 when its token is over its rate)."""
    principal = getattr(g, "principal", None)
    if principal is None:
        token = _bearer()
        if token is None:
            raise AuthError("missing bearer token: send Authorization: Bearer <token>")
        entry = token_file().identify(token)
        if entry is None:
            raise AuthError("invalid token")
        if entry.expired():
            raise AuthError(f"this token expired at {entry.expires}; ask for a new one "
                            "(wikimem token mint, or wikimem token rotate before it expires)")
        principal = g.principal = entry.principal
        _touch(principal)
        current_app.extensions[_API_LIMITER].check(principal)
    return principal


def _touch(principal: Principal) -> None:
    """Record the token's use (cheap: at most one small write a minute per token and worker)."""
    if not principal.token_id:
        return
    try:
        auth_state().touch_token(principal.token_id)
    except sqlite3.Error as exc:  # a full or locked disk must not refuse the request
        log.warning("cannot record the use of token %s: %s", principal.token_id, exc)


def require(scope: str, owner_id: str | None = None) -> Principal:
    """The principal, if it holds ``scope`` (and may reach ``owner_id``); else 401/403."""
    return allowed(current_principal(), scope, owner_id)


def allowed(principal: Principal, scope: str, owner_id: str | None = None) -> Principal:
    """``principal``, if it holds ``scope`` and may reach ``owner_id``; else :class:`Forbidden` (403).

    The one check of a token's scope and owner prefix, for the API and the MCP tools alike.
    """
    if not principal.has(scope):
        raise Forbidden(f"this token lacks the {scope!r} scope")
    if owner_id is not None and not principal.may_access(owner_id):
        raise Forbidden(f"this token may only reach owners whose id starts with "
                        f"{' or '.join(repr(p) for p in principal.owner_prefixes)}")
    return principal
