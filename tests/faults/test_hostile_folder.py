"""Hostile files made by hand in one owner's folder, and broken repositories: that owner only gets a clear error.

A symbolic link to the system's password file or to another owner's memory,
a linked ``wiki/`` folder, a FIFO named ``x.md``, a link to ``/dev/zero``, a
50 MB file, a linked ``journal.jsonl``; a garbage ``refs/heads/main``, a
branch naming a lost commit, a ``settings.json`` nested 100k deep at the
head. Each is a ``folder_damaged`` error (HTTP 500, with the file and the
repair in its message) for that owner — never a hang, never a commit of what
a link points at — while ``/healthz`` and the other owners keep answering;
``wikimem repair --owner`` puts it right. A gunicorn with several threads
proves the FIFO blocks nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from apiworld import ADMIN, auth

from webapp import create_app
from wikimem.host import encode_owner_id

REPO = Path(__file__).resolve().parents[2]
A, B = "user:alice", "user:bob"
BOB_SECRET = "bob keeps his spare key under the third stone"


def finishes(fn, seconds: float = 10.0):
    """``fn()``, failing the test when it has not returned within ``seconds`` (a request that blocks)."""
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(value=fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"blocked for more than {seconds}s"
    return out["value"]


def folder(data: Path, owner: str) -> Path:
    return data / "owners" / encode_owner_id(owner)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def repair(data: Path, owner: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wikimem", "repair", "--owner", owner, "--data", str(data)],
                          capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), "WIKIMEM_DATA": str(data)})


def hand_made(kind: str, a: Path, b: Path, outside: Path) -> None:
    """What someone with a shell on the host leaves in ``a``'s folder."""
    if kind == "passwd_link":
        os.symlink("/etc/passwd", a / "wiki" / "passwd.md")
    elif kind == "other_owner_link":
        os.symlink(f"../../{b.name}/wiki/private.md", a / "wiki" / "stolen.md")
    elif kind == "linked_wiki":
        os.rename(a / "wiki", a.parent.parent / "aside")
        os.symlink(f"../{b.name}/wiki", a / "wiki")
    elif kind == "fifo":
        os.mkfifo(a / "wiki" / "x.md")
    elif kind == "dev_zero":
        os.symlink("/dev/zero", a / "wiki" / "zero.md")
    elif kind == "oversized":
        with open(a / "wiki" / "big.md", "wb") as fh:
            fh.truncate(50 * 1024 * 1024)
    elif kind == "linked_journal":
        os.unlink(a / "journal.jsonl")
        os.symlink(outside, a / "journal.jsonl")
    elif kind == "linked_lock":
        os.unlink(a / ".wikimem.lock")
        os.symlink(b / ".wikimem.lock", a / ".wikimem.lock")  # would lock (and stall) another owner
    else:
        raise AssertionError(kind)


KINDS = ["passwd_link", "other_owner_link", "linked_wiki", "fifo", "dev_zero", "oversized", "linked_journal",
         "linked_lock"]


@pytest.fixture
def host(tmp_path):
    data = tmp_path / "data"
    client = create_app({"TESTING": True, "DATA_ROOT": str(data), "ADMIN_TOKEN": ADMIN}).test_client()
    for owner in (A, B):
        assert client.put(f"/api/v1/owners/{owner}", headers=auth(ADMIN)).status_code == 201
    assert client.put(f"/api/v1/owners/{A}/items/notes/one", headers=auth(ADMIN),
                      json={"content": "alice's note"}).status_code == 201
    assert client.put(f"/api/v1/owners/{B}/items/private/key", headers=auth(ADMIN),
                      json={"content": BOB_SECRET}).status_code == 201
    client.data = data
    return client


def damaged(r) -> bool:
    return r.status_code == 500 and r.get_json()["error"]["code"] == "folder_damaged"


