"""What every caller may ask of the API itself: its version and document, jobs, replication, peer notices."""

from __future__ import annotations

from flask import Response, jsonify

import wikimem
from webapp.auth import Forbidden, current_principal, require
from webapp.hosting import get_host
from webapp.params import json_body, query_int, query_str
from webapp.peering import revocation_from
from webapp.session import revoke
from wikimem.errors import NotFound
from wikimem.host import JobQuery
from wikimem.host.fleet import job_visible

from .blueprint import bp


@bp.get("/version")
def version():
    current_principal()
    return jsonify(version=wikimem.__version__, api=1)


@bp.get("/openapi.json")
def openapi():
    from webapp.openapi import document

    return jsonify(document())


@bp.post("/peer/revoked")
def peer_revoked():
    """A peer's logout notice (signed with the shared secret key): end that session here too."""
    found = revocation_from(json_body({"token"}).get("token"))
    if found is None:
        raise Forbidden("not a logout notice from a peer of this cluster")
    revoke(*found, tell_peers=False)
    return Response(status=204)


@bp.get("/replication")
def replication():
    require("admin")
    return jsonify(get_host().replication_status())


@bp.get("/jobs")
def list_jobs():
    """Jobs newest first: a token sees the jobs of the owners its prefix reaches; bulk jobs need the admin scope."""
    principal = require("read")
    query = JobQuery.parse(**{k: query_str(k) for k in ("kind", "state", "owner_prefix", "since")})
    page = get_host().fleet.list_jobs(query, within=principal.within, admin=principal.has("admin"),
                                      limit=query_int("limit", 50, 1, 1000), cursor=query_str("cursor", limit=200))
    return jsonify(page.to_dict())


@bp.get("/jobs/<job_id>")
def get_job(job_id: str):
    principal = require("read")
    job = get_host().job(job_id)
    owner_id = job.params.get("owner")
    if owner_id and job.kind != "bulk-rollback":
        require("read", owner_id)
    elif "persons" in job.params:  # a group turn: a token that reaches every person of it
        if not job_visible(job.params, principal.within, kind=job.kind):
            raise NotFound(f"no job {job_id!r}")
    elif not job_visible(job.params, require("admin").within):  # a bulk job: admins of its owners
        raise NotFound(f"no job {job_id!r}")
    return jsonify(job.to_dict())


@bp.post("/jobs/<job_id>/cancel")
def cancel_job(job_id: str):
    """Cancel a queued job (409 once a step started): a write token for its owner's jobs, admin for bulk jobs."""
    principal = require("write")
    job = get_host().fleet.cancel_job(job_id, within=principal.within, admin=principal.has("admin"))
    return jsonify(job.to_dict())
