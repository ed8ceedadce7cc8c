"""Owners: list, create, stats, delete, export, and their settings."""

from __future__ import annotations

from flask import Response, jsonify

from webapp.auth import require
from webapp.hosting import get_host
from webapp.params import (
    WRITE_FIELDS,
    json_body,
    query_int,
    query_str,
)
from webapp.peering import forward_for, listing_scope
from wikimem.errors import NotPermitted
from wikimem.host import EXPORT_TYPES, SETTINGS_FIELDS

from .blueprint import OWNER, act, bp, caller, layer_for, owner_for, with_etag


@bp.get("/owners")
def list_owners():
    within = listing_scope()
    host = get_host()
    rows, nxt = host.list_owners(prefix=query_str("prefix", limit=128) or "", within=within,
                                 limit=query_int("limit", 50, 1, 1000), cursor=query_str("cursor", limit=128),
                                 forward=forward_for(within))
    body = {"owners": [r.to_dict() for r in rows], "next": nxt}
    if host.peers is not None and host.last_unreachable:
        body["unreachable"] = host.last_unreachable  # a partial listing: these hosts did not answer
    return jsonify(body)


@bp.put(OWNER)
def create_owner(owner_id: str):
    principal = require("write", owner_id)
    quota_prefix = None if principal.has("admin") else principal.prefix_for(owner_id)  # admin tokens have no quota
    with act(owner_id, "create-owner") as a:
        owner, created = get_host().ensure_owner(owner_id, quota_prefix=quota_prefix)
        a.done(created=created)
    return with_etag(jsonify(owner=owner.stats().to_dict(), created=created), owner.head()), 201 if created else 200


@bp.get(OWNER)
def owner_stats(owner_id: str):
    stats = owner_for(owner_id, "read").stats(vectors=True)
    return with_etag(jsonify(stats.to_dict()), stats.head)


@bp.delete(OWNER)
def delete_owner(owner_id: str):
    require("admin", owner_id)
    with act(owner_id, "delete-owner"):
        get_host().delete_owner(owner_id)
    return jsonify(deleted=owner_id)


@bp.get(OWNER + "/export")
def export_owner(owner_id: str):
    require("read", owner_id)
    fmt = query_str("format") or "zip"
    layer = layer_for()
    if fmt == "bundle" and caller().character is not None:  # a bundle holds every layer's history
        raise NotPermitted("a token bound to a character exports its layers as zip or tar, not as a bundle")
    data = get_host().export_owner(owner_id, fmt=fmt, layers=(layer,), by=caller().name)
    if fmt == "bundle":  # the person's portable file: every layer, the whole history
        get_host().gate.note(caller(), "export-person", owner=owner_id, bytes=len(data))
    return Response(data, mimetype=EXPORT_TYPES[fmt],
                    headers={"Content-Disposition": f'attachment; filename="{get_host().export_name(owner_id, fmt)}"'})


@bp.get(OWNER + "/settings")
def get_settings(owner_id: str):
    return jsonify(settings=owner_for(owner_id, "read").settings().to_dict())


@bp.put(OWNER + "/settings")
def put_settings(owner_id: str):
    owner = owner_for(owner_id, "write")
    data = json_body(set(SETTINGS_FIELDS) | WRITE_FIELDS)
    changes = {k: data[k] for k in SETTINGS_FIELDS if k in data}
    with act(owner, "settings", data) as a:
        done = owner.put_settings(changes, ctx=a.ctx)
        a.done(done.commit)
    return jsonify(settings=done.value.to_dict(), commit=done.commit, replayed=bool(done.replayed))