def others_keep_answering(client) -> None:
    assert finishes(lambda: client.get("/healthz")).status_code == 200
    b = f"/api/v1/owners/{B}"
    got = finishes(lambda: client.get(b + "/items/private/key", headers=auth(ADMIN)))
    assert got.status_code == 200 and got.get_json()["item"]["content"] == BOB_SECRET
    found = finishes(lambda: client.post(b + "/retrieve", headers=auth(ADMIN), json={"query": "spare key"}))
    assert found.status_code == 200 and found.get_json()["items"]
    assert finishes(lambda: client.post(b + "/diary", headers=auth(ADMIN), json={"content": "fine"})).status_code == 201


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_hand_made_file_is_a_clear_error_for_its_owner_only(host, tmp_path, kind):
    a, b = folder(host.data, A), folder(host.data, B)
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    commits = git(a, "rev-list", "--count", "main")
    hand_made(kind, a, b, outside)
    base = f"/api/v1/owners/{A}"
    write = finishes(lambda: host.put(base + "/items/notes/two", headers=auth(ADMIN), json={"content": "x"}))
    assert damaged(write), write.get_data()
    assert "wikimem repair" in write.get_json()["error"]["message"]
    diary = finishes(lambda: host.post(base + "/diary", headers=auth(ADMIN), json={"content": "today"}))
    assert damaged(diary), diary.get_data()
    for r in (finishes(lambda: host.get(base + "/items", headers=auth(ADMIN))),
              finishes(lambda: host.post(base + "/retrieve", headers=auth(ADMIN), json={"query": "key root"})),
              finishes(lambda: host.get(base + "/export?format=tar", headers=auth(ADMIN)))):
        assert r.status_code in (200, 500), r.get_data()
        assert r.status_code == 200 or damaged(r)
        assert BOB_SECRET.encode() not in r.get_data() and b"root:x:0:0" not in r.get_data()
    if kind not in ("linked_journal", "linked_lock"):  # (reads take neither)
        assert damaged(finishes(lambda: host.get(base + "/items", headers=auth(ADMIN))))
    others_keep_answering(host)
    # nothing was committed, nothing was read into history, nothing outside the folder changed
    assert git(a, "rev-list", "--count", "main") == commits
    history = git(a, "log", "-p", "--all")
    assert "root:x:0:0" not in history and BOB_SECRET not in history
    assert outside.read_text() == ""
    assert git(b, "show", "main:wiki/private.md").count(BOB_SECRET) == 1 and "alice" not in git(b, "log", "-p")
    # the documented repair puts it right: the owner writes again, the hostile entry sits in the quarantine
    done = repair(host.data, A)
    assert done.returncode == 0, done.stderr
    assert "moved aside" in done.stdout
    again = host.put(base + "/items/notes/two", headers=auth(ADMIN), json={"content": "x"})
    assert again.status_code == 201, again.get_data()
    names = [i["name"] for i in host.get(base + "/items", headers=auth(ADMIN)).get_json()["items"]]
    assert names == ["one", "two"]
    assert any((a / ".git" / "wikimem-quarantine").rglob("*"))
    assert "root:x:0:0" not in git(a, "log", "-p") and git(a, "status", "--porcelain") == ""


def _garbage_ref(a: Path) -> None:
    (a / ".git" / "refs" / "heads" / "main").write_text("this is not a commit\n")


def _lost_commit(a: Path) -> None:
    (a / ".git" / "refs" / "heads" / "main").write_text("0123456789abcdef0123456789abcdef01234567\n")


def _deep_settings(a: Path) -> None:
    (a / "settings.json").write_text("[" * 100_000 + "]" * 100_000)
    git(a, "add", "settings.json")
    git(a, "-c", "user.name=ops", "-c", "user.email=ops@example", "commit", "-q", "-m", "tuned by hand")


def _garbage_history_index(a: Path) -> None:
    for name in os.listdir(a / ".git"):
        if name.startswith("wikimem-history.sqlite3"):
            os.unlink(a / ".git" / name)
    (a / ".git" / "wikimem-history.sqlite3").write_bytes(b"garbage" * 4096)


