"""The API blueprint (``/api/v1``) and what every route module shares: the owner of a route, a write's context.

Every view is the same three steps: read the request (:mod:`webapp.params`,
auth), make one call into the host or one :class:`~wikimem.host.Owner`,
answer JSON. Errors are raised, never caught here: :mod:`webapp.errors` maps
them.
"""

from __future__ import annotations

from dataclasses import replace

from flask import Blueprint, Response, jsonify

from webapp.auth import current_principal, require
from webapp.hosting import get_host
from webapp.params import opt_bool, write_context
from wikimem.context import WriteContext
from wikimem.host import Owner, validate_owner_id

__all__ = ["bp", "OWNER", "owner_for", "context_of", "include_staged", "committed", "with_etag", "STAGED"]

STAGED = {"staged"}  # the body field of a write that may go on probation

bp = Blueprint("api", __name__, url_prefix="/api/v1")

OWNER = "/owners/<owner_id>"


def owner_for(owner_id: str, scope: str) -> Owner:
    """The owner of the route, after the token's scope and prefix are checked."""
    require(scope, owner_id)
    validate_owner_id(owner_id)
    return get_host().owner(owner_id)


def context_of(data: dict, *, create_only: bool = False) -> WriteContext:
    """The write's context; the actor defaults to the token's name (``create_only``: ``If-None-Match: *``).

    ``"staged": true`` in the body, or a token the host's policy stages (``WIKIMEM_STAGED_TOKENS``), puts the
    write on probation (onto its run's staged branch)."""
    principal = current_principal()
    ctx = write_context(data, default_actor=principal.name, create_only=create_only)
    staged = opt_bool(data, "staged", False) or get_host().probation.policy.stages_token(principal.name)
    return replace(ctx, staged=True) if staged else ctx


def include_staged(data: dict) -> bool:
    """Whether a retrieve reads the staged runs too: the body's ``include_staged``, else the token's default
    (``WIKIMEM_STAGED_READ_TOKENS``)."""
    return opt_bool(data, "include_staged", get_host().probation.policy.reads_staged(current_principal().name))


def committed(done, key: str) -> Response:
    """A write's answer: its value under ``key``, the commit, and whether it was a replay."""
    return jsonify({key: done.value, "commit": done.commit, "replayed": bool(done.replayed)})


def with_etag(response: Response, tag: str | None) -> Response:
    if tag:
        response.headers["ETag"] = f'"{tag}"'
    return response
