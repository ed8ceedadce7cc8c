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
from parallel import run_threads

from wikimem.client import (
    BadRequestError,
    BusyError,
    Client,
    ClientError,
    ConflictError,
    ForbiddenError,
    InvalidValueError,
    NotFoundError,
    PreconditionFailedError,
    RateLimitedError,
    ServerError,
    TransportError,
)
from wikimem.errors import InvalidName, InvalidValue, NotFound, NotPermitted, WikimemError
from wikimem.models import DiaryItem, RecallItem
from wikimem.recall.index import RetrievalResult, RetrievedItem

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
        _, status, body, headers = step[:4]
        if "close-after" in step[4:]:  # answer, then close without a Connection: close header
            self.close_connection = True
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
    (400, "bad_request", BadRequestError),
    (422, "invalid_name", InvalidValueError),
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


def test_forbidden_is_the_librarys_not_permitted(server, client):
    """A character's token reaching another character's layer: 403, raised as ``NotPermitted`` (a PermissionError)."""
    server.script = [err(403, "forbidden", "this token is bound to the character 'kai'")]
    with pytest.raises(NotPermitted) as info:
        client.items(character="mira", owner="user:ann")
    assert isinstance(info.value, ForbiddenError) and isinstance(info.value, PermissionError)
    assert str(info.value) == "403 forbidden: this token is bound to the character 'kai'"
    assert server.requests[0]["path"] == "/api/v1/owners/user%3Aann/items?character=mira"
    assert len(server.requests) == 1  # an answer, not retried


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


# -- base URL, error classes, keep-alive (issue 15) --------------------------------

@pytest.mark.parametrize("suffix", ["", "/", "/api/v1", "/api/v1/"])
def test_a_base_url_ending_in_the_api_prefix_works(server, suffix):
    host, port = server.server_address
    c = Client(f"http://{host}:{port}{suffix}", "t", owner="o", proxies={})
    server.script = [ok({"files": ["prefs"]})]
    assert c.files() == ["prefs"]
    assert server.requests[0]["path"] == "/api/v1/owners/o/files"
    assert c.base_url == f"http://{host}:{port}"


def test_a_host_mounted_under_a_sub_path_keeps_it(server):
    host, port = server.server_address
    c = Client(f"http://{host}:{port}/wikimem/api/v1", "t", owner="o", proxies={})
    server.script = [ok({"files": []})]
    c.files()
    assert server.requests[0]["path"] == "/wikimem/api/v1/owners/o/files"


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "localhost", "ftp://127.0.0.1/", "http://", "", "http://h:99999",
                                 "http://h/?x=1"])
def test_a_url_that_is_not_http_is_refused_at_construction(url):
    with pytest.raises(ValueError) as info:
        Client(url, "t")
    assert "base_url" in str(info.value) and "TransportError" not in type(info.value).__name__


def test_a_redirect_says_the_base_url_is_wrong(server, client):
    server.script = [("json", 308, {}, {"Location": "https://elsewhere/"})]
    with pytest.raises(ClientError) as info:
        client.files()
    assert info.value.status == 308 and "elsewhere" in info.value.message


def test_bad_request_is_not_an_invalid_name_unless_the_server_says_so(server, client):
    from wikimem.client import InvalidNameError

    server.script = [err(400, "bad_request", "unknown field 'q'")]
    with pytest.raises(BadRequestError) as info:
        client.retrieve("x")
    assert not isinstance(info.value, InvalidName) and isinstance(info.value, ValueError)
    assert not issubclass(BadRequestError, InvalidName)
    for status in (422, 400):  # 422 from this host; 400 from hosts before the 400/422 rule
        server.script = [err(status, "invalid_name", "invalid file name 'Bad'")]
        with pytest.raises(InvalidName) as info:
            client.add("Bad", "x", "y")
        assert isinstance(info.value, InvalidNameError) and isinstance(info.value, InvalidValueError)
        assert isinstance(info.value, InvalidValue) and info.value.status == status


def test_a_refused_value_is_the_librarys_invalid_value(server, client):
    server.script = [err(422, "invalid_value", "unknown time zone 'Mars/Olympus'")]
    with pytest.raises(InvalidValue) as info:
        client.diary_append("x", tz="Mars/Olympus")
    assert isinstance(info.value, InvalidValueError) and not isinstance(info.value, (InvalidName, BadRequestError))


def test_headers_are_read_without_regard_to_case(server, client):
    server.script = [ok({"item": {"file": "p", "name": "n", "content": "x"}}, headers={"etag": '"abc"'})]
    assert client.fetch("p", "n").etag == "abc"


