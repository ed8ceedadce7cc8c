"""Running it in production, proved on a real gunicorn with two workers (issue 25).

- ``/metrics`` sums every worker's counts and moves with requests, commits, jobs and replication;
- a request id sent through a trusted proxy comes back in the response, the error body, the JSON log
  lines and the job record;
- an expired token gets 401, a token over its rate 429 with Retry-After;
- a silent peer (a socket that accepts and never answers) slows one listing by at most the timeout,
  then none while its breaker is open — in every worker.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from fakes import FakeOpenAI
from gunicorn_env import Gunicorn, access_pids, wait_for
from pages import page_request
from silentpeer import SilentPeer

from wikimem.host.access import append_token, mint_token

pytestmark = pytest.mark.slow

OWNER = "user:ops"
O = f"/api/v1/owners/{OWNER}"
RID = "trace-4f2a:ops.test-01"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def call(base: str, path: str, *, token: str | None = None, method: str = "GET", body: dict | None = None,
         headers: dict | None = None, timeout: float = 30) -> tuple[int, dict, bytes]:
    """One request on a new connection: ``(status, headers, body)``."""
    req = urllib.request.Request(base + path, method=method, headers=dict(headers or {}),
                                 data=None if body is None else json.dumps(body).encode())
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers), exc.read()


def scrape(host: Gunicorn) -> dict[str, float]:
    """``/metrics`` as ``{sample with labels: value}``."""
    status, _, body = call(host.base, "/metrics", token=host.token)
    assert status == 200, body
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def total(samples: dict[str, float], prefix: str) -> float:
    return sum(v for k, v in samples.items() if k.startswith(prefix))


@pytest.fixture(scope="module")
def llm():
    with FakeOpenAI() as fake:
        fake.reply_fn = lambda messages: '[{"content": "They went to the sea."}]'
        yield fake


@pytest.fixture(scope="module")
def host(tmp_path_factory, llm):
    """Two workers, async replication to file:// remotes, a chat model, one trusted proxy, a small API limit."""
    tmp = tmp_path_factory.mktemp("ops")
    (tmp / "remotes").mkdir()
    tokens = tmp / "tokens.jsonl"
    tokens.touch()
    server = Gunicorn(tmp, WIKIMEM_WORKERS="2", WIKIMEM_LLM_URL=llm.url, WIKIMEM_LLM_MODEL="fake",
                      WIKIMEM_REMOTE=f"file://{tmp}/remotes/{{owner}}.git", WIKIMEM_REPLICATION="async",
                      WIKIMEM_PROXIES="1", WIKIMEM_API_LIMIT="5/minute", WIKIMEM_TOKENS_FILE=str(tokens),
                      WIKIMEM_METRICS_DIR=str(tmp / "metrics"))
    server.tmp, server.tokens = tmp, tokens
    with server:
        assert call(server.base, O, token=server.token, method="PUT")[0] in (200, 201)
        yield server


def test_the_metrics_folder_is_this_runs_and_metrics_need_the_admin_scope(host):
    assert (host.tmp / "metrics").is_dir() and any((host.tmp / "metrics").glob("*.db"))
    assert call(host.base, "/metrics")[0] == 401
    reader, entry = mint_token("metrics-reader", ["read"])
    append_token(host.tokens, entry)
    status, _, body = call(host.base, "/metrics", token=reader)
    assert status == 403 and json.loads(body)["error"]["code"] == "forbidden"


def test_metrics_sum_the_requests_of_every_worker(host):
    route = 'route="/api/v1/owners/<owner_id>",status="200"'
    before = total(scrape(host), f'wikimem_http_requests_total{{method="GET",{route}}}')
    n = 0
    for _ in range(10):  # rounds of 40 until both workers served some (the kernel may hand one all of a round)
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: call(host.base, O, token=host.token)[0], range(40)))
        assert statuses == [200] * 40
        n += 40
        if len(access_pids(host.output(), f'"GET {O} ')) >= 2:
            break
    assert len(access_pids(host.output(), f'"GET {O} ')) >= 2  # really both workers
    after = total(scrape(host), f'wikimem_http_requests_total{{method="GET",{route}}}')
    assert after - before == n  # every worker's requests, summed


