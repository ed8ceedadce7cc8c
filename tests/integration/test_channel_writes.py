"""Every write edge of the API takes a diary entry's ``channel`` and ``present`` (issue 34, point 1), and every
answer that shows a diary entry shows them: the diary route, the batch op ``diary``, the diary tool, a character's
layer, history filtered by channel, one commit's per-item diff, the export. Bad values → 422 with the validator's
message and nothing written; a wrong JSON type → 400.
"""

from __future__ import annotations

import io
import os
import subprocess
import zipfile

import pytest
from apiworld import ADMIN, OWNER, finished_job
from apiworld import auth as _auth

from wikimem import MemoryStore
from wikimem.host import encode_owner_id

O = f"/api/v1/owners/{OWNER}"
ROOM = {"channel": "g1", "present": ["user:xnne", "user:bob", "char:kai"]}


def _head(world) -> str:
    repo = os.path.join(world.app.config["DATA_ROOT"], "owners", encode_owner_id(OWNER))
    return subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def _day(client, day="2026-03-01", **query) -> list[dict]:
    r = client.get(f"{O}/diary/{day}", headers=_auth(ADMIN), query_string=query)
    assert r.status_code == 200, r.get_data(as_text=True)
    return r.get_json()["entries"]


def _room(entry: dict) -> tuple:
    return entry["channel"], entry["present"]


def test_a_diary_append_keeps_where_it_was_said_and_who_was_there(world):
    client = world.client
    r = client.post(O + "/diary", headers=_auth(ADMIN), json={"content": "Bob told a joke about exams.",
                                                               "date": "2026-03-01", "time": "20:00", **ROOM})
    assert r.status_code == 201, r.get_data(as_text=True)
    entry = r.get_json()["entry"]
    assert _room(entry) == ("g1", ROOM["present"])
    client.post(O + "/diary", headers=_auth(ADMIN), json={"content": "Alone at home.", "date": "2026-03-01",
                                                          "time": "21:00"})
    shown = _day(client)
    assert [_room(e) for e in shown] == [("g1", ROOM["present"]), (None, [])]
    window = client.get(O + "/diary?start=2026-03-01&end=2026-03-01", headers=_auth(ADMIN)).get_json()["entries"]
    assert window == shown
    # the commit's per-item diff names the room too
    commit = client.get(f"{O}/commits/{r.get_json()['commit']}", headers=_auth(ADMIN)).get_json()
    [change] = commit["changes"]
    assert (change["status"], change["channel"], change["present"]) == ("added", "g1", ROOM["present"])
    assert "channel=g1 | present=user:xnne,user:bob,char:kai" in commit["patch"]


@pytest.mark.parametrize("field, value, says", [
    ("channel", "g 1", "invalid channel id 'g 1'"),
    ("channel", "-rf", "invalid channel id '-rf'"),
    ("present", ["user:xnne", "not ok"], "invalid id in present 'not ok'"),
    ("present", ["char:Kai"], "Kai"),
    ("present", [f"user:{i}" for i in range(65)], "present names 65 ids; at most 64"),
])
def test_a_refused_room_is_422_with_the_validators_message_and_nothing_is_written(world, field, value, says):
    client, before = world.client, _head(world)
    for path, body in ((O + "/diary", {"content": "x", "date": "2026-03-01"}),
                       (O + "/diary-tool", {"arguments": {"content": "x"}, "date": "2026-03-01"}),
                       (O + "/batch", {"ops": [{"op": "add", "file": "notes", "name": "a", "content": "kept?"},
                                               {"op": "diary", "content": "x", "date": "2026-03-01", field: value}]})):
        if path.endswith("/batch"):
            r = client.post(path, headers=_auth(ADMIN), json=body)
        else:
            r = client.post(path, headers=_auth(ADMIN), json={**body, field: value})
        assert r.status_code == 422, (path, r.get_data(as_text=True))
        error = r.get_json()["error"]
        assert error["code"] == "invalid_name" and says in error["message"], (path, error)
        if path.endswith("/batch"):
            assert error["message"].startswith("ops[1]: ")
    staged = client.post(O + "/diary", headers=_auth(ADMIN), json={"content": "x", "staged": True, field: value})
    assert staged.status_code == 422
    assert _head(world) == before
    assert client.get(O + "/diary/dates", headers=_auth(ADMIN)).get_json()["dates"] == []
    assert client.get(O + "/items", headers=_auth(ADMIN)).get_json()["items"] == []


@pytest.mark.parametrize("body", [{"present": "user:xnne,user:bob"}, {"present": [1, 2]}, {"present": {"a": 1}},
                                  {"channel": 7}, {"channel": ["g1"]}])
def test_a_room_of_the_wrong_json_type_is_400(world, body):
    for path, base in ((O + "/diary", {"content": "x"}), (O + "/diary-tool", {"arguments": {"content": "x"}})):
        r = world.client.post(path, headers=_auth(ADMIN), json={**base, **body})
        assert r.status_code == 400, r.get_data(as_text=True)
    r = world.client.post(O + "/batch", headers=_auth(ADMIN), json={"ops": [{"op": "diary", "content": "x", **body}]})
    assert r.status_code == 400, r.get_data(as_text=True)


