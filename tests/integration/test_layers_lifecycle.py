"""A person's every layer lives and dies with the person (issue 33): erasing removes every layer everywhere (data
root, remote, indexes, caches); forgetting an item of a character's layer rewrites the history as for the shared
layer; a backup and its restore, and a second host reading the same remote, keep every layer.

Real app, real repositories, a real file:// remote; the ``git`` command line and :mod:`traces` are the witnesses.
"""

from __future__ import annotations

import subprocess

import pytest
from apiworld import ADMIN, auth, finished_job
from traces import traces

from webapp import create_app
from wikimem.host import encode_owner_id, make_backup, restore_backup

PERSON = "user:kim-9"
SECRETS = {"kai": "KIMKAI-told-kai-of-the-lighthouse", "mira": "KIMMIRA-told-mira-of-the-violin"}
SHARED = "KIMSHARED-likes-green-tea"


def _app(tmp_path, **config):
    return create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN, **config})


def _fill(client) -> None:
    h = auth(ADMIN)
    for character in SECRETS:
        assert client.put(f"/api/v1/characters/{character}", headers=h, json={"name": character.title()}).status_code \
            in (200, 201)
    assert client.put(f"/api/v1/owners/{PERSON}", headers=h).status_code in (200, 201)
    client.put(f"/api/v1/owners/{PERSON}/items/prefs/tea", headers=h, json={"content": SHARED})
    for character, text in SECRETS.items():
        r = client.put(f"/api/v1/owners/{PERSON}/items/secrets/told", headers=h,
                       json={"content": text, "character": character})
        assert r.status_code == 201, r.get_json()
        client.post(f"/api/v1/owners/{PERSON}/diary", headers=h,
                    json={"content": f"diary of {text}", "character": character, "date": "2026-07-21",
                          "time": "10:00"})
        client.post(f"/api/v1/owners/{PERSON}/retrieve", headers=h, json={"query": "told", "character": character})


def _git(folder, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout


def test_erasing_a_person_removes_every_layer_from_the_data_root_and_the_remote(tmp_path):
    (tmp_path / "remote").mkdir()
    app = _app(tmp_path, REMOTE=f"file://{tmp_path}/remote/{{owner}}.git")
    client = app.test_client()
    _fill(client)
    needles = [PERSON, encode_owner_id(PERSON), SHARED, *SECRETS.values()]
    assert traces([tmp_path / "data", tmp_path / "remote"], needles)
    r = client.post(f"/api/v1/owners/{PERSON}/erase", headers=auth(ADMIN), json={"confirm": PERSON})
    assert finished_job(client, r.get_json())["state"] == "done"
    assert traces([tmp_path / "data", tmp_path / "remote"], needles) == []
    # the characters themselves are untouched: they are owners of their own
    assert client.get("/api/v1/characters/kai", headers=auth(ADMIN)).status_code == 200


def test_forgetting_an_item_of_a_characters_layer_rewrites_its_history_and_leaves_the_rest(tmp_path):
    app = _app(tmp_path)
    client = app.test_client()
    _fill(client)
    r = client.post(f"/api/v1/owners/{PERSON}/forget", headers=auth(ADMIN),
                    json={"file": "secrets", "name": "told", "character": "kai"})
    job = finished_job(client, r.get_json())
    assert job["state"] == "done", job
    folder = tmp_path / "data" / "owners" / encode_owner_id(PERSON)
    assert SECRETS["kai"] not in _git(folder, "log", "--all", "-p", "--", "characters/kai/wiki")
    assert _git(folder, "fsck", "--strict").strip() == ""
    h = auth(ADMIN)
    assert client.get(f"/api/v1/owners/{PERSON}/items/secrets/told?character=kai", headers=h).status_code == 404
    mira = client.get(f"/api/v1/owners/{PERSON}/items/secrets/told?character=mira", headers=h).get_json()
    assert mira["item"]["content"] == SECRETS["mira"]
    assert client.get(f"/api/v1/owners/{PERSON}/items/prefs/tea", headers=h).get_json()["item"]["content"] == SHARED
    # forgetting the diary entry too leaves no byte of the text anywhere under the data root
    r = client.post(f"/api/v1/owners/{PERSON}/forget", headers=h,
                    json={"date": "2026-07-21", "time": "10:00", "character": "kai"})
    assert finished_job(client, r.get_json())["state"] == "done"
    assert traces([tmp_path / "data"], [SECRETS["kai"]]) == []
    assert traces([tmp_path / "data"], [SECRETS["mira"]])  # (mira's layer keeps its own)


def test_a_backup_and_its_restore_keep_every_layer(tmp_path):
    client = _app(tmp_path).test_client()
    _fill(client)
    report = make_backup(tmp_path / "data", tmp_path / "backup")
    restored = restore_backup(tmp_path / "backup", tmp_path / "fresh")
    assert report.owners >= 1 and PERSON in restored.heads
    fresh = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "fresh"), "ADMIN_TOKEN": ADMIN}).test_client()
    for character, text in SECRETS.items():
        got = fresh.get(f"/api/v1/owners/{PERSON}/items/secrets/told?character={character}", headers=auth(ADMIN))
        assert got.status_code == 200 and got.get_json()["item"]["content"] == text
    found = fresh.post(f"/api/v1/owners/{PERSON}/retrieve", headers=auth(ADMIN),
                       json={"query": "lighthouse", "character": "kai"}).get_json()
    assert [(h["layer"], h["item"]["content"]) for h in found["items"]][0] == ("character", SECRETS["kai"])


@pytest.mark.slow
def test_a_second_host_on_the_same_remote_serves_every_layer(tmp_path):
    remote = f"file://{tmp_path}/remote/{{owner}}.git"
    (tmp_path / "remote").mkdir()
    first = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "a"), "ADMIN_TOKEN": ADMIN, "REMOTE": remote,
                        "REMOTE_FRESHNESS": 0})  # (a checks the remote on every lookup)
    _fill(first.test_client())
    second = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "b"), "ADMIN_TOKEN": ADMIN, "REMOTE": remote})
    client = second.test_client()  # (b never held the person: it clones it from the remote)
    for character, text in SECRETS.items():
        got = client.get(f"/api/v1/owners/{PERSON}/items/secrets/told?character={character}", headers=auth(ADMIN))
        assert got.status_code == 200 and got.get_json()["item"]["content"] == text, got.get_json()
    # a write on b in a layer reaches a's next read of it
    wrote = client.put(f"/api/v1/owners/{PERSON}/items/secrets/more", headers=auth(ADMIN),
                       json={"content": "added on b", "character": "mira"})
    assert wrote.status_code == 201, wrote.get_json()
    back = first.test_client().get(f"/api/v1/owners/{PERSON}/items/secrets/more?character=mira",
                                   headers=auth(ADMIN))
    assert back.status_code == 200 and back.get_json()["item"]["content"] == "added on b", back.get_json()
