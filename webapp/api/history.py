"""One owner's history: commits, diffs, and the undo operations (revert, roll back, restore)."""

from __future__ import annotations

from flask import jsonify

from webapp.params import (
    json_body,
    opt_bool,
    opt_str,
    point,
    query_int,
    query_str,
)
from wikimem.errors import InvalidValue
from wikimem.host import HISTORY_FILTERS, UNDO_TARGETS, BadRequest

from .blueprint import OWNER, act, bp, layer_for, owner_for


@bp.get(OWNER + "/history")
def history(owner_id: str):
    review = owner_for(owner_id, "read").review
    page = review.search_history(**{k: query_str(k) for k in HISTORY_FILTERS}, limit=query_int("limit", 50, 1, 500),
                                 cursor=query_str("cursor"), after=query_str("after"), at=query_str("at", limit=64),
                                 layers=(layer_for(),))
    return jsonify(entries=page.entries, next=page.next, prev=page.prev, reverted_by=review.undone_by(page.entries))


@bp.get(OWNER + "/commits/<commit>")
def commit(owner_id: str, commit: str):
    return jsonify(owner_for(owner_id, "read").show_commit(point(commit, "commit"), (layer_for(),)))


@bp.get(OWNER + "/diff")
def diff(owner_id: str):
    owner = owner_for(owner_id, "read")
    return jsonify(owner.diff(point(query_str("from", limit=64), "from"),
                              point(query_str("to", limit=64) or "HEAD", "to"), (layer_for(),)))


def _target(data: dict, field: str) -> str:
    """The run id of a rollback, or the commit point of a revert / restore."""
    if field == "run":  # a run id, as written in Wikimem-Run
        run = opt_str(data, "run", limit=64)
        if run is None:
            raise BadRequest("run must be a string: the run id to roll back")
        if not run.strip():
            raise InvalidValue("run must be a non-empty run id")
        return run
    return point(opt_str(data, field), field)


def _undo(owner_id: str, kind: str):
    """revert / rollback / restore: the preview plan, or the new commit (409 on conflicts unless forced)."""
    owner = owner_for(owner_id, "admin")
    field = UNDO_TARGETS[kind]
    data = json_body({field, "force", "preview", "actor"}, {field})
    target = _target(data, field)
    if opt_bool(data, "preview", False):
        return jsonify(plan=owner.preview_undo(kind, target))
    force = opt_bool(data, "force", False)
    with act(owner, kind, data, target={field: target}, force=force or None) as a:
        done = owner.undo(kind, target, force=force, ctx=a.ctx)
        a.done(done.commit)
    return jsonify(commit=done.commit, replayed=bool(done.replayed))


@bp.post(OWNER + "/revert")
def revert(owner_id: str):
    return _undo(owner_id, "revert")


@bp.post(OWNER + "/rollback")
def rollback(owner_id: str):
    return _undo(owner_id, "rollback")


@bp.post(OWNER + "/restore")
def restore(owner_id: str):
    return _undo(owner_id, "restore")
