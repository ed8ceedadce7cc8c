"""Memorize on the bot-worker path, robust (issue 35): a model briefly down, a failed job that says why in the
admin UI, the same turn twice, the host's default time zone."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from apiworld import ADMIN, OWNER, auth, finished_job
from fakes import FakeOpenAI

from webapp import create_app
from webapp.hosting import get_host
from wikimem.host.fleet import MemorizeRetry

O = f"/api/v1/owners/{OWNER}"
ENTRY = "她开始学冲浪了。"


@pytest.fixture
def llm():
    with FakeOpenAI() as fake:
        fake.reply_fn = lambda messages: json.dumps([{"content": ENTRY}], ensure_ascii=False)
        yield fake


@pytest.fixture
def app(tmp_path, llm):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "LLM_URL": llm.url, "LLM_MODEL": "fake-chat"})
    app.test_client().put(f"/api/v1/owners/{OWNER}", headers=auth(ADMIN))
    return app


def memorize_async(client, turn: str, **headers) -> dict:
    r = client.post(O + "/memorize", headers=auth(ADMIN, Prefer="respond-async", **headers), json={"turn": turn})
    assert r.status_code == 202, r.get_json()
    return r.get_json()


def memorize_commits(app) -> int:
    with app.app_context():
        folder = get_host().owner(OWNER).root
    log = subprocess.run(["git", "log", "--format=%s"], cwd=folder, capture_output=True, text=True, check=True)
    return sum(1 for line in log.stdout.splitlines() if line.startswith("memorize"))


def diary_contents(client) -> list[str]:
    days = client.get(O + "/diary/dates", headers=auth(ADMIN)).get_json()["dates"]
    return [e["content"] for d in days for e in client.get(f"{O}/diary/{d}", headers=auth(ADMIN)).get_json()["entries"]]


def sign_in(client) -> None:
    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page).group(1)
    assert client.post("/login", data={"csrf_token": token, "token": ADMIN}).status_code == 302


def test_an_outage_of_a_few_seconds_ends_with_the_entry_written_once(app, llm):
    llm.fail_status = 503  # down now; back in three seconds
    threading.Timer(3.0, lambda: setattr(llm, "fail_status", None)).start()
    client = app.test_client()
    job = finished_job(client, memorize_async(client, "user: 我开始学冲浪了"), timeout=90)
    assert job["state"] == "done", job
    assert diary_contents(client) == [ENTRY] and memorize_commits(app) == 1
    failed = [r for r in llm.requests if r.path.endswith("chat/completions")]
    assert len(failed) > 1 and llm.chat_calls == 1  # tried while down (503s), asked once it was back


def test_a_longer_outage_fails_the_job_with_its_cause_in_the_admin_ui(app, llm):
    with app.app_context():
        get_host().memorize_retry = MemorizeRetry(delays=(0.2, 0.2))  # (the defaults wait ~1.5 min)
    llm.fail_status = 503
    client = app.test_client()
    job = finished_job(client, memorize_async(client, "user: 模型挂了"), timeout=60)
    assert job["state"] == "failed"
    error = job["results"][0]["error"]
    assert error["code"] == "llm_error" and "HTTP 503" in error["message"]
    assert diary_contents(client) == [] and memorize_commits(app) == 0
    sign_in(client)
    listing = client.get("/admin/jobs").get_data(as_text=True)
    assert f'href="/admin/jobs/{job["id"]}"' in listing  # the list opens it
    page = client.get(f"/admin/jobs/{job['id']}")
    assert page.status_code == 200, page.get_data(as_text=True)[:300]  # not "404 · no bulk rollback job"
    html = page.get_data(as_text=True)
    assert 'id="job-cause"' in html and "llm_error" in html and "HTTP 503" in html and "injected failure" in html
    # a memorize job that worked opens too, with what it wrote
    llm.fail_status = None
    done = finished_job(client, memorize_async(client, "user: 好了"), timeout=60)
    html = client.get(f"/admin/jobs/{done['id']}").get_data(as_text=True)
    assert done["state"] == "done" and ENTRY in html and "1 diary entry written" in html


def test_the_same_turn_twice_without_a_key_is_a_probable_duplicate(app, llm):
    client = app.test_client()
    turn = {"turn": "user: 我开始学冲浪了", "source_conv": "conv_1"}
    first = client.post(O + "/memorize", headers=auth(ADMIN), json=turn)
    assert first.status_code == 200
    again = client.post(O + "/memorize", headers=auth(ADMIN), json=turn)
    assert again.status_code == 409
    error = again.get_json()["error"]
    assert error["code"] == "probable_duplicate" and error["conflicts"] == [{"run": first.get_json()["run"]}]
    assert "Idempotency-Key" in error["message"]
    assert llm.chat_calls == 1 and diary_contents(client) == [ENTRY]  # not asked, not written twice
    # the same words in another conversation, or with keys of their own, are other requests
    assert client.post(O + "/memorize", headers=auth(ADMIN), json={**turn, "source_conv": "conv_2"}).status_code == 200
    for key in ("k-1", "k-2"):
        r = client.post(O + "/memorize", headers=auth(ADMIN, **{"Idempotency-Key": key}), json=turn)
        assert r.status_code == 200 and r.get_json()["replayed"] is False
    # queued twice: the second job fails, naming the first run
    jobs = [memorize_async(client, "user: 周末去爬山了") for _ in range(2)]
    states = sorted((finished_job(client, j)["state"], j["params"]["run"]) for j in jobs)
    assert [s for s, _ in states] == ["done", "failed"]
    failed = next(finished_job(client, j) for j in jobs if finished_job(client, j)["state"] == "failed")
    assert failed["results"][0]["error"]["code"] == "probable_duplicate"
    assert diary_contents(client).count(ENTRY) == 5  # conv_1, conv_2, k-1, k-2, one job


def test_a_failed_memorize_job_does_not_block_its_turn(app, llm):
    with app.app_context():
        get_host().memorize_retry = MemorizeRetry(delays=())
    llm.fail_status = 400  # refused for good
    client = app.test_client()
    assert finished_job(client, memorize_async(client, "user: 再试一次"))["state"] == "failed"
    llm.fail_status = None
    assert finished_job(client, memorize_async(client, "user: 再试一次"))["state"] == "done"


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Etc/GMT+12"])
def test_owners_without_a_tz_follow_wikimem_tz(tmp_path, zone):
    """UTC+14 and UTC−12: a day or two apart from the machine's calendar at every instant."""
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN, "TZ": zone})
    client = app.test_client()
    for owner in ("user:plain", "user:own"):
        client.put(f"/api/v1/owners/{owner}", headers=auth(ADMIN))
    other = "Etc/GMT+12" if zone == "Pacific/Kiritimati" else "Pacific/Kiritimati"
    client.put("/api/v1/owners/user:own/settings", headers=auth(ADMIN), json={"tz": other})
    before, before_other = (datetime.now(ZoneInfo(z)).date().isoformat() for z in (zone, other))
    plain = client.post("/api/v1/owners/user:plain/diary", headers=auth(ADMIN), json={"content": "跑步。"})
    own = client.post("/api/v1/owners/user:own/diary", headers=auth(ADMIN), json={"content": "跑步。"})
    after, after_other = (datetime.now(ZoneInfo(z)).date().isoformat() for z in (zone, other))
    assert plain.get_json()["entry"]["date"] in (before, after)  # the host's zone
    assert own.get_json()["entry"]["date"] in (before_other, after_other)  # the owner's own zone wins
    assert own.get_json()["entry"]["date"] != plain.get_json()["entry"]["date"]
    r = client.post("/api/v1/owners/user:plain/retrieve", headers=auth(ADMIN), json={"query": "今天做了什么"})
    assert r.get_json()["time_range"][0] in (before, after)
    with app.app_context():
        assert get_host().default_tz == zone


def test_a_bad_wikimem_tz_is_refused_at_start(tmp_path):
    from wikimem.host import load_config

    with pytest.raises(ValueError, match="WIKIMEM_TZ"):
        load_config({"TZ": "Mars/Olympus"})
    assert load_config({"TZ": "Asia/Shanghai"}).tz == "Asia/Shanghai"


def test_the_start_banner_names_the_time_zone():
    from wikimem.cli.hostcmd import service_lines
    from wikimem.host import load_config

    assert "time zone:   Asia/Shanghai (WIKIMEM_TZ)" in "\n".join(service_lines(load_config({"TZ": "Asia/Shanghai"})))
    assert "set WIKIMEM_TZ=" in "\n".join(service_lines(load_config({})))
