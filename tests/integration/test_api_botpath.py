"""Issue 15's API items through the real app (Flask test client, real repositories):
errors that say what to do, 201 on create, per-owner settings, memorize jobs."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from apiworld import ADMIN, OWNER, auth

from wikimem.host import encode_owner_id

O = f"/api/v1/owners/{OWNER}"
JSON = {"Content-Type": "application/json"}


def _error(response, status: int, *words: str) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    err = response.get_json()["error"]
    for word in words:
        assert word in err["message"], err
    return err


def _git(world, *args, owner=OWNER) -> str:
    repo = os.path.join(world.app.config["DATA_ROOT"], "owners", encode_owner_id(owner))
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


# -- errors and statuses --------------------------------------------------------------

def test_an_unknown_field_is_reported_with_the_missing_one(world):
    r = world.client.post(O + "/retrieve", headers=auth(ADMIN), json={"q": "海边"})
    _error(r, 400, "unknown field(s): q", "missing field(s): query")


def test_put_answers_201_when_it_creates_the_item_and_200_when_it_replaces_it(world):
    url = O + "/items/preferences/likes-the-sea"
    first = world.client.put(url, headers=auth(ADMIN), json={"content": "喜欢海边。"})
    assert first.status_code == 201 and first.get_json()["commit"]
    again = world.client.put(url, headers=auth(ADMIN), json={"content": "很喜欢海边。"})
    assert again.status_code == 200
    # A retry of the creating request replays its first answer, status included.
    key = auth(ADMIN, **{"Idempotency-Key": "put-1"})
    made = world.client.put(O + "/items/preferences/tea", headers=key, json={"content": "绿茶"})
    replay = world.client.put(O + "/items/preferences/tea", headers=key, json={"content": "绿茶"})
    assert made.status_code == replay.status_code == 201 and replay.get_json()["replayed"] is True


@pytest.mark.parametrize("content", ["", "   \n\t "])
def test_empty_content_is_refused_and_nothing_is_written(world, content):
    head = _git(world, "rev-parse", "HEAD")
    r = world.client.put(O + "/items/preferences/x", headers=auth(ADMIN), json={"content": content})
    _error(r, 422, "content is empty", "DELETE")
    r = world.client.post(O + "/batch", headers=auth(ADMIN),
                          json={"ops": [{"op": "add", "file": "p", "name": "a", "content": "ok"},
                                        {"op": "add", "file": "p", "name": "b", "content": content}]})
    _error(r, 422, "ops[1].content is empty")
    assert _git(world, "rev-parse", "HEAD") == head


def test_items_of_an_unknown_file_is_404_like_an_item_of_it(world):
    world.client.put(O + "/items/preferences/tea", headers=auth(ADMIN), json={"content": "绿茶"})
    _error(world.client.get(O + "/items?file=nofile", headers=auth(ADMIN)), 404, "no RecallFile 'nofile'")
    _error(world.client.get(O + "/items/nofile/x", headers=auth(ADMIN)), 404)
    ok = world.client.get(O + "/items?file=preferences", headers=auth(ADMIN))
    assert ok.status_code == 200 and [i["name"] for i in ok.get_json()["items"]] == ["tea"]


def test_an_unknown_owner_says_how_to_create_it(world):
    err = _error(world.client.get("/api/v1/owners/user:x/files", headers=auth(ADMIN)), 404, "no owner 'user:x'")
    assert "PUT /api/v1/owners/user:x" in err["message"]


# -- per-owner settings ----------------------------------------------------------------

def test_settings_are_read_written_and_committed(world):
    empty = world.client.get(O + "/settings", headers=auth(ADMIN))
    assert empty.status_code == 200
    assert empty.get_json() == {"settings": {"tz": None, "character": None, "dm_with_others": None}}
    put = world.client.put(O + "/settings", headers=auth(ADMIN),
                           json={"tz": "Asia/Shanghai", "character": "Elaina", "run": "setup"})
    assert put.status_code == 200, put.get_json()
    body = put.get_json()
    assert body["settings"] == {"tz": "Asia/Shanghai", "character": "Elaina", "dm_with_others": None}
    assert body["commit"]
    assert world.client.get(O + "/settings", headers=auth(ADMIN)).get_json()["settings"]["tz"] == "Asia/Shanghai"
    # One commit in the owner's history, with the file in the tree and a readable message.
    assert _git(world, "log", "-1", "--format=%s%n%b").startswith("settings: character=Elaina, tz=Asia/Shanghai")
    assert json.loads(_git(world, "show", "HEAD:settings.json")) == {"character": "Elaina", "tz": "Asia/Shanghai"}
    assert _git(world, "status", "--porcelain") == ""
    # A partial PUT keeps the rest; null unsets one.
    put = world.client.put(O + "/settings", headers=auth(ADMIN), json={"character": None})
    assert put.get_json()["settings"] == {"tz": "Asia/Shanghai", "character": None, "dm_with_others": None}
    # Nothing to change: no commit.
    same = world.client.put(O + "/settings", headers=auth(ADMIN), json={"tz": "Asia/Shanghai"})
    assert same.get_json()["commit"] is None
    history = world.client.get(O + "/history", headers=auth(ADMIN)).get_json()["entries"]
    assert [e["summary"] for e in history[:2]] == ["settings: character=unset",
                                                   "settings: character=Elaina, tz=Asia/Shanghai"]


def test_a_character_of_the_documented_200_characters_works_end_to_end(chat, llm):
    """Issue 24 item 22: the commit summary "settings: character=…" passed the message's 200 characters
    at ~180, so a documented 200-character character was refused."""
    character = "龙" * 100 + "e" * 100
    put = chat.client.put(O + "/settings", headers=auth(ADMIN), json={"character": character})
    assert put.status_code == 200, put.get_json()
    assert chat.client.get(O + "/settings", headers=auth(ADMIN)).get_json()["settings"]["character"] == character
    assert json.loads(_git(chat, "show", "HEAD:settings.json")) == {"character": character}
    summary = _git(chat, "log", "-1", "--format=%s").strip()
    assert summary.startswith("settings: character=龙") and summary.endswith("…") and len(summary) <= 200
    llm.replies.append(json.dumps([{"content": "去了海边。"}], ensure_ascii=False))
    r = chat.client.post(O + "/memorize", headers=auth(ADMIN), json={"turn": "user: 去了海边"})
    assert r.status_code == 200, r.get_json()
    assert f"You are {character}." in llm.chat_messages[0][0]["content"]
    assert chat.client.post(O + "/memorize", headers=auth(ADMIN),
                            json={"turn": "user: x", "character": character + "!"}).status_code == 422


@pytest.mark.parametrize("body, status, words", [
    ({"tz": "Mars/Olympus"}, 422, "unknown time zone"),
    ({"tz": 8}, 400, "tz must be a string"),
    ({"timezone": "UTC"}, 400, "unknown field(s): timezone"),
    ({"character": ""}, 422, "character must be"),
    ({"character": 7}, 400, "character must be a string"),
    ({"character": "x" * 201}, 422, "character must be"),
])
def test_bad_settings_are_refused(world, body, status, words):
    _error(world.client.put(O + "/settings", headers=auth(ADMIN), json=body), status, words)
    assert world.client.get(O + "/settings", headers=auth(ADMIN)).get_json()["settings"]["tz"] is None


def test_settings_need_the_write_scope(world):
    r = world.client.put(O + "/settings", headers=auth(world.secrets["reader"]), json={"tz": "UTC"})
    _error(r, 403)
    assert world.client.get(O + "/settings", headers=auth(world.secrets["reader"])).status_code == 200


def test_the_owners_time_zone_is_used_by_writes_and_time_parsing(world):
    world.client.put(O + "/settings", headers=auth(ADMIN), json={"tz": "Pacific/Kiritimati"})  # UTC+14
    told = "2026-07-22T11:30:00+00:00"  # 01:30 on the 23rd in Kiritimati
    r = world.client.post(O + "/diary", headers=auth(ADMIN), json={"content": "去了海边。", "ts": told})
    assert (r.get_json()["entry"]["date"], r.get_json()["entry"]["time"]) == ("2026-07-23", "01:30")
    # A request's own tz still wins.
    r = world.client.post(O + "/diary", headers=auth(ADMIN), json={"content": "下雨。", "ts": told, "tz": "UTC"})
    assert (r.get_json()["entry"]["date"], r.get_json()["entry"]["time"]) == ("2026-07-22", "11:30")
    r = world.client.post(O + "/batch", headers=auth(ADMIN),
                          json={"ops": [{"op": "diary", "content": "批量。", "ts": told}]})
    assert r.get_json()["results"][0]["entry"]["date"] == "2026-07-23"
    r = world.client.post(O + "/diary-tool", headers=auth(ADMIN),
                          json={"arguments": {"content": "工具。"}, "ts": told})
    assert r.get_json()["entry"]["time"] == "01:30"
    # Retrieval reads "today" in the owner's zone: Kiritimati is always a day or more ahead of UTC-12.
    far_west = world.client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": "今天", "tz": "Etc/GMT+12"})
    own = world.client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": "今天"})
    assert own.get_json()["time_range"] > far_west.get_json()["time_range"]


def test_memorize_uses_the_owners_time_zone_and_character(chat, llm):
    llm.replies.append(json.dumps([{"content": "昨天去了海边。"}], ensure_ascii=False))
    chat.client.put(O + "/settings", headers=auth(ADMIN), json={"tz": "Asia/Shanghai", "character": "Elaina"})
    r = chat.client.post(O + "/memorize", headers=auth(ADMIN),
                         json={"turn": "user: 昨天去了海边", "ts": "2026-07-22T17:00:00+00:00"})
    assert r.status_code == 200, r.get_json()
    (entry,) = r.get_json()["entries"]
    # Told at 01:00 on the 23rd in Shanghai (still the 22nd in UTC): "yesterday" is the 22nd.
    assert (entry["date"], entry["time"]) == ("2026-07-22", "01:00")
    assert "You are Elaina." in llm.chat_messages[0][0]["content"]
    assert _git(chat, "log", "-1", "--format=%an") == "admin\n"  # who wrote: the token, as for every write


def test_every_write_without_an_actor_is_recorded_as_the_tokens_name(chat, llm):
    """Issue 24 item 16: a memorize without an actor was recorded as its character ("the assistant")
    while every other write defaulted to the token's name. One default now; the character stays in
    the prompt, and an actor given in the body still wins."""
    writer = auth(chat.secrets["writer"])
    chat.client.put(O + "/settings", headers=auth(ADMIN), json={"character": "Elaina"})
    chat.client.put("/api/v1/characters/mia", headers=auth(ADMIN), json={"name": "Mia"})  # memorize as a character
    llm.reply_fn = lambda messages: json.dumps([{"content": "去了海边。"}], ensure_ascii=False)
    writes = [
        chat.client.put(O + "/items/notes/sea", headers=writer, json={"content": "海边"}),
        chat.client.post(O + "/diary", headers=writer, json={"content": "下雨。"}),
        chat.client.post(O + "/diary-tool", headers=writer, json={"arguments": {"content": "工具。"}}),
        chat.client.post(O + "/batch", headers=writer, json={"ops": [{"op": "diary", "content": "批量。"}]}),
        chat.client.post(O + "/memorize", headers=writer, json={"turn": "user: 去了海边"}),
        chat.client.post(O + "/memorize", headers=writer, json={"turn": "user: 又去了", "character": "mia"}),
    ]
    assert [w.status_code for w in writes] == [201, 201, 201, 200, 200, 200]
    job = chat.client.post(O + "/memorize", headers=auth(chat.secrets["writer"], Prefer="respond-async"),
                           json={"turn": "user: 第三次"})
    assert _wait_job(chat, job.headers["Location"])["state"] == "done"
    history = chat.client.get(O + "/history?limit=6", headers=auth(ADMIN)).get_json()["entries"]
    assert [e["actor"] for e in history] == ["writer"] * 6
    mias = chat.client.get(O + "/history?character=mia", headers=auth(ADMIN)).get_json()["entries"]
    assert mias[0]["actor"] == "writer" and "in mia" in mias[0]["summary"]  # (memorized as Mia: in her layer)
    assert "You are Elaina." in llm.chat_messages[0][0]["content"]  # the character: the owner's setting
    assert "You are Mia." in llm.chat_messages[1][0]["content"]
    named = chat.client.post(O + "/memorize", headers=writer, json={"turn": "user: x", "actor": "bot-7"})
    assert named.status_code == 200
    assert _git(chat, "log", "-1", "--format=%an") == "bot-7\n"


@pytest.fixture
def chat(world, llm):
    """The world's data root and tokens, served by an app whose memorize asks ``llm``."""
    from dataclasses import replace

    from webapp import create_app

    config = {k: world.app.config[k] for k in ("DATA_ROOT", "ADMIN_TOKEN", "TOKENS_FILE")}
    app = create_app({"TESTING": True, "LLM_URL": llm.url, "LLM_MODEL": "fake-chat", **config})
    return replace(world, app=app, client=app.test_client())


