"""Erasure pages: erase an owner everywhere, forget an item or a diary entry with its history, the job's receipt.

Each asks for a typed confirmation (the owner id, the item's name, the
entry's minute), needs the admin role, starts the job and shows it; the job
page refreshes itself until the receipt is there.
"""

from __future__ import annotations

from flask import g, redirect, render_template, request, url_for

from webapp.hosting import get_host
from wikimem.host import BadRequest

from .access import act, load_owner, require_role
from .blueprint import bp


def _form(name: str) -> str:
    return (request.form.get(name) or "").strip()


@bp.route("/owners/<owner_id>/erase", methods=["GET", "POST"])
def erase_owner(owner_id: str):
    owner = load_owner(owner_id)
    if request.method == "GET":
        return render_template("admin/erase_owner.html", owner=owner, stats=owner.stats(), error=None)
    operator = require_role("admin")
    if _form("confirm_id") != owner.id:
        error = BadRequest("Type the owner id exactly to erase it.")
        return render_template("admin/erase_owner.html", owner=owner, stats=owner.stats(), error=str(error)), 400
    with act(owner.id, "erase-owner", operator) as a:
        job, _ = get_host().erase_owner(owner.id, actor=a.ctx.actor, within=operator.owner_prefix)
        a.done(job=job.id)
    return redirect(url_for("admin.erasure_job", job_id=job.id))


@bp.route("/owners/<owner_id>/forget/<file>/<path:name>", methods=["GET", "POST"])
def forget_item(owner_id: str, file: str, name: str):
    owner = load_owner(owner_id)
    item = owner.item(file, name)
    if request.method == "GET":
        return render_template("admin/forget.html", owner=owner, item=item, entries=None, error=None)
    operator = require_role("admin")
    if _form("confirm_name") != item.name:
        return render_template("admin/forget.html", owner=owner, item=item, entries=None,
                               error="Type the item's name exactly to forget it."), 400
    with act(owner.id, "forget", operator, file=file) as a:
        job, _ = get_host().forget(owner.id, {"file": file, "name": name}, actor=a.ctx.actor,
                                   within=operator.owner_prefix)
        a.done(job=job.id)
    return redirect(url_for("admin.erasure_job", job_id=job.id))


@bp.route("/owners/<owner_id>/forget-entry/<date>/<time>", methods=["GET", "POST"])
def forget_entry(owner_id: str, date: str, time: str):
    owner = load_owner(owner_id)
    entries = [e for e in owner.diary_day(date) if e.time == time]
    if not entries:
        raise BadRequest(f"no diary entry at {date} {time}")
    if request.method == "GET":
        return render_template("admin/forget.html", owner=owner, item=None, entries=entries, date=date, time=time,
                               error=None)
    operator = require_role("admin")
    index = request.form.get("index", "0")
    if _form("confirm_time") != time or not index.isdigit() or int(index) >= len(entries):
        return render_template("admin/forget.html", owner=owner, item=None, entries=entries, date=date, time=time,
                               error=f"Pick the entry and type its time ({time}) to forget it."), 400
    with act(owner.id, "forget", operator, date=date, time=time) as a:
        job, _ = get_host().forget(owner.id, {"date": date, "time": time, "index": int(index)}, actor=a.ctx.actor,
                                   within=operator.owner_prefix)
        a.done(job=job.id)
    return redirect(url_for("admin.erasure_job", job_id=job.id))


@bp.get("/erasures/<job_id>")
def erasure_job(job_id: str):
    found = get_host().erasure_job(job_id, within=g.operator.owner_prefix)
    step = found.results[0] if found.results else {}
    return render_template("admin/erasure_job.html", job=found, receipt=step.get("result"),
                           error=(step.get("error") or {}).get("message"))
