"""What a commit was — memorize, the diary tool, an API write, a batch, an edit, an undo — is its
``Wikimem-Action``, and the History filter, the run search and ``git log`` agree on it (issue 24, item 1).

The History page offered ``memorize`` and ``diary-tool`` while memorize
commits were recorded as ``diary`` or ``batch``: ``?action=memorize`` was
always empty. Each write below goes through the real app (API and admin
pages) and a real model stand-in; ``git log`` is the independent witness.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from apiworld import ADMIN, OWNER, auth

from webapp import create_app
from webapp.hosting import get_host
from wikimem.context import WriteContext

O = f"/api/v1/owners/{OWNER}"
BASE = f"/admin/owners/{OWNER}"


@pytest.fixture
def app(tmp_path, llm):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "LLM_URL": llm.url, "LLM_MODEL": "fake-chat"})
    assert app.test_client().put(O, headers=auth(ADMIN)).status_code in (200, 201)
    return app


def owner(app):
    with app.app_context():
        return get_host().owner(OWNER)


def actions_in_git(app) -> list[str]:
    """``Wikimem-Action`` of every commit, newest first, read by the git CLI."""
    out = subprocess.run(["git", "-C", str(owner(app).root), "log", "--format=%(trailers:key=Wikimem-Action,"
                          "valueonly,separator=%x2C)"], capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def admin_client(app):
    client = app.test_client()
    token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', client.get("/login").get_data(as_text=True)).group(1)
    assert client.post("/login", data={"csrf_token": token, "token": ADMIN}).status_code == 302
    return client


def write_one_of_each(app, llm) -> dict[str, str]:
    """One write of each kind; the run id or commit each made."""
    client = app.test_client()
    llm.replies.append(json.dumps([{"content": "Walked by the sea."}]))
    one = client.post(O + "/memorize", headers=auth(ADMIN), json={"turn": "user: I walked by the sea",
                                                                  "run": "run_mem1"})
    llm.replies.append(json.dumps([{"content": "Ate noodles."}, {"content": "Plans a trip."}]))
    two = client.post(O + "/memorize", headers=auth(ADMIN), json={"turn": "user: noodles, and a trip",
                                                                  "run": "run_mem2"})
    tool = client.post(O + "/diary-tool", headers=auth(ADMIN), json={"arguments": '{"content": "Slept early."}'})
    put = client.put(O + "/items/preferences/tea", headers=auth(ADMIN), json={"content": "Drinks oolong."})
    batch = client.post(O + "/batch", headers=auth(ADMIN), json={
        "ops": [{"op": "add", "file": "notes", "name": "a", "content": "A note."}], "run": "run_batch"})
    assert [r.status_code for r in (one, two, tool, put, batch)] == [200, 200, 201, 201, 200], [
        r.get_data(as_text=True)[:200] for r in (one, two, tool, put, batch)]
    return {"memorize-1": one.get_json()["commit"], "memorize-2": two.get_json()["commit"],
            "diary-tool": tool.get_json()["commit"], "batch": batch.get_json()["commit"]}


def test_each_kind_of_write_records_what_it_was(app, llm):
    write_one_of_each(app, llm)
    client = admin_client(app)
    page = client.get(f"{BASE}/edit/preferences/tea").get_data(as_text=True)
    form = {"csrf_token": re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page).group(1), "op": "save",
            "etag": re.search(r'name="etag" value="([^"]*)"', page).group(1), "content": "Drinks green tea."}
    assert client.post(f"{BASE}/edit/preferences/tea", data=form).status_code == 302
    owner(app).undo("rollback", "run_mem2", ctx=WriteContext(actor="operator"))
    # newest first: rollback, the operator's edit, batch, the API write, diary tool, memorize ×2, init
    assert actions_in_git(app) == ["rollback", "update", "batch", "add", "diary-tool", "memorize", "memorize",
                                   "init"]


def test_a_one_entry_memorize_still_says_which_day_and_time_it_wrote(app, llm):
    made = write_one_of_each(app, llm)
    entry = owner(app).review.entry_at(made["memorize-1"])
    assert entry.action == "memorize" and entry.date and entry.time_of_day
    message = subprocess.run(["git", "-C", str(owner(app).root), "log", "-1", "--format=%B", made["memorize-1"]],
                             capture_output=True, text=True, check=True).stdout
    assert "Wikimem-Action: memorize" in message and f"Wikimem-Date: {entry.date}" in message
    # the token's name: one default actor
    assert "Wikimem-Run: run_mem1" in message and "Wikimem-Actor: admin" in message


@pytest.mark.parametrize(("action", "expected"), [
    ("memorize", {"memorize-1", "memorize-2"}),
    ("diary-tool", {"diary-tool"}),
    ("batch", {"batch"}),
])
def test_the_history_filter_finds_each_kind(app, llm, action, expected):
    made = write_one_of_each(app, llm)
    found = app.test_client().get(O + f"/history?action={action}", headers=auth(ADMIN)).get_json()["entries"]
    assert {e["id"] for e in found} == {made[k] for k in expected}
    html = admin_client(app).get(f"{BASE}/history", query_string={"action": action}).get_data(as_text=True)
    assert html.count('<li class="commit') == len(expected)
    assert f'<option value="{action}" selected>' in html


def test_the_run_search_finds_memorize_runs_by_their_action(app, llm):
    write_one_of_each(app, llm)
    with app.app_context():
        found = get_host().fleet.find_runs(_query(action="memorize"))
    assert sorted(r.run for r in found.runs) == ["run_mem1", "run_mem2"]
    html = admin_client(app).get("/admin/runs", query_string={"action": "memorize"}).get_data(as_text=True)
    assert 'class="total-runs">2<' in html and "run_mem1" in html and "run_mem2" in html
    assert "run_batch" not in html


def _query(**kwargs):
    from wikimem.host import RunQuery

    return RunQuery.parse(**kwargs)


def test_the_demo_bad_run_is_found_as_a_memorize_run(tmp_path):
    from wikimem.host import make_host, seed_demo

    host = make_host(tmp_path / "data")
    bad_run = seed_demo(host).bad_run
    found = host.fleet.find_runs(_query(action="memorize", owner_prefix="user:xnne"))
    assert bad_run in {r.run for r in found.runs} and len(found.runs) == 2  # the good memorize run, the bad one
