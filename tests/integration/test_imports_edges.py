"""Imports through every edge: the JSON API, the admin pages (Flask's test client) and the ``wikimem`` command;
each through the host's gate (an audit event, actor ``import``), with its scopes and its refusals."""

from __future__ import annotations

import base64
import io
import json
import logging
import re

import pytest
from apiworld import ADMIN, auth, finished_job
from cardfiles import card_png, chat_file, stand_in_reply, v2_card, v3_card

from webapp import create_app
from webapp.hosting import get_host
from wikimem.cli import main as cli
from wikimem.context import WriteContext

C = "/api/v1"
TZ = "Europe/Berlin"


@pytest.fixture
def app(tmp_path, llm, capsys):
    llm.reply_fn = stand_in_reply
    tokens = tmp_path / "tokens.jsonl"
    secrets = {}
    for name, args in (("writer", ["--scope", "read", "--scope", "write"]),
                       ("kai-bot", ["--scope", "read", "--scope", "write", "--character", "kai"]),
                       ("mira-bot", ["--scope", "read", "--scope", "write", "--character", "mira"])):
        assert cli(["token", "mint", name, *args, "--file", str(tokens)]) == 0
        secrets[name] = capsys.readouterr().out.strip()
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens), "LLM_URL": llm.url, "LLM_MODEL": "fake-chat"})
    app.secrets = secrets
    client = app.test_client()
    assert client.put(f"{C}/owners/user:ann", headers=auth(ADMIN)).status_code == 201
    return app


def _events(caplog, action: str) -> list:
    return [r for r in caplog.records if r.name == "wikimem.audit" and r.audit == action]


# -- the API -----------------------------------------------------------------------------------------

def test_a_card_is_previewed_then_imported_over_the_api(app, caplog):
    client = app.test_client()
    png = base64.b64encode(card_png(v3_card("Kai"), "ccv3")).decode()
    preview = client.post(f"{C}/characters/import", json={"file": png, "preview": True}, headers=auth(ADMIN))
    assert preview.status_code == 200 and preview.get_json()["preview"]["created"] is True
    assert client.get(f"{C}/characters/kai", headers=auth(ADMIN)).status_code == 404  # a preview writes nothing
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        done = client.post(f"{C}/characters/import", json={"file": png}, headers=auth(ADMIN))
    assert done.status_code == 201, done.get_json()
    body = done.get_json()
    assert body["character"] == "kai" and body["commit"] and body["run"].startswith("run_")
    (event,) = _events(caplog, "import-card")
    assert (event.owner, event.actor, event.as_actor, event.result, event.run) == ("char:kai", "admin", "import",
                                                                                   "ok", body["run"])
    again = client.post(f"{C}/characters/import", json={"card": v3_card("Kai")}, headers=auth(ADMIN))
    assert again.status_code == 200 and again.get_json()["commit"] is None
    card = client.get(f"{C}/characters/kai/card", headers=auth(app.secrets["writer"])).get_json()
    assert card == v3_card("Kai")
    lore = client.get(f"{C}/owners/char:kai/lorebook", headers=auth(ADMIN)).get_json()
    assert [e["key"] for e in lore["entries"].values()][0] == ["dragon", "wyrm"]


@pytest.mark.parametrize("body, status, code", [
    ({"file": "not base64!"}, 422, "bad_import"),
    ({"file": base64.b64encode(b"\x89PNG\r\n\x1a\n broken").decode()}, 422, "bad_import"),
    ({"card": {"spec": "chara_card_v9", "data": {}}}, 422, "bad_import"),
    ({"card": "a string"}, 400, "bad_request"),
    ({"card": v2_card(), "file": "eA=="}, 400, "bad_request"),
    ({}, 400, "bad_request"),
    ({"card": v2_card(), "character": "Bad Id"}, 422, "invalid_name"),
    ({"card": v2_card(), "shared_writes": "always"}, 422, "invalid_value"),
])
def test_a_bad_card_request_is_refused_and_writes_nothing(app, body, status, code):
    client = app.test_client()
    answer = client.post(f"{C}/characters/import", json=body, headers=auth(ADMIN))
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (status, code), answer.get_json()
    assert client.get(f"{C}/characters", headers=auth(ADMIN)).get_json()["characters"] == []


