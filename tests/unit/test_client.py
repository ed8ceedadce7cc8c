"""wikimem.client against a real tiny HTTP server: retries, idempotency keys, errors, decoding.

The server answers from a script (one step per request: a status and a JSON
body, a dropped connection, or a stall longer than the client's timeout) and
records every request it got, so each test can check exactly what went over
the wire.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from wikimem.client import (
    BadRequestError, BusyError, Client, ClientError, ConflictError, NotFoundError, PreconditionFailedError,
    RateLimitedError, ServerError, TransportError,
)
from wikimem.errors import NotFound, WikimemError
from wikimem.models import DiaryItem, RecallItem
from wikimem.retrieval import RetrievalResult, RetrievedItem

ENTRY = {"date": "2026-07-21", "time": "14:30", "content": "去了海边。", "owner": "user:xnne",
         "source_conv": "c1", "ts": "2026-07-21T14:30:00+08:00"}
APPENDED = {"entry": ENTRY, "commit": "c0ffee" * 6 + "abcd", "replayed": False}


def err(status: int, code: str, message: str, **extra) -> tuple:
    return ("json", status, {"error": {"code": code, "message": message, **extra}}, {})


def ok(body: dict, status: int = 200, headers: dict | None = None) -> tuple:
    return ("json", status, body, headers or {})


DROP = ("drop",)


class Scripted(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.script: list[tuple] = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()

    def next_step(self, record: dict) -> tuple:
        with self.lock:
            self.requests.append(record)
            return self.script.pop(0) if self.script else ok({"fallback": True})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep pytest's output clean
        pass

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        step = self.server.next_step({
            "method": self.command, "path": self.path, "headers": dict(self.headers.items()),
            "body": json.loads(raw) if raw else None, "at": time.monotonic(),
        })
        if step[0] == "drop":  # no answer at all: the client sees a closed connection
            self.close_connection = True
            return
        if step[0] == "stall":
            time.sleep(step[1])
            self.close_connection = True
            return
        _, status, body, headers = step
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html" if isinstance(body, bytes) else "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_DELETE = _serve


@pytest.fixture
def server():
    srv = Scripted()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def client(server):
    host, port = server.server_address
    return Client(f"http://{host}:{port}", "tok-123", owner="user:xnne", timeout=2.0, retries=2, backoff=0.01,
                  proxies={})


def keys(server) -> list[str | None]:
    return [r["headers"].get("Idempotency-Key") for r in server.requests]


# -- retries and idempotency keys ------------------------------------------------

def test_diary_append_retried_after_503_reuses_the_idempotency_key(server, client):
    server.script = [err(503, "busy", "store busy"), ok(APPENDED, 201)]
    written = client.diary_append("去了海边。", source_conv="c1")
    assert len(server.requests) == 2
    first, second = keys(server)
    assert first and first == second
    assert written.value == DiaryItem(**ENTRY)
    assert written.commit == APPENDED["commit"]
    assert server.requests[0]["body"] == server.requests[1]["body"] == {"content": "去了海边。", "source_conv": "c1"}


def test_dropped_connection_is_retried_with_the_same_key(server, client):
    server.script = [DROP, ok({"item": {"file": "prefs", "name": "sea", "content": "x"}, "commit": "ab12",
                               "replayed": True}, headers={"ETag": '"e1"'})]
    written = client.add("prefs", "sea", "x")
    assert len(server.requests) == 2
    assert keys(server)[0] == keys(server)[1] is not None
    assert written.replayed is True and written.etag == "e1"
    assert written.value == RecallItem("prefs", "sea", "x")


def test_timeout_is_retried_with_the_same_key(server):
    host, port = server.server_address
    slow = Client(f"http://{host}:{port}", "t", owner="o", timeout=0.3, retries=1, backoff=0.0, proxies={})
    server.script = [("stall", 1.0), ok(APPENDED, 201)]
    slow.diary_append("x")
    assert len(server.requests) == 2
    assert keys(server)[0] == keys(server)[1] is not None


def test_each_call_gets_its_own_key(server, client):
    server.script = [ok(APPENDED, 201), ok(APPENDED, 201)]
    client.diary_append("a")
    client.diary_append("b")
    first, second = keys(server)
    assert first and second and first != second


def test_reads_send_no_key_and_are_retried_too(server, client):
    server.script = [err(502, "http_error", "bad gateway"), ok({"files": ["prefs"]})]
    assert client.files() == ["prefs"]
    assert keys(server) == [None, None]
    assert server.requests[0]["headers"]["Authorization"] == "Bearer tok-123"


@pytest.mark.parametrize("status,code,cls", [
    (400, "invalid_name", BadRequestError),
    (401, "unauthorized", ClientError),
    (403, "forbidden", ClientError),
    (404, "not_found", NotFoundError),
    (413, "too_large", ClientError),
    (422, "invalid_value", ClientError),
])
def test_no_retry_on_4xx(server, client, status, code, cls):
    server.script = [err(status, code, "nope"), ok(APPENDED, 201)]
    with pytest.raises(cls) as info:
        client.diary_append("x")
    assert len(server.requests) == 1
    assert (info.value.status, info.value.code, info.value.message) == (status, code, "nope")


def test_retries_give_up_with_the_last_error(server, client):
    server.script = [err(503, "busy", "store busy")] * 3
    with pytest.raises(BusyError) as info:
        client.diary_append("x")
    assert len(server.requests) == 3  # 1 + retries
    assert len(set(keys(server))) == 1
    assert info.value.status == 503 and info.value.code == "busy"


def test_transport_error_after_every_retry(server, client):
    server.script = [DROP, DROP, DROP]
    with pytest.raises(TransportError) as info:
        client.diary_append("x")
    assert info.value.status == 0
    assert len(server.requests) == 3


def test_connection_refused_is_a_transport_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = Client(f"http://127.0.0.1:{port}", "t", owner="o", retries=1, backoff=0.0, proxies={})
    with pytest.raises(TransportError):
        dead.files()


def test_retry_after_of_429_is_honoured(server):
    host, port = server.server_address
    c = Client(f"http://{host}:{port}", "t", owner="o", retries=1, backoff=0.0, proxies={})
    server.script = [("json", 429, {"error": {"code": "rate_limited", "message": "slow down"}},
                      {"Retry-After": "0.4"}), ok(APPENDED, 201)]
    c.diary_append("x")
    first, second = server.requests
    assert second["at"] - first["at"] >= 0.35
    assert first["headers"]["Idempotency-Key"] == second["headers"]["Idempotency-Key"]


def test_retry_after_is_capped(server):
    host, port = server.server_address
    c = Client(f"http://{host}:{port}", "t", owner="o", retries=1, backoff=0.0, max_retry_after=0.05,
               proxies={})
    server.script = [("json", 429, {"error": {"code": "rate_limited", "message": "x"}}, {"Retry-After": "3600"}),
                     ok({"files": []})]
    started = time.monotonic()
    assert c.files() == []
    assert time.monotonic() - started < 2


def test_429_after_every_retry_raises_rate_limited(server, client):
    server.script = [("json", 429, {"error": {"code": "rate_limited", "message": "x"}}, {"Retry-After": "0"})] * 3
    with pytest.raises(RateLimitedError):
        client.files()
    assert len(server.requests) == 3


def test_revert_is_retried_with_the_same_key_after_a_gateway_timeout(server, client):
    server.script = [err(504, "http_error", "gateway timeout"), ok({"commit": "ab", "replayed": True})]
    assert client.revert("abcd1234") == "ab"
    keys = [r["headers"].get("Idempotency-Key") for r in server.requests]
    assert len(keys) == 2 and keys[0] and keys[0] == keys[1]


def test_deleting_an_owner_is_not_retried_when_it_may_have_been_applied(server, client):
    server.script = [err(504, "http_error", "gateway timeout"), ok({"deleted": "user:x"})]
    with pytest.raises(ServerError):
        client.delete_owner("user:x")
    assert len(server.requests) == 1


def test_revert_is_retried_when_the_store_was_busy(server, client):
    server.script = [err(503, "busy", "busy"), ok({"commit": "ab"})]
    assert client.revert("abcd1234") == "ab"
    assert len(server.requests) == 2


# -- error fields ------------------------------------------------------------------

def test_not_found_is_a_library_not_found(server, client):
    server.script = [err(404, "not_found", "no item 'sea' in 'prefs'")]
    with pytest.raises(NotFound) as info:
        client.get("prefs", "sea")
    exc = info.value
    assert isinstance(exc, NotFoundError) and isinstance(exc, ClientError) and isinstance(exc, WikimemError)
    assert str(exc) == "404 not_found: no item 'sea' in 'prefs'"


def test_conflict_carries_the_conflicts(server, client):
    conflicts = [{"file": "prefs", "name": "sea", "expected": "a", "found": "b"}]
    server.script = [err(409, "conflict", "revert blocked", conflicts=conflicts)]
    with pytest.raises(ConflictError) as info:
        client.revert("abcd1234")
    assert info.value.conflicts == conflicts


def test_precondition_failed_carries_the_current_etag(server, client):
    server.script = [err(412, "precondition_failed", "moved on", current="e2")]
    with pytest.raises(PreconditionFailedError) as info:
        client.add("prefs", "sea", "x", if_match="e1")
    assert info.value.current == "e2"
    assert server.requests[0]["headers"]["If-Match"] == '"e1"'


def test_a_non_json_error_page_still_raises(server, client):
    page = ("json", 500, b"<html>oops</html>", {})
    server.script = [page]
    with pytest.raises(ServerError) as info:
        client.files()
    assert info.value.status == 500 and info.value.code == "http_error"
    assert len(server.requests) == 1  # 500 is not retried: the server answered


# -- requests and decoding ---------------------------------------------------------

def test_owner_file_and_name_are_percent_encoded(server, client):
    server.script = [ok({"item": {"file": "prefs", "name": "大海/蓝", "content": "x"}})]
    client.get("prefs", "大海/蓝")
    assert server.requests[0]["path"] == "/api/v1/owners/user%3Axnne/items/prefs/%E5%A4%A7%E6%B5%B7%2F%E8%93%9D"


def test_owner_override_and_missing_owner(server, client):
    server.script = [ok({"files": []})]
    client.files(owner="bot@x")
    assert server.requests[0]["path"] == "/api/v1/owners/bot%40x/files"
    with pytest.raises(ValueError):
        Client("http://127.0.0.1:1", "t").files()


def test_retrieve_rebuilds_the_retrieval_result(server, client):
    hit = {"item": {"file": "prefs", "name": "sea", "content": "likes [[people:mia]]", "owner": "user:xnne",
                    "source_conv": None, "ts": None},
           "source": "hit", "score": 1.5, "bm25_score": 1.5, "cos_score": None, "via": None, "via_file": None,
           "matched_terms": ["sea"], "tokens_est": 3, "kind": "wiki"}
    link = dict(hit, item=dict(hit["item"], file="people", name="mia", content="a friend"), source="link",
                score=None, bm25_score=None, via="sea", via_file="prefs", matched_terms=[])
    body = {"items": [hit, link], "budget_tokens": 100, "budget_used": 5, "embedding_used": False,
            "dropped": [], "unresolved_links": ["[[x:y]]"], "time_range": ["2026-07-20", "2026-07-22"],
            "time_range_source": "explicit", "time_range_widened": True, "query_terms": ["sea"]}
    server.script = [ok(body)]
    result = client.retrieve("sea", budget_tokens=100, time_range=("2026-07-20", "2026-07-22"), as_of="HEAD~1")
    assert isinstance(result, RetrievalResult)
    assert isinstance(result.items[0], RetrievedItem) and isinstance(result.items[0].item, RecallItem)
    assert result.items[1].via == "sea" and result.items[1].source == "link"
    assert result.time_range == ("2026-07-20", "2026-07-22")
    assert result.to_dict() == body  # lossless round trip
    sent = server.requests[0]["body"]
    assert sent["as_of"] == "HEAD~1" and sent["time_range"] == ["2026-07-20", "2026-07-22"]
    assert "Idempotency-Key" not in server.requests[0]["headers"]
