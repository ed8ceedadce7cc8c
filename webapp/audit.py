"""Operator actions at the web layer, logged as audit events (:func:`wikimem.host.audit`) in one place.

:data:`AUDITED` maps a route (its endpoint and method) to an audit action:
sign-in and sign-out, the admin UI's revert, rollback, restore, bulk
rollback, item edits and deletions, owner deletion, erasure and forgetting,
and the API's revert, rollback, restore, bulk rollback, owner deletion,
erasure and forgetting (an erasure names the owner by its keyed digest, a
forget never names the item). Who acted is
read before the view runs (the signed-in operator, or the bearer token's
name; for a sign-in, the account name typed — never a token or password),
the result after it, from the response's status: ``ok``, ``refused``
(4xx: a conflict, no right, a wrong password) or ``failed`` (5xx). The
event names the owner, the target (commit, run, point, file and item)
and, for a JSON answer, the commit made; the request id joins it as it
joins every log line. Views know nothing of this.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, g, request

from wikimem.host import audit, result_of

__all__ = ["AUDITED", "init_app"]

log = logging.getLogger(__name__)

AUDITED: dict[tuple[str, str], str] = {
    ("session.login", "POST"): "sign-in",
    ("session.logout", "POST"): "sign-out",
    ("admin.revert", "POST"): "revert",
    ("admin.rollback", "POST"): "rollback",
    ("admin.restore", "POST"): "restore",
    ("admin.bulk_start", "POST"): "bulk-rollback",
    ("admin.new_item", "POST"): "edit",
    ("admin.edit_item", "POST"): "edit",
    ("admin.delete_item", "POST"): "delete-item",
    ("admin.delete_owner", "POST"): "delete-owner",
    ("api.revert", "POST"): "revert",
    ("api.rollback", "POST"): "rollback",
    ("api.restore", "POST"): "restore",
    ("api.bulk_rollback", "POST"): "bulk-rollback",
    ("api.delete_owner", "DELETE"): "delete-owner",
    ("admin.erase_owner", "POST"): "erase-owner",
    ("api.erase_owner", "POST"): "erase-owner",
    ("admin.forget_item", "POST"): "forget",
    ("admin.forget_entry", "POST"): "forget",
    ("api.forget", "POST"): "forget",
}
# What a route names besides its owner (URL parts, then JSON body fields).
_TARGETS = ("commit", "run", "point", "file", "name")
_BODY_TARGETS = ("commit", "run", "to", "force", "actor", "source_conv", "since", "until", "owner_prefix")
_EVENT_KEYS = {"audit", "actor", "owner", "result", "status"}  # the event's own fields


def _action() -> str | None:
    action = AUDITED.get((request.endpoint or "", request.method))
    body = request.get_json(silent=True) if action == "bulk-rollback" else None
    if isinstance(body, dict) and body.get("preview"):
        return None  # a preview changes nothing
    return action


def _actor() -> str:
    from .auth import bearer_principal
    from .session import current_operator

    if request.endpoint == "session.login":
        return (request.form.get("username") or "").strip()[:64] or "token"
    operator = current_operator()
    if operator is not None:
        return operator.name
    principal = bearer_principal()
    return principal.name if principal is not None else "-"


def _before() -> None:
    try:
        action = _action()
        if action is not None:
            g.audit = (action, _actor())
    except Exception:  # whatever the request holds, the view still runs and says what is wrong with it
        log.exception("audit: cannot tell who sends %s %s", request.method, request.path)


def _fields(response) -> dict[str, Any]:
    args = request.view_args or {}
    fields: dict[str, Any] = {k: args[k] for k in _TARGETS if args.get(k) is not None}
    body = request.get_json(silent=True) if request.is_json else None
    if isinstance(body, dict):  # (a bulk selection's "actor" is whose runs, not who acted: prefixed)
        fields.update({f"target_{k}" if k in fields or k in _EVENT_KEYS else k: body[k] for k in _BODY_TARGETS
                       if isinstance(body.get(k), (str, int, float, bool))})
    answer = response.get_json(silent=True) if response.is_json else None
    if isinstance(answer, dict):
        if isinstance(answer.get("commit"), str):
            fields["new_commit"] = answer["commit"]
        if isinstance(answer.get("id"), str) and answer["id"].startswith("job_"):
            fields["job"] = answer["id"]
        if isinstance(answer.get("error"), dict):
            fields["error"] = answer["error"].get("code")
    return fields


def _after(response):
    pending: tuple[str, str] | None = g.pop("audit", None)
    if pending is not None:
        try:
            _record(pending[0], pending[1], response)
        except Exception:  # the action is done: a failing audit line must not turn it into a 500
            log.exception("audit event of %s %s not logged", request.method, request.path)
    return response


def _record(action: str, actor: str, response) -> None:
    if action == "sign-in" and response.status_code < 400:
        from .session import current_operator

        signed_in = current_operator()
        actor = signed_in.name if signed_in is not None else actor
    result = result_of(response.status_code)
    if actor == "-" and action != "sign-in" and result == "ok":
        result = "refused"  # nobody signed in: the admin UI sent them to the sign-in page
    owner, fields = (request.view_args or {}).get("owner_id"), _fields(response)
    if action == "erase-owner" and owner:  # the event names the erasure as its receipt does: by digest
        from webapp.hosting import get_host

        owner = get_host().erasure.digest(owner)
    elif action == "forget":
        fields.pop("name", None)  # what was forgotten is named by its file (or day), never by the item's name
    audit(action, actor=actor, owner=owner, result=result, status=response.status_code, **fields)


def init_app(app: Flask) -> None:
    app.before_request(_before)
    app.after_request(_after)
