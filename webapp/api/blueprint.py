"""The API blueprint (``/api/v1``) and what every route module shares: the owner of a route, a write's context.

Every view is the same three steps: read the request (:mod:`webapp.params`,
auth), make one call into the host or one :class:`~wikimem.host.Owner`,
answer JSON. Errors are raised, never caught here: :mod:`webapp.errors` maps
them.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from webapp import get_host
from webapp.auth import current_principal, require
from webapp.params import write_context
from wikimem.context import WriteContext
from wikimem.host import Owner, validate_owner_id

__all__ = ["bp", "OWNER", "owner_for", "context_of", "committed", "with_etag"]

bp = Blueprint("api", __name__, url_prefix="/api/v1")

OWNER = "/owners/<owner_id>"


def owner_for(owner_id: str, scope: str) -> Owner:
    """The owner of the route, after the token's scope and prefix are checked."""
    require(scope, owner_id)
    validate_owner_id(owner_id)
    return get_host().owner(owner_id)


def context_of(data: dict, *, create_only: bool = False) -> WriteContext:
    """The write's context; the actor defaults to the token's name (``create_only``: ``If-None-Match: *``)."""
    return write_context(data, default_actor=current_principal().name, create_only=create_only)


def committed(done, key: str) -> Response:
    """A write's answer: its value under ``key``, the commit, and whether it was a replay."""
    return jsonify({key: done.value, "commit": done.commit, "replayed": bool(done.replayed)})


def with_etag(response: Response, tag: str | None) -> Response:
    if tag:
        response.headers["ETag"] = f'"{tag}"'
    return response