def test_a_card_import_needs_the_admin_scope(app):
    answer = app.test_client().post(f"{C}/characters/import", json={"card": v2_card()},
                                    headers=auth(app.secrets["writer"]))
    assert answer.status_code == 403


def test_an_import_takes_a_body_past_the_usual_limit_up_to_its_own(app, monkeypatch):
    client = app.test_client()
    usual = app.config["MAX_CONTENT_LENGTH"]
    big = {"file": base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * (usual * 2)).decode()}
    answer = client.post(f"{C}/characters/import", json=big, headers=auth(ADMIN))
    assert answer.status_code == 422 and answer.get_json()["error"]["code"] == "bad_import"  # read, then refused
    assert client.put(f"{C}/owners/user:ann/items/a/b", json={"content": "x" * (usual * 2)},
                      headers=auth(ADMIN)).status_code == 413  # elsewhere the usual limit holds
    assert client.post(f"{C}/characters/import", json=big).status_code == 401  # a stranger's body is not read
    import webapp.api.imports as edge

    monkeypatch.setattr(edge, "base64_size", lambda limit: usual)  # past the import's own limit: 413
    assert client.post(f"{C}/characters/import", json=big, headers=auth(ADMIN)).status_code == 413


def test_a_chat_is_previewed_then_imported_as_one_job_and_rolled_back_over_the_api(app, llm, caplog):
    client = app.test_client()
    client.post(f"{C}/characters/import", json={"card": v2_card()}, headers=auth(ADMIN))
    chat = chat_file().decode()
    owner = f"{C}/owners/user:ann"
    preview = client.post(owner + "/import/chat", json={"chat": chat, "character": "kai", "tz": TZ, "preview": True},
                          headers=auth(app.secrets["writer"])).get_json()["preview"]
    assert (preview["turns"], preview["days"], preview["model"]) == (4, ["2024-05-12", "2024-05-13", "2024-05-15"],
                                                                      True)
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        started = client.post(owner + "/import/chat", json={"chat": chat, "character": "kai", "tz": TZ},
                              headers=auth(app.secrets["writer"]))
    assert started.status_code == 202 and started.headers["Location"].startswith(f"{C}/jobs/job_")
    run = started.get_json()["run"]
    done = finished_job(client, started.get_json()["job"])
    assert done["state"] == "done" and done["results"][0]["result"]["done"] == 4 and llm.chat_calls == 4
    days = client.get(owner + "/diary/dates?character=kai", headers=auth(ADMIN)).get_json()["dates"]
    assert days == ["2024-05-12", "2024-05-13", "2024-05-15"]
    assert client.get(owner + "/diary/dates", headers=auth(ADMIN)).get_json()["dates"] == []
    (event,) = _events(caplog, "import-chat")
    assert (event.owner, event.layer, event.as_actor, event.run, event.turns) == ("user:ann", "kai", "import", run, 4)
    databank = client.get(owner + "/lorebook?character=kai&format=databank", headers=auth(app.secrets["writer"]))
    assert databank.mimetype == "text/markdown" and "Ann told me: Twice!" in databank.get_data(as_text=True)
    undone = client.post(owner + "/import/rollback", json={"run": run}, headers=auth(ADMIN))
    assert undone.status_code == 200 and undone.get_json()["commit"]
    assert client.get(owner + "/diary/dates?character=kai", headers=auth(ADMIN)).get_json()["dates"] == []
    assert client.post(owner + "/import/rollback", json={"run": run}, headers=auth(ADMIN)).status_code == 404


