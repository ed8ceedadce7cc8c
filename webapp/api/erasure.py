"""Erasure: erase an owner everywhere, forget one item or diary entry with its history, and the receipts.

Both run as jobs (``202`` + ``Location: /api/v1/jobs/<id>``); the job's result
is the receipt. Admin scope.
"""

from __future__ import annotations

from flask import jsonify

from webapp.auth import require
from webapp.hosting import get_host
from webapp.params import json_body, opt_int, opt_str, query_str, req_str
from wikimem.errors import InvalidValue
from wikimem.host import validate_owner_id

from .blueprint import OWNER, act, bp


def _accepted(job):
    response = jsonify(job.to_dict())
    response.status_code = 202
    response.headers["Location"] = f"{bp.url_prefix}/jobs/{job.id}"
    return response


@bp.post(OWNER + "/erase")
def erase_owner(owner_id: str):
    """Erase the owner everywhere; the body repeats its id (``confirm``), so that no slip erases someone."""
    principal = require("admin", owner_id)
    validate_owner_id(owner_id)
    data = json_body({"confirm", "actor"}, {"confirm"})
    if req_str(data, "confirm") != owner_id:
        raise InvalidValue("confirm must repeat the owner id exactly: erasing cannot be undone")
    with act(owner_id, "erase-owner", data) as a:
        job, _ = get_host().erase_owner(owner_id, actor=a.ctx.actor or principal.name, within=principal.within)
        a.done(job=job.id)
    return _accepted(job)


@bp.post(OWNER + "/forget")
def forget(owner_id: str):
    """Forget one wiki item (``file``, ``name``) or diary entry (``date``, ``time``, ``index``) with its history."""
    principal = require("admin", owner_id)
    validate_owner_id(owner_id)
    data = json_body({"file", "name", "date", "time", "index", "actor", "character"})
    target: dict[str, str | int | None] = {k: opt_str(data, k, limit=200)
                                           for k in ("file", "name", "date", "time", "character")}
    target["index"] = opt_int(data, "index", minimum=0, maximum=1000)
    chosen = {k: v for k, v in target.items() if v is not None}
    with act(owner_id, "forget", data, target=chosen) as a:
        job, _ = get_host().forget(owner_id, chosen, actor=a.ctx.actor or principal.name,
                                   within=principal.within)
        a.done(job=job.id)
    return _accepted(job)


@bp.get("/erasures")
def erasure_receipt():
    """The receipt of an owner's erasure (``?owner=ID``): asked by id, recorded by a keyed digest only."""
    owner_id = validate_owner_id(query_str("owner", limit=128) or "")
    require("admin", owner_id)
    return jsonify(get_host().erasure_receipt(owner_id))