def test_metrics_move_with_commits_writes_and_jobs(host, llm):
    before = scrape(host)
    for i in range(3):
        status, _, _ = call(host.base, f"{O}/items/people/p{i}", token=host.token, method="PUT",
                            body={"content": f"person {i}"})
        assert status in (200, 201)
    status, headers, body = call(host.base, f"{O}/memorize", token=host.token, method="POST",
                                 body={"turn": "we went to the sea"}, headers={"Prefer": "respond-async"})
    assert status == 202
    location = headers["Location"]
    wait_for(lambda: json.loads(call(host.base, location, token=host.token)[2])["state"] == "done", 60, "the job")
    after = wait_for(lambda: (s := scrape(host)).get('wikimem_job_steps_total{kind="memorize",outcome="done"}', 0)
                     > before.get('wikimem_job_steps_total{kind="memorize",outcome="done"}', 0) and s, 30, "counted")
    assert after["wikimem_commits_total"] - before["wikimem_commits_total"] >= 4  # 3 items + the memorize
    assert after["wikimem_write_duration_seconds_count"] - before["wikimem_write_duration_seconds_count"] >= 4
    assert after['wikimem_jobs{kind="memorize",state="done"}'] >= 1
    assert total(after, "wikimem_owner_cache_total") > total(before, "wikimem_owner_cache_total")


def test_metrics_move_with_replication_lag_and_push_failures(host):
    remotes, away = host.tmp / "remotes", host.tmp / "remotes-away"
    before = scrape(host)
    assert before.get("wikimem_replication_lag_commits", 0) == 0
    remotes.rename(away)
    remotes.write_text("not a folder: every push fails")  # the remote is down
    try:
        for i in range(2):
            status, _, _ = call(host.base, f"{O}/items/lag/l{i}", token=host.token, method="PUT",
                                body={"content": f"unpushed {i}"})
            assert status in (200, 201)  # async: acknowledged here, pushed later
        down = wait_for(lambda: (s := scrape(host)).get("wikimem_replication_lag_commits", 0) >= 2
                        and total(s, "wikimem_replication_push_failures_total")
                        > total(before, "wikimem_replication_push_failures_total") and s, 45, "lag and failures")
        assert down["wikimem_replication_lagging_owners"] == 1
    finally:
        remotes.unlink()
        away.rename(remotes)
    wait_for(lambda: scrape(host).get("wikimem_replication_lag_commits", 1) == 0, 60, "pushed again")


def _json_lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def test_a_request_id_comes_back_in_the_response_the_error_body_the_log_lines_and_the_job(host):
    status, headers, body = call(host.base, f"{O}/items/nope/nothing", token=host.token,
                                 headers={"X-Request-Id": RID})
    assert status == 404 and headers["X-Request-Id"] == RID
    assert json.loads(body)["error"]["request_id"] == RID
    status, headers, body = call(host.base, f"{O}/revert", token=host.token, method="POST",
                                 body={"commit": "0" * 40}, headers={"X-Request-Id": RID + "-undo"})
    assert json.loads(body)["error"]["request_id"] == RID + "-undo"
    status, headers, body = call(host.base, f"{O}/memorize", token=host.token, method="POST",
                                 body={"turn": "a quiet day"},
                                 headers={"Prefer": "respond-async", "X-Request-Id": RID + "-job"})
    assert status == 202 and headers["X-Request-Id"] == RID + "-job"
    job = json.loads(call(host.base, headers["Location"], token=host.token)[2])
    assert job["params"]["request_id"] == RID + "-job"

    def logged():
        lines = _json_lines(host.output())
        access = [r for r in lines if r.get("logger") == "gunicorn.access" and r.get("request_id") == RID]
        audit = [r for r in lines if r.get("logger") == "wikimem.audit" and r.get("request_id") == RID + "-undo"]
        return access and audit and (access, audit)

    access, audit = wait_for(logged, 10, "the JSON log lines")
    assert access[0]["status"] == 404 and access[0]["path"] == f"{O}/items/nope/nothing"
    assert (audit[0]["audit"], audit[0]["actor"], audit[0]["owner"], audit[0]["result"]) == \
        ("revert", "admin", OWNER, "refused")