def test_a_character_bound_token_imports_into_its_own_layer_only(app):
    client = app.test_client()
    client.post(f"{C}/characters/import", json={"card": v2_card()}, headers=auth(ADMIN))
    body = {"chat": chat_file().decode(), "character": "kai", "transcript": True}
    own = client.post(f"{C}/owners/user:ann/import/chat", json=body, headers=auth(app.secrets["kai-bot"]))
    assert own.status_code == 201 and own.get_json()["transcript"]["items"] == 4
    other = client.post(f"{C}/owners/user:ann/import/chat", json=body, headers=auth(app.secrets["mira-bot"]))
    assert other.status_code == 403


@pytest.mark.parametrize("chat, line, said", [
    ('{"user_name": "Ann"}\n{"mes": "hi", "is_user": true, "send_date": "2024-05-12T10:00:00Z"}\nnot json\n', 3,
     "not JSON"),
    ('{"user_name": "Ann"}\n{"name": "Ann"}\n', 2, "needs mes"),
])
def test_a_chat_that_is_not_jsonl_is_422_with_its_line_number(app, chat, line, said):
    client = app.test_client()
    client.post(f"{C}/characters/import", json={"card": v2_card()}, headers=auth(ADMIN))
    answer = client.post(f"{C}/owners/user:ann/import/chat", json={"chat": chat, "character": "kai"},
                         headers=auth(ADMIN))
    error = answer.get_json()["error"]
    assert answer.status_code == 422 and error["code"] == "bad_import" and error["message"].startswith(f"line {line}")
    assert said in error["message"]


def test_without_a_model_the_chat_route_says_so_and_offers_the_transcript(tmp_path):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN})
    client = app.test_client()
    client.put(f"{C}/owners/user:ann", headers=auth(ADMIN))
    client.post(f"{C}/characters/import", json={"card": v2_card()}, headers=auth(ADMIN))
    answer = client.post(f"{C}/owners/user:ann/import/chat", json={"chat": chat_file().decode(), "character": "kai"},
                         headers=auth(ADMIN))
    assert answer.status_code == 501 and "transcript" in answer.get_json()["error"]["message"]


def test_a_person_moves_between_two_apps_with_the_same_heads(app, tmp_path):
    client = app.test_client()
    client.put(f"{C}/owners/user:ann/items/preferences/tea", json={"content": "Green tea."}, headers=auth(ADMIN))
    bundle = client.get(f"{C}/owners/user:ann/export?format=bundle", headers=auth(ADMIN))
    head = client.get(f"{C}/owners/user:ann", headers=auth(ADMIN)).get_json()["head"]
    other = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "other"), "ADMIN_TOKEN": ADMIN}).test_client()
    made = other.post(f"{C}/owners/user:ann/import/person", data=bundle.data,
                      content_type="application/octet-stream", headers=auth(ADMIN))
    assert made.status_code == 201 and made.get_json()["person"]["head"] == head
    assert other.get(f"{C}/owners/user:ann/items/preferences/tea", headers=auth(ADMIN)).status_code == 200
    again = other.post(f"{C}/owners/user:ann/import/person", data=bundle.data, headers=auth(ADMIN))
    assert again.status_code == 409
    replaced = other.post(f"{C}/owners/user:ann/import/person?replace=true", data=bundle.data, headers=auth(ADMIN))
    assert replaced.status_code == 201 and replaced.get_json()["person"]["replaced"] is True
    junk = other.post(f"{C}/owners/user:bob/import/person", data=b"junk", headers=auth(ADMIN))
    assert junk.status_code == 422 and junk.get_json()["error"]["code"] == "bad_import"


# -- the admin pages ---------------------------------------------------------------------------------

def _csrf(html: str) -> str:
    found = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html)
    assert found
    return found.group(1)