# -- memorize jobs ------------------------------------------------------------------------

def _wait_job(world, location: str, token: str = ADMIN, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = world.client.get(location, headers=auth(token)).get_json()
        if job["state"] in ("done", "failed"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {location} did not finish")


def test_memorize_with_respond_async_is_a_job(chat, llm):
    world = chat
    llm.reply_fn = lambda messages: json.dumps([{"content": "她开始学冲浪了。"}], ensure_ascii=False)
    headers = auth(ADMIN, Prefer="respond-async", **{"Idempotency-Key": "turn-42"})
    r = world.client.post(O + "/memorize", headers=headers, json={"turn": "user: 我开始学冲浪了", "run": "run_j"})
    assert r.status_code == 202, r.get_json()
    job = r.get_json()
    assert r.headers["Location"] == f"/api/v1/jobs/{job['id']}"
    assert r.headers["Preference-Applied"] == "respond-async"
    assert job["kind"] == "memorize" and job["total"] == 1
    assert job["params"] == {"owner": OWNER, "run": "run_j", "request_id": r.headers["X-Request-Id"]}
    done = _wait_job(world, r.headers["Location"])
    assert done["state"] == "done" and done["done"] == 1
    result = done["results"][0]["result"]
    assert [e["content"] for e in result["entries"]] == ["她开始学冲浪了。"] and result["run"] == "run_j"
    # The same key: the same job, nothing asked or written again.
    again = world.client.post(O + "/memorize", headers=headers, json={"turn": "user: 我开始学冲浪了", "run": "run_j"})
    assert again.status_code == 202 and again.get_json()["id"] == job["id"]
    # ... and the same key used synchronously replays the job's commit.
    sync = world.client.post(O + "/memorize", headers=auth(ADMIN, **{"Idempotency-Key": "turn-42"}),
                             json={"turn": "user: 我开始学冲浪了", "run": "run_j"})
    assert sync.get_json()["replayed"] is True and sync.get_json()["commit"] == result["commit"]
    assert llm.chat_calls == 1
    assert _git(world, "log", "--format=%s").splitlines().count("memorize 1 diary entry") == 1


def test_a_memorize_job_that_fails_says_why(chat, llm):
    from webapp.hosting import get_host
    from wikimem.host.fleet import MemorizeRetry

    with chat.app.app_context():
        get_host().memorize_retry = MemorizeRetry(delays=(0.1,))  # (the defaults wait ~1.5 min for the model)
    llm.fail_status = 500
    r = chat.client.post(O + "/memorize", headers=auth(ADMIN, Prefer="respond-async"), json={"turn": "t"})
    done = _wait_job(chat, r.headers["Location"])
    assert done["state"] == "failed" and done["results"][0]["error"]["code"] == "llm_error"


def test_async_memorize_is_refused_at_once_without_an_llm_or_an_owner(world, chat):
    _error(world.client.post(O + "/memorize", headers=auth(ADMIN, Prefer="respond-async"), json={"turn": "t"}), 501)
    r = chat.client.post("/api/v1/owners/user:nobody/memorize", headers=auth(ADMIN, Prefer="respond-async"),
                         json={"turn": "t"})
    _error(r, 404, "no owner")


def test_jobs_are_seen_only_by_tokens_that_reach_their_owner(chat):
    world = chat
    r = world.client.post(O + "/memorize", headers=auth(ADMIN, Prefer="respond-async"), json={"turn": "t"})
    location = r.headers["Location"]
    _wait_job(world, location)
    assert world.client.get(location, headers=auth(world.secrets["reader"])).status_code == 200
    _error(world.client.get(location, headers=auth(world.secrets["scoped"])), 403)  # owners user:lu… only
    _error(world.client.get(location), 401)
    _error(world.client.get("/api/v1/jobs/job_20260721T000000Z_0123456789ab", headers=auth(ADMIN)), 404)
    _error(world.client.get("/api/v1/jobs/not-a-job", headers=auth(ADMIN)), 422)