def _ports(server) -> set:
    return {r["port"] for r in server.requests}


@pytest.fixture
def recording_server():
    class Recording(Scripted):
        pass

    class RecordingHandler(Handler):
        def _serve(self):
            self.server.last_port = self.client_address[1]
            super()._serve()

        do_GET = do_PUT = do_POST = do_DELETE = _serve

    srv = Recording()
    srv.RequestHandlerClass = RecordingHandler
    original = srv.next_step

    def next_step(record):
        record["port"] = srv.last_port
        return original(record)

    srv.next_step = next_step
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_requests_of_one_thread_share_one_tcp_connection(recording_server):
    host, port = recording_server.server_address
    with Client(f"http://{host}:{port}", "t", owner="o", proxies={}) as c:
        recording_server.script = [ok({"files": []})] * 10 + [ok(APPENDED, 201)] * 5
        for _ in range(10):
            c.files()
        for n in range(5):
            c.diary_append(f"entry {n}")
    assert len(recording_server.requests) == 15
    assert len(_ports(recording_server)) == 1


def test_each_thread_gets_its_own_connection(recording_server):
    host, port = recording_server.server_address
    c = Client(f"http://{host}:{port}", "t", owner="o", proxies={})
    recording_server.script = [ok({"files": []})] * 12

    def work():
        for _ in range(4):
            c.files()

    assert run_threads(work, [()] * 3) == []
    c.close()
    assert len(recording_server.requests) == 12
    assert len(_ports(recording_server)) == 3


def test_a_connection_the_server_closed_while_idle_is_replaced_without_a_retry(recording_server):
    host, port = recording_server.server_address
    c = Client(f"http://{host}:{port}", "t", owner="o", retries=0, proxies={})  # no retries at all
    # The server answers, then closes the connection without saying so (what a keep-alive timeout does).
    recording_server.script = [("json", 200, {"files": ["a"]}, {}, "close-after")] + [ok({"files": ["b"]})]
    assert c.files() == ["a"]
    time.sleep(0.1)  # the close reaches the client's socket
    assert c.files() == ["b"]
    assert len(recording_server.requests) == 2
    assert len(_ports(recording_server)) == 2


def test_a_write_the_server_does_not_deduplicate_never_rides_a_reused_connection(recording_server):
    host, port = recording_server.server_address
    c = Client(f"http://{host}:{port}", "t", owner="o", proxies={})
    recording_server.script = [ok({"files": []}), ok({"deleted": "o"})]
    c.files()
    c.delete_owner()
    assert len(_ports(recording_server)) == 2


def test_a_plain_http_proxy_gets_the_absolute_url_and_its_credentials(server, monkeypatch):
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    host, port = server.server_address
    c = Client("http://wikimem.invalid:8000", "t", owner="o", proxies={"http": f"http://bot:s3cret@{host}:{port}"})
    server.script = [ok({"files": []})]
    assert c.files() == []
    (req,) = server.requests
    assert req["path"] == "http://wikimem.invalid:8000/api/v1/owners/o/files"
    assert req["headers"]["Proxy-Authorization"] == "Basic Ym90OnMzY3JldA=="


# -- settings and jobs ---------------------------------------------------------------

JOB = {"id": "job_20260723T020000Z_0123456789ab", "kind": "memorize", "state": "queued", "done": 0, "total": 1,
       "results": [{"step": 0, "state": "pending"}], "params": {"owner": "user:xnne", "run": "run_x"}}


def test_memorize_async_asks_for_a_job_with_one_key_per_call(server, client):
    server.script = [err(503, "busy", "busy"), ok(JOB, 202, {"Location": f"/api/v1/jobs/{JOB['id']}"})]
    job = client.memorize_async("user: hi", character="Elaina")
    assert job["id"] == JOB["id"]
    first, second = server.requests
    assert first["headers"]["Prefer"] == "respond-async"
    assert first["headers"]["Idempotency-Key"] == second["headers"]["Idempotency-Key"]
    assert first["body"] == {"turn": "user: hi", "character": "Elaina"}
    server.script = [ok(JOB, 202)]
    client.memorize_async("user: hi", key="turn-1")
    assert server.requests[-1]["headers"]["Idempotency-Key"] == "turn-1"


