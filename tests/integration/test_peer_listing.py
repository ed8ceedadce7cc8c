"""A host's listing with a peer that does not answer: the page is partial and says so, for that request only.

gthread workers serve many requests with one Host: which peers a listing
could not reach belongs to the request (its thread), and a later listing
that asked no peer must not report an old failure.
"""

from __future__ import annotations

import socket
import threading

from wikimem.host import make_host
from wikimem.host.cluster.peers import Peers


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again at once: nothing listens there


def test_an_unreachable_peer_is_reported_for_that_listing_only(tmp_path):
    silent = f"http://127.0.0.1:{_closed_port()}"
    me = "http://127.0.0.1:1"
    host = make_host(tmp_path / "data", peers=Peers.parse(f"{me},{silent}", self_url=me))
    host.ensure_owner("user:a")
    rows, _ = host.list_owners(forward={"X-Wikimem-Peer": "t"})
    assert [r.id for r in rows] == ["user:a"] and host.last_unreachable == [silent]
    seen_elsewhere = []
    other = threading.Thread(target=lambda: seen_elsewhere.append(host.last_unreachable))
    other.start()
    other.join()
    assert seen_elsewhere == [[]]  # another request thread does not see this one's partial page
    host.list_owners()  # a peer's own-data listing asks nobody
    assert host.last_unreachable == []
