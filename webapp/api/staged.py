"""Runs on probation (SPEC §10): the staged runs across owners, one owner's, review, approve, discard, hold.

Across owners (``/staged…``) a token sees the owners its prefix reaches;
approving, discarding and holding need the ``admin`` scope, as a bulk
rollback does. A write is staged with ``"staged": true`` in its body (or by
the host's policy, see ``WIKIMEM_STAGED_*``); a retrieve reads the staged
runs with ``"include_staged": true``.
"""

from __future__ import annotations

from flask import jsonify

from webapp.auth import require
from webapp.hosting import get_host
from webapp.params import json_body, opt_bool, query_str
from webapp.requestid import current_request_id
from wikimem.host import BadRequest

from .blueprint import OWNER, act, bp, owner_for

_BULK = {"owners", "except_owners", "force", "preview"}


def _owners(data: dict, key: str) -> list[str] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and len(v) <= 128 for v in value) \
            or len(value) > 100_000:
        raise BadRequest(f"{key} must be a list of owner ids")
    return value


@bp.get("/staged")
def staged_runs():
    principal = require("read")
    found = get_host().probation.runs(within=principal.within, state=query_str("state", limit=16) or "staged",
                                      run=query_str("run"), actor=query_str("actor"),
                                      owner_prefix=query_str("owner_prefix", limit=128) or "")
    return jsonify(found)


@bp.get("/staged/<run>")
def staged_run(run: str):
    principal = require("read")
    owners = get_host().probation.owners_of(run, within=principal.within, state=query_str("state", limit=16))
    return jsonify(run=run, owners=owners)


def _bulk(run: str, action: str):
    principal = require("admin")
    data = json_body(_BULK if action == "approve" else _BULK - {"force", "preview"}, optional_body=True)
    owners, skip = _owners(data, "owners"), _owners(data, "except_owners")
    probation = get_host().probation
    if opt_bool(data, "preview", False):
        return jsonify(probation.preview(run, within=principal.within, owners=owners, except_owners=skip))
    force = opt_bool(data, "force", False)
    with act(None, f"bulk-{action}", run=run, force=force or None) as a:
        job = probation.start(action, run, within=principal.within, force=force, actor=a.ctx.actor,
                              owners=owners, except_owners=skip, idempotency_key=a.ctx.idempotency_key,
                              tenant=a.tenant, request_id=current_request_id())
        a.done(job=job["id"])
    response = jsonify(job)
    response.status_code = 202
    response.headers["Location"] = f"/api/v1/jobs/{job['id']}"
    return response


@bp.post("/staged/<run>/approve")
def approve_staged_run(run: str):
    return _bulk(run, "approve")


@bp.post("/staged/<run>/discard")
def discard_staged_run(run: str):
    return _bulk(run, "discard")


@bp.post("/staged/<run>/hold")
def hold_staged_run(run: str):
    principal = require("admin")
    data = json_body({"held", "owners"}, optional_body=True)
    held = opt_bool(data, "held", True)
    with act(None, "hold", run=run, held=held) as a:
        count = get_host().probation.hold(run, held, within=principal.within, owners=_owners(data, "owners"))
        a.done(owners=count)
    return jsonify(run=run, held=held, owners=count)


@bp.get(OWNER + "/staged")
def owner_staged(owner_id: str):
    return jsonify(runs=[r.to_dict() for r in owner_for(owner_id, "read").staged_runs()])


@bp.get(OWNER + "/staged/<run>")
def staged_review(owner_id: str, run: str):
    return jsonify(owner_for(owner_id, "read").staged_review(run).to_dict())


@bp.post(OWNER + "/staged/<run>/approve")
def approve_staged(owner_id: str, run: str):
    owner = owner_for(owner_id, "admin")
    data = json_body({"force", "edits", "actor"}, optional_body=True)
    edits = data.get("edits") or []
    if not isinstance(edits, list) or not all(isinstance(e, dict) for e in edits):
        raise BadRequest("edits must be a list of {file, name, content} or {date, time, before, content}")
    force = opt_bool(data, "force", False)
    with act(owner, "approve", data, run=run, force=force or None) as a:
        done = owner.approve_staged(run, force=force, edits=edits, ctx=a.ctx)
        a.done(done.commit)
    return jsonify(result=done.value, commit=done.commit, replayed=bool(done.replayed))


@bp.post(OWNER + "/staged/<run>/discard")
def discard_staged(owner_id: str, run: str):
    owner = owner_for(owner_id, "admin")
    data = json_body({"actor"}, optional_body=True)
    with act(owner, "discard", data, run=run) as a:
        done = owner.discard_staged(run, ctx=a.ctx)
        a.done(done.commit)
    return jsonify(result=done.value, commit=done.commit, replayed=bool(done.replayed))

