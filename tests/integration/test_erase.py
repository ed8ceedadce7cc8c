"""Erasing an owner everywhere (issue 27): nothing under the data root or the file:// remote names it afterwards.

The world: two owners on a host replicating to a file:// remote, with an
embedder (vector caches), a chat model (a memorize job holding a raw
turn), a bulk rollback over both (its results name each owner), retrievals
as of a commit and the admin pages looked at. After the erase job the
owner's id, its folder name and every text it held are searched for in
every byte under the data root and the remote, git objects decompressed
(:mod:`traces`).
"""

from __future__ import annotations

import json
import time

import pytest
from apiworld import ADMIN, auth, finished_job
from fakes import FakeOpenAI
from traces import traces

from webapp import create_app
from wikimem.host import encode_owner_id

GONE = "user:zed-7"  # no other id contains it
KEPT = "user:amy"
TEXTS = ["ZEDTEA-oolong-at-dawn", "ZEDDIARY-walked-to-the-pier", "ZEDTURN-my-sister-lives-in-Lyon",
         "ZEDMEMO-sister-in-Lyon"]


@pytest.fixture
def host_world(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    with FakeOpenAI(dim=16) as fake:
        fake.replies.append(json.dumps([{"content": TEXTS[3]}]))
        app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                          "REMOTE": f"file://{remote}/{{owner}}.git", "LLM_URL": fake.url, "LLM_MODEL": "fake-chat",
                          "EMBED_URL": fake.url, "EMBED_MODEL": "fake-embed"})
        client = app.test_client()
        yield app, client, tmp_path


def _fill(client) -> None:
    h = auth(ADMIN)
    for owner in (GONE, KEPT):
        assert client.put(f"/api/v1/owners/{owner}", headers=h).status_code == 201
    o = f"/api/v1/owners/{GONE}"
    assert client.put(o + "/items/prefs/tea", headers=auth(ADMIN, **{"Idempotency-Key": "zk-1"}),
                      json={"content": TEXTS[0], "run": "run_z1", "actor": "bot"}).status_code == 201
    assert client.post(o + "/diary", headers=h, json={"content": TEXTS[1], "date": "2026-07-01", "time": "09:00",
                                                      "run": "run_z1", "actor": "bot"}).status_code == 201
    job = client.post(o + "/memorize", headers=auth(ADMIN, Prefer="respond-async"),
                      json={"turn": f"user: {TEXTS[2]}", "run": "run_z2", "actor": "bot"}).get_json()
    assert finished_job(client, job)["state"] == "done"
    client.put(f"/api/v1/owners/{KEPT}/items/prefs/tea", headers=h, json={"content": "amy likes green tea",
                                                                          "run": "run_z1", "actor": "bot"})
    bulk = client.post("/api/v1/bulk/rollback", headers=h, json={"run": "run_z1"}).get_json()
    assert finished_job(client, bulk)["state"] == "done"
    assert client.put(o + "/items/prefs/tea", headers=h, json={"content": TEXTS[0] + " again"}).status_code == 201
    client.post(o + "/retrieve", headers=h, json={"query": "oolong"})
    client.post(o + "/retrieve", headers=h, json={"query": "oolong", "as_of": "HEAD~1"})
    client.post(f"/api/v1/owners/{KEPT}/retrieve", headers=h, json={"query": "tea"})
    assert client.get("/api/v1/runs?owner_prefix=user:", headers=h).get_json()["total"]["owners"] == 2


def _sign_in(client) -> None:
    import re

    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    assert client.post("/login", data={"token": ADMIN, "csrf_token": token}).status_code == 302


def test_erasing_leaves_no_byte_of_the_owner_under_the_data_root_or_the_remote(host_world):
    app, client, tmp = host_world
    _fill(client)
    _sign_in(client)
    assert client.get(f"/admin/owners/{GONE}").status_code == 200
    assert client.get(f"/admin/owners/{GONE}/history").status_code == 200
    needles = [GONE, encode_owner_id(GONE), *TEXTS]
    assert traces([tmp / "data", tmp / "remote"], needles), "the world holds the owner before the erase"

    r = client.post(f"/api/v1/owners/{GONE}/erase", headers=auth(ADMIN), json={"confirm": GONE})
    assert r.status_code == 202 and r.headers["Location"] == f"/api/v1/jobs/{r.get_json()['id']}"
    job = finished_job(client, r.get_json())
    assert job["state"] == "done", job
    receipt = job["results"][0]["result"]

    assert traces([tmp / "data", tmp / "remote"], needles) == []
    assert GONE not in json.dumps(receipt) and not any(t in json.dumps(receipt) for t in TEXTS)
    assert {p["place"] for p in receipt["places"]} >= {"owner repository", "remote", "run index", "jobs"}
    assert next(p for p in receipt["places"] if p["place"] == "remote")["state"] == "deleted"
    assert receipt["remains"] == [] and receipt["by"] == "admin" and receipt["erasure"].startswith("er_")

    h = auth(ADMIN)
    assert client.get(f"/api/v1/owners/{GONE}", headers=h).status_code == 404
    assert GONE not in [o["id"] for o in client.get("/api/v1/owners", headers=h).get_json()["owners"]]
    runs = client.get("/api/v1/runs?owner_prefix=user:", headers=h).get_json()
    assert {r["owner"] for r in runs["runs"]} == {KEPT}
    assert client.get(f"/admin/owners/{GONE}").status_code == 404
    assert GONE not in client.get("/admin/owners").get_data(as_text=True)
    assert GONE not in client.get("/admin/runs?run=run_z1").get_data(as_text=True)
    assert client.get(f"/api/v1/owners/{KEPT}/items/prefs/tea", headers=h).status_code in (200, 404)
    assert client.get(f"/api/v1/owners/{KEPT}", headers=h).status_code == 200
    # the receipt, asked by the id that it does not record
    assert client.get(f"/api/v1/erasures?owner={GONE}", headers=h).get_json() == receipt
    assert client.get(f"/api/v1/erasures?owner={KEPT}", headers=h).status_code == 404


