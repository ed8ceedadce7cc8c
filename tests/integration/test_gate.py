"""One policy door for every edge (issue 32): the API, the MCP tools, the admin UI and the command line get a
write's context, its staging decision and its audit event from the host's gate (``wikimem/host/gate.py``).

Before it, the MCP tools skipped the staging policy of ``WIKIMEM_STAGED_TOKENS`` (a bot on probation that also
had the MCP URL wrote straight to approved memory) and admin-UI item edits and deletions were never audited (an
event field named ``name`` clashed with the logger's own attribute; the API's item DELETE was not audited at all).
"""

from __future__ import annotations

import logging
import re
import subprocess

import pytest
from apiworld import ADMIN, OWNER, app_with_accounts, auth

from webapp.hosting import get_host
from wikimem.host import audit
from wikimem.host.access.tokens import append_token, mint_token

pytest.importorskip("mcp")

from test_mcp import Served, call  # noqa: E402  (the MCP tests' SDK client)

PASSWORD = "correct horse battery staple"


def _events(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "wikimem.audit"]


@pytest.fixture
def probation_app(tmp_path):
    """The app with a token ``bot-v7`` the host's policy stages (WIKIMEM_STAGED_TOKENS), and a fake model."""
    from webapp import create_app

    tokens = tmp_path / "tokens.jsonl"
    secret, entry = mint_token("bot-v7", ["read", "write"], "")
    append_token(tokens, entry)
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens), "STAGED_TOKENS": "bot-*"})
    app.test_client().put(f"/api/v1/owners/{OWNER}", headers=auth(ADMIN))
    return app, secret


def _git(folder, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout


def test_a_token_on_probation_stages_through_the_api_and_the_mcp_tools_alike(probation_app):
    from werkzeug.serving import make_server

    app, secret = probation_app
    with app.app_context():
        owner = get_host().owner(OWNER)
    head = owner.head()
    put = app.test_client().put(f"/api/v1/owners/{OWNER}/items/people/mia", json={"content": "Surfs."},
                                headers=auth(secret))
    assert put.status_code in (200, 201)
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    import threading

    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        served = Served(f"http://127.0.0.1:{srv.server_port}/mcp", app, {}, None)  # type: ignore[arg-type]
        result = call(served, secret, "put_item", owner=OWNER, file="people", name="lu", content="Sails.")
        assert not result.is_error, result
        appended = call(served, secret, "diary_append", owner=OWNER, content="Met by the sea.", date="2026-07-21",
                        time="09:00")
        assert not appended.is_error, appended
    finally:
        srv.shutdown()
        app.extensions["wikimem.mcp"].close()
    assert owner.head() == head  # nothing of the bot on probation reached the approved memory
    staged = _git(owner.root, "for-each-ref", "--format=%(refname)", "refs/heads/staged/")
    assert len(staged.split()) == 3  # one staged run per write: the API's and both tools'
    assert not owner.has_item("people", "mia") and not owner.has_item("people", "lu")


def test_every_change_from_every_edge_leaves_exactly_one_audit_line(tmp_path, caplog):
    app = app_with_accounts(tmp_path, ADMIN, {"olga": "operator"}, PASSWORD)
    with app.app_context():
        owner, _ = get_host().ensure_owner(OWNER)
        owner.add("preferences", "tea", "Drinks oolong tea.")
        owner.add("preferences", "cake", "Likes cheesecake.")
    api, ui = app.test_client(), app.test_client()
    csrf = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', ui.get("/login").get_data(as_text=True)).group(1)
    assert ui.post("/login", data={"csrf_token": csrf, "username": "olga", "password": PASSWORD}).status_code == 302
    base = f"/admin/owners/{OWNER}"

    def form(path: str) -> dict:
        page = ui.get(path).get_data(as_text=True)
        fields = dict(re.findall(r'name="(csrf_token|etag)"[^>]*value="([^"]*)"', page))
        return fields

    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        caplog.clear()
        edit = {**form(f"{base}/edit/preferences/tea"), "content": "Green.", "op": "save"}
        assert ui.post(f"{base}/edit/preferences/tea", data=edit).status_code == 302
        delete = form(f"{base}/delete/preferences/cake")
        assert ui.post(f"{base}/delete/preferences/cake", data=delete).status_code == 302
        assert api.put(f"/api/v1/owners/{OWNER}/items/people/mia", json={"content": "Surfs."},
                       headers=auth(ADMIN)).status_code == 201
        assert api.delete(f"/api/v1/owners/{OWNER}/items/people/mia", headers=auth(ADMIN)).status_code == 200
        stale = api.put(f"/api/v1/owners/{OWNER}/items/preferences/tea", json={"content": "x"},
                        headers=auth(ADMIN, **{"If-Match": '"nope"'}))
        assert stale.status_code == 412
        events = _events(caplog)
    seen = [(e.audit, e.actor, e.result, getattr(e, "file", None), getattr(e, "target_name", None)) for e in events]
    assert seen == [
        ("edit", "olga", "ok", "preferences", "tea"),
        ("delete-item", "olga", "ok", "preferences", "cake"),
        ("edit", "admin", "ok", "people", "mia"),
        ("delete-item", "admin", "ok", "people", "mia"),
        ("edit", "admin", "refused", "preferences", "tea"),
    ]
    assert all(e.owner == OWNER for e in events) and all(e.new_commit for e in events[:4])
    assert [e.via for e in events] == ["operator", "operator", "token", "token", "token"]


def test_a_change_through_the_mcp_tools_and_the_command_line_is_audited_once(world, caplog, tmp_path):
    from werkzeug.serving import make_server

    from webapp import create_app
    from wikimem.cli import main

    app = create_app({"TESTING": True, **{k: world.app.config[k] for k in ("DATA_ROOT", "ADMIN_TOKEN",
                                                                            "TOKENS_FILE")}})
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    import threading

    threading.Thread(target=srv.serve_forever, daemon=True).start()
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        try:
            served = Served(f"http://127.0.0.1:{srv.server_port}/mcp", app, {}, None)  # type: ignore[arg-type]
            done = call(served, world.secrets["writer"], "put_item", owner=OWNER, file="people", name="mia",
                        content="Surfs.")
            assert not done.is_error
        finally:
            srv.shutdown()
            app.extensions["wikimem.mcp"].close()
        mcp_events = _events(caplog)
        caplog.clear()
        head = app.extensions["wikimem.host"].owner(OWNER).head()
        assert main(["--owner", OWNER, "--data", world.app.config["DATA_ROOT"], "revert", head]) == 0
        cli_events = _events(caplog)
    assert [(e.audit, e.actor, e.via, e.file, e.target_name) for e in mcp_events] == \
        [("edit", "writer", "token", "people", "mia")]
    assert [(e.audit, e.via, e.result, e.commit) for e in cli_events] == [("revert", "cli", "ok", head)]


def test_an_event_field_named_like_a_log_record_attribute_is_still_logged(caplog):
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        audit("edit", actor="olga", owner=OWNER, name="tea", msg="x", module="m")
    [event] = _events(caplog)
    assert (event.target_name, event.target_msg, event.target_module) == ("tea", "x", "m")
    assert "target_name=tea" in event.getMessage()
