"""The jobs view and fair, bounded queues through the real app (issue 25): ``GET /api/v1/jobs``, cancel, 429.

Jobs of a kind no runner handles stay queued, so what the list shows and
what cancel does are seen without racing a runner; the caps are met with
memorize jobs against a fake chat endpoint that answers only when released.
"""

from __future__ import annotations

import itertools
import re
import threading

import pytest
from apiworld import ADMIN, auth

from webapp import create_app
from webapp.hosting import get_host
from webapp.session import account_line
from wikimem.host.access.tokens import append_token, mint_token

IDLE = "idle-kind"  # no runner handles it: its jobs stay queued


def queue(app, owner: str | None, tenant: str = "", *, kind: str = IDLE, within: str | None = None) -> str:
    with app.app_context():
        params = {"owner": owner} if owner else {"within": within or "", "selection": {"actor": "x"}}
        job, _ = get_host().jobs.submit(kind, [{"n": 1}], params=params, tenant=tenant)
        return job.id


def ids(response) -> list[str]:
    assert response.status_code == 200, response.get_json()
    return [j["id"] for j in response.get_json()["jobs"]]


def test_the_list_shows_each_caller_the_jobs_of_its_owners_newest_first(world):
    app, client = world.app, world.client
    mine = [queue(app, "user:lumi"), queue(app, "user:luna")]
    other = queue(app, "user:xnne")
    bulk = queue(app, None, kind="bulk-rollback", within="user:lu")
    assert ids(client.get("/api/v1/jobs", headers=auth(ADMIN))) == [bulk, other, *reversed(mine)]
    # a token limited to user:lu… sees its owners' jobs only, and no bulk job (admin scope)
    assert ids(client.get("/api/v1/jobs", headers=auth(world.secrets["scoped"]))) == list(reversed(mine))
    assert ids(client.get("/api/v1/jobs?owner_prefix=user:x", headers=auth(world.secrets["scoped"]))) == []
    # filters: kind, state, owner prefix, since; a cursor pages through
    assert ids(client.get("/api/v1/jobs?kind=bulk-rollback", headers=auth(ADMIN))) == [bulk]
    assert ids(client.get("/api/v1/jobs?owner_prefix=user:x&state=queued", headers=auth(ADMIN))) == [other]
    assert ids(client.get("/api/v1/jobs?since=2999-01-01", headers=auth(ADMIN))) == []
    first = client.get("/api/v1/jobs?limit=2", headers=auth(ADMIN)).get_json()
    rest = client.get(f"/api/v1/jobs?limit=2&cursor={first['next']}", headers=auth(ADMIN)).get_json()
    assert [j["id"] for j in first["jobs"] + rest["jobs"]] == [bulk, other, *reversed(mine)] and not rest["next"]
    row = first["jobs"][1]
    assert row["owner"] == "user:xnne" and row["state"] == "queued" and (row["done"], row["total"]) == (0, 1)
    assert "results" not in row
    for bad in ("state=lost", "since=soon", "cursor=bm90IGEgY3Vyc29y", "limit=0"):  # malformed 400, refused 422
        r = client.get(f"/api/v1/jobs?{bad}", headers=auth(ADMIN))
        assert r.status_code in (400, 422) and r.get_json()["error"]["code"], bad
    assert client.get("/api/v1/jobs?state=lost", headers=auth(ADMIN)).status_code == 422


def test_a_queued_job_is_cancelled_once_and_the_rules_of_who_may_hold(world):
    app, client = world.app, world.client
    job = queue(app, "user:lumi")
    assert client.post(f"/api/v1/jobs/{job}/cancel", headers=auth(world.secrets["reader"])).status_code == 403
    outside = queue(app, "user:xnne")
    r = client.post(f"/api/v1/jobs/{outside}/cancel", headers=auth(world.secrets["scoped"]))
    assert r.status_code == 404  # not another prefix's to see
    r = client.post(f"/api/v1/jobs/{job}/cancel", headers=auth(world.secrets["scoped"]))
    assert r.status_code == 200 and r.get_json()["state"] == "cancelled"
    assert r.get_json()["results"] == [{"step": 0, "state": "cancelled"}]
    again = client.post(f"/api/v1/jobs/{job}/cancel", headers=auth(world.secrets["scoped"]))
    assert again.status_code == 200 and again.get_json()["state"] == "cancelled"
    bulk = queue(app, None, kind="bulk-rollback", within="user:lu")
    assert client.post(f"/api/v1/jobs/{bulk}/cancel", headers=auth(world.secrets["scoped"])).status_code == 404
    assert client.post(f"/api/v1/jobs/{bulk}/cancel", headers=auth(ADMIN)).get_json()["state"] == "cancelled"
    with app.app_context():  # a job that started cannot be cancelled
        started = get_host().jobs.claim("test-runner", [IDLE], lease=30, max_attempts=3)
        assert started is not None and started.job == outside
    r = client.post(f"/api/v1/jobs/{outside}/cancel", headers=auth(ADMIN))
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "conflict"


