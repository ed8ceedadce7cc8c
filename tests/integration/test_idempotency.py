"""Idempotency-Key holds under a changed body, a lost history index and a second worker.

- a key reused with a different body (or target) is 422, nothing written;
- a replay never 500s: when the stored result is gone (the history index is
  a cache — deleted, rebuilt from git), it is derived again from the commit;
- a worker whose history index file was deleted under it reopens the file on
  disk instead of answering from the unlinked one.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from apiworld import ADMIN, OWNER, auth
from fakes import FakeOpenAI

from webapp import create_app
from wikimem.host import encode_owner_id

O = f"/api/v1/owners/{OWNER}"


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()["error"]


def _head(world) -> str:
    repo = Path(world.app.config["DATA_ROOT"]) / "owners" / encode_owner_id(OWNER)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "main"], capture_output=True, text=True).stdout


def _drop_history_index(world) -> None:
    git_dir = Path(world.app.config["DATA_ROOT"]) / "owners" / encode_owner_id(OWNER) / ".git"
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(git_dir / f"wikimem-history.sqlite3{suffix}")
        except FileNotFoundError:
            pass


@pytest.mark.parametrize("path,first,second", [
    ("/items/preferences/tea", {"content": "喝乌龙茶。"}, {"content": "喝红茶。"}),
    ("/diary", {"content": "去了海边。", "time": "10:00", "date": "2026-07-21"},
     {"content": "去了山里。", "time": "10:00", "date": "2026-07-21"}),
    ("/batch", {"ops": [{"op": "add", "file": "f", "name": "a", "content": "x"}]},
     {"ops": [{"op": "add", "file": "f", "name": "a", "content": "y"}]}),
    ("/diary-tool", {"arguments": {"content": "写日记"}}, {"arguments": {"content": "写别的"}}),
])
def test_a_key_reused_with_another_body_is_refused_and_writes_nothing(world, path, first, second):
    client = world.client
    method = client.put if path.startswith("/items") else client.post
    headers = auth(ADMIN, **{"Idempotency-Key": "same-key"})
    assert method(O + path, headers=headers, json=first).status_code in (200, 201)
    head = _head(world)
    err = _error(method(O + path, headers=headers, json=second), 422)
    assert err["code"] == "idempotency_key_reused"
    assert _head(world) == head
    again = method(O + path, headers=headers, json=first)  # the true retry still replays
    assert again.status_code in (200, 201) and again.get_json()["replayed"] is True
    assert _head(world) == head


def test_another_actor_with_the_same_key_is_another_request(world):
    headers = auth(ADMIN, **{"Idempotency-Key": "who"})
    body = {"content": "x", "actor": "Elaina"}
    assert world.client.put(O + "/items/f/a", headers=headers, json=body).status_code == 201  # created
    _error(world.client.put(O + "/items/f/a", headers=headers, json={**body, "actor": "Mallory"}), 422)


@pytest.mark.parametrize("path,body,field", [
    ("/batch", {"ops": [{"op": "add", "file": "f", "name": "a", "content": "x"},
                        {"op": "diary", "content": "一件事", "date": "2026-07-21", "time": "09:00"},
                        {"op": "add", "file": "g", "name": "b", "content": "y"}]}, "results"),
    ("/diary-tool", {"arguments": {"content": "写日记"}, "date": "2026-07-21", "time": "20:00"}, "entry"),
    ("/diary", {"content": "去了海边。", "date": "2026-07-21", "time": "10:00"}, "entry"),
    ("/items/preferences/tea", {"content": "喝乌龙茶。"}, "item"),
])
def test_a_replay_whose_stored_result_was_lost_is_derived_from_the_commit(world, path, body, field):
    client = world.client
    method = client.put if path.startswith("/items") else client.post
    headers = auth(ADMIN, **{"Idempotency-Key": f"lost-{field}"})
    first = method(O + path, headers=headers, json=body)
    assert first.status_code in (200, 201)
    _drop_history_index(world)
    again = method(O + path, headers=headers, json=body)
    assert again.status_code == first.status_code, again.get_data(as_text=True)
    replay = again.get_json()
    assert replay["replayed"] is True and replay["commit"] == first.get_json()["commit"]
    assert replay[field] == first.get_json()[field]


def test_memorize_replay_survives_a_lost_history_index_without_asking_the_model_again(world, tmp_path):
    entries = [{"content": "他说换了工作。"}, {"content": "睡前有点担心。"}]
    with FakeOpenAI() as fake:
        fake.reply_fn = lambda messages: json.dumps(entries, ensure_ascii=False)
        app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "m"), "ADMIN_TOKEN": ADMIN,
                          "LLM_URL": fake.url, "LLM_MODEL": "m"})
        client = app.test_client()
        client.put(O, headers=auth(ADMIN))
        headers = auth(ADMIN, **{"Idempotency-Key": "turn-9"})
        body = {"turn": "user: 我换工作啦", "ts": "2026-07-21T06:00:00Z", "tz": "UTC"}
        first = client.post(O + "/memorize", headers=headers, json=body).get_json()
        git_dir = tmp_path / "m" / "owners" / encode_owner_id(OWNER) / ".git"
        for suffix in ("", "-wal", "-shm"):
            (git_dir / f"wikimem-history.sqlite3{suffix}").unlink(missing_ok=True)
        calls = fake.chat_calls
        again = client.post(O + "/memorize", headers=headers, json=body).get_json()
    assert again["replayed"] is True and again["commit"] == first["commit"]
    assert again["entries"] == first["entries"] and again["run"] == first["run"]
    assert fake.chat_calls == calls == 1


def test_a_worker_whose_history_index_was_deleted_reads_the_new_one(world):
    data = world.app.config["DATA_ROOT"]
    other = create_app({"TESTING": True, "DATA_ROOT": data, "ADMIN_TOKEN": ADMIN}).test_client()  # worker 2
    assert world.client.get(O + "/history", headers=auth(ADMIN)).status_code == 200  # worker 1 holds the file open
    _drop_history_index(world)
    headers = auth(ADMIN, **{"Idempotency-Key": "two-workers"})
    body = {"ops": [{"op": "add", "file": "f", "name": "a", "content": "x"}]}
    first = other.post(O + "/batch", headers=headers, json=body).get_json()
    again = world.client.post(O + "/batch", headers=headers, json=body)
    assert again.status_code == 200, again.get_data(as_text=True)
    assert again.get_json()["results"] == first["results"] and again.get_json()["replayed"] is True