def _signed_in(app):
    client = app.test_client()
    client.post("/login", data={"csrf_token": _csrf(client.get("/login").get_data(as_text=True)), "token": ADMIN})
    return client, _csrf(client.get("/admin/imports").get_data(as_text=True))


def test_the_admin_imports_a_card_and_a_chat_with_previews_and_rolls_it_back(app, llm):
    client, token = _signed_in(app)
    card = v2_card(description="<script>alert('x')</script> a barista")
    page = client.post("/admin/imports/card", data={"csrf_token": token, "file": (io.BytesIO(card_png(card)),
                                                                                   "kai.png")},
                       content_type="multipart/form-data")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "A <b>new character</b> <code>kai</code>" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html  # the card's HTML shown as text
    data = re.search(r'name="data" value="([^"]+)"', html).group(1)
    done = client.post("/admin/imports/card", data={"csrf_token": token, "data": data, "character": "kai",
                                                    "step": "import"})
    assert done.status_code == 302 and done.headers["Location"].endswith("/admin/owners/char:kai")
    preview = client.post("/admin/imports/chat", data={"csrf_token": token, "owner": "user:ann", "character": "kai",
                                                       "tz": TZ, "file": (io.BytesIO(chat_file()), "chat.jsonl")},
                          content_type="multipart/form-data")
    html = preview.get_data(as_text=True)
    assert preview.status_code == 200 and '<dd id="chat-turns">4</dd>' in html and "Memorize 4 turns" in html
    data = re.search(r'name="data" value="([^"]+)"', html).group(1)
    started = client.post("/admin/imports/chat", data={"csrf_token": token, "data": data, "owner": "user:ann",
                                                       "character": "kai", "tz": TZ, "step": "memorize"})
    job_url = started.headers["Location"]
    assert started.status_code == 302 and "/admin/imports/jobs/job_" in job_url
    with app.app_context():
        job = get_host().imports.chat_job(job_url.rsplit("/", 1)[1])
    assert finished_job(app.test_client(), {"id": job.id})["state"] == "done"
    page = client.get(job_url).get_data(as_text=True)
    assert 'id="job-state">done' in page and "4 of 4 turns" in page and 'id="import-rollback"' in page
    rolled = client.post("/admin/imports/rollback", data={"csrf_token": token, "owner": "user:ann",
                                                          "run": job.params["run"], "next": job_url + "?rolled=1"})
    assert rolled.status_code == 302
    assert 'id="rolled-back"' in client.get(rolled.headers["Location"]).get_data(as_text=True)
    with app.app_context():
        assert get_host().owner("user:ann").diary_dates("kai") == []


def test_the_admin_exports_and_imports_a_person_and_a_lorebook(app, tmp_path):
    client, token = _signed_in(app)
    with app.app_context():
        get_host().owner("user:ann").add("preferences", "tea", "Green tea.", ctx=WriteContext(actor="op"))
    bundle = client.get("/admin/imports/export?owner=user:ann")
    assert bundle.status_code == 200 and bundle.data.startswith(b"# v2 git bundle")
    made = client.post("/admin/imports/person", data={"csrf_token": token, "owner": "user:copy",
                                                      "file": (io.BytesIO(bundle.data), "ann.bundle")},
                       content_type="multipart/form-data")
    assert made.status_code == 302
    with app.app_context():
        assert get_host().owner("user:copy").head() == get_host().owner("user:ann").head()
    book = client.get("/admin/imports/lorebook?owner=user:ann&format=worldinfo")
    assert book.status_code == 200 and json.loads(book.data)["entries"]["0"]["key"] == ["tea"]


def test_a_card_over_the_upload_limit_of_a_stranger_is_not_read(app):
    client = app.test_client()
    answer = client.post("/admin/imports/card", data={"file": (io.BytesIO(b"x" * 2_000_000), "big.png")},
                         content_type="multipart/form-data")
    assert answer.status_code in (302, 400, 413)  # sent to sign in, or refused: never read as a card


# -- the command line ---------------------------------------------------------------------------------