@pytest.mark.parametrize("breakage", [_garbage_ref, _lost_commit, _deep_settings, _garbage_history_index],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_broken_repository_is_a_clear_error_for_its_owner_and_repair_puts_it_right(tmp_path, breakage):
    data = tmp_path / "data"
    made = create_app({"TESTING": True, "DATA_ROOT": str(data), "ADMIN_TOKEN": ADMIN}).test_client()
    for owner in (A, B):
        made.put(f"/api/v1/owners/{owner}", headers=auth(ADMIN))
    made.put(f"/api/v1/owners/{A}/settings", headers=auth(ADMIN), json={"tz": "Asia/Shanghai"})
    made.put(f"/api/v1/owners/{A}/items/notes/one", headers=auth(ADMIN), json={"content": "alice's note"})
    made.put(f"/api/v1/owners/{B}/items/private/key", headers=auth(ADMIN), json={"content": BOB_SECRET})
    a = folder(data, A)
    breakage(a)
    client = create_app({"TESTING": True, "DATA_ROOT": str(data), "ADMIN_TOKEN": ADMIN}).test_client()  # a restart
    base = f"/api/v1/owners/{A}"
    answers = [client.put(base + "/items/notes/two", headers=auth(ADMIN), json={"content": "x"}),
               client.post(base + "/diary", headers=auth(ADMIN), json={"content": "today"}),
               client.get(base + "/history", headers=auth(ADMIN))]
    if breakage is _garbage_history_index:  # derived: rebuilt from git on the spot
        assert [r.status_code for r in answers] == [201, 201, 200]
    elif breakage is _deep_settings:  # only what needs the settings (the diary's calendar) is refused
        assert [r.status_code for r in answers] == [201, 500, 200] and damaged(answers[1])
        assert "wikimem repair" in answers[1].get_json()["error"]["message"]
    else:
        for r in answers:
            assert damaged(r), r.get_data()
            assert "repair" in r.get_json()["error"]["message"]
    others_keep_answering(client)
    done = repair(data, A)
    assert done.returncode == 0, done.stderr
    client = create_app({"TESTING": True, "DATA_ROOT": str(data), "ADMIN_TOKEN": ADMIN}).test_client()
    assert client.put(base + "/items/notes/three", headers=auth(ADMIN), json={"content": "y"}).status_code == 201
    entry = client.post(base + "/diary", headers=auth(ADMIN), json={"content": "after the repair"})
    assert entry.status_code == 201, entry.get_data()
    settings = client.get(base + "/settings", headers=auth(ADMIN)).get_json()
    assert settings["settings"]["tz"] == "Asia/Shanghai", settings  # the last readable settings are back
    assert client.get(base + "/history", headers=auth(ADMIN)).status_code == 200
    assert "alice's note" in json.dumps(client.get(base + "/items", headers=auth(ADMIN)).get_json())
    assert subprocess.run(["git", "-C", str(a), "fsck", "--strict"], capture_output=True).returncode == 0


@pytest.mark.slow
def test_a_fifo_blocks_no_thread_of_a_gunicorn_host(tmp_path):
    """24 requests for an owner with a FIFO named x.md (more than the host's 2 × 4 threads): each answers
    ``folder_damaged`` at once, while /healthz and another owner answer throughout."""
    from gunicorn_env import Gunicorn

    with Gunicorn(tmp_path, WIKIMEM_WORKERS="2", WIKIMEM_THREADS="4", WIKIMEM_TIMEOUT="120") as g:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        def call(method: str, path: str, body: dict | None = None, timeout: float = 20) -> tuple[int, dict]:
            data = json.dumps(body).encode() if body is not None else None
            req = urllib.request.Request(g.base + path, data=data, method=method,
                                         headers={"Authorization": f"Bearer {g.token}",
                                                  "Content-Type": "application/json"})
            try:
                with opener.open(req, timeout=timeout) as resp:
                    return resp.status, json.load(resp)
            except urllib.error.HTTPError as err:
                return err.code, json.load(err)

        for owner in (A, B):
            assert call("PUT", f"/api/v1/owners/{owner}")[0] == 201
            assert call("PUT", f"/api/v1/owners/{owner}/items/notes/one", {"content": "a note"})[0] == 201
        os.mkfifo(folder(g.data, A) / "wiki" / "x.md")
        requests = [("GET", f"/api/v1/owners/{A}/items", None), ("PUT", f"/api/v1/owners/{A}/items/notes/two",
                                                                   {"content": "x"}),
                    ("POST", f"/api/v1/owners/{A}/retrieve", {"query": "note"})] * 8
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=24) as pool:
            futures = [pool.submit(call, m, p, b) for m, p, b in requests]
            for _ in range(5):  # meanwhile, the rest of the host answers
                assert call("GET", "/healthz", timeout=5)[0] == 200
                status, body = call("GET", f"/api/v1/owners/{B}/items", timeout=5)
                assert status == 200 and body["items"][0]["content"] == "a note"
                assert call("PUT", f"/api/v1/owners/{B}/items/notes/more", {"content": "y"}, timeout=5)[0] in (200,
                                                                                                              201)
            answers = [f.result(timeout=30) for f in futures]
        assert time.monotonic() - started < 30
        for status, body in answers:
            assert status == 500 and body["error"]["code"] == "folder_damaged", body
            assert "x.md is a FIFO" in body["error"]["message"]
        assert "x.md is a FIFO" in g.output()  # logged


def test_a_linked_settings_file_is_never_read_and_repair_puts_the_branch_version_back(host):
    a = folder(host.data, A)
    base = f"/api/v1/owners/{A}"
    assert host.put(base + "/settings", headers=auth(ADMIN), json={"tz": "Asia/Shanghai"}).status_code == 200
    os.unlink(a / "settings.json")
    os.symlink("/etc/passwd", a / "settings.json")
    got = host.get(base + "/settings", headers=auth(ADMIN))
    assert got.status_code == 200 and got.get_json()["settings"]["tz"] == "Asia/Shanghai"  # from the branch
    r = host.put(base + "/settings", headers=auth(ADMIN), json={"character": "Elaina"})
    assert damaged(r) and "settings.json is a symbolic link" in r.get_json()["error"]["message"]
    done = repair(host.data, A)
    assert done.returncode == 0 and "settings.json (a symbolic link)" in done.stdout, done.stdout + done.stderr
    assert not (a / "settings.json").is_symlink()
    assert json.loads((a / "settings.json").read_text()) == {"tz": "Asia/Shanghai"}
    assert host.put(base + "/settings", headers=auth(ADMIN), json={"character": "Elaina"}).status_code == 200
    assert "root:x:0:0" not in git(a, "log", "-p") and git(a, "status", "--porcelain") == ""
