"""A remote that never stops: bounded in bytes and in time, and nothing it sent is kept.

A loopback smart-HTTP server (in the test) advertises a ``main`` and then
streams pack data without end — or drips it, a few bytes at a time, so that
no single read ever times out. A read with a read token makes the host
fetch (an owner it holds, behind the remote) or clone (an owner it lacks).
The host gives up at ``WIKIMEM_REMOTE_MAX_MB`` / ``WIKIMEM_REMOTE_MAX_SECONDS``,
refuses the remote (recorded, reads go on from the last accepted state), the
data root never grows by more than the bound — sampled while it streams —
and nothing of the stream stays in it.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from apiworld import ADMIN, auth

from webapp import create_app
from wikimem.host import encode_owner_id, make_host
from wikimem.host.access.tokens import append_token, mint_token

MAX_MB = 2
BOUND = MAX_MB << 20
SLACK = 256 << 10  # the host's own bookkeeping meanwhile: the auth state, the refusal record, a history index
FAKE_HEAD = "1" * 40
GIVE_UP_SECONDS = 40.0  # the server stops on its own after this (a host without bounds would never)


def pkt(data: bytes) -> bytes:
    return b"%04x" % (len(data) + 4) + data


class Endless:
    """The server: ``drip`` sends 64 bytes every 0.2 s, else 64 KiB packets as fast as the host reads."""

    def __init__(self, drip: bool = False):
        self.drip = drip
        self.sent = 0
        self.gave_up_at: float | None = None  # when the host closed the stream
        self.started: float | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args):
                pass

            def do_GET(self):
                if "service=git-upload-pack" not in self.path:
                    self.send_error(404)
                    return
                body = (pkt(b"# service=git-upload-pack\n") + b"0000"
                        + pkt(FAKE_HEAD.encode() + b" refs/heads/main\0multi_ack_detailed side-band-64k "
                              b"thin-pack ofs-delta no-done\n") + b"0000")
                self.send_response(200)
                self.send_header("Content-Type", "application/x-git-upload-pack-advertisement")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-git-upload-pack-result")
                self.end_headers()  # no length: the body ends when the connection does (never, if it can help it)
                server.started = time.monotonic()
                chunk = pkt(b"\x01" + (b"PACK" + os.urandom(65000)))
                drop = pkt(b"\x01" + os.urandom(60))
                try:
                    self.wfile.write(pkt(b"NAK\n"))
                    while time.monotonic() - server.started < GIVE_UP_SECONDS:
                        if server.drip:
                            self.wfile.write(drop)
                            self.wfile.flush()
                            server.sent += len(drop)
                            time.sleep(0.2)
                        else:
                            self.wfile.write(chunk)
                            server.sent += len(chunk)
                except OSError:
                    server.gave_up_at = time.monotonic()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Endless:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def template(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{{owner}}.git"


def _size(folder: Path) -> int:
    total = 0
    for top, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_size
            except FileNotFoundError:
                pass
    return total


class Sampler:
    """The data root's size, every 20 ms while the host talks to the remote: its largest growth."""

    def __init__(self, root: Path):
        self.root = root
        self.base = _size(root)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _size(self.root) - self.base)
            time.sleep(0.02)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _size(self.root) - self.base)


def _app(tmp_path: Path, template: str, tokens: Path):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens), "REMOTE": template, "REMOTE_FRESHNESS": 0,
                      "REMOTE_TIMEOUT": 2, "REMOTE_MAX_MB": MAX_MB, "REMOTE_MAX_SECONDS": 4})
    return app.test_client()


def _reader(tmp_path: Path) -> tuple[Path, str]:
    tokens = tmp_path / "tokens.jsonl"
    secret, entry = mint_token("bot", ["read"])
    append_token(tokens, entry)
    return tokens, secret


@pytest.mark.slow
@pytest.mark.parametrize("drip", [False, True], ids=["stream", "drip"])
def test_a_fetch_from_a_remote_that_never_stops_is_cut_off_and_leaves_nothing(tmp_path, drip):
    tokens, reader = _reader(tmp_path)
    owner = make_host(tmp_path / "data").create_owner("user:ann")  # held here, made before the host replicated
    owner.add("notes", "tea", "likes green tea")
    folder = owner.root
    with Endless(drip) as server:
        client = _app(tmp_path, server.template, tokens)
        with Sampler(tmp_path / "data") as sampler:
            started = time.monotonic()
            r = client.get("/api/v1/owners/user:ann/items?file=notes", headers=auth(reader))
            took = time.monotonic() - started
        assert r.status_code == 200 and [i["name"] for i in r.get_json()["items"]] == ["tea"]  # the last good state
        assert took < 15, took
        time.sleep(0.5)
        assert server.gave_up_at is not None  # the host hung up; the server would have gone on
    assert sampler.peak <= BOUND + SLACK, sampler.peak
    assert not drip or server.sent < BOUND  # a drip is cut by the time bound
    refused = client.get("/api/v1/replication", headers=auth(ADMIN)).get_json()["refused"]["user:ann"]
    assert ("WIKIMEM_REMOTE_MAX_SECONDS" if drip else "WIKIMEM_REMOTE_MAX_MB") in refused["reason"]
    quarantine = folder / ".git" / "wikimem-quarantine"
    assert not quarantine.exists() or list(quarantine.iterdir()) == []
    fsck = subprocess.run(["git", "-C", str(folder), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


@pytest.mark.slow
def test_a_clone_from_a_remote_that_never_stops_is_cut_off_and_leaves_nothing(tmp_path):
    tokens, reader = _reader(tmp_path)
    with Endless() as server:
        client = _app(tmp_path, server.template, tokens)
        assert client.get("/api/v1/replication", headers=auth(ADMIN)).status_code == 200
        with Sampler(tmp_path / "data") as sampler:
            r = client.get("/api/v1/owners/user:bob/items", headers=auth(reader))
        assert r.status_code == 502 and r.get_json()["error"]["code"] == "remote_refused", r.get_data()
        time.sleep(0.5)
        assert server.gave_up_at is not None
    assert sampler.peak <= BOUND + SLACK, sampler.peak
    assert not (tmp_path / "data" / "owners" / encode_owner_id("user:bob")).exists()
    assert list((tmp_path / "data" / "staging").iterdir()) == []