def test_the_batch_op_and_the_diary_tool_take_the_room(world):
    client = world.client
    batch = client.post(O + "/batch", headers=_auth(ADMIN), json={"ops": [
        {"op": "diary", "content": "In the group.", "date": "2026-03-01", "time": "10:00", **ROOM},
        {"op": "diary", "content": "Just us two.", "date": "2026-03-01", "time": "11:00", "channel": "dm",
         "present": ["user:xnne", "char:kai"]}]})
    assert batch.status_code == 200, batch.get_data(as_text=True)
    results = batch.get_json()["results"]
    assert [_room(r["entry"]) for r in results] == [("g1", ROOM["present"]), ("dm", ["user:xnne", "char:kai"])]
    tool = client.post(O + "/diary-tool", headers=_auth(ADMIN), json={
        "arguments": '{"content": "Kai listened."}', "date": "2026-03-01", "time": "12:00", "channel": "dm",
        "present": ["user:xnne", "char:kai"]})
    assert tool.status_code == 201, tool.get_data(as_text=True)
    assert _room(tool.get_json()["entry"]) == ("dm", ["user:xnne", "char:kai"])
    assert [_room(e) for e in _day(client)] == [("g1", ROOM["present"]), ("dm", ["user:xnne", "char:kai"]),
                                                ("dm", ["user:xnne", "char:kai"])]


def test_a_retry_with_its_key_replays_the_room_and_a_changed_room_is_another_request(world):
    client = world.client
    headers = _auth(ADMIN, **{"Idempotency-Key": "turn-7"})
    body = {"content": "Met in the group.", "date": "2026-03-01", "time": "10:00", **ROOM}
    first = client.post(O + "/diary", headers=headers, json=body).get_json()
    again = client.post(O + "/diary", headers=headers, json=body).get_json()
    assert again["replayed"] is True and again["entry"] == first["entry"] and _room(again["entry"])[0] == "g1"
    other = client.post(O + "/diary", headers=headers, json={**body, "present": ["user:xnne"]})
    assert other.status_code == 422, other.get_data(as_text=True)  # the key was used for another request
    assert len(_day(client)) == 1


def test_a_characters_layer_keeps_the_room(world):
    client = world.client
    assert client.put("/api/v1/characters/kai", headers=_auth(ADMIN), json={"name": "Kai"}).status_code in (200, 201)
    r = client.post(O + "/diary", headers=_auth(ADMIN), json={"content": "Kai heard it in the group.",
                                                               "date": "2026-03-01", "time": "20:00",
                                                               "character": "kai", **ROOM})
    assert r.status_code == 201, r.get_data(as_text=True)
    assert [_room(e) for e in _day(client, character="kai")] == [("g1", ROOM["present"])]
    assert _day(client) == []  # the shared layer holds nothing of it
    folder = os.path.join(world.app.config["DATA_ROOT"], "owners", encode_owner_id(OWNER), "characters", "kai")
    [entry] = MemoryStore(folder).diary.day("2026-03-01")  # the plain library reads the layer's file
    assert (entry.channel, entry.present) == ("g1", tuple(ROOM["present"]))


def test_history_filters_by_channel(world):
    client = world.client
    ids = {}
    for channel, time in (("g1", "10:00"), ("dm", "11:00"), ("g1", "12:00"), (None, "13:00")):
        room = {"channel": channel, "present": ["user:xnne"]} if channel else {}
        r = client.post(O + "/diary", headers=_auth(ADMIN), json={"content": f"at {time}", "date": "2026-03-01",
                                                                   "time": time, **room})
        ids[time] = r.get_json()["commit"]
    client.put(O + "/items/notes/a", headers=_auth(ADMIN), json={"content": "a wiki item"})

    def history(**query):
        r = client.get(O + "/history", headers=_auth(ADMIN), query_string=query)
        assert r.status_code == 200, r.get_data(as_text=True)
        return [e["id"] for e in r.get_json()["entries"]]

    assert history(channel="g1") == [ids["12:00"], ids["10:00"]]
    assert history(channel="dm") == [ids["11:00"]]
    assert history(channel="g2") == []
    assert len(history()) == 6  # the owner's creation too: the filter is the only difference
    bad = client.get(O + "/history?channel=g%201", headers=_auth(ADMIN))
    assert bad.status_code == 422 and "invalid channel id" in bad.get_json()["error"]["message"]
    # forgetting a g1 entry rewrites the history (the index is rebuilt from what it knew): the other g1 entry's
    # commit is still found by its channel, the forgotten one's is not
    forgot = client.post(O + "/forget", headers=_auth(ADMIN), json={"date": "2026-03-01", "time": "10:00"})
    assert forgot.status_code == 202, forgot.get_data(as_text=True)
    assert finished_job(client, forgot.get_json())["state"] == "done"
    [kept] = history(channel="g1")
    assert client.get(f"{O}/commits/{kept}", headers=_auth(ADMIN)).get_json()["entry"]["time_of_day"] == "12:00"
    assert len(history(channel="dm")) == 1


def test_the_export_holds_the_room_in_each_entrys_metadata(world, tmp_path):
    client = world.client
    client.post(O + "/diary", headers=_auth(ADMIN), json={"content": "In the group.", "date": "2026-03-01",
                                                          "time": "10:00", **ROOM})
    r = client.get(O + "/export?format=zip", headers=_auth(ADMIN))
    assert r.status_code == 200
    zipfile.ZipFile(io.BytesIO(r.data)).extractall(tmp_path / "unzipped")
    [day] = (tmp_path / "unzipped").rglob("2026-03-01.md")
    assert "channel=g1 | present=user:xnne,user:bob,char:kai" in day.read_text()
    [entry] = MemoryStore(day.parent.parent).diary.day("2026-03-01")
    assert (entry.channel, entry.present) == ("g1", tuple(ROOM["present"]))