def test_an_expired_token_gets_401_and_a_busy_one_429_with_retry_after(host):
    secret, entry = mint_token("expired-worker", ["read"], expires_in=60)
    append_token(host.tokens, {**entry, "expires": "2024-01-01T00:00:00+00:00"})
    status, headers, body = call(host.base, O, token=secret)
    assert status == 401 and "expired at 2024-01-01" in json.loads(body)["error"]["message"]
    busy, entry = mint_token("busy-worker", ["read"])
    append_token(host.tokens, entry)
    answers = [call(host.base, O, token=busy) for _ in range(7)]  # 5/minute, counted across both workers
    assert [a[0] for a in answers[:5]] == [200] * 5
    status, headers, body = answers[5]
    assert status == 429 and 1 <= int(headers["Retry-After"]) <= 60
    assert json.loads(body)["error"]["code"] == "rate_limited"
    assert call(host.base, O, token=host.token)[0] == 200  # the admin token is exempt
    assert total(scrape(host), 'wikimem_rate_limited_total{route="/api/v1/owners/<owner_id>"}') >= 2


# -- a silent peer ------------------------------------------------------------------------------


def _listing(base: str, token: str) -> tuple[float, dict]:
    start = time.monotonic()
    status, _, body = call(base, "/api/v1/owners?limit=10", token=token)
    assert status == 200
    return time.monotonic() - start, json.loads(body)


def test_a_silent_peer_slows_one_listing_by_at_most_the_timeout_then_none_while_the_breaker_is_open(tmp_path):
    with SilentPeer() as silent:
        server = Gunicorn(tmp_path, WIKIMEM_WORKERS="2", WIKIMEM_PEER_CONNECT_TIMEOUT="0.5",
                          WIKIMEM_PEER_TIMEOUT="1", WIKIMEM_PEER_COOLDOWN="60")
        me = server.base
        server.env["WIKIMEM_PEERS"] = f"{me},{silent.url}"
        server.env["WIKIMEM_SELF"] = me
        with server:
            call(me, "/api/v1/owners/user:here", token=server.token, method="PUT")
            first, page = _listing(me, server.token)
            assert page["unreachable"] == [silent.url] and [o["id"] for o in page["owners"]] == ["user:here"]
            assert 0.9 < first < 1.5 + 0.75  # the read timeout (1 s), once; never the old 5 s
            later = [_listing(me, server.token)[0] for _ in range(12)]  # new connections: both workers
            assert max(later) < 0.5, later
            assert len(access_pids(server.output(), '"GET /api/v1/owners?limit=10')) >= 2
            assert silent.accepted == 1  # one worker found it silent; the other read the shared breaker
            # Many listings at once leave /healthz answering.
            with ThreadPoolExecutor(32) as pool:
                futures = [pool.submit(_listing, me, server.token) for _ in range(32)]
                start = time.monotonic()
                assert call(me, "/healthz")[0] == 200
                healthz = time.monotonic() - start
                assert max(f.result()[0] for f in futures) < 0.5
            assert healthz < 0.5


def test_a_logout_is_not_held_by_a_silent_peer(tmp_path):
    with SilentPeer() as silent:
        server = Gunicorn(tmp_path, WIKIMEM_WORKERS="2", WIKIMEM_PEER_TIMEOUT="3")
        server.env["WIKIMEM_PEERS"] = f"{server.base},{silent.url}"
        server.env["WIKIMEM_SELF"] = server.base
        with server:
            _, page, cookie = page_request(server.base + "/login")
            csrf = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page).group(1)
            status, _, cookie = page_request(server.base + "/login", cookie=cookie,
                                      form={"csrf_token": csrf, "token": server.token})
            assert status == 302 and cookie
            _, page, updated = page_request(server.base + "/admin/", cookie=cookie)
            cookie = updated or cookie
            csrf = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page).group(1)
            start = time.monotonic()
            assert page_request(server.base + "/logout", cookie=cookie, form={"csrf_token": csrf})[0] == 302
            assert time.monotonic() - start < 1.5  # at most the notice's short wait, not the 3 s peer timeout
            lines = [r for r in _json_lines(server.output()) if r.get("logger") == "wikimem.audit"]
            assert [(r["audit"], r["actor"], r["result"]) for r in lines] == \
                [("sign-in", "admin", "ok"), ("sign-out", "admin", "ok")]


def test_the_metrics_folder_is_emptied_at_start(tmp_path):
    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "counter_999999.db").write_bytes(b"stale")
    with Gunicorn(tmp_path, WIKIMEM_WORKERS="2", WIKIMEM_METRICS_DIR=str(folder)):
        assert not (folder / "counter_999999.db").exists()

