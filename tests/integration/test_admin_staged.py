"""The Staged pages of the admin UI: the list across owners, a run with sampled diffs and the bulk form, one
owner's diff with approve, edit-then-approve and discard, a bulk job's progress; only admins act."""

from __future__ import annotations

import re
import time

import pytest
from apiworld import ADMIN

from webapp import create_app
from webapp.hosting import get_host
from webapp.session import account_line
from wikimem.context import WriteContext

RUN = "run_prompt_v7"
REVIEWER = ("rita", "correct horse battery staple", "")


@pytest.fixture
def app(tmp_path):
    operators = tmp_path / "operators.jsonl"
    operators.write_text(account_line(*REVIEWER, role="reviewer") + "\n", encoding="utf-8")
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "OPERATORS_FILE": str(operators)})
    with app.app_context():
        host = get_host()
        for i in range(4):
            owner, _ = host.ensure_owner(f"user:s{i}")
            owner.add("preferences", "tea", "Drinks green tea.", ctx=WriteContext(actor="seed"))
            owner.add("preferences", "tea", f"Drinks black tea ({i}).",
                      ctx=WriteContext(run=RUN, actor="memorize-v7", staged=True))
            owner.diary_append(f"Owner {i} talked about the lighthouse.", date="2026-07-21", time="10:00",
                               ctx=WriteContext(run=RUN, actor="memorize-v7", staged=True))
        host.owner("user:s3").add("preferences", "tea", "Drinks oolong.", ctx=WriteContext(actor="operator"))
    yield app
    with app.app_context():
        get_host().start_jobs().stop()


def csrf(html: str) -> str:
    found = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html)
    assert found
    return found.group(1)


def sign_in(client, **form):
    return client.post("/login", data={"csrf_token": csrf(client.get("/login").get_data(as_text=True)), **form})


def test_the_staged_pages_review_and_approve_a_run_across_owners(app):
    client = app.test_client()
    sign_in(client, token=ADMIN)
    listing = client.get("/admin/staged").get_data(as_text=True)
    assert RUN in listing and 'id="waiting-runs">1<' in listing
    page = client.get(f"/admin/staged/{RUN}").get_data(as_text=True)
    assert "black" in page and "lighthouse" in page and "staged-sample" in page  # sampled diffs, word by word
    assert 'class="conflicts-total">1<' in page  # user:s3 changed its tea since
    r = client.post(f"/admin/staged/{RUN}/approve", data={"csrf_token": csrf(page), "except": ["user:s2"],
                                                         "request_id": "ui-test-1"})
    assert r.status_code == 302 and "/admin/staged/jobs/" in r.headers["Location"]
    deadline = time.monotonic() + 30
    while "data-state=\"done\"" not in (job := client.get(r.headers["Location"]).get_data(as_text=True)):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert job.count('class="result-done"') == 3
    with app.app_context():
        host = get_host()
        assert host.owner("user:s0").item("preferences", "tea").content == "Drinks black tea (0)."
        assert host.owner("user:s3").item("preferences", "tea").content == "Drinks oolong."  # kept
        assert [r.run for r in host.owner("user:s2").staged_runs()] == [RUN]
    # The one left out: edit, then approve.
    owner_page = client.get(f"/admin/owners/user:s2/staged/{RUN}?edit=1").get_data(as_text=True)
    assert "Edit, then approve" in owner_page
    fields = dict(re.findall(r'<input type="hidden" name="((?:kind|file|name|date|time|orig)-\d+)" value="([^"]*)"',
                             owner_page))
    n = next(k.split("-")[1] for k, v in fields.items() if k.startswith("kind-") and v == "wiki")
    r = client.post(f"/admin/owners/user:s2/staged/{RUN}/approve",
                    data={"csrf_token": csrf(owner_page), **fields, f"edit-{n}": "Drinks black tea, no sugar."})
    assert r.status_code == 302 and "/commits/" in r.headers["Location"]
    with app.app_context():
        assert get_host().owner("user:s2").item("preferences", "tea").content == "Drinks black tea, no sugar."
    settled = client.get(f"/admin/staged/{RUN}").get_data(as_text=True)
    assert settled.count('class="settled-approved"') == 4


