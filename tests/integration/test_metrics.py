"""The host's metrics in one process: what each report adds, and ``/metrics`` behind the admin scope."""

from __future__ import annotations

import time

import pytest
from apiworld import ADMIN, auth
from fakes import FakeOpenAI

from wikimem.host import make_host
from wikimem.host.metrics import HostCollector, Metrics, TimedEmbedder

O = "/api/v1/owners/user:m"


def _samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def _scrape(metrics: Metrics, *collectors) -> dict[str, float]:
    return _samples(metrics.exposition(*collectors).decode())


def test_the_owners_lru_reports_hits_misses_and_evictions(tmp_path):
    metrics = Metrics()
    host = make_host(tmp_path / "data", index_cache=1, metrics=metrics)
    for owner in ("user:a", "user:b"):
        host.create_owner(owner)
    for owner in ("user:a", "user:a", "user:b"):
        host.owner(owner)
    got = _scrape(metrics)
    assert got['wikimem_owner_cache_total{event="eviction"}'] >= 1
    assert got['wikimem_owner_cache_total{event="hit"}'] >= 1 and got['wikimem_owner_cache_total{event="miss"}'] >= 2


class _SlowEmbedder:
    model = "slow"

    def embed(self, texts):
        time.sleep(0.05)
        return [[1.0, 0.0] for _ in texts]


def test_a_retrieve_is_split_into_freshness_ranking_and_embedding(tmp_path):
    metrics = Metrics()
    host = make_host(tmp_path / "data", embedder=_SlowEmbedder(), metrics=metrics)
    owner = host.create_owner("user:a")
    owner.add("people", "mia", "likes tea")
    assert isinstance(host.embedder, TimedEmbedder) and host.embedder.model == "slow"
    owner.retrieve("who likes tea")
    got = _scrape(metrics)
    for phase in ("freshness", "ranking", "embedding", "total"):
        assert got[f'wikimem_retrieve_duration_seconds_count{{phase="{phase}"}}'] == 1
    assert got['wikimem_retrieve_duration_seconds_sum{phase="embedding"}'] >= 0.05  # the query, on the request
    assert got["wikimem_commits_total"] == 1 and got["wikimem_write_duration_seconds_count"] == 1


def test_job_steps_and_the_jobs_in_the_store_are_counted(tmp_path):
    metrics = Metrics()
    with FakeOpenAI() as llm:
        from wikimem.llm import ChatClient

        llm.reply_fn = lambda messages: '[{"content": "A walk by the sea."}]'
        host = make_host(tmp_path / "data", llm=ChatClient(llm.url, "fake"), metrics=metrics)
        host.create_owner("user:a")
        job, _ = host.submit_memorize("user:a", "we walked by the sea", request_id="rid-1")
        deadline = time.monotonic() + 30
        while host.job(job.id).state != "done" and time.monotonic() < deadline:
            time.sleep(0.05)
    assert host.job(job.id).params["request_id"] == "rid-1"
    got = _scrape(metrics, host.metrics_collector())
    assert got['wikimem_job_steps_total{kind="memorize",outcome="done"}'] == 1
    assert got['wikimem_jobs{kind="memorize",state="done"}'] == 1


def test_the_age_of_the_oldest_waiting_job_is_read_at_scrape_time():
    now = time.time()
    collector = HostCollector(lambda: [("memorize", "queued", 3, now - 42.0), ("memorize", "done", 9, now - 600)],
                              lambda: {"user:a": 2, "user:b": 5})
    got = _scrape(Metrics(), collector)
    assert got['wikimem_jobs{kind="memorize",state="queued"}'] == 3
    assert 41 <= got['wikimem_job_oldest_age_seconds{kind="memorize",state="queued"}'] < 60
    assert 'wikimem_job_oldest_age_seconds{kind="memorize",state="done"}' not in got
    assert got["wikimem_replication_lag_commits"] == 7 and got["wikimem_replication_lagging_owners"] == 2


