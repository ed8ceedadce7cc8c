"""The API blueprint (``/api/v1``) and what every route module shares: the owner of a route, a write's context.

Every view is the same three steps: read the request (:mod:`webapp.params`,
auth), make one call into the host or one :class:`~wikimem.host.Owner`,
answer JSON. Errors are raised, never caught here: :mod:`webapp.errors` maps
them.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from webapp.auth import current_principal, require
from webapp.hosting import get_host
from webapp.params import ask_of, character_asked, opt_bool
from wikimem.host import Act, Caller, Owner, validate_owner_id

__all__ = ["bp", "OWNER", "owner_for", "act", "include_staged", "committed", "with_etag", "STAGED", "caller",
           "layer_for", "recall_as"]

# Body fields of a write that may go on probation, and that may address a character's layer.
STAGED = {"staged", "character"}

bp = Blueprint("api", __name__, url_prefix="/api/v1")

OWNER = "/owners/<owner_id>"


def owner_for(owner_id: str, scope: str) -> Owner:
    """The owner of the route, after the token's scope and prefix are checked."""
    require(scope, owner_id)
    validate_owner_id(owner_id)
    return get_host().owner(owner_id)


def caller() -> Caller:
    """Who sends this request, as the host's gate knows callers (the token's name, prefix and character)."""
    principal = current_principal()
    return Caller.token(principal.name, principal.tenant, principal.character)


def layer_for(data: dict | None = None) -> str | None:
    """The character's layer a read addresses (``character``; None: the shared layer), judged by the gate."""
    return get_host().gate.layer(caller(), character_asked(data))


def recall_as(data: dict) -> str | None:
    """The character a retrieve recalls as: ``character``, else the one the token is bound to."""
    return get_host().gate.recalls_as(caller(), character_asked(data))


def act(owner: Owner | str | None, action: str, data: dict | None = None, *, create_only: bool = False,
        layered: bool = False, target: dict[str, Any] | None = None, **named: Any) -> Act:
    """The change this request asks for, through the host's gate: its write context (the actor defaults to the
    token's name; ``"staged": true``, or a token the host's policy stages, puts it on probation) and its audit
    event (``create_only``: the route takes ``If-None-Match: *``; ``layered``: a memory write, whose ``character``
    addresses that character's layer; ``target`` and ``named``: what the event names).
    Check the token's scope first (owner_for)."""
    ask = ask_of(data or {}, create_only=create_only, layered=layered)
    return get_host().gate.act(caller(), action, owner, ask, **(target or {}), **named)


def include_staged(data: dict) -> bool:
    """Whether a retrieve reads the staged runs too: the body's ``include_staged``, else the token's default
    (``WIKIMEM_STAGED_READ_TOKENS``)."""
    return opt_bool(data, "include_staged", get_host().probation.policy.reads_staged(current_principal().name))


def committed(done, key: str, ctx=None) -> Response:
    """A write's answer: its value under ``key``, the commit, whether it was a replay, and (``ctx`` of a write put
    on probation: a character's shared-layer proposal, a staged token, ``staged: true``) ``staged: true``."""
    body = {key: done.value, "commit": done.commit, "replayed": bool(done.replayed)}
    if ctx is not None and ctx.staged:
        body["staged"] = True
    return jsonify(body)


def with_etag(response: Response, tag: str | None) -> Response:
    if tag:
        response.headers["ETag"] = f'"{tag}"'
    return response
