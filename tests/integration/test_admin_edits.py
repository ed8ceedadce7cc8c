"""Editing in place through the admin pages (Flask test client): add, edit with preview and If-Match,
delete an item, delete an owner (typed id, admin role); roles decide who may change what.

The browser tests click the same pages; these pin the rules: a stale edit
writes nothing (412) and shows both versions, every change is one commit
whose actor is the operator, a reviewer may look but not change, only an
admin deletes an owner, and only with its id typed out.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from apiworld import app_with_accounts

from webapp.hosting import get_host
from wikimem.context import WriteContext

ADMIN = "admin-edits-token-0123456789"
ACCOUNTS = {"rita": "reviewer", "olga": "operator", "adam": "admin"}
PASSWORD = "correct horse battery staple"
OWNER = "user:xnne"
BASE = f"/admin/owners/{OWNER}"


@pytest.fixture
def app(tmp_path):
    app = app_with_accounts(tmp_path, ADMIN, ACCOUNTS, PASSWORD)
    with app.app_context():
        owner, _ = get_host().ensure_owner(OWNER)
        owner.add("preferences", "tea", "Drinks oolong tea.", ctx=WriteContext(actor="Elaina"))
    return app


def csrf(html: str) -> str:
    return re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html).group(1)


def field(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


def client_as(app, who: str | None = None):
    client = app.test_client()
    token = csrf(client.get("/login").get_data(as_text=True))
    form = {"token": ADMIN} if who is None else {"username": who, "password": PASSWORD}
    assert client.post("/login", data={"csrf_token": token, **form}).status_code == 302
    return client


def owner(app):
    with app.app_context():
        return get_host().owner(OWNER)


def last_commit(app) -> str:
    return subprocess.run(["git", "-C", str(owner(app).root), "log", "-1", "--format=%an|%s"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_edit_previews_the_diff_then_saves_one_commit_as_the_operator(app):
    client = client_as(app, "olga")
    page = client.get(f"{BASE}/edit/preferences/tea").get_data(as_text=True)
    form = {"csrf_token": csrf(page), "etag": field(page, "etag"), "content": "Drinks green tea."}
    head = owner(app).head()
    preview = client.post(f"{BASE}/edit/preferences/tea", data={**form, "op": "preview"})
    html = preview.get_data(as_text=True)
    assert preview.status_code == 200 and "<del>oolong</del>" in html and "<ins>green</ins>" in html
    assert owner(app).head() == head  # a preview writes nothing
    saved = client.post(f"{BASE}/edit/preferences/tea", data={**form, "op": "save"})
    assert saved.status_code == 302
    assert owner(app).item("preferences", "tea").content == "Drinks green tea."
    assert last_commit(app) == "olga|update preferences/tea"


def test_a_stale_edit_writes_nothing_and_shows_both_versions(app):
    client = client_as(app, "olga")
    page = client.get(f"{BASE}/edit/preferences/tea").get_data(as_text=True)
    owner(app).add("preferences", "tea", "Drinks black tea.", ctx=WriteContext(actor="Elaina"))  # a bot, meanwhile
    head = owner(app).head()
    r = client.post(f"{BASE}/edit/preferences/tea", data={
        "csrf_token": csrf(page), "etag": field(page, "etag"), "content": "Drinks green tea.", "op": "save"})
    html = r.get_data(as_text=True)
    assert r.status_code == 412 and "Someone changed this item" in html
    assert "black" in html and "green" in html
    assert owner(app).head() == head and owner(app).item("preferences", "tea").content == "Drinks black tea."
    # saving again from that page is a deliberate overwrite of what it showed
    again = client.post(f"{BASE}/edit/preferences/tea", data={
        "csrf_token": csrf(html), "etag": field(html, "etag"), "content": "Drinks green tea.", "op": "save"})
    assert again.status_code == 302 and owner(app).item("preferences", "tea").content == "Drinks green tea."


def test_add_refuses_an_existing_item_and_a_bad_name(app):
    client = client_as(app, "olga")
    token = csrf(client.get(f"{BASE}/new-item").get_data(as_text=True))
    r = client.post(f"{BASE}/new-item", data={"csrf_token": token, "file": "people", "name": "sister",
                                              "content": "Has a sister."})
    assert r.status_code == 302 and owner(app).item("people", "sister").content == "Has a sister."
    assert last_commit(app) == "olga|add people/sister"
    head = owner(app).head()
    r = client.post(f"{BASE}/new-item", data={"csrf_token": token, "file": "preferences", "name": "tea",
                                              "content": "overwrite?"})
    assert r.status_code == 412 and "already exists" in r.get_data(as_text=True)
    r = client.post(f"{BASE}/new-item", data={"csrf_token": token, "file": "Bad File", "name": "x", "content": "y"})
    assert r.status_code == 422 and owner(app).head() == head  # a refused name: 422


def test_delete_an_item_with_its_etag(app):
    client = client_as(app, "olga")
    page = client.get(f"{BASE}/delete/preferences/tea").get_data(as_text=True)
    r = client.post(f"{BASE}/delete/preferences/tea", data={"csrf_token": csrf(page), "etag": field(page, "etag")})
    assert r.status_code == 302 and not owner(app).has_item("preferences", "tea")
    assert last_commit(app) == "olga|remove preferences/tea"


def test_a_reviewer_may_look_but_not_change(app):
    client = client_as(app, "rita")
    page = client.get(f"{BASE}/edit/preferences/tea")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    head = owner(app).head()
    r = client.post(f"{BASE}/edit/preferences/tea", data={"csrf_token": csrf(html), "etag": field(html, "etag"),
                                                          "content": "x", "op": "save"})
    assert r.status_code == 403 and owner(app).head() == head


@pytest.mark.parametrize("who, shown", [
    ("rita", set()),
    ("olga", {"edit-item", "delete-item", "new-item", "rollback", "revert", "restore"}),
    ("adam", {"edit-item", "delete-item", "new-item", "rollback", "revert", "restore", "delete-owner",
              "bulk-rollback"}),
])
def test_pages_offer_only_the_actions_a_role_may_take(app, who, shown):
    with app.app_context():
        o = get_host().owner(OWNER)
        o.add("preferences", "tea", "Hates tea.", ctx=WriteContext(actor="Elaina-v12", run="run_bad"))
        head = o.head()
    client = client_as(app, who)
    pages = "".join(client.get(url).get_data(as_text=True) for url in (
        BASE, f"{BASE}/items/preferences/tea", f"{BASE}/runs/run_bad", f"{BASE}/commits/{head}",
        f"{BASE}/history", "/admin/runs?actor=Elaina-v12"))
    found = {"edit-item": 'id="edit-item"' in pages, "delete-item": 'id="delete-item"' in pages,
             "new-item": 'id="new-item"' in pages, "rollback": 'id="rollback"' in pages,
             "revert": "/revert" in pages, "restore": "/restore" in pages,
             "delete-owner": 'id="delete-owner"' in pages, "bulk-rollback": 'id="bulk-rollback"' in pages}
    assert {k for k, v in found.items() if v} == shown


@pytest.mark.parametrize("who", ["olga", "rita"])
def test_only_an_admin_deletes_an_owner(app, who):
    client = client_as(app, who)
    page = client.get(f"{BASE}/delete-owner").get_data(as_text=True)
    r = client.post(f"{BASE}/delete-owner", data={"csrf_token": csrf(page), "confirm_id": OWNER})
    assert r.status_code == 403
    with app.app_context():
        assert get_host().exists(OWNER)


def test_deleting_an_owner_needs_its_id_typed(app):
    client = client_as(app, "adam")
    page = client.get(f"{BASE}/delete-owner").get_data(as_text=True)
    assert "Type the owner id" in page
    r = client.post(f"{BASE}/delete-owner", data={"csrf_token": csrf(page), "confirm_id": "user:xnn"})
    assert r.status_code == 400
    with app.app_context():
        assert get_host().exists(OWNER)
    r = client.post(f"{BASE}/delete-owner", data={"csrf_token": csrf(page), "confirm_id": OWNER})
    assert r.status_code == 302
    with app.app_context():
        assert not get_host().exists(OWNER)
    assert client.get(BASE).status_code == 404


def test_runs_page_and_bulk_preview_render_and_need_a_search(app):
    client = client_as(app, "adam")
    with app.app_context():
        o = get_host().owner(OWNER)
        o.add("preferences", "tea", "Hates tea.", ctx=WriteContext(actor="Elaina-v12", run="run_bad"))
    html = client.get("/admin/runs", query_string={"actor": "Elaina-v12"}).get_data(as_text=True)
    assert "run_bad" in html and 'id="bulk-rollback"' in html
    assert 'id="bulk-rollback"' not in client.get("/admin/runs").get_data(as_text=True)
    assert client.get("/admin/runs", query_string={"since": "soon"}).status_code == 422  # a refused value
    preview = client.get("/admin/bulk/rollback", query_string={"actor": "Elaina-v12"}).get_data(as_text=True)
    assert "Roll back 1 run of 1 owner?" in preview and "Hates tea" not in preview
    assert client.get("/admin/bulk/rollback", query_string={"owner_prefix": "user:"}).status_code == 400


def test_bulk_rollback_from_the_pages_needs_the_admin_role_and_shows_the_job(app):
    import time

    with app.app_context():
        for i in range(3):
            o, _ = get_host().ensure_owner(f"user:b{i}")
            o.add("preferences", "tea", "Hates tea.", ctx=WriteContext(actor="Elaina-v12", run=f"run_bad_{i}"))
    olga = client_as(app, "olga")
    page = olga.get("/admin/bulk/rollback", query_string={"actor": "Elaina-v12"}).get_data(as_text=True)
    assert "Roll back 3 runs of 3 owners?" in page
    form = {"csrf_token": csrf(page), "actor": "Elaina-v12", "request_id": field(page, "request_id")}
    assert olga.post("/admin/bulk/rollback", data=form).status_code == 403  # operators may look, not bulk
    adam = client_as(app, "adam")
    page = adam.get("/admin/bulk/rollback", query_string={"actor": "Elaina-v12"}).get_data(as_text=True)
    form = {"csrf_token": csrf(page), "actor": "Elaina-v12", "request_id": field(page, "request_id")}
    r = adam.post("/admin/bulk/rollback", data=form)
    assert r.status_code == 302 and "/admin/jobs/job_" in r.headers["Location"]
    assert adam.post("/admin/bulk/rollback", data=form).headers["Location"] == r.headers["Location"]  # double submit
    deadline = time.monotonic() + 60
    while "data-state=\"done\"" not in (html := adam.get(r.headers["Location"]).get_data(as_text=True)):
        assert time.monotonic() < deadline, html
        time.sleep(0.2)
    assert html.count("result-done") == 3 and "Undo this bulk rollback" in html
    with app.app_context():
        get_host().start_jobs().stop()
        assert get_host().owner("user:b1").history(limit=1).entries[0].actor == "adam"
