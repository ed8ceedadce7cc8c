"""Hostile input gets a fast, clear JSON error and writes nothing (issue: integrity under hostile input).

Each case failed before (a 500, an HTML page, a 30-second request, an
owner flood): size limits (413), deep JSON (400), the ends of the calendar
(422), doubled slashes (404 JSON), security headers on every HTML page,
owner ids that read as options, owner quotas (403 / 429 + Retry-After), a
full disk (507 + Retry-After), and a deleted owner never coming back as an
empty folder.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest
from apiworld import ADMIN, OWNER, auth

from webapp import create_app
from webapp.hosting import get_host
from wikimem.context import WriteContext
from wikimem.host.access.tokens import append_token, mint_token
from wikimem.limits import MAX_BATCH_CHARS, MAX_CONTENT_CHARS, MAX_OPS, MAX_QUERY_CHARS, MAX_TURN_CHARS

O = f"/api/v1/owners/{OWNER}"


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)[:300]
    assert response.mimetype == "application/json"
    return response.get_json()["error"]


def _commits(world) -> str:
    with world.app.app_context():
        return get_host().owner(OWNER).head()


@pytest.mark.parametrize("path,body", [
    ("/retrieve", {"query": "海" * (MAX_QUERY_CHARS + 1)}),
    ("/items/f/a", {"content": "x" * (MAX_CONTENT_CHARS + 1)}),
    ("/diary", {"content": "海" * (MAX_CONTENT_CHARS + 1)}),
    ("/batch", {"ops": [{"op": "add", "file": "f", "name": f"n{i}", "content": "x"} for i in range(MAX_OPS + 1)]}),
    ("/batch", {"ops": [{"op": "add", "file": "f", "name": f"n{i}", "content": "x" * (MAX_CONTENT_CHARS - 10)}
                        for i in range(MAX_BATCH_CHARS // MAX_CONTENT_CHARS + 1)]}),
])
def test_oversized_values_are_413_and_write_nothing(world, path, body):
    world.app.config["MAX_CONTENT_LENGTH"] = 4 * 1024 * 1024  # the body may pass; the value may not
    head = _commits(world)
    method = world.client.put if path.startswith("/items") else world.client.post
    err = _error(method(O + path, headers=auth(ADMIN), json=body), 413)
    assert err["code"] == "too_large" and "at most" in err["message"]
    assert _commits(world) == head


def test_an_oversized_diary_tool_call_is_told_to_the_agent_and_writes_nothing(world):
    head = _commits(world)
    r = world.client.post(O + "/diary-tool", headers=auth(ADMIN),
                          json={"arguments": {"content": "x" * (MAX_CONTENT_CHARS + 1)}})
    err = _error(r, 400)  # a tool call's errors go back to the agent as its result
    assert err["code"] == "bad_tool_call" and "at most" in err["message"]
    assert _commits(world) == head


def test_an_oversized_memorize_turn_is_refused_before_the_model_is_asked(tmp_path):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path), "ADMIN_TOKEN": ADMIN,
                      "LLM_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "m", "MAX_CONTENT_LENGTH": 1 << 22})
    client = app.test_client()
    client.put(O, headers=auth(ADMIN))
    r = client.post(O + "/memorize", headers=auth(ADMIN), json={"turn": "x" * (MAX_TURN_CHARS + 1)})
    assert _error(r, 413)["code"] == "too_large"  # not 502: no model at 127.0.0.1:9 was tried


def test_a_huge_query_is_refused_fast_while_another_client_is_served(world):
    big = {"query": "海边" * 200_000}  # 400k CJK characters: 30 s of jieba before
    world.app.config["MAX_CONTENT_LENGTH"] = 4 * 1024 * 1024
    results = {}

    def attacker():
        results["attack"] = world.app.test_client().post(O + "/retrieve", headers=auth(ADMIN), json=big).status_code

    t = threading.Thread(target=attacker)
    t.start()
    served = world.client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": "海边"})
    t.join(timeout=60)
    assert served.status_code == 200 and results["attack"] == 413


def test_deeply_nested_json_is_400(world):
    r = world.client.post(O + "/diary", headers=auth(ADMIN), data="[" * 50_000, content_type="application/json")
    assert _error(r, 400)["code"] == "bad_request"


@pytest.mark.parametrize("body", [
    {"content": "x", "ts": "9999-12-31T23:59:59-14:00"},
    {"content": "x", "ts": "0001-01-01T00:00:00+14:00"},
    {"content": "x", "ts": "0001-01-01T00:00:00Z", "tz": "America/Los_Angeles"},
])
def test_instants_past_the_ends_of_the_calendar_are_422(world, body):
    assert _error(world.client.post(O + "/diary", headers=auth(ADMIN), json=body), 422)["code"] == "invalid_value"


def test_a_window_over_the_whole_calendar_answers(world):
    r = world.client.post(O + "/retrieve", headers=auth(ADMIN),
                          json={"query": "海", "time_range": ["0001-01-01", "9999-12-31"]})
    assert r.status_code == 200


@pytest.mark.parametrize("path", ["/api/v1//owners", "/api/v1/owners//user:xnne", "/api/v1/owners/user:xnne//files"])
def test_doubled_slashes_are_a_json_404_not_a_redirect_page(world, path):
    r = world.client.get(path, headers=auth(ADMIN))
    assert r.status_code == 404 and r.mimetype == "application/json"


@pytest.mark.parametrize("path", ["/nowhere", "/static/nothing.css", "/admin/owners/user:xnne", "/login"])
def test_every_html_page_carries_the_security_headers(world, path):
    r = world.client.get(path)
    if r.mimetype == "text/html":
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]
        assert r.headers["X-Frame-Options"] == "DENY"
    assert r.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("owner_id", ["--help", "-rf", ".hidden", "_x", "@x"])
def test_owner_ids_that_read_as_options_or_hidden_files_are_refused(world, owner_id):
    assert _error(world.client.put(f"/api/v1/owners/{owner_id}", headers=auth(ADMIN)), 422)["code"] == "invalid_name"


def _app_with_token(tmp_path, prefix: str, **config):
    tokens = tmp_path / "tokens.jsonl"
    secret, entry = mint_token("acme", ["read", "write"], prefix)
    append_token(tokens, entry)
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens), **config})
    return app.test_client(), secret


def test_a_prefix_token_may_hold_only_its_quota_of_owners(tmp_path):
    client, secret = _app_with_token(tmp_path, "user:acme:", QUOTA_OWNERS=3, QUOTA_OWNERS_PER_MINUTE=0)
    for n in range(3):
        assert client.put(f"/api/v1/owners/user:acme:{n}", headers=auth(secret)).status_code == 201
    err = _error(client.put("/api/v1/owners/user:acme:3", headers=auth(secret)), 403)
    assert err["code"] == "quota_exceeded" and "WIKIMEM_QUOTA_OWNERS" in err["message"]
    assert client.put("/api/v1/owners/user:acme:1", headers=auth(secret)).status_code == 200  # existing: fine
    assert client.put("/api/v1/owners/user:acme:3", headers=auth(ADMIN)).status_code == 201  # admin: no quota
    assert not (tmp_path / "data" / "owners" / "user_3aacme_3a4").exists()


def test_a_prefix_token_may_create_only_so_many_owners_a_minute(tmp_path):
    client, secret = _app_with_token(tmp_path, "user:acme:", QUOTA_OWNERS=0, QUOTA_OWNERS_PER_MINUTE=5)
    codes = [client.put(f"/api/v1/owners/user:acme:{n}", headers=auth(secret)).status_code for n in range(8)]
    assert codes.count(201) <= 5 + 5 and 429 in codes  # fixed windows: a window's edge may pass twice the rate
    refused = client.put("/api/v1/owners/user:acme:late", headers=auth(secret))
    if refused.status_code == 429:
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        assert refused.get_json()["error"]["code"] == "quota_exceeded"


def test_a_new_owner_keeps_its_history_index_small(world):
    world.client.put("/api/v1/owners/user:small", headers=auth(ADMIN))
    git_dir = Path(world.app.config["DATA_ROOT"]) / "owners" / "user_3asmall" / ".git"
    wal = git_dir / "wikimem-history.sqlite3-wal"
    assert not wal.exists() or wal.stat().st_size <= 64 * 1024


def test_a_full_disk_is_507_with_retry_after_and_writes_nothing(world, monkeypatch):
    from wikimem.store import Door

    def full(door, rel, data, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", rel)

    head = _commits(world)
    monkeypatch.setattr(Door, "write", full)  # every file of an owner folder is written through its door
    r = world.client.put(O + "/items/f/a", headers=auth(ADMIN), json={"content": "x"})
    err = _error(r, 507)
    assert err["code"] == "storage_full" and r.headers["Retry-After"]
    monkeypatch.undo()
    assert _commits(world) == head
    assert world.client.get(O + "/items/f/a", headers=auth(ADMIN)).status_code == 404


def test_a_writer_that_waited_for_a_deleted_owner_does_not_bring_its_folder_back(world, tmp_path):
    from wikimem.locking import FileLock
    from wikimem.store.writer import LOCK_NAME

    with world.app.app_context():
        owner = get_host().owner(OWNER)
    root, result = owner.root, {}

    def late_writer():
        try:
            owner.add("f", "a", "late", ctx=WriteContext(actor="late"))
            result["outcome"] = "written"
        except Exception as exc:  # noqa: BLE001 - the kind is asserted below
            result["outcome"] = type(exc).__name__

    deleter = FileLock(root / LOCK_NAME)  # another worker, deleting the owner under its lock
    with deleter.hold():
        t = threading.Thread(target=late_writer)
        t.start()
        t.join(0.5)  # the writer is queued on the owner lock now
        os.rename(root, tmp_path / "trash")
    t.join(30)
    assert result["outcome"] == "NotFound"
    assert not root.exists()


@pytest.mark.parametrize("field", ["budget_tokens", "limit"])
@pytest.mark.parametrize("value", [0, -1])
def test_retrieve_numbers_below_the_schemas_minimum_are_422(world, field, value):
    r = world.client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": "海", field: value})
    assert _error(r, 422)["code"] == "invalid_value"  # an integer, as the schema says, out of its range
