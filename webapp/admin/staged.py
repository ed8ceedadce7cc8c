"""Runs on probation: the Staged page across owners, one run's owners with sampled diffs and the bulk forms, one
owner's diff against current main with approve, edit-then-approve and discard (asked first, on a page of what is
thrown away; the discarded commits are kept ``WIKIMEM_DISCARDED_DAYS`` and can be staged again), and a bulk job's
progress.

Thin views: the host's ``probation`` (cross-owner) and an ``Owner``'s staged methods do the work; approving,
discarding and holding need the admin role, as a bulk rollback does.
"""

from __future__ import annotations

import secrets

from flask import abort, flash, g, redirect, render_template, request, url_for

from webapp.hosting import get_host
from webapp.requestid import current_request_id

from .access import act, load_owner, require_role
from .blueprint import bp
from .rendering import DiffBudget

SAMPLE = 3  # owners whose diffs the run page shows inline
STATES = ("staged", "approved", "discarded", "expired")


@bp.get("/staged")
def staged():
    state = request.args.get("state") if request.args.get("state") in STATES else "staged"
    found = get_host().probation.runs(within=g.operator.owner_prefix, state=state,
                                      actor=(request.args.get("actor") or "").strip() or None)
    return render_template("admin/staged.html", found=found, state=state, actor=request.args.get("actor") or "")


@bp.get("/staged/<run>")
def staged_run(run: str):
    probation = get_host().probation
    rows = probation.owners_of(run, within=g.operator.owner_prefix)
    waiting = [r for r in rows if r["state"] == "staged"]
    preview = probation.preview(run, within=g.operator.owner_prefix) if waiting else None
    plans = {p["owner"]: p for p in (preview or {}).get("owners", [])}
    sample = []
    for row in waiting[:SAMPLE]:
        sample.append((row["owner"], load_owner(row["owner"]).staged_review(run)))
    return render_template("admin/staged_run.html", run=run, rows=rows, waiting=waiting, preview=preview,
                           plans=plans, sample=sample, inline_diff=DiffBudget(), proposers=_proposers(run, rows),
                           request_id="ui-" + secrets.token_hex(12))


def _proposers(run: str, rows: list[dict]) -> list[str]:
    """The characters whose layer the run wrote on its first owner: a memorize as a character proposes its facts to
    the shared layer as a staged run of the same run id (its own layer's commit is on ``main``)."""
    return load_owner(rows[0]["owner"]).review.run_layers(run) if rows else []


@bp.post("/staged/<run>/<action>")
def staged_bulk(run: str, action: str):
    operator = require_role("admin")
    if action == "hold":
        held = request.form.get("held") != "0"
        with act(None, "hold", operator, run=run, held=held) as a:
            a.done(owners=get_host().probation.hold(run, held, within=operator.owner_prefix))
        return redirect(url_for("admin.staged_run", run=run))
    skip, kind = request.form.getlist("except"), "approve" if action == "approve" else "discard"
    force = request.form.get("force") == "on"
    with act(None, f"bulk-{kind}", operator, key=request.form.get("request_id"), run=run, force=force or None) as a:
        job = get_host().probation.start(kind, run, within=operator.owner_prefix, force=force, actor=a.ctx.actor,
                                         except_owners=skip, idempotency_key=a.ctx.idempotency_key,
                                         request_id=current_request_id())
        a.done(job=job["id"])
    return redirect(url_for("admin.staged_job", job_id=job["id"]))


@bp.get("/staged/jobs/<job_id>")
def staged_job(job_id: str):
    return render_template("admin/staged_job.html", job=get_host().probation.job(job_id,
                                                                                 within=g.operator.owner_prefix))


@bp.get("/owners/<owner_id>/staged/<run>")
def owner_staged(owner_id: str, run: str):
    owner = load_owner(owner_id)
    return render_template("admin/staged_owner.html", owner=owner, run=run, review=owner.staged_review(run),
                           inline_diff=DiffBudget(), editing=request.args.get("edit") == "1",
                           proposers=owner.review.run_layers(run))


@bp.post("/owners/<owner_id>/staged/<run>/<action>")
def owner_staged_action(owner_id: str, run: str, action: str):
    """Approve (as it is, or as edited). Discarding has its own route: asked first (:func:`discard_staged`)."""
    if action != "approve":
        abort(404)
    operator = require_role("admin")
    owner = load_owner(owner_id)
    force = request.form.get("force") == "on"
    with act(owner, "approve", operator, run=run, force=force or None) as a:
        done = a.write(owner.approve_staged, run, force=force, edits=_edits(request.form))
    return redirect(url_for("admin.commit", owner_id=owner.id, commit=done.commit)) if done.commit else \
        redirect(url_for("admin.staged_run", run=run))


def _keep_days() -> float:
    return get_host().retention.discarded / 86400


@bp.route("/owners/<owner_id>/staged/<run>/discard", methods=["GET", "POST"])
def discard_staged(owner_id: str, run: str):
    """What discarding the run throws away, asked first; the POST discards (the run as previewed: its tip)."""
    owner = load_owner(owner_id)
    review = owner.staged_review(run)
    if request.method == "GET":
        return render_template("admin/discard_staged.html", owner=owner, run=run, review=review,
                               inline_diff=DiffBudget(), keep_days=_keep_days(), error=None)
    operator = require_role("admin")
    if request.form.get("tip") != review.run.tip:
        return render_template("admin/discard_staged.html", owner=owner, run=run, review=review,
                               inline_diff=DiffBudget(), keep_days=_keep_days(),
                               error="The run changed since you opened this page: nothing was discarded. Read it "
                                     "again, then discard."), 409
    with act(owner, "discard", operator, run=run) as a:
        done = a.write(owner.discard_staged, run)
    return redirect(url_for("admin.discarded", owner_id=owner.id, run=run, commit=done.commit or ""))


@bp.get("/owners/<owner_id>/discarded/<run>")
def discarded(owner_id: str, run: str):
    owner = load_owner(owner_id)
    return render_template("admin/discarded.html", owner=owner, run=run, commit=request.args.get("commit") or None,
                           kept=run in owner.discarded_runs(), keep_days=_keep_days())


@bp.post("/owners/<owner_id>/discarded/<run>/restore")
def restore_discarded(owner_id: str, run: str):
    operator = require_role("admin")
    owner = load_owner(owner_id)
    with act(owner, "restore-discarded", operator, run=run) as a:
        new = owner.restore_discarded(run)
        a.done(new_run=new)
    flash(f"Discarded run {run} staged again as {new}.", "ok")
    return redirect(url_for("admin.owner_staged", owner_id=owner.id, run=new))


def _edits(form) -> list[dict]:
    """The edited texts of an edit-then-approve form (only those that differ from what was staged)."""
    out = []
    for key in form:
        if not key.startswith("edit-"):
            continue
        n = key[len("edit-"):]
        text, staged_text = form.get(key, ""), form.get(f"orig-{n}", "")
        if text.replace("\r\n", "\n").strip() == staged_text.replace("\r\n", "\n").strip():
            continue
        if form.get(f"kind-{n}") == "wiki":
            out.append({"file": form.get(f"file-{n}"), "name": form.get(f"name-{n}"), "content": text})
        else:
            out.append({"date": form.get(f"date-{n}"), "time": form.get(f"time-{n}"), "before": staged_text.strip(),
                        "content": text})
    return out
