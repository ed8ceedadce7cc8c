"""docs/guides/group-chats.md as written: its request bodies are sent to the app, its Python example runs against the
app served on 127.0.0.1 (the fake chat model answering for the turn's persons)."""

from __future__ import annotations

import json
import threading

import pytest
from apiworld import ADMIN, auth
from docblocks import doc_block
from group_app import group_app

DOC_BASE = "http://127.0.0.1:8000"
ANN, BOB = "user:ann", "user:bob"


def _answer(messages) -> str:
    """The model's answer for any turn of the guide: one event per person it names."""
    system = messages[0]["content"]
    diary = [{"person": p, "content": f"{p} talked about the driving test."} for p in (ANN, BOB) if p in system]
    return json.dumps({"diary": diary})


@pytest.fixture
def app(tmp_path, llm):
    llm.reply_fn = _answer
    client, _ = group_app(tmp_path, llm, {})
    app = client.application
    return app


def test_the_guides_request_bodies_are_answered_as_it_says(app, llm):
    client = app.test_client()
    turn = json.loads(doc_block("group-chats-memorize-request"))
    done = client.post("/api/v1/channels/g1/memorize", headers=auth(ADMIN), json=turn)
    assert done.status_code == 200, done.get_json()
    body = done.get_json()
    assert body["present"] == [ANN, "char:kai", BOB] and body["unknown_speakers"] == []
    assert {p["person"] for p in body["persons"] if p["entries"]} == {ANN, BOB} and llm.chat_calls == 1
    runs = client.get(f"/api/v1/runs?run={body['run']}", headers=auth(ADMIN)).get_json()["runs"]
    assert sorted(r["owner"] for r in runs) == [ANN, BOB]
    ask = json.loads(doc_block("group-chats-context-request"))
    found = client.post("/api/v1/channels/g1/context", headers=auth(ADMIN), json=ask)
    assert found.status_code == 200, found.get_json()
    items = found.get_json()["items"]
    assert {i["person"] for i in items} == {ANN, BOB}
    assert found.get_json()["budget_used"] <= ask["budget_tokens"]


def test_the_guides_python_example_works_as_written(app, tmp_path, monkeypatch):
    from werkzeug.serving import make_server

    code = doc_block("group-chats-client")
    assert DOC_BASE in code
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        (tmp_path / "var" / "data").mkdir(parents=True)
        (tmp_path / "var" / "data" / "admin-token").write_text(ADMIN + "\n")
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("no_proxy", "*")
        env: dict = {}
        exec(compile(code.replace(DOC_BASE, f"http://127.0.0.1:{srv.server_port}"), "docs/guides/group-chats.md",
                     "exec"), env)
        assert env["run"].startswith("run_") and set(env["written"]) == {ANN, BOB}
        assert all(entries for entries in env["written"].values())
        assert sorted(env["lines"]) == [f"{p}: {p} talked about the driving test." for p in (ANN, BOB)]
        assert env["job"]["kind"] == "channel-memorize"
        assert env["bot"].wait_job(env["job"], timeout=30, poll=0.05)["state"] == "done"
    finally:
        srv.shutdown()
