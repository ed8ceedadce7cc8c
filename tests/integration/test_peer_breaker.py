"""A silent peer (accepts TCP, never answers) costs one listing the timeout, then nothing while its breaker is open;
a logout notice it missed is retried in the background."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from silentpeer import SilentPeer

from wikimem.host import make_host
from wikimem.host.cluster import Breaker, Peers

ME = "http://127.0.0.1:1"


def _timed(fn):
    start = time.monotonic()
    value = fn()
    return value, time.monotonic() - start


def test_a_silent_peer_costs_one_listing_the_timeout_then_none_while_the_breaker_is_open(tmp_path):
    with SilentPeer() as silent:
        peers = Peers.parse(f"{ME},{silent.url}", self_url=ME, connect_timeout=0.5, timeout=0.8, cooldown=30,
                            state_dir=tmp_path / "peers")
        host = make_host(tmp_path / "data", peers=peers)
        host.ensure_owner("user:a")
        (rows, _), first = _timed(lambda: host.list_owners(forward={"X-Wikimem-Peer": "t"}))
        assert [r.id for r in rows] == ["user:a"] and host.last_unreachable == [silent.url]
        assert 0.7 < first < peers.budget + 0.3  # the read timeout, once
        for _ in range(5):
            (rows, _), later = _timed(lambda: host.list_owners(forward={"X-Wikimem-Peer": "t"}))
            assert later < 0.2 and host.last_unreachable == [silent.url]  # skipped, still reported
        assert silent.accepted == 1
        # Another worker process of the host shares the breaker's record: it skips the peer too.
        other = Peers.parse(f"{ME},{silent.url}", self_url=ME, timeout=0.8, state_dir=tmp_path / "peers")
        (_, unreachable), elsewhere = _timed(lambda: other.get("/api/v1/owners", {}, {}))
        assert unreachable == [silent.url] and elsewhere < 0.2 and silent.accepted == 1


def test_concurrent_listings_each_wait_at_most_the_budget(tmp_path):
    with SilentPeer() as silent:
        peers = Peers.parse(f"{ME},{silent.url}", self_url=ME, timeout=0.6, state_dir=tmp_path / "peers")
        times: list[float] = []

        def listing():
            times.append(_timed(lambda: peers.get("/api/v1/owners", {}, {}))[1])

        threads = [threading.Thread(target=listing) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert max(times) < peers.budget + 0.3


def test_a_half_open_breaker_lets_one_trial_through_and_closes_on_success():
    breaker = Breaker(cooldown=10)
    url = "http://10.0.0.9:8000"
    assert breaker.allow(url, now=0)
    breaker.failed(url, now=0)
    assert not breaker.allow(url, now=5) and breaker.is_open(url, now=5)
    assert breaker.allow(url, now=11)  # the trial
    assert not breaker.allow(url, now=11.5)  # the others wait for its answer
    breaker.succeeded(url)
    assert breaker.allow(url, now=12) and not breaker.is_open(url, now=12)


class _Recorder(BaseHTTPRequestHandler):
    bodies: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length", 0))
        type(self).bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_notice_a_peer_missed_is_retried_in_the_background_until_it_takes_it(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    port = server.server_address[1]
    server.server_close()  # down for now: the port refuses connections
    url = f"http://127.0.0.1:{port}"
    peers = Peers.parse(f"{ME},{url}", self_url=ME, timeout=0.5, cooldown=0.2)
    made = []

    def body():
        made.append(time.time())
        return {"n": len(made)}

    delivery = peers.deliver("/api/v1/peer/revoked", body, until=time.time() + 30)
    assert not delivery.wait(2.0) and delivery.missing == [url]
    _Recorder.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", port), _Recorder)  # the peer comes back
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        deadline = time.monotonic() + 15
        while delivery.missing and time.monotonic() < deadline:
            time.sleep(0.05)
        assert delivery.missing == [] and len(_Recorder.bodies) == 1
        assert _Recorder.bodies[0]["n"] == len(made) >= 2  # made again for each attempt (a fresh signature)
        assert peers.courier.pending() == 0
    finally:
        server.shutdown()
        server.server_close()
