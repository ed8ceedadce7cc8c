"""History pages: the timeline grouped by run (filters, a layer of the person or every layer, newer/older, jump to a
date, undo marks), one run, one commit's per-item diff, the diff between any two points, and one item's versions.
A run, a commit and a diff show every layer they touched (each change says its layer)."""

from __future__ import annotations

from flask import render_template, request

from webapp.errors import error_status
from wikimem.errors import NotFound, WikimemError
from wikimem.host import HISTORY_FILTERS

from .access import PAGE_SIZE, load_owner, wikitext_for
from .blueprint import bp
from .layers import ALL_LAYERS, layer_switch
from .rendering import DiffBudget, current_zone, group_by_run, in_zone, zoned

# Actions an operator filters by: what a commit was, as its Wikimem-Action records it (one write over the API
# or the UI: add, update, remove, diary; a request: memorize, diary-tool, batch; an undo; a hand edit...).
ACTIONS = ("add", "update", "remove", "diary", "batch", "memorize", "diary-tool", "revert", "rollback", "restore",
           "external-edit", "settings")
# Recorded since issue 24; older commits of the same requests carry "diary" or "batch".
NEW_ACTIONS = ("memorize", "diary-tool")
EVERY = None  # the layers an operator's run, commit and diff pages cover: every layer of the folder


def history_filters(args) -> dict[str, str]:
    """The non-blank history filters of a query string."""
    return {k: args[k].strip() for k in HISTORY_FILTERS if (args.get(k) or "").strip()}


@bp.get("/owners/<owner_id>/history")
def history(owner_id: str):
    owner = load_owner(owner_id)
    filters, at, zone = history_filters(request.args), (request.args.get("at") or "").strip(), current_zone()
    layer = layer_switch(owner, request.args, "admin.history", keep=HISTORY_FILTERS, every=True)
    shown = {"owner": owner, "filters": filters, "actions": ACTIONS, "new_actions": NEW_ACTIONS, "at": at,
             "layer": layer, "channels": owner.review.channels(False if layer.current == ALL_LAYERS else layer.current)}
    try:  # dates and times without an offset are the operator's zone's
        page = owner.review.search_history(**zoned(filters, zone), limit=PAGE_SIZE,
                                           cursor=request.args.get("cursor") or None, layers=layer.layers,
                                           after=request.args.get("after") or None, at=in_zone(at, zone, end=True))
    except (WikimemError, ValueError) as exc:  # shown above the filters as typed, with the status the app gives it
        return render_template("admin/history.html", **shown, groups=[], page=None, error=str(exc)), error_status(exc)
    return render_template("admin/history.html", **shown, groups=group_by_run(page.entries), page=page, error=None,
                           marks=owner.review.history_marks(page.entries))


@bp.get("/owners/<owner_id>/runs/<run>")
def run(owner_id: str, run: str):
    owner = load_owner(owner_id)
    page = owner.history(run=run, limit=PAGE_SIZE, cursor=request.args.get("cursor") or None, layers=EVERY)
    if not page.entries:
        raise NotFound(f"no run {run!r} in the history of {owner_id!r}")
    diffs = [owner.show_commit(e.id, EVERY) for e in page.entries]  # each commit's per-item diff, every layer
    proposal = next((r for r in owner.staged_runs() if r.run == run), None)  # its proposal to the shared layer
    return render_template("admin/run.html", owner=owner, run=run, diffs=diffs, next_cursor=page.next,
                           proposal=proposal, marks=owner.review.history_marks(page.entries), inline_diff=DiffBudget())


@bp.get("/owners/<owner_id>/commits/<commit>")
def commit(owner_id: str, commit: str):
    owner = load_owner(owner_id)
    diff = owner.show_commit(commit, EVERY)
    return render_template("admin/commit.html", owner=owner, diff=diff, inline_diff=DiffBudget(),
                           marks=owner.review.history_marks([diff.entry]), wikitext=wikitext_for(owner))


@bp.get("/owners/<owner_id>/diff")
def diff(owner_id: str):
    owner = load_owner(owner_id)
    a, b = (request.args.get("from") or "").strip(), (request.args.get("to") or "").strip()
    shown = {"owner": owner, "a": a, "b": b, "inline_diff": DiffBudget()}
    points = (in_zone(a, current_zone()), in_zone(b, current_zone()) or "HEAD")  # times: the operator's zone
    try:
        ends = (owner.review.entry_at(points[0]), owner.review.entry_at(points[1])) if a else None
        return render_template("admin/diff.html", **shown, ends=ends, error=None,
                               diff=owner.diff(ends[0].id, ends[1].id, EVERY) if ends else None)
    except (WikimemError, ValueError) as exc:  # the form stays, with what was typed and what is wrong with it
        return render_template("admin/diff.html", **shown, ends=None, diff=None, error=str(exc)), error_status(exc)


@bp.get("/owners/<owner_id>/versions/<file>/<path:name>")
def versions(owner_id: str, file: str, name: str):
    owner = load_owner(owner_id)
    found, next_cursor = owner.review.item_versions(file, name, limit=PAGE_SIZE,
                                                    cursor=request.args.get("cursor") or None)
    if not found:
        raise NotFound(f"no history of item {name!r} in {file!r}")
    return render_template("admin/versions.html", owner=owner, file=file, name=name, versions=found,
                           exists=owner.has_item(file, name), next_cursor=next_cursor, inline_diff=DiffBudget())
