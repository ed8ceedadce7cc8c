"""Undo: revert a commit, roll back a run, restore to a point.

Each is a GET that previews the exact plan (changes and conflicts) and one
POST, CSRF-protected, that carries it out with the operator as the actor.
A conflict that appears between preview and POST is shown, not forced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from flask import flash, g, redirect, render_template, request, url_for

from wikimem.errors import Conflict

from ..session import require_role
from . import bp
from .access import load_owner
from .diffs import inline_diff


@dataclass(frozen=True)
class Action:
    """One undo operation as the confirmation page presents it."""

    verb: str          # button text
    title: str
    preview: Callable  # (vstore, target) -> Plan
    apply: Callable    # (vstore, target, force, actor) -> Committed


ACTIONS = {
    "revert": Action("Revert this commit", "Revert commit",
                     lambda vs, t: vs.preview_revert(t),
                     lambda vs, t, force, actor: vs.revert(t, force=force, actor=actor)),
    "rollback": Action("Roll back this run", "Roll back run",
                       lambda vs, t: vs.preview_rollback(t),
                       lambda vs, t, force, actor: vs.rollback(t, force=force, actor=actor)),
    "restore": Action("Restore to this point", "Restore memory",
                      lambda vs, t: vs.preview_restore(t),
                      lambda vs, t, force, actor: vs.restore(t, actor=actor)),
}


def _confirm(owner_id: str, kind: str, target: str):
    owner = load_owner(owner_id)
    action = ACTIONS[kind]
    if request.method == "GET":
        plan = action.preview(owner.vstore, target)
        return render_template("admin/confirm.html", owner=owner, kind=kind, action=action, target=target,
                               plan=plan, error=None, inline_diff=inline_diff)
    require_role("operator")  # reviewers may preview, not change
    force = request.form.get("force") == "on"
    try:
        done = action.apply(owner.vstore, target, force, g.operator.name)
    except Conflict as exc:
        plan = action.preview(owner.vstore, target)
        return render_template("admin/confirm.html", owner=owner, kind=kind, action=action, target=target,
                               plan=plan, error=str(exc), inline_diff=inline_diff), 409
    flash(f"{action.title}: done as commit {str(done.commit)[:12]}.", "ok")
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