def test_discarding_one_owner_asks_first_keeps_the_commits_and_a_reviewer_cannot_act(app):
    import subprocess

    client = app.test_client()
    sign_in(client, username=REVIEWER[0], password=REVIEWER[1])
    page = client.get(f"/admin/owners/user:s1/staged/{RUN}").get_data(as_text=True)
    assert "<fieldset class=\"plain\" disabled" in page
    r = client.post(f"/admin/owners/user:s1/staged/{RUN}/discard", data={"csrf_token": csrf(page)})
    assert r.status_code == 403
    admin = app.test_client()
    sign_in(admin, token=ADMIN)
    page = admin.get(f"/admin/owners/user:s1/staged/{RUN}").get_data(as_text=True)
    assert 'id="discard"' in page and f"/admin/owners/user:s1/staged/{RUN}/discard" in page  # a link, not a submit
    r = admin.post(f"/admin/owners/user:s1/staged/{RUN}/discard", data={"csrf_token": csrf(page)})
    assert r.status_code == 409  # a POST that did not come from the confirmation page discards nothing
    with app.app_context():
        assert [x.run for x in get_host().owner("user:s1").staged_runs()] == [RUN]
    confirm = admin.get(f"/admin/owners/user:s1/staged/{RUN}/discard").get_data(as_text=True)
    assert "Discard staged run" in confirm and "<ins>black</ins>" in confirm and "lighthouse" in confirm  # what goes
    assert f"refs/wikimem/discarded/{RUN}" in confirm and "restore-discarded" in confirm  # and how to undo it
    tip = re.search(r'name="tip" value="([0-9a-f]{40})"', confirm).group(1)
    r = admin.post(f"/admin/owners/user:s1/staged/{RUN}/discard", data={"csrf_token": csrf(confirm), "tip": tip})
    assert r.status_code == 302 and f"/admin/owners/user:s1/discarded/{RUN}" in r.headers["Location"]
    with app.app_context():
        owner = get_host().owner("user:s1")
        assert owner.staged_runs() == [] and owner.item("preferences", "tea").content == "Drinks green tea."
        kept = subprocess.run(["git", "-C", str(owner.root), "rev-parse", f"refs/wikimem/discarded/{RUN}"],
                              capture_output=True, text=True).stdout.strip()
    assert kept == tip  # the discarded commits stay reachable
    assert 'class="settled-discarded"' in admin.get(f"/admin/staged/{RUN}").get_data(as_text=True)
    # A wrong click, undone: the run staged again, then approved.
    done = admin.get(r.headers["Location"]).get_data(as_text=True)
    assert 'id="restore-discarded"' in done
    r = admin.post(f"/admin/owners/user:s1/discarded/{RUN}/restore", data={"csrf_token": csrf(done)})
    assert r.status_code == 302 and f"/admin/owners/user:s1/staged/{RUN}-restored" in r.headers["Location"]
    with app.app_context():
        owner = get_host().owner("user:s1")
        assert [(x.run, x.tip) for x in owner.staged_runs()] == [(f"{RUN}-restored", tip)]
        owner.approve_staged(f"{RUN}-restored", ctx=WriteContext(actor="alice"))
        assert owner.item("preferences", "tea").content == "Drinks black tea (1)."
        assert owner.discarded_runs() == []


def test_discarded_commits_are_dropped_by_housekeeping_after_their_days(app):
    import os
    import subprocess

    with app.app_context():
        host = get_host()
        owner = host.owner("user:s0")
        owner.discard_staged(RUN, ctx=WriteContext(actor="bob"))
        assert owner.discarded_runs() == [RUN]
        assert host.sweep_discarded() == {}  # kept for WIKIMEM_DISCARDED_DAYS (14 by default)
        ref = owner.root / ".git" / "refs" / "wikimem" / "discarded" / RUN
        old = ref.stat().st_mtime - host.retention.discarded - 60
        os.utime(ref, (old, old))  # as if discarded 14 days and a minute ago
        assert host.sweep_discarded() == {"user:s0": [RUN]}
        assert owner.discarded_runs() == []
        refs = subprocess.run(["git", "-C", str(owner.root), "for-each-ref"], capture_output=True, text=True).stdout
        assert "discarded" not in refs
