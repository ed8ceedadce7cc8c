"""Request ids: generated or taken from a trusted proxy, echoed in the response and every error body, on every log
line of the request (JSON and text), and in the jobs the request creates; operator actions are audit events."""

from __future__ import annotations

import io
import json
import logging

import pytest
from apiworld import ADMIN, OWNER, auth
from fakes import FakeOpenAI

from webapp.logs import logging_config

O = f"/api/v1/owners/{OWNER}"
RID = "req-7f3c:abc.DEF_123"


def _app(tmp_path, setup=None, **config):
    from webapp import create_app

    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN, **config})
    if setup is not None:
        setup(app)
    client = app.test_client()
    client.put(O, headers=auth(ADMIN))
    return app, client


def test_every_response_has_an_id_and_a_client_cannot_choose_it_without_a_trusted_proxy(tmp_path):
    _, client = _app(tmp_path)
    ids = {client.get("/healthz").headers["X-Request-Id"] for _ in range(3)}
    assert len(ids) == 3 and all(len(i) == 32 for i in ids)
    r = client.get(O, headers=auth(ADMIN, **{"X-Request-Id": RID}))
    assert r.headers["X-Request-Id"] != RID  # WIKIMEM_PROXIES=0: the header is anyone's, not trusted


@pytest.mark.parametrize("sent, kept", [(RID, True), ("a" * 129, False), ("bad id", False), ("<x>", False)])
def test_a_trusted_proxys_id_is_kept_when_it_is_well_formed(tmp_path, sent, kept):
    _, client = _app(tmp_path, PROXIES=1)
    got = client.get("/healthz", headers={"X-Request-Id": sent}).headers["X-Request-Id"]
    assert (got == sent) is kept and got


@pytest.mark.parametrize("call", [
    lambda c: c.get(O + "/items/nope/nothing", headers=auth(ADMIN, **{"X-Request-Id": RID})),  # 404
    lambda c: c.get(O, headers={"X-Request-Id": RID}),  # 401
    lambda c: c.post(O + "/retrieve", data="{", content_type="application/json",
                     headers=auth(ADMIN, **{"X-Request-Id": RID})),  # 400
    lambda c: c.get("/api/v1/no-such-route", headers={"X-Request-Id": RID}),  # 404 of the router
])
def test_every_json_error_body_carries_the_request_id(tmp_path, call):
    _, client = _app(tmp_path, PROXIES=1)
    r = call(client)
    assert r.status_code >= 400
    assert r.get_json()["error"]["request_id"] == RID == r.headers["X-Request-Id"]


def _captured(fmt: str):
    """The root logger sent to a buffer in ``fmt``, as gunicorn's logconfig_dict would (undone after)."""
    config = logging_config(fmt)
    buffer = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.config.DictConfigurator(config).configure_formatter(config["formatters"]["app"]))
    from webapp.logs import RequestIdFilter

    handler.addFilter(RequestIdFilter())
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    return buffer, lambda: (root.handlers.__setitem__(slice(None), saved[0]), root.setLevel(saved[1]))


def _probe(app):
    @app.get("/api/v1/_log-probe")
    def probe():
        logging.getLogger("wikimem.probe").info("inside the request", extra={"answer": 42})
        return {"ok": True}


def test_log_lines_of_a_request_carry_its_id_in_json_and_in_text(tmp_path):
    _, client = _app(tmp_path, setup=_probe, PROXIES=1)

    buffer, undo = _captured("json")
    try:
        client.get("/api/v1/_log-probe", headers={"X-Request-Id": RID})
        logging.getLogger("wikimem.probe").info("outside")
    finally:
        undo()
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    inside = next(line for line in lines if line["message"] == "inside the request")
    assert inside["request_id"] == RID and inside["level"] == "INFO" and inside["logger"] == "wikimem.probe"
    assert inside["answer"] == 42 and inside["time"].endswith("Z")
    assert next(line for line in lines if line["message"] == "outside")["request_id"] == "-"
    buffer, undo = _captured("text")
    try:
        client.get("/api/v1/_log-probe", headers={"X-Request-Id": RID})
    finally:
        undo()
    assert f"inside the request [rid={RID}]" in buffer.getvalue()


def test_the_jobs_a_request_creates_keep_its_id(tmp_path):
    with FakeOpenAI() as llm:
        _, client = _app(tmp_path, PROXIES=1, LLM_URL=llm.url, LLM_MODEL="fake")
        r = client.post(O + "/memorize", json={"turn": "we went to the sea"},
                        headers=auth(ADMIN, **{"X-Request-Id": RID, "Prefer": "respond-async"}))
        assert r.status_code == 202 and r.get_json()["params"]["request_id"] == RID
        job = client.get(r.headers["Location"], headers=auth(ADMIN)).get_json()
        assert job["params"]["request_id"] == RID


def test_operator_actions_are_audit_events_with_actor_owner_and_result(tmp_path, caplog):
    _, client = _app(tmp_path, PROXIES=1)
    client.put(O + "/items/people/mia", json={"content": "likes tea"}, headers=auth(ADMIN))
    head = client.get(O + "/history", headers=auth(ADMIN)).get_json()["entries"][0]["id"]
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        client.post(O + "/revert", json={"commit": head}, headers=auth(ADMIN, **{"X-Request-Id": RID}))
        client.post(O + "/revert", json={"commit": "f" * 40}, headers=auth(ADMIN))
        client.post("/login", data={"username": "nobody", "password": "wrong-password"})
    events = [r for r in caplog.records if r.name == "wikimem.audit"]
    revert, missing = events[0], events[1]
    assert (revert.audit, revert.actor, revert.owner, revert.result, revert.commit) == \
        ("revert", "admin", OWNER, "ok", head)
    assert (missing.result, missing.error) == ("refused", "not_found")
    assert (events[2].audit, events[2].actor, events[2].result) == ("sign-in", "nobody", "refused")


def test_every_audited_session_route_exists(tmp_path):
    from webapp.audit import SESSION_EVENTS

    app, _ = _app(tmp_path)
    routes = {(rule.endpoint, method) for rule in app.url_map.iter_rules() for method in rule.methods or ()}
    assert set(SESSION_EVENTS) <= routes


def test_a_bulk_rollback_by_actor_is_audited_with_its_selection(tmp_path, caplog):
    _, client = _app(tmp_path)
    client.put(O + "/items/people/mia", json={"content": "likes tea", "actor": "Elaina", "run": "r1"},
               headers=auth(ADMIN))
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        r = client.post("/api/v1/bulk/rollback", json={"actor": "Elaina"}, headers=auth(ADMIN))
        client.post("/api/v1/bulk/rollback", json={"actor": "Elaina", "preview": True}, headers=auth(ADMIN))
    assert r.status_code == 202
    [event] = [r for r in caplog.records if r.name == "wikimem.audit"]  # the preview changes nothing: no event
    assert (event.audit, event.actor, event.target_actor, event.result) == ("bulk-rollback", "admin", "Elaina", "ok")
    assert event.job.startswith("job_")


def test_a_malformed_body_to_an_audited_route_is_still_the_views_400(tmp_path):
    _, client = _app(tmp_path)
    for body in ([1, 2], "x", None, {"preview": [1]}):
        r = client.post("/api/v1/bulk/rollback", json=body, headers=auth(ADMIN))
        assert r.status_code in (400, 404, 422), (body, r.status_code)
