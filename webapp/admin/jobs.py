"""Background jobs across owners: the list (filters, progress), and cancelling one that has not started.

An operator sees the jobs of the owners its prefix reaches; bulk rollback
jobs only with the admin role (the API's rule for tokens). Cancelling a
memorize job needs the operator role, a bulk job the admin role.
"""

from __future__ import annotations

from flask import g, redirect, render_template, request, url_for

from webapp.errors import error_status
from webapp.hosting import get_host
from wikimem.errors import WikimemError
from wikimem.host import JobQuery

from .access import PAGE_SIZE, require_role
from .blueprint import bp

FILTERS = ("kind", "state", "owner_prefix", "since")


def _chosen(args) -> dict[str, str]:
    return {k: args[k].strip() for k in FILTERS if (args.get(k) or "").strip()}


@bp.get("/jobs")
def jobs():
    chosen, operator = _chosen(request.args), g.operator
    try:
        page = get_host().fleet.list_jobs(JobQuery.parse(**chosen), within=operator.owner_prefix,
                                          admin=operator.may("admin"), limit=PAGE_SIZE,
                                          cursor=request.args.get("cursor") or None)
    except (WikimemError, ValueError) as exc:
        return render_template("admin/jobs.html", chosen=chosen, page=None, error=str(exc)), error_status(exc)
    return render_template("admin/jobs.html", chosen=chosen, page=page, error=None)


@bp.post("/jobs/<job_id>/cancel")
def cancel_job(job_id: str):
    operator = require_role("operator")
    get_host().fleet.cancel_job(job_id, within=operator.owner_prefix, admin=operator.may("admin"))
    chosen: dict = _chosen(request.form)
    return redirect(url_for("admin.jobs", **chosen))