def test_a_second_request_is_the_same_job_and_the_same_receipt(host_world):
    app, client, tmp = host_world
    _fill(client)
    first = client.post(f"/api/v1/owners/{GONE}/erase", headers=auth(ADMIN), json={"confirm": GONE}).get_json()
    second = client.post(f"/api/v1/owners/{GONE}/erase", headers=auth(ADMIN), json={"confirm": GONE}).get_json()
    assert second["id"] == first["id"]
    done = finished_job(client, first)
    third = client.post(f"/api/v1/owners/{GONE}/erase", headers=auth(ADMIN), json={"confirm": GONE}).get_json()
    assert third["id"] == first["id"] and finished_job(client, third)["results"] == done["results"]


def test_erase_needs_the_id_repeated_and_the_admin_scope(world):
    from apiworld import OWNER

    client = world.client
    r = client.post(f"/api/v1/owners/{OWNER}/erase", headers=auth(ADMIN), json={"confirm": "user:someone"})
    assert r.status_code == 422 and client.get(f"/api/v1/owners/{OWNER}", headers=auth(ADMIN)).status_code == 200
    r = client.post(f"/api/v1/owners/{OWNER}/erase", headers=auth(world.secrets["writer"]), json={"confirm": OWNER})
    assert r.status_code == 403
    assert client.post(f"/api/v1/owners/{OWNER}/erase", headers=auth(ADMIN), json={}).status_code == 400


def test_an_owner_made_again_and_erased_again_gets_a_new_receipt(host_world):
    app, client, tmp = host_world
    h = auth(ADMIN)
    client.put(f"/api/v1/owners/{GONE}", headers=h)
    first = finished_job(client, client.post(f"/api/v1/owners/{GONE}/erase", headers=h,
                                             json={"confirm": GONE}).get_json())
    assert client.put(f"/api/v1/owners/{GONE}", headers=h).status_code == 201  # a new owner, empty
    assert client.get(f"/api/v1/owners/{GONE}/files", headers=h).get_json()["files"] == []
    client.put(f"/api/v1/owners/{GONE}/items/prefs/x", headers=h, json={"content": TEXTS[0]})
    again = client.post(f"/api/v1/owners/{GONE}/erase", headers=h, json={"confirm": GONE}).get_json()
    assert again["id"] != first["id"]
    assert finished_job(client, again)["state"] == "done"
    assert traces([tmp / "data", tmp / "remote"], [GONE, encode_owner_id(GONE), TEXTS[0]]) == []


def test_another_process_drops_its_cached_owner_on_its_next_lookup(tmp_path):
    from wikimem.errors import NotFound
    from wikimem.host import make_host

    one, two = make_host(tmp_path), make_host(tmp_path)
    one.create_owner(GONE).add("prefs", "tea", TEXTS[0])
    cached = two.owner(GONE)
    cached.retrieve("oolong")
    job, _ = one.erase_owner(GONE)
    deadline = time.monotonic() + 30
    while one.jobs.get(job.id).state != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(NotFound):
        two.owner(GONE)
    assert two.cached_owners() == []


def test_the_cli_erases_with_the_id_typed_or_yes(tmp_path, capsys):
    from wikimem.cli import main
    from wikimem.host import make_host

    make_host(tmp_path).create_owner(GONE).add("prefs", "tea", TEXTS[0])
    assert main(["erase", GONE, "--data", str(tmp_path)]) == 2  # no terminal to ask on: refused
    assert main(["erase", GONE, "--data", str(tmp_path), "--yes"]) == 0
    receipt = json.loads(capsys.readouterr().out)
    assert receipt["kind"] == "erase-owner" and GONE not in json.dumps(receipt)
    assert traces([tmp_path], [GONE, encode_owner_id(GONE), TEXTS[0]]) == []


def test_the_erase_and_forget_audit_events_name_neither_the_owner_nor_the_item(world, caplog):
    import logging

    from apiworld import OWNER

    client = world.client
    client.put(f"/api/v1/owners/{OWNER}/items/prefs/secret-name", headers=auth(ADMIN), json={"content": "x"})
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        client.post(f"/api/v1/owners/{OWNER}/forget", headers=auth(ADMIN),
                    json={"file": "prefs", "name": "secret-name"})
        client.post(f"/api/v1/owners/{OWNER}/erase", headers=auth(ADMIN), json={"confirm": OWNER})
    forget, erase = [r for r in caplog.records if r.name == "wikimem.audit"]
    assert (forget.audit, forget.owner, erase.audit) == ("forget", OWNER, "erase-owner")
    assert "secret-name" not in json.dumps(forget.__dict__, default=str)
    assert erase.owner.startswith("er_") and OWNER not in json.dumps(erase.__dict__, default=str)
