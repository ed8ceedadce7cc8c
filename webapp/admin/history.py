"""History pages: the timeline grouped by run (filters, newer/older, jump to a date, undo marks), one run,
one commit's per-item diff, the diff between any two points, and one item's versions."""

from __future__ import annotations

from flask import render_template, request

from wikimem.errors import NotFound
from wikimem.host import HISTORY_FILTERS

from . import bp
from .access import PAGE_SIZE, load_owner, wikitext_for
from .diffs import DiffBudget
from .timeline import group_by_run

# Actions an operator filters by (what commits record in Wikimem-Action).
ACTIONS = ("add", "update", "remove", "diary", "batch", "memorize", "diary-tool", "revert", "rollback", "restore",
           "external-edit")


def history_filters(args) -> dict[str, str]:
    """The non-blank history filters of a query string."""
    return {k: args[k].strip() for k in HISTORY_FILTERS if (args.get(k) or "").strip()}


@bp.get("/owners/<owner_id>/history")
def history(owner_id: str):
    owner = load_owner(owner_id)
    filters = history_filters(request.args)
    page = owner.review.search_history(**filters, limit=PAGE_SIZE, cursor=request.args.get("cursor") or None,
                                       after=request.args.get("after") or None, at=request.args.get("at") or None)
    return render_template("admin/history.html", owner=owner, filters=filters, groups=group_by_run(page.entries),
                           marks=owner.review.history_marks(page.entries), page=page, actions=ACTIONS,
                           at=request.args.get("at", ""))


@bp.get("/owners/<owner_id>/runs/<run>")
def run(owner_id: str, run: str):
    owner = load_owner(owner_id)
    page = owner.history(run=run, limit=PAGE_SIZE, cursor=request.args.get("cursor") or None)
    if not page.entries:
        raise NotFound(f"no run {run!r} in the history of {owner_id!r}")
    diffs = [owner.show_commit(e.id) for e in page.entries]  # each commit's per-item diff
    return render_template("admin/run.html", owner=owner, run=run, diffs=diffs, next_cursor=page.next,
                           marks=owner.review.history_marks(page.entries), inline_diff=DiffBudget())


@bp.get("/owners/<owner_id>/commits/<commit>")
def commit(owner_id: str, commit: str):
    owner = load_owner(owner_id)
    diff = owner.show_commit(commit)
    return render_template("admin/commit.html", owner=owner, diff=diff, inline_diff=DiffBudget(),
                           marks=owner.review.history_marks([diff.entry]), wikitext=wikitext_for(owner))


@bp.get("/owners/<owner_id>/diff")
def diff(owner_id: str):
    owner = load_owner(owner_id)
    a, b = (request.args.get("from") or "").strip(), (request.args.get("to") or "").strip() or "HEAD"
    ends = (owner.review.entry_at(a), owner.review.entry_at(b)) if a else None
    return render_template("admin/diff.html", owner=owner, a=a, b=b, ends=ends, inline_diff=DiffBudget(),
                           diff=owner.diff(ends[0].id, ends[1].id) if ends else None)


@bp.get("/owners/<owner_id>/versions/<file>/<path:name>")
def versions(owner_id: str, file: str, name: str):
    owner = load_owner(owner_id)
    found, next_cursor = owner.review.item_versions(file, name, limit=PAGE_SIZE,
                                                    cursor=request.args.get("cursor") or None)
    if not found:
        raise NotFound(f"no history of item {name!r} in {file!r}")
    return render_template("admin/versions.html", owner=owner, file=file, name=name, versions=found,
                           exists=owner.has_item(file, name), next_cursor=next_cursor, inline_diff=DiffBudget())
