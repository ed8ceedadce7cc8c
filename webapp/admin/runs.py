"""Runs across owners: the search ("actor X from T1 to T2", "character kai"), the bulk rollback preview, its job's
progress.

The search reads the cross-owner run index; the preview plans every
owner's step without writing; the confirmed POST (admin role) queues one
durable job that rolls the selection back owner by owner.
"""

from __future__ import annotations

import secrets

from flask import g, redirect, render_template, request, url_for

from webapp.errors import error_status
from webapp.hosting import get_host
from webapp.peering import forward_for
from webapp.requestid import current_request_id
from wikimem.errors import WikimemError
from wikimem.host import RunQuery

from .access import PAGE_SIZE, act, require_role
from .blueprint import bp
from .rendering import DiffBudget, current_zone, zoned

# (``character``: the runs that wrote that character's layer of a person's folder — its runs across persons)
SELECTION = ("run", "actor", "source_conv", "action", "since", "until", "owner_prefix", "character")
MEMORIZE = "memorize"  # the kind of a memorize job (Prefer: respond-async): its page is admin/memorize_job.html
# Jobs with a page of their own elsewhere (the jobs list links there too).
OTHER_JOB_PAGES = {"staged-approve": "admin.staged_job", "staged-discard": "admin.staged_job",
                   "erase-owner": "admin.erasure_job", "forget": "admin.erasure_job",
                   "import-chat": "admin.import_job"}


def selection_args(args) -> dict[str, str]:
    """The non-blank selection fields of a query string (what links and forms carry on)."""
    return {k: args[k].strip() for k in SELECTION if (args.get(k) or "").strip()}


def run_query(chosen: dict[str, str]) -> RunQuery:
    """The search of ``chosen``, a date or time without an offset read in the operator's zone."""
    return RunQuery.parse(**zoned(chosen, current_zone()))


@bp.get("/runs")
def runs():
    chosen, by_owner = selection_args(request.args), request.args.get("by") == "owner"
    try:
        query = run_query(chosen)
        page = _page(query, by_owner, request.args.get("cursor") or None)
    except (WikimemError, ValueError) as exc:  # shown on the page, with the status the app gives it
        return render_template("admin/runs.html", chosen=chosen, by_owner=by_owner, page=None, query=None,
                               error=str(exc)), error_status(exc)
    return render_template("admin/runs.html", chosen=chosen, by_owner=by_owner, page=page, query=query, error=None)


def _page(query: RunQuery, by_owner: bool, cursor: str | None):
    """One page of the search, across every host of a cluster (peers that did not answer are listed)."""
    host, within = get_host(), g.operator.owner_prefix
    forward = forward_for(within)
    if by_owner:
        counts = host.fleet.runs_per_owner(query, within=within, limit=PAGE_SIZE, cursor=cursor, forward=forward)
        first = host.fleet.find_runs(query, within=within, limit=1, forward=forward)
        return {"owners": counts.owners, "next": counts.next, "total": first.total, "complete": first.complete,
                "unreachable": sorted({*counts.unreachable, *first.unreachable})}
    found = host.fleet.find_runs(query, within=within, limit=PAGE_SIZE, cursor=cursor, forward=forward)
    return {"runs": found.runs, "next": found.next, "total": found.total, "complete": found.complete,
            "unreachable": found.unreachable}


@bp.get("/bulk/rollback")
def bulk_preview():
    chosen = zoned(selection_args(request.args), current_zone())  # the job keeps the instants, offsets and all
    preview = get_host().fleet.preview_bulk_rollback(run_query(chosen), within=g.operator.owner_prefix)
    # The form's request id is the job's idempotency key: a double submit starts one job.
    return render_template("admin/bulk_preview.html", chosen=chosen, preview=preview, inline_diff=DiffBudget(),
                           request_id="ui-" + secrets.token_hex(12))


@bp.post("/bulk/rollback")
def bulk_start():
    operator = require_role("admin")
    chosen = selection_args(request.form)
    query, force = run_query(chosen), request.form.get("force") == "on"
    selection = {f"target_{k}": v for k, v in query.to_dict().items() if v}
    with act(None, "bulk-rollback", operator, key=request.form.get("request_id"), **selection,
             force=force or None) as a:
        job = get_host().fleet.start_bulk_rollback(query, within=operator.owner_prefix, force=force,
                                                   actor=a.ctx.actor, idempotency_key=a.ctx.idempotency_key,
                                                   request_id=current_request_id())
        a.done(job=job["id"])
    return redirect(url_for("admin.job", job_id=job["id"]))


@bp.get("/jobs/<job_id>")
def job(job_id: str):
    """A job's page, whatever its kind: a memorize job here (its outcome or its cause), the others on theirs."""
    fleet = get_host().fleet
    found = fleet.visible_job(job_id, within=g.operator.owner_prefix)
    if found.kind == MEMORIZE:
        return render_template("admin/memorize_job.html", job=found, step=(found.results or [{}])[0])
    if found.kind in OTHER_JOB_PAGES:
        return redirect(url_for(OTHER_JOB_PAGES[found.kind], job_id=job_id))
    return render_template("admin/job.html", job=fleet.bulk_job(job_id, within=g.operator.owner_prefix))
