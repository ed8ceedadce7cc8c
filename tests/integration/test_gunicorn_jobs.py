"""Memorize as a job through a real gunicorn: 202 at once, retrieves served while the model thinks,
and a job cut short by a crash of the whole host finished by the restarted host, exactly once."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest
from fakes import FakeOpenAI
from gunicorn_env import Gunicorn, wait_for

from wikimem.client import Client
from wikimem.host.owner_ids import encode_owner_id

pytestmark = pytest.mark.slow


def _post_async(base: str, token: str, owner: str, body: dict, key: str) -> tuple[int, dict, dict]:
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        conn.request("POST", f"/api/v1/owners/{owner}/memorize", body=json.dumps(body).encode(),
                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                              "Prefer": "respond-async", "Idempotency-Key": key})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), json.loads(resp.read())
    finally:
        conn.close()


def _get_job(base: str, token: str, location: str) -> dict:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    req = urllib.request.Request(base + location, headers={"Authorization": f"Bearer {token}"})
    with opener.open(req, timeout=30) as resp:
        return json.load(resp)


def test_a_memorize_job_survives_a_crash_of_the_whole_host(tmp_path):
    gate = threading.Event()

    def slow_model(messages):
        gate.wait(120)
        return json.dumps([{"content": "上周三她去了海边，第一次学冲浪。"}], ensure_ascii=False)

    with FakeOpenAI() as llm:
        llm.reply_fn = slow_model
        env = dict(WIKIMEM_WORKERS="2", WIKIMEM_LLM_URL=llm.url, WIKIMEM_LLM_MODEL="fake-chat",
                   WIKIMEM_LLM_TIMEOUT="50")
        first = Gunicorn(tmp_path, **env).start()
        try:
            token = first.token
            mem = Client(first.base, token, owner="user:ann", timeout=30, proxies={})
            other = Client(first.base, token, owner="user:bob", timeout=30, proxies={})
            mem.create_owner()
            other.create_owner()
            other.add("preferences", "likes-the-sea", "喜欢海边。")
            turn = {"turn": "user: 上周三我去海边学冲浪了", "ts": "2026-07-23T10:00:00+08:00", "tz": "Asia/Shanghai"}
            status, headers, job = _post_async(first.base, token, "user:ann", turn, key="turn-7")
            assert status == 202 and headers["Location"] == f"/api/v1/jobs/{job['id']}", job
            wait_for(lambda: llm.chat_calls >= 1, what="a worker to ask the model")
            # The model is thinking: the host still serves everything else.
            assert [i.item.name for i in other.retrieve("海边").items] == ["likes-the-sea"]
            assert _get_job(first.base, token, headers["Location"])["state"] == "running"
            first.kill()  # master and workers at once, in the middle of the job
        finally:
            first.stop()
        second = Gunicorn(tmp_path, WIKIMEM_ADMIN_TOKEN=token, **env).start()
        try:
            gate.set()
            done = wait_for(lambda: (j := _get_job(second.base, token, headers["Location"]))["state"]
                         in ("done", "failed") and j, what="the job to finish on the restarted host")
            assert done["state"] == "done", done
            (entry,) = done["results"][0]["result"]["entries"]
            assert (entry["date"], entry["content"]) == ("2026-07-15", "上周三她去了海边，第一次学冲浪。")
            status, _, again = _post_async(second.base, token, "user:ann", turn, key="turn-7")
            assert status == 202 and again["id"] == job["id"] and again["state"] == "done"
        finally:
            second.stop()
    repo = tmp_path / "data" / "owners" / encode_owner_id("user:ann")
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert log.count("memorize 1 diary entry") == 1
    assert llm.chat_calls == 2  # asked again by the restarted host: nothing had been written the first time
