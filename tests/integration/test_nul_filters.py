"""A NUL character in any filter is refused (422), never a 500, with SQLite and with a cluster's PostgreSQL
(whose text values cannot hold one)."""

from __future__ import annotations

import pytest
from apiworld import ADMIN, auth

from webapp import create_app

NUL = "%00"
GETS = [f"/api/v1/runs?actor=a{NUL}b", f"/api/v1/runs?run=r{NUL}", f"/api/v1/runs?source_conv={NUL}",
        f"/api/v1/runs?owner_prefix=user{NUL}", f"/api/v1/runs?by=owner&actor={NUL}", f"/api/v1/jobs?kind=x{NUL}",
        f"/api/v1/jobs?owner_prefix=user{NUL}", f"/api/v1/staged?run=r{NUL}", f"/api/v1/staged?actor=a{NUL}",
        f"/api/v1/staged?owner_prefix={NUL}", f"/api/v1/staged/r{NUL}"]


@pytest.fixture(params=["sqlite", "postgres"])
def client(request, tmp_path):
    config = {"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN}
    if request.param == "postgres":
        config["DATABASE_URL"] = request.getfixturevalue("database_url")
    app = create_app(config)
    client = app.test_client()
    assert client.put("/api/v1/owners/user:ann", headers=auth(ADMIN)).status_code == 201
    assert client.post("/api/v1/owners/user:ann/diary", headers=auth(ADMIN),
                       json={"content": "went to the sea", "run": "run_1", "actor": "kai"}).status_code == 201
    yield client
    host = app.extensions.get("wikimem.host")
    if host is not None and host.jobs_started:
        host.start_jobs().stop()


@pytest.mark.parametrize("path", GETS)
def test_a_nul_in_a_filter_is_refused(client, path):
    r = client.get(path, headers=auth(ADMIN))
    assert r.status_code in (400, 422, 404), (r.status_code, r.get_data(as_text=True))
    assert r.get_json()["error"]["code"] != "internal"


@pytest.mark.parametrize("field", ["actor", "run", "source_conv", "owner_prefix"])
def test_a_nul_in_a_bulk_selection_is_refused(client, field):
    r = client.post("/api/v1/bulk/rollback", headers=auth(ADMIN), json={field: "x\u0000y", "preview": True})
    assert r.status_code in (400, 422), (r.status_code, r.get_data(as_text=True))
    ok = client.get("/api/v1/runs?actor=kai", headers=auth(ADMIN))  # and the database still answers
    assert ok.status_code == 200 and ok.get_json()["runs"]
