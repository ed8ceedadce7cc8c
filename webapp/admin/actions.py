"""Undo: revert a commit, roll back a run, restore to a point.

Each is a GET that previews the exact plan (changes and conflicts) and one
POST, CSRF-protected, that carries it out with the operator as the actor.
A conflict that appears between preview and POST is shown, not forced.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import flash, redirect, render_template, request, url_for

from webapp.session import require_role
from wikimem.errors import Conflict
from wikimem.host import UNDO_TARGETS

from .access import act, load_owner
from .blueprint import bp
from .rendering import DiffBudget


@dataclass(frozen=True)
class Action:
    """How the confirmation page presents one undo operation (the operation itself is the owner's)."""

    verb: str  # button text
    title: str


ACTIONS = {
    "revert": Action("Revert this commit", "Revert commit"),
    "rollback": Action("Roll back this run", "Roll back run"),
    "restore": Action("Restore to this point", "Restore memory"),
}


def _page(owner, kind: str, target: str, error: str | None = None):
    # A run rolled back already is shown as such: its undo is to revert that rollback, not to roll back again
    # (a second rollback meets the first as conflicts, and forcing it would write over later edits).
    rolled_back = owner.review.run_rolled_back_by(target) if kind == "rollback" else []
    return render_template("admin/confirm.html", owner=owner, kind=kind, action=ACTIONS[kind], target=target,
                           plan=None if rolled_back else owner.preview_undo(kind, target), error=error,
                           inline_diff=DiffBudget(), rolled_back=rolled_back)


def _confirm(owner_id: str, kind: str, target: str):
    owner = load_owner(owner_id)
    if request.method == "GET":
        return _page(owner, kind, target)
    operator = require_role("operator")  # reviewers may preview, not change
    if kind == "rollback" and owner.review.run_rolled_back_by(target):
        return _page(owner, kind, target, error=f"Run {target} is rolled back already: nothing was written. "
                                                "Undo that rollback to bring its changes back."), 409
    force = request.form.get("force") == "on"
    try:
        with act(owner, kind, operator, **{UNDO_TARGETS[kind]: target}, force=force or None) as a:
            done = owner.undo(kind, target, force=force, ctx=a.ctx)
            a.done(done.commit)
    except Conflict as exc:
        return _page(owner, kind, target, error=str(exc)), 409
    flash(f"{ACTIONS[kind].title}: done as commit {str(done.commit)[:12]}.", "ok")
    return redirect(url_for("admin.commit", owner_id=owner.id, commit=done.commit))


@bp.route("/owners/<owner_id>/commits/<commit>/revert", methods=["GET", "POST"])
def revert(owner_id: str, commit: str):
    return _confirm(owner_id, "revert", commit)


@bp.route("/owners/<owner_id>/runs/<run>/rollback", methods=["GET", "POST"])
def rollback(owner_id: str, run: str):
    return _confirm(owner_id, "rollback", run)


@bp.route("/owners/<owner_id>/restore/<point>", methods=["GET", "POST"])
def restore(owner_id: str, point: str):
    return _confirm(owner_id, "restore", point)
