"""The JSON API over a real data root (real dulwich repositories), through Flask's test client.

Auth and scopes, the one error shape, body limits, hostile names, If-Match,
Idempotency-Key, writes answering with the commit that ``git`` sees,
memorize against a chat server on 127.0.0.1, revert/rollback conflicts,
export, and that no response ever carries a traceback.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import zipfile
from urllib.parse import quote

import pytest
from apiworld import ADMIN, OWNER
from apiworld import auth as _auth
from fakes import FakeOpenAI

from webapp import create_app
from webapp.hosting import get_host
from wikimem.host import encode_owner_id

O = f"/api/v1/owners/{OWNER}"


def _repo(app, owner=OWNER):
    return os.path.join(app.config["DATA_ROOT"], "owners", encode_owner_id(owner))


def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout.strip()


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"error"} and {"code", "message"} <= set(body["error"])
    assert "Traceback" not in response.get_data(as_text=True)
    return body["error"]


# -- auth ---------------------------------------------------------------------

def test_healthz_needs_no_token_but_the_api_does(world):
    client, secrets = world.client, world.secrets
    assert client.get("/healthz").get_json() == {"ok": True}
    r = client.get("/api/v1/version")
    assert _error(r, 401)["code"] == "unauthorized" and r.headers["WWW-Authenticate"].startswith("Bearer")
    _error(client.get("/api/v1/version", headers=_auth("wmk_not-a-token")), 401)
    _error(client.get("/api/v1/version", headers={"Authorization": f"Basic {ADMIN}"}), 401)
    assert client.get("/api/v1/version", headers=_auth(secrets["reader"])).get_json()["api"] == 1


def test_scopes_and_owner_prefixes(world):
    client, secrets = world.client, world.secrets
    put = dict(json={"content": "x"})
    assert _error(client.put(O + "/items/notes/a", headers=_auth(secrets["reader"]), **put), 403)["code"] == "forbidden"
    assert client.put(O + "/items/notes/a", headers=_auth(secrets["writer"]), **put).status_code == 201  # created
    _error(client.post(O + "/rollback", headers=_auth(secrets["writer"]), json={"run": "r"}), 403)
    _error(client.delete(O, headers=_auth(secrets["writer"])), 403)
    # A token for user:lu… reaches user:lumi, not user:xnne, and lists only its owners.
    _error(client.get(O + "/files", headers=_auth(secrets["scoped"])), 403)
    assert client.put("/api/v1/owners/user:lumi", headers=_auth(secrets["scoped"])).status_code == 201
    listed = client.get("/api/v1/owners", headers=_auth(secrets["scoped"])).get_json()["owners"]
    assert [o["id"] for o in listed] == ["user:lumi"]
    everyone = client.get("/api/v1/owners", headers=_auth(ADMIN)).get_json()["owners"]
    assert [o["id"] for o in everyone] == ["user:lumi", "user:xnne"]


# -- writes and their commits ---------------------------------------------------

def test_put_item_answers_with_the_commit_git_sees_and_its_trailers(world):
    app, client = world.app, world.client
    r = client.put(O + "/items/preferences/" + quote("likes the sea", safe=""), headers=_auth(ADMIN),
                   json={"content": "喜欢海边", "run": "run_7", "actor": "Elaina", "source_conv": "conv_1"})
    assert r.status_code == 201
    body = r.get_json()
    repo = _repo(app)
    assert body["commit"] == _git(repo, "rev-parse", "main")
    assert body["item"]["content"] == "喜欢海边" and body["replayed"] is False
    message = _git(repo, "log", "-1", "--format=%an%n%B")
    assert message.startswith("Elaina\nadd preferences/likes the sea")
    assert "Wikimem-Run: run_7" in message and "Wikimem-Source-Conv: conv_1" in message
    got = client.get(O + "/items/preferences/" + quote("likes the sea", safe=""), headers=_auth(ADMIN))
    assert got.get_json()["item"]["content"] == "喜欢海边" and got.headers["ETag"] == r.headers["ETag"]
    history = client.get(O + "/history?run=run_7", headers=_auth(ADMIN)).get_json()["entries"]
    assert [h["id"] for h in history] == [body["commit"]] and history[0]["actor"] == "Elaina"


def test_if_match_refuses_a_stale_write_with_412_and_writes_nothing(world):
    app, client = world.app, world.client
    url = O + "/items/notes/plan"
    first = client.put(url, headers=_auth(ADMIN), json={"content": "v1"})
    etag = first.headers["ETag"]
    assert client.put(url, headers=_auth(ADMIN, **{"If-Match": etag}), json={"content": "v2"}).status_code == 200
    head = _git(_repo(app), "rev-parse", "main")
    err = _error(client.put(url, headers=_auth(ADMIN, **{"If-Match": etag}), json={"content": "v3"}), 412)
    assert err["code"] == "precondition_failed"
    assert client.get(url, headers=_auth(ADMIN)).get_json()["item"]["content"] == "v2"
    assert _git(_repo(app), "rev-parse", "main") == head
    # A commit id works as the owner-level precondition.
    stale = first.get_json()["commit"]
    _error(client.delete(url, headers=_auth(ADMIN, **{"If-Match": stale})), 412)
    assert client.delete(url, headers=_auth(ADMIN, **{"If-Match": head})).get_json()["removed"] is True


def test_a_retried_diary_append_with_the_same_key_writes_once(world):
    app, client = world.app, world.client
    headers = _auth(ADMIN, **{"Idempotency-Key": "append-42"})
    body = {"content": "下午去了海边。", "date": "2026-07-21", "time": "15:00", "run": "run_9"}
    first = client.post(O + "/diary", headers=headers, json=body)
    again = client.post(O + "/diary", headers=headers, json=body)
    assert first.status_code == again.status_code == 201
    assert again.get_json()["replayed"] is True and again.get_json()["commit"] == first.get_json()["commit"]
    day = client.get(O + "/diary/2026-07-21", headers=_auth(ADMIN)).get_json()["entries"]
    assert [e["content"] for e in day] == ["下午去了海边。"]
    assert _git(_repo(app), "rev-list", "--count", "main") == "2"  # the owner's first commit + this one
    fresh = client.post(O + "/diary", headers=_auth(ADMIN, **{"Idempotency-Key": "append-43"}), json=body)
    assert fresh.get_json()["replayed"] is False
    assert len(client.get(O + "/diary/2026-07-21", headers=_auth(ADMIN)).get_json()["entries"]) == 2


def test_batch_is_one_commit_or_nothing(world):
    app, client = world.app, world.client
    ops = [{"op": "add", "file": "people", "name": "sister", "content": "小雨"},
           {"op": "diary", "content": "聊到了妹妹。", "date": "2026-07-20", "time": "20:00"}]
    r = client.post(O + "/batch", headers=_auth(ADMIN), json={"ops": ops, "run": "run_b", "message": "two things"})
    assert r.status_code == 200 and len(r.get_json()["results"]) == 2
    head = _git(_repo(app), "rev-parse", "main")
    assert head == r.get_json()["commit"]
    bad = ops[:1] + [{"op": "add", "file": "Bad Name", "name": "x", "content": "y"}]
    _error(client.post(O + "/batch", headers=_auth(ADMIN), json={"ops": bad}), 422)
    assert _git(_repo(app), "rev-parse", "main") == head


def test_rollback_conflict_is_409_item_by_item_and_force_writes(world):
    app, client = world.app, world.client
    url = O + "/items/work/job"
    client.put(url, headers=_auth(ADMIN), json={"content": "barista", "run": "run_bad"})
    client.put(url, headers=_auth(ADMIN), json={"content": "teacher"})
    err = _error(client.post(O + "/rollback", headers=_auth(ADMIN), json={"run": "run_bad"}), 409)
    assert err["code"] == "conflict" and len(err["conflicts"]) == 1
    assert client.get(url, headers=_auth(ADMIN)).get_json()["item"]["content"] == "teacher"
    preview = client.post(O + "/rollback", headers=_auth(ADMIN), json={"run": "run_bad", "preview": True})
    assert preview.get_json()["plan"]["conflicts"]
    forced = client.post(O + "/rollback", headers=_auth(ADMIN), json={"run": "run_bad", "force": True})
    assert forced.status_code == 200 and forced.get_json()["commit"] == _git(_repo(app), "rev-parse", "main")
    _error(client.get(url, headers=_auth(ADMIN)), 404)


def test_retrieve_as_of_an_older_commit(world):
    client = world.client
    url = O + "/items/preferences/place"
    old = client.put(url, headers=_auth(ADMIN), json={"content": "loves the sea"}).get_json()["commit"]
    client.put(url, headers=_auth(ADMIN), json={"content": "hates mountains"})
    now = client.post(O + "/retrieve", headers=_auth(ADMIN), json={"query": "sea"}).get_json()
    then = client.post(O + "/retrieve", headers=_auth(ADMIN), json={"query": "sea", "as_of": old}).get_json()
    assert now["items"] == []
    assert [i["item"]["content"] for i in then["items"]] == ["loves the sea"]
    _error(client.post(O + "/retrieve", headers=_auth(ADMIN), json={"query": "sea", "as_of": "deadbeef00"}), 404)


def test_memorize_runs_the_configured_chat_endpoint_as_one_run(tmp_path):
    with FakeOpenAI() as llm:
        llm.replies.append(json.dumps([{"content": "去了海边散步。"}, {"content": "想八月去青岛。"}],
                                      ensure_ascii=False))
        app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path), "ADMIN_TOKEN": ADMIN,
                          "LLM_URL": llm.url, "LLM_MODEL": "fake-chat"})
        client = app.test_client()
        client.put(O, headers=_auth(ADMIN))
        r = client.post(O + "/memorize", headers=_auth(ADMIN, **{"Idempotency-Key": "turn-1"}),
                        json={"turn": "user: 今天去海边了", "run": "run_m"})
        again = client.post(O + "/memorize", headers=_auth(ADMIN, **{"Idempotency-Key": "turn-1"}),
                            json={"turn": "user: 今天去海边了", "run": "run_m"})
        assert llm.chat_calls == 1  # the retry did not ask the model again
    body = r.get_json()
    assert r.status_code == 200 and body["run"] == "run_m" and len(body["entries"]) == 2
    assert again.get_json()["commit"] == body["commit"]
    history = client.get(O + "/history?run=run_m", headers=_auth(ADMIN)).get_json()["entries"]
    assert [h["id"] for h in history] == [body["commit"]] and history[0]["actor"] == "admin"  # the token's name


def test_memorize_without_a_model_and_a_bad_tool_call_are_clear_errors(world):
    client = world.client
    assert _error(client.post(O + "/memorize", headers=_auth(ADMIN), json={"turn": "hi"}), 501)["code"] == \
        "llm_not_configured"
    err = _error(client.post(O + "/diary-tool", headers=_auth(ADMIN), json={"arguments": '{"text": "x"}'}), 400)
    assert "content" in err["message"]
    ok = client.post(O + "/diary-tool", headers=_auth(ADMIN), json={"arguments": '{"content": "写了日记"}'})
    assert ok.status_code == 201 and ok.get_json()["entry"]["content"] == "写了日记"


def test_export_is_a_zip_of_the_markdown(world):
    client = world.client
    client.put(O + "/items/preferences/tea", headers=_auth(ADMIN), json={"content": "乌龙茶"})
    r = client.get(O + "/export", headers=_auth(ADMIN))
    assert r.status_code == 200 and r.mimetype == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(r.data)).namelist()
    assert any(n.endswith("wiki/preferences.md") for n in names)
    assert not any(".git/" in n or "journal" in n for n in names)


def test_delete_owner(world):
    app, client = world.app, world.client
    assert client.delete(O, headers=_auth(ADMIN)).get_json() == {"deleted": OWNER}
    _error(client.get(O + "/files", headers=_auth(ADMIN)), 404)
    assert not os.path.exists(_repo(app))


# -- bad input ------------------------------------------------------------------

@pytest.mark.parametrize("raw, fragment", [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "JSON object"),
    (b"", "JSON object"),
    (b'{"content": 5}', "content must be a string"),
    (b'{"content": "x", "evil": 1}', "unknown field"),
    (b"\xff\xfe", "not valid JSON"),
])
def test_broken_bodies_are_400_and_write_nothing(world, raw, fragment):
    app, client = world.app, world.client
    head = _git(_repo(app), "rev-parse", "main")
    r = client.put(O + "/items/notes/a", headers=_auth(ADMIN, **{"Content-Type": "application/json"}), data=raw)
    assert fragment in _error(r, 400)["message"]
    assert _git(_repo(app), "rev-parse", "main") == head


def test_an_oversized_body_is_413(world):
    app, client = world.app, world.client
    head = _git(_repo(app), "rev-parse", "main")
    r = client.put(O + "/items/notes/a", headers=_auth(ADMIN), json={"content": "x" * (65 * 1024)})
    assert _error(r, 413)["code"] == "too_large"
    assert _git(_repo(app), "rev-parse", "main") == head


HOSTILE_OWNERS = ["..", ".", "%2e%2e", "%2E%2E%2Fetc", "..%2F..%2Fetc", "%2Fetc%2Fpasswd", "user%00x",
                  "a" * 129, "user%20x", "%EF%BC%8E%EF%BC%8E",  # fullwidth dots
                  "user%E2%80%AEx", "%C3%A9", "user:x%0A"]


@pytest.mark.parametrize("segment", HOSTILE_OWNERS)
def test_hostile_owner_ids_are_rejected_and_touch_nothing(world, segment):
    client, tmp_path = world.client, world.tmp_path
    before = sorted(p for p in tmp_path.rglob("*") if ".git" not in p.parts)
    for method, path in (("put", ""), ("get", "/files"), ("put", "/items/notes/a")):
        r = getattr(client, method)(f"/api/v1/owners/{segment}{path}", headers=_auth(ADMIN), json={"content": "x"})
        assert r.status_code in (422, 404), (segment, path, r.status_code)
        if r.status_code == 404:  # the id never reached a view: a slash split it off the route
            assert r.get_json()["error"]["code"] == "not_found"
        else:  # a name outside its rules: well-formed, refused
            assert _error(r, 422)["code"] == "invalid_name"
    after = sorted(p for p in tmp_path.rglob("*") if ".git" not in p.parts)
    assert after == before


@pytest.mark.parametrize("file, name", [
    ("..", "a"), ("%2e%2e", "a"), ("Notes", "a"), ("notes.md", "a"), ("-x", "a"), ("a" * 300, "a"),
    ("notes", "a%5B%5Bb"), ("notes", "a%3Ab"), ("notes", "a%23b"), ("notes", "a%7Cb"), ("notes", "a%00b"),
    ("notes", "%20"), ("notes", "x" * 1000),
])
def test_hostile_file_and_item_names_are_422(world, file, name):
    app, client, tmp_path = world.app, world.client, world.tmp_path
    head = _git(_repo(app), "rev-parse", "main")
    r = client.put(f"{O}/items/{file}/{name}", headers=_auth(ADMIN), json={"content": "x"})
    assert _error(r, 422)["code"] == "invalid_name"
    assert _git(_repo(app), "rev-parse", "main") == head
    assert not list((tmp_path / "data").rglob("*.md"))


def test_bad_query_parameters_and_headers_are_400_and_refused_values_422(world):
    client = world.client
    _error(client.get("/api/v1/owners?limit=0", headers=_auth(ADMIN)), 422)
    _error(client.get("/api/v1/owners?limit=abc", headers=_auth(ADMIN)), 400)
    _error(client.get(O + "/diary?start=2026-07-01", headers=_auth(ADMIN)), 400)
    _error(client.get(O + "/diary/2026-02-30", headers=_auth(ADMIN)), 422)
    _error(client.post(O + "/diary", headers=_auth(ADMIN, **{"Idempotency-Key": "has space"}),
                       json={"content": "x"}), 400)
    _error(client.post(O + "/retrieve", headers=_auth(ADMIN), json={"query": "x", "time_range": ["2026-07-01"]}),
           400)
    _error(client.post(O + "/revert", headers=_auth(ADMIN), json={"commit": "../../etc"}), 422)


def test_unknown_routes_and_methods_answer_json(world):
    client = world.client
    assert _error(client.get("/api/v1/nope", headers=_auth(ADMIN)), 404)["code"] == "not_found"
    r = client.patch(O, headers=_auth(ADMIN))
    assert _error(r, 405)["code"] == "method_not_allowed" and "GET" in r.headers["Allow"]


def test_an_unexpected_failure_is_a_500_without_a_traceback(world, monkeypatch):
    app, client = world.app, world.client
    with app.app_context():
        host = get_host()

    def broken(*args, **kwargs):
        raise RuntimeError("secret internals /etc/shadow")

    monkeypatch.setattr(type(host), "list_owners", broken)
    r = client.get("/api/v1/owners", headers=_auth(ADMIN))
    err = _error(r, 500)
    assert err == {"code": "internal", "message": "internal server error", "request_id": r.headers["X-Request-Id"]}
    assert "shadow" not in r.get_data(as_text=True)


def test_a_key_reused_for_another_kind_of_request_is_refused(world):
    app, client = world.app, world.client
    headers = _auth(ADMIN, **{"Idempotency-Key": "k-1"})
    assert client.post(O + "/diary", headers=headers, json={"content": "一件事"}).status_code == 201
    head = _git(_repo(app), "rev-parse", "main")
    err = _error(client.post(O + "/diary-tool", headers=headers, json={"arguments": {"content": "另一件"}}), 422)
    assert err["code"] == "idempotency_key_reused"
    _error(client.put(O + "/items/notes/a", headers=headers, json={"content": "x"}), 422)
    assert _git(_repo(app), "rev-parse", "main") == head


@pytest.mark.parametrize("ops", [[{"op": {}}], [{"op": ["add"]}], [{"op": None}], [], "add", [[1]]])
def test_malformed_batch_ops_are_400(world, ops):
    client = world.client
    _error(client.post(O + "/batch", headers=_auth(ADMIN), json={"ops": ops}), 400)


def test_retrieve_fuses_embeddings_from_the_configured_endpoint_and_degrades_when_it_is_down(tmp_path):
    with FakeOpenAI() as fake:
        app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path), "ADMIN_TOKEN": ADMIN,
                          "EMBED_URL": fake.url, "EMBED_MODEL": "fake-embed"})
        client = app.test_client()
        client.put(O, headers=_auth(ADMIN))
        for name, content in (("that-evening", "他一句话没说，饭也没怎么吃。"), ("coffee", "只喝手冲咖啡。")):
            client.put(f"{O}/items/mood/{name}", headers=_auth(ADMIN), json={"content": content})
        query = {"query": "那天我是不是很沮丧", "limit": 1, "expand_links": False}
        found = client.post(O + "/retrieve", headers=_auth(ADMIN), json=query).get_json()
        assert found["embedding_used"] is True
        assert found["items"][0]["item"]["name"] == "that-evening"
        fake.fail_status = 503
        degraded = client.post(O + "/retrieve", headers=_auth(ADMIN), json={**query, "query": "沮丧 咖啡"})
    assert degraded.status_code == 200
    body = degraded.get_json()
    assert body["embedding_used"] is False and [i["item"]["name"] for i in body["items"]] == ["coffee"]


def test_a_key_reused_for_another_item_is_refused_not_replayed(world):
    client = world.client
    headers = _auth(ADMIN, **{"Idempotency-Key": "k-item"})
    assert client.put(O + "/items/notes/x", headers=headers, json={"content": "x"}).status_code == 201
    assert client.put(O + "/items/notes/x", headers=headers, json={"content": "x"}).get_json()["replayed"] is True
    _error(client.put(O + "/items/notes/y", headers=headers, json={"content": "y"}), 422)
    _error(client.get(O + "/items/notes/y", headers=_auth(ADMIN)), 404)


def test_a_retried_rollback_or_revert_with_the_same_key_writes_once(world):
    app, client = world.app, world.client
    client.put(O + "/items/notes/bad", headers=_auth(ADMIN), json={"content": "wrong", "run": "run_r"})
    client.put(O + "/items/notes/other", headers=_auth(ADMIN), json={"content": "fine"})
    headers = _auth(ADMIN, **{"Idempotency-Key": "rb-1"})
    first = client.post(O + "/rollback", headers=headers, json={"run": "run_r"}).get_json()
    again = client.post(O + "/rollback", headers=headers, json={"run": "run_r"}).get_json()
    assert first["commit"] and again == {"commit": first["commit"], "replayed": True}
    head = _git(_repo(app), "rev-parse", "main")
    assert head == first["commit"]
    target = client.get(O + "/history?limit=2", headers=_auth(ADMIN)).get_json()["entries"][1]["id"]  # "other"
    rv = _auth(ADMIN, **{"Idempotency-Key": "rv-1"})
    one = client.post(O + "/revert", headers=rv, json={"commit": target}).get_json()
    two = client.post(O + "/revert", headers=rv, json={"commit": target})
    assert two.status_code == 200 and two.get_json() == {"commit": one["commit"], "replayed": True}
    assert _git(_repo(app), "rev-list", "--count", "main") == str(int(_git(_repo(app), "rev-list", "--count",
                                                                             head)) + 1)


@pytest.mark.parametrize("run, status", [("no-such-run", 404), ("", 422), ("  ", 422), ("x" * 65, 422),
                                         ("../../etc", 404)])
def test_rollback_of_an_unknown_or_bad_run_id(world, run, status):
    app, client = world.app, world.client
    head = _git(_repo(app), "rev-parse", "main")
    _error(client.post(O + "/rollback", headers=_auth(ADMIN), json={"run": run}), status)
    assert _git(_repo(app), "rev-parse", "main") == head