def test_the_command_line_imports_a_card_and_a_chat_and_exports_them(tmp_path, llm, capsys, monkeypatch, caplog):
    llm.reply_fn = stand_in_reply
    data = str(tmp_path / "data")
    monkeypatch.setenv("WIKIMEM_LLM_URL", llm.url)
    monkeypatch.setenv("WIKIMEM_LLM_MODEL", "fake-chat")
    (tmp_path / "kai.png").write_bytes(card_png(v2_card()))
    (tmp_path / "chat.jsonl").write_bytes(chat_file())
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        assert cli(["import", "card", str(tmp_path / "kai.png"), "--preview", "--data", data]) == 0
        assert json.loads(capsys.readouterr().out)["created"] is True
        assert cli(["import", "card", str(tmp_path / "kai.png"), "--data", data]) == 0
        assert json.loads(capsys.readouterr().out)["character"] == "kai"
        assert cli(["character", "put", "kai", "--name", "Kai", "--data", data]) == 0  # (persona changed: fine)
        capsys.readouterr()
        from wikimem.host import build_host, load_config

        build_host(load_config({"DATA_ROOT": data})).create_owner("user:ann")
        assert cli(["import", "chat", str(tmp_path / "chat.jsonl"), "--owner", "user:ann", "--character", "kai",
                    "--tz", TZ, "--preview", "--data", data]) == 0
        assert json.loads(capsys.readouterr().out)["turns"] == 4
        assert cli(["import", "chat", str(tmp_path / "chat.jsonl"), "--owner", "user:ann", "--character", "kai",
                    "--tz", TZ, "--data", data]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["done"] == 4 and result["entries"] == 4
        assert cli(["export", "lorebook", "--owner", "user:ann", "--character", "kai", "--format", "databank",
                    "--data", data]) == 0
        assert "### 2024-05-13" in capsys.readouterr().out
        out = tmp_path / "ann.bundle"
        assert cli(["export", "person", "--owner", "user:ann", "-o", str(out), "--data", data]) == 0
        assert cli(["import", "person", str(out), "--owner", "user:ann", "--data", str(tmp_path / "other")]) == 0
        moved = json.loads(capsys.readouterr().out)
        assert moved["owner"] == "user:ann" and moved["unregistered"] == ["kai"]
        assert cli(["import", "rollback", result["run"], "--owner", "user:ann", "--data", data]) == 0
        assert cli(["import", "rollback", result["run"], "--owner", "user:ann", "--data", data]) == 2
        assert "wrote nothing" in capsys.readouterr().err
        assert cli(["export", "card", "kai", "--data", data]) == 0
        assert json.loads(capsys.readouterr().out)["data"]["name"] == "Kai"
    actions = [(r.audit, r.via, r.result) for r in caplog.records if r.name == "wikimem.audit"]
    assert ("import-card", "cli", "ok") in actions and ("import-chat", "cli", "ok") in actions
    assert ("export-person", "cli", "ok") in actions and ("import-person", "cli", "ok") in actions
    assert ("import-rollback", "cli", "refused") in actions


def test_the_command_line_names_the_line_of_a_bad_chat(tmp_path, capsys):
    data = str(tmp_path / "data")
    (tmp_path / "kai.json").write_text(json.dumps(v2_card()))
    assert cli(["import", "card", str(tmp_path / "kai.json"), "--data", data]) == 0
    from wikimem.host import build_host, load_config

    build_host(load_config({"DATA_ROOT": data})).create_owner("user:ann")
    (tmp_path / "bad.jsonl").write_text('{"user_name": "Ann"}\n{"mes": 5, "is_user": true}\n')
    capsys.readouterr()
    assert cli(["import", "chat", str(tmp_path / "bad.jsonl"), "--owner", "user:ann", "--character", "kai",
                "--transcript", "--data", data]) == 2
    assert "line 2: not a message" in capsys.readouterr().err
