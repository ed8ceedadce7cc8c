"""Signing in and out of the admin UI, logged as audit events through the host's gate.

Every change of memory (API, MCP, admin forms) is audited by the gate its
view passes (:meth:`wikimem.host.Gate.act`); what is left for the web layer
is the session itself: ``sign-in`` (the account name typed, or ``token`` —
never a token or password) and ``sign-out``, with the result read from the
response's status (``ok``, ``refused`` — a wrong password, too many tries —
or ``failed``). Views know nothing of this.
"""

from __future__ import annotations

import logging

from flask import Flask, g, request

from wikimem.host import Caller, result_of

__all__ = ["SESSION_EVENTS", "init_app"]

log = logging.getLogger(__name__)

SESSION_EVENTS: dict[tuple[str, str], str] = {
    ("session.login", "POST"): "sign-in",
    ("session.logout", "POST"): "sign-out",
}


def _actor() -> str:
    from .session import current_operator

    if request.endpoint == "session.login":
        return (request.form.get("username") or "").strip()[:64] or "token"
    operator = current_operator()
    return operator.name if operator is not None else "-"


def _before() -> None:
    action = SESSION_EVENTS.get((request.endpoint or "", request.method))
    if action is not None:
        try:
            g.session_event = (action, _actor())
        except Exception:  # whatever the request holds, the view still runs and says what is wrong with it
            log.exception("audit: cannot tell who sends %s %s", request.method, request.path)


def _after(response):
    pending: tuple[str, str] | None = g.pop("session_event", None)
    if pending is None:
        return response
    action, actor = pending
    try:
        if action == "sign-in" and response.status_code < 400:
            from .session import current_operator

            signed_in = current_operator()
            actor = signed_in.name if signed_in is not None else actor
        from webapp.hosting import get_host

        get_host().gate.note(Caller.operator(actor), action, result_of(response.status_code),
                             status=response.status_code)
    except Exception:  # signing in or out is done: a failing audit line must not turn it into a 500
        log.exception("audit event of %s %s not logged", request.method, request.path)
    return response


def init_app(app: Flask) -> None:
    app.before_request(_before)
    app.after_request(_after)
