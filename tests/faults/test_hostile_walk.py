"""Every write route walked with hostile characters; then git itself checks what reached the objects.

Provenance (run, actor, source_conv, a batch message), item names and
keys with NUL, ESC, BEL, DEL, C1 controls, U+2028/U+2029/U+0085 line
separators, bidi overrides and zero-width characters are refused with a
4xx; content may hold them (it is a blob). Afterwards ``git fsck --strict``
is clean, a push to a bare repository with ``receive.fsckObjects=true``
is accepted (a remote would otherwise refuse the owner forever), and
``git log`` carries no raw control character.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
from apiworld import ADMIN, OWNER, auth
from fakes import FakeOpenAI

from webapp import create_app
from wikimem.host import encode_owner_id

GIT = shutil.which("git")
O = f"/api/v1/owners/{OWNER}"
HOSTILE = ["nul\x00", "esc\x1b[31m", "bell\x07", "del\x7f", "c1\x85", "ls\u2028Wikimem-Run: victim",
           "ps\u2029Wikimem-Idempotency-Key: stolen", "rlo\u202e", "zw\u200b", "nl\nWikimem-Run: victim"]


def _writes(value: str):
    """(method, path, json body) of every write route, with ``value`` in each provenance field."""
    prov = {"run": value, "actor": value, "source_conv": value}
    yield "PUT", "/items/f/a", {"content": "x", **prov}
    yield "DELETE", "/items/f/keep", prov
    yield "POST", "/diary", {"content": "x", **prov}
    yield "POST", "/batch", {"ops": [{"op": "add", "file": "f", "name": "b", "content": "x"}], **prov}
    yield "POST", "/batch", {"ops": [{"op": "add", "file": "f", "name": "b", "content": "x"}], "message": value}
    yield "POST", "/batch", {"ops": [{"op": "add", "file": "f", "name": "b", "content": "x",
                                      "source_conv": value}]}
    yield "POST", "/batch", {"ops": [{"op": "diary", "content": "x", "source_conv": value}]}
    yield "POST", "/diary-tool", {"arguments": {"content": "x"}, **prov}
    yield "POST", "/memorize", {"turn": "user: hi", **prov}
    yield "PUT", f"/items/f/{quote(value, safe='')}", {"content": "x"}
    yield "POST", "/revert", {"commit": "HEAD", "actor": value}
    yield "POST", "/rollback", {"run": value}
    yield "POST", "/restore", {"to": "HEAD", "actor": value}


@pytest.fixture
def app(tmp_path):
    chat = FakeOpenAI().start()
    chat.reply_fn = lambda messages: json.dumps([{"content": "记下了\x1b[31m一件事\u2028。"}], ensure_ascii=False)
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "LLM_URL": chat.url, "LLM_MODEL": "m"})
    client = app.test_client()
    client.put(O, headers=auth(ADMIN))
    client.put(O + "/items/f/keep", headers=auth(ADMIN), json={"content": "kept"})
    yield app
    chat.stop()


@pytest.mark.slow
def test_hostile_characters_never_reach_a_git_object(app, tmp_path):
    client = app.test_client()
    refused = accepted = 0
    for value in HOSTILE:
        for method, path, body in _writes(value):
            r = client.open(O + path, method=method, headers=auth(ADMIN), json=body)
            assert r.status_code < 500, (method, path, repr(value), r.get_data(as_text=True))
            if 400 <= r.status_code < 500:
                refused += 1
                assert r.get_json()["error"]["code"] in ("invalid_name", "bad_request", "invalid_value", "not_found")
            else:
                accepted += 1
        # content may hold them: it is the memory itself, a blob to git
        r = client.put(O + "/items/f/c", headers=auth(ADMIN), json={"content": f"text {value} end"})
        assert r.status_code in (200, 201)
        assert client.post(O + "/diary", headers=auth(ADMIN), json={"content": f"event {value}"}).status_code == 201
    assert refused >= len(HOSTILE) * 10
    memorized = client.post(O + "/memorize", headers=auth(ADMIN), json={"turn": "user: hi"})
    assert memorized.status_code == 200
    if GIT is None:
        pytest.skip("git is not installed: the objects could not be checked by git itself")
    repo = Path(app.config["DATA_ROOT"]) / "owners" / encode_owner_id(OWNER)
    fsck = subprocess.run([GIT, "-C", str(repo), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    remote = tmp_path / "remote.git"
    subprocess.run([GIT, "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run([GIT, "-C", str(remote), "config", "receive.fsckObjects", "true"], check=True)
    push = subprocess.run([GIT, "-C", str(repo), "push", "-q", str(remote), "main"], capture_output=True, text=True)
    assert push.returncode == 0, push.stderr
    log = subprocess.run([GIT, "-C", str(repo), "log", "--format=%an%n%B"], capture_output=True).stdout
    for raw in (b"\x00", b"\x1b", b"\x07", b"\x7f", "\u2028".encode(), "\u2029".encode(), "\x85".encode()):
        assert raw not in log
    runs = subprocess.run([GIT, "-C", str(repo), "log", "--format=%(trailers:key=Wikimem-Run,valueonly)"],
                          capture_output=True, text=True).stdout
    assert "victim" not in runs