def test_wait_job_polls_until_the_job_is_finished(server, client):
    client.session.sleep = lambda s: None
    done = dict(JOB, state="done", done=1, results=[{"step": 0, "state": "done", "result": {"entries": []}}])
    server.script = [ok(JOB), ok(dict(JOB, state="running")), ok(done)]
    assert client.wait_job(JOB)["state"] == "done"
    assert [r["path"] for r in server.requests] == [f"/api/v1/jobs/{JOB['id']}"] * 3
    server.script = [ok(JOB)] * 50
    with pytest.raises(TimeoutError):
        client.wait_job(JOB["id"], timeout=0)


def test_settings_are_read_and_set(server, client):
    server.script = [ok({"settings": {"tz": None, "character": None}}),
                     ok({"settings": {"tz": "Asia/Shanghai", "character": None}, "commit": "c1", "replayed": False})]
    assert client.settings() == {"tz": None, "character": None}
    written = client.set_settings(tz="Asia/Shanghai", character=None)
    assert written.value["tz"] == "Asia/Shanghai" and written.commit == "c1"
    put = server.requests[1]
    assert put["method"] == "PUT" and put["path"] == "/api/v1/owners/user%3Axnne/settings"
    assert put["body"] == {"tz": "Asia/Shanghai", "character": None} and put["headers"]["Idempotency-Key"]


# -- paths, preconditions and the rest of the API (issue 24, item 11) ---------------------

@pytest.mark.parametrize("path,sent", [
    ("/owners/user:x/files", "/api/v1/owners/user:x/files"),  # relative to the API, as OpenAPI writes paths
    ("/api/v1/owners/user:x/files", "/api/v1/owners/user:x/files"),  # the prefixed spelling still works
    ("/api/v1/jobs/job_1", "/api/v1/jobs/job_1"),  # a Location header, followed as it is
    ("/healthz", "/healthz"),  # the probes are at the host's root
    ("/readyz", "/readyz"),
    ("/version", "/api/v1/version"),
])
def test_request_paths_are_relative_to_the_api(server, client, path, sent):
    server.script = [ok({"ok": True})]
    client.request("GET", path)
    assert server.requests[0]["path"] == sent


def test_request_paths_under_a_sub_path_mount(server):
    host, port = server.server_address
    c = Client(f"http://{host}:{port}/wikimem", "t", owner="o", proxies={})
    server.script = [ok({})] * 4
    for path in ("/owners", "/api/v1/owners", "/wikimem/api/v1/owners", "/healthz"):
        c.request("GET", path)
    assert [r["path"] for r in server.requests] == ["/wikimem/api/v1/owners"] * 3 + ["/wikimem/healthz"]


def test_request_merges_a_query_in_the_path_with_query_values(server, client):
    server.script = [ok({})]
    client.request("GET", "/owners?prefix=user:", query={"limit": 5, "cursor": None})
    assert server.requests[0]["path"] == "/api/v1/owners?prefix=user:&limit=5"


@pytest.mark.parametrize("path", ["owners", "", "http://127.0.0.1:1/api/v1/owners", None])
def test_request_refuses_a_path_that_is_not_one(client, server, path):
    with pytest.raises(ValueError):
        client.request("GET", path)
    assert server.requests == []


@pytest.mark.parametrize("given,header", [
    ("abc", '"abc"'), ('"abc"', '"abc"'), (' "abc" ', '"abc"'), ('W/"abc"', '"abc"'), ("*", "*"),
    ("c0ffee" * 6 + "abcd", '"' + "c0ffee" * 6 + "abcd" + '"'),
])
def test_if_match_is_sent_quoted_whichever_way_it_was_given(server, client, given, header):
    server.script = [ok({"item": {"file": "p", "name": "n", "content": "x"}, "commit": "c1"}),
                     ok({"removed": True, "commit": "c2"}), ok({"results": [], "commit": "c3"})]
    client.add("p", "n", "x", if_match=given)
    client.remove("p", "n", if_match=given)
    client.batch([{"op": "remove", "file": "p", "name": "n"}], if_match=given)
    assert [r["headers"]["If-Match"] for r in server.requests] == [header] * 3


@pytest.mark.parametrize("bad", ['"a", "b"', "a,b", 'a"b', "a b", '""', "W/", 'W/""', 42])
def test_an_if_match_that_is_not_one_etag_is_a_value_error(server, client, bad):
    with pytest.raises(ValueError):
        client.add("p", "n", "x", if_match=bad)
    assert server.requests == []


