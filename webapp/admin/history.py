"""History pages: the timeline grouped by run, one run, one commit's per-item diff."""

from __future__ import annotations

from flask import render_template, request

from wikimem.errors import NotFound

from . import bp
from .access import PAGE_SIZE, load_owner, wikitext_for
from .diffs import DiffBudget
from .timeline import group_by_run

FILTERS = ("file", "item", "run")


@bp.get("/owners/<owner_id>/history")
def history(owner_id: str):
    owner = load_owner(owner_id)
    filters = {k: request.args[k].strip() for k in FILTERS if request.args.get(k, "").strip()}
    page = owner.history(**filters, limit=PAGE_SIZE, cursor=request.args.get("cursor") or None)
    return render_template("admin/history.html", owner=owner, filters=filters,
                           groups=group_by_run(page.entries), next_cursor=page.next)


@bp.get("/owners/<owner_id>/runs/<run>")
def run(owner_id: str, run: str):
    owner = load_owner(owner_id)
    page = owner.history(run=run, limit=PAGE_SIZE, cursor=request.args.get("cursor") or None)
    if not page.entries:
        raise NotFound(f"no run {run!r} in the history of {owner_id!r}")
    diffs = [owner.show_commit(e.id) for e in page.entries]  # each commit's per-item diff
    return render_template("admin/run.html", owner=owner, run=run, diffs=diffs,
                           next_cursor=page.next, inline_diff=DiffBudget())


@bp.get("/owners/<owner_id>/commits/<commit>")
def commit(owner_id: str, commit: str):
    owner = load_owner(owner_id)
    diff = owner.show_commit(commit)
    return render_template("admin/commit.html", owner=owner, diff=diff, inline_diff=DiffBudget(),
                           wikitext=wikitext_for(owner))