def test_the_embedding_backlog_follows_the_background_worker():
    from wikimem.vectors.worker import EmbeddingWorker

    metrics, worker = Metrics(), EmbeddingWorker("test-embed")
    worker.on_backlog.append(metrics.embedding_backlog)
    gate = []
    worker.submit("a", lambda: bool(gate) or time.sleep(0.2) or False)
    worker.submit("b", lambda: False)
    assert _scrape(metrics)["wikimem_embedding_backlog"] >= 1
    assert worker.wait_idle(5)
    time.sleep(0.05)
    assert _scrape(metrics)["wikimem_embedding_backlog"] == 0
    worker.stop()


def test_metrics_need_the_admin_scope_and_count_requests_by_route(tmp_path):
    from webapp import create_app
    from wikimem.host.access import append_token, mint_token

    tokens = tmp_path / "tokens"
    reader, entry = mint_token("reader", ["read"])
    append_token(tokens, entry)
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens)})
    client = app.test_client()
    client.put(O, headers=auth(ADMIN))
    client.get(O + "/items/x/y", headers=auth(ADMIN))
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers=auth(reader)).status_code == 403
    r = client.get("/metrics", headers=auth(ADMIN))
    assert r.status_code == 200 and r.content_type.startswith("text/plain")
    got = _samples(r.get_data(as_text=True))
    assert got['wikimem_http_requests_total{method="PUT",route="/api/v1/owners/<owner_id>",status="201"}'] == 1
    assert got['wikimem_http_requests_total{method="GET",route="/api/v1/owners/<owner_id>/items/<file>/'
               '<path:name>",status="404"}'] == 1
    assert got['wikimem_http_requests_total{method="GET",route="/metrics",status="401"}'] == 1


def test_the_shipped_alerts_and_scrape_config_name_metrics_the_host_exports():
    import re
    from pathlib import Path

    yaml = pytest.importorskip("yaml")  # (PyYAML comes with the dev tools)
    deploy = Path(__file__).resolve().parents[2] / "deploy"
    rules = yaml.safe_load((deploy / "prometheus-alerts.yml").read_text())["groups"][0]["rules"]
    assert {r["alert"] for r in rules} == {"WikimemReplicationLag", "WikimemJobQueueAge", "WikimemHighErrorRate"}
    scrape = yaml.safe_load((deploy / "prometheus.yml").read_text())["scrape_configs"][0]
    assert scrape["metrics_path"] == "/metrics" and scrape["authorization"]["type"] == "Bearer"
    collector = HostCollector(lambda: [("memorize", "queued", 1, time.time())], lambda: {"user:a": 1})
    text = Metrics().exposition(collector).decode()
    exported = set(re.findall(r"^# TYPE (\w+)", text, re.M))
    exported |= {name + suffix for name in exported for suffix in ("_total", "_count", "_sum", "_bucket")}
    used = {name for r in rules for name in re.findall(r"\bwikimem_\w+", r["expr"])}
    assert used and used <= exported, used - exported


def _series(client) -> set[str]:
    text = client.get("/metrics", headers=auth(ADMIN)).get_data(as_text=True)
    return {line.rpartition(" ")[0] for line in text.splitlines() if line.startswith("wikimem_http_request")}


def test_invented_methods_without_a_token_make_no_new_series(tmp_path):
    from webapp import create_app

    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN})
    client = app.test_client()
    for path in (O, "/no/such/path"):  # the "other" series of each route, once
        client.open(path, method="FOO")
    before = _series(client)
    for i in range(200):
        r = client.open(O if i % 2 else "/no/such/path", method=f"M{i}X")
        assert r.status_code in (401, 404, 405)
    after = _series(client)
    assert not {s for s in after - before if "/metrics" not in s}, sorted(after - before)[:5]
    assert not any('method="M' in s for s in after)
    assert any('method="other"' in s for s in after)


def test_a_token_limited_to_an_owner_prefix_does_not_read_the_host_wide_metrics(tmp_path):
    from webapp import create_app
    from wikimem.host.access import append_token, mint_token

    tokens = tmp_path / "tokens"
    limited, entry = mint_token("tenant-admin", ["admin"], "user:")
    append_token(tokens, entry)
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens)})
    client = app.test_client()
    r = client.get("/metrics", headers=auth(limited))
    assert r.status_code == 403 and "host-wide" in r.get_json()["error"]["message"]
    assert client.get("/metrics", headers=auth(ADMIN)).status_code == 200