def test_retrieve_sends_every_field_it_is_given_and_no_others(server, client):
    result = {"items": [], "budget_tokens": 50, "budget_used": 0, "embedding_used": False, "dropped": [],
              "unresolved_links": [], "time_range": None, "time_range_source": None, "time_range_widened": False,
              "query_terms": ["sea"], "diary": "all"}
    server.script = [ok(result), ok(result)]
    chat = [{"role": "user", "content": "the sea?"}]
    got = client.retrieve(messages=chat, messages_last=2, budget_tokens=50, budget_strict=True, diary="all",
                          recency_half_life=14.0, tz="Asia/Shanghai", as_of="HEAD~1")
    assert got.diary == "all" and got.to_dict() == result
    assert server.requests[0]["body"] == {
        "messages": chat, "messages_last": 2, "limit": 10, "budget_tokens": 50, "budget_strict": True,
        "expand_links": True, "explain": False, "tz": "Asia/Shanghai", "as_of": "HEAD~1", "diary": "all",
        "recency_half_life": 14.0}
    client.retrieve("sea")
    assert server.requests[1]["body"] == {"query": "sea", "limit": 10, "expand_links": True, "explain": False}
    with pytest.raises(ValueError):
        client.retrieve("sea", messages=chat)
    with pytest.raises(ValueError):
        client.retrieve()
    assert len(server.requests) == 2


def test_history_sends_its_filters_and_pages_both_ways(server, client):
    server.script = [ok({"entries": [{"id": "c2"}], "next": "c1", "prev": "c3", "reverted_by": {"c2": ["c4"]}})]
    page = client.history(actor="Elaina", action="diary", since="2026-07-01", until="2026-07-31T12:00:00Z",
                          run="run_1", file="preferences", item="sea", limit=20, cursor="c9", after="c0",
                          at="2026-07-15")
    path = server.requests[0]["path"]
    assert path.startswith("/api/v1/owners/user%3Axnne/history?")
    from urllib.parse import parse_qs, urlsplit

    assert {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()} == {
        "file": "preferences", "item": "sea", "run": "run_1", "actor": "Elaina", "action": "diary",
        "since": "2026-07-01", "until": "2026-07-31T12:00:00Z", "limit": "20", "cursor": "c9", "after": "c0",
        "at": "2026-07-15"}
    assert (page.entries, page.next, page.prev, page.extra) == ([{"id": "c2"}], "c1", "c3",
                                                                {"reverted_by": {"c2": ["c4"]}})


def test_runs_and_bulk_rollback_go_to_the_cross_owner_routes(server, client):
    runs = {"runs": [{"owner": "user:a", "run": "r1"}], "next": "k", "total": {"runs": 1}, "complete": True}
    server.script = [ok(runs), ok({"owners": [{"owner": "user:a", "runs": 1}], "next": None}),
                     ok({"selection": {"actor": "bot"}, "total": {"owners": 1}, "owners": [], "next": None}),
                     err(503, "busy", "busy"), ok(JOB, 202)]
    page = client.runs(actor="bot", owner_prefix="user:", since="2026-07-01")
    assert page.entries == runs["runs"] and page.next == "k" and page.extra == {"total": {"runs": 1},
                                                                                "complete": True}
    assert server.requests[0]["path"] == "/api/v1/runs?actor=bot&since=2026-07-01&owner_prefix=user%3A&limit=50"
    assert client.runs(by="owner").entries == [{"owner": "user:a", "runs": 1}]
    assert client.preview_bulk_rollback(actor="bot", limit=10)["total"] == {"owners": 1}
    preview = server.requests[2]
    assert preview["path"] == "/api/v1/bulk/rollback" and "Idempotency-Key" not in preview["headers"]
    assert preview["body"] == {"actor": "bot", "limit": 10, "preview": True}
    assert client.bulk_rollback(actor="bot", force=True)["id"] == JOB["id"]
    first, second = server.requests[3:]
    assert first["body"] == second["body"] == {"actor": "bot", "force": True}
    assert first["headers"]["Idempotency-Key"] == second["headers"]["Idempotency-Key"]


def test_ready_answers_a_503_without_retrying(server, client):
    server.script = [("json", 503, {"ready": False, "remote": "unreachable"}, {"Retry-After": "5"}),
                     ok({"ready": True, "remote": "none"})]
    assert client.ready() == {"ready": False, "remote": "unreachable"}
    assert len(server.requests) == 1 and server.requests[0]["path"] == "/readyz"
    assert client.ready() == {"ready": True, "remote": "none"}


def test_replication_and_openapi(server, client):
    server.script = [ok({"mode": "none"}), ok({"openapi": "3.0.3"})]
    assert client.replication() == {"mode": "none"} and client.openapi() == {"openapi": "3.0.3"}
    assert [r["path"] for r in server.requests] == ["/api/v1/replication", "/api/v1/openapi.json"]
