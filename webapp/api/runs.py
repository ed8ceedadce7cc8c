"""The API's cross-owner routes: ``GET /api/v1/runs`` and ``POST /api/v1/bulk/rollback`` (SPEC §7, second wave).

A token sees the runs of the owners its prefix reaches, and a bulk
rollback acts on those only.
"""

from __future__ import annotations

from flask import jsonify

from webapp.auth import require
from webapp.hosting import get_host
from webapp.params import (
    json_body,
    offset_cursor,
    opt_bool,
    opt_int,
    opt_str,
    query_int,
    query_str,
)
from webapp.peering import forward_for, listing_scope
from webapp.requestid import current_request_id
from wikimem.host import RunQuery

from .blueprint import act, bp

__all__ = ["SELECTION_FIELDS"]

SELECTION_FIELDS = ("run", "actor", "source_conv", "action", "since", "until", "owner_prefix", "character")


def query_of(values: dict) -> RunQuery:
    """The run search of request values (query parameters or a JSON body): checked once, by the host."""
    return RunQuery.parse(**{k: values.get(k) for k in SELECTION_FIELDS})


@bp.get("/runs")
def runs():
    """Runs across owners: in a cluster, across every host (a peer asked by another answers for its own only)."""
    within = listing_scope()
    query = query_of({k: query_str(k) for k in SELECTION_FIELDS})
    limit, cursor = query_int("limit", 50, 1, 1000), query_str("cursor", limit=1000)
    args = {"within": within, "limit": limit, "cursor": cursor, "forward": forward_for(within)}
    if query_str("by") == "owner":
        return jsonify(get_host().fleet.runs_per_owner(query, **args).to_dict())
    return jsonify(get_host().fleet.find_runs(query, **args, by_owner=query_str("totals") == "owners").to_dict())


@bp.post("/bulk/rollback")
def bulk_rollback():
    principal = require("admin")
    data = json_body({*SELECTION_FIELDS, "force", "preview", "limit", "cursor"})
    query = query_of({k: opt_str(data, k, limit=200) for k in SELECTION_FIELDS})
    if opt_bool(data, "preview", False):
        limit = opt_int(data, "limit", minimum=1, maximum=1000) or 100
        offset = offset_cursor(opt_str(data, "cursor", limit=12))
        preview = get_host().fleet.preview_bulk_rollback(query, within=principal.within)
        return jsonify(preview.to_dict(limit=limit, offset=offset))
    force = opt_bool(data, "force", False)
    selection = {f"target_{k}": v for k, v in query.to_dict().items() if v}
    with act(None, "bulk-rollback", target=selection, force=force or None) as a:
        job = get_host().fleet.start_bulk_rollback(query, within=principal.within, force=force,
                                                   actor=a.ctx.actor, idempotency_key=a.ctx.idempotency_key,
                                                   request_id=current_request_id(), tenant=a.tenant)
        a.done(job=job["id"])
    response = jsonify(job)
    response.status_code = 202
    response.headers["Location"] = f"/api/v1/jobs/{job['id']}"
    return response