@pytest.fixture
def capped(tmp_path):
    """The app with a slow fake model (it answers when released) and small caps: 3 per prefix, 2 per owner."""
    from fakes import FakeOpenAI

    release = threading.Event()
    llm = FakeOpenAI().start()
    llm.reply_fn = lambda messages: release.wait(30) and '[{"content": "Went surfing."}]'
    tokens = tmp_path / "tokens.jsonl"
    secrets = {}
    for name, prefix in (("flood", "user:a"), ("calm", "user:b")):
        secret, entry = mint_token(name, ["read", "write"], prefix)
        append_token(tokens, entry)
        secrets[name] = secret
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens), "LLM_URL": llm.url, "LLM_MODEL": "fake",
                      "JOBS_PER_PREFIX": 3, "JOBS_PER_OWNER": 2})
    client = app.test_client()
    for owner in ("user:a1", "user:a2", "user:b1"):
        client.put(f"/api/v1/owners/{owner}", headers=auth(ADMIN))
    try:
        yield app, client, secrets
    finally:
        release.set()
        with app.app_context():
            get_host().start_jobs().stop()
        llm.stop()


_TURNS = itertools.count()


def memorize(client, owner: str, token: str):
    # a turn of its own each time: the same turn twice would be a probable duplicate (issue 35), failed at once
    return client.post(f"/api/v1/owners/{owner}/memorize", json={"turn": f"user: I went surfing ({next(_TURNS)})"},
                       headers=auth(token, Prefer="respond-async"))


def test_a_flood_from_one_prefix_gets_429_past_its_cap_while_another_prefix_is_taken(capped):
    app, client, secrets = capped
    assert [memorize(client, "user:a1", secrets["flood"]).status_code for _ in range(2)] == [202, 202]
    r = memorize(client, "user:a1", secrets["flood"])  # the owner's cap (2)
    assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0
    assert r.get_json()["error"]["code"] == "queue_full" and "user:a1" in r.get_json()["error"]["message"]
    assert memorize(client, "user:a2", secrets["flood"]).status_code == 202
    r = memorize(client, "user:a2", secrets["flood"])  # the prefix's cap (3)
    assert r.status_code == 429 and "user:a" in r.get_json()["error"]["message"] and "Retry-After" in r.headers
    assert memorize(client, "user:b1", secrets["calm"]).status_code == 202  # another tenant is not held back
    open_jobs = client.get("/api/v1/jobs?state=queued", headers=auth(ADMIN)).get_json()["jobs"]
    open_jobs += client.get("/api/v1/jobs?state=running", headers=auth(ADMIN)).get_json()["jobs"]
    assert sorted(j["owner"] for j in open_jobs) == ["user:a1", "user:a1", "user:a2", "user:b1"]


def test_the_admin_page_lists_jobs_with_progress_and_cancels_a_queued_one(tmp_path):
    operators = tmp_path / "operators.jsonl"
    operators.write_text(account_line("carol", "correct horse battery staple", "user:x", "operator") + "\n",
                         encoding="utf-8")
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "OPERATORS_FILE": str(operators)})
    mine, other = queue(app, "user:xnne"), queue(app, "user:lumi")
    bulk = queue(app, None, kind="bulk-rollback", within="user:x")
    client = app.test_client()

    def csrf(html: str) -> str:
        return re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html).group(1)

    token = csrf(client.get("/login").get_data(as_text=True))
    client.post("/login", data={"csrf_token": token, "username": "carol", "password": "correct horse battery staple"})
    runs = client.get("/admin/runs").get_data(as_text=True)
    assert 'href="/admin/jobs"' in runs  # linked from the Runs page
    page = client.get("/admin/jobs").get_data(as_text=True)
    assert mine in page and other not in page and bulk not in page  # their prefix; bulk jobs are for admins
    assert "<progress" in page and "cancel-job" in page
    assert client.post(f"/admin/jobs/{mine}/cancel").status_code == 400  # no CSRF token
    r = client.post(f"/admin/jobs/{mine}/cancel", data={"csrf_token": csrf(page), "state": "queued"})
    assert r.status_code == 302 and r.headers["Location"] == "/admin/jobs?state=queued"
    assert mine not in client.get("/admin/jobs?state=queued").get_data(as_text=True)
    assert client.post(f"/admin/jobs/{other}/cancel", data={"csrf_token": csrf(page)}).status_code == 404
    with app.app_context():
        assert get_host().jobs.get(mine).state == "cancelled" and get_host().jobs.get(other).state == "queued"
    admin = app.test_client()
    token = csrf(admin.get("/login").get_data(as_text=True))
    admin.post("/login", data={"csrf_token": token, "token": ADMIN})
    assert bulk in admin.get("/admin/jobs?kind=bulk-rollback").get_data(as_text=True)
