"""The git remote is untrusted input: hostile commits pushed there are refused, never applied.

An attacker with nothing but push rights on the replication server (and a
token limited to their own owner, ``user:mallory``) plants commits git's
porcelain would refuse — a symbolic link to another owner's file, a linked
``diary/``, a submodule, names with ``..``, ``/`` or ``.git``, a chain of
trees named ``..``, a NUL in a name — on top of their own owner's ``main``.
A host then clones the owner (failover) or fast-forwards to it (the next
read). Each is refused with a clear error and reported
(``/api/v1/replication``, ``wikimem cluster verify``); the owner folder keeps
its last good state; nothing outside it changes (the data root and its parent
are compared file by file); the victim's memory never reaches mallory through
items, retrieve, diary or export.

Real hosts (the Flask app with ``WIKIMEM_REMOTE``), a real ``file://`` remote
served by git's upload-pack, hostile objects written with dulwich.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from apiworld import ADMIN, auth
from hostile import CASES, MAIN_CASES, push_hostile

from webapp import create_app
from wikimem.host import encode_owner_id
from wikimem.host.access.tokens import append_token, mint_token

REPO = Path(__file__).resolve().parents[2]
MALLORY, VICTIM = "user:mallory", "user:victim"
SECRET = "the victim's bank PIN is 4711"
M = f"/api/v1/owners/{MALLORY}"


def snapshot(top: Path) -> dict[str, tuple]:
    """Every entry under ``top`` (links and FIFOs as themselves): its kind and content hash / link target."""
    out: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(folder) / name
            st = os.lstat(path)
            rel = str(path.relative_to(top))
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            elif path.is_file() and not path.is_symlink():
                out[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), st.st_size)
            elif path.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("other", st.st_mode)
    return out


def changed(before: dict, after: dict) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


class Cluster:
    """Host ``a`` (where mallory and the victim were made), hosts made later, one file:// remote per owner."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.remotes = tmp / "remotes"
        self.remotes.mkdir()
        self.tokens = tmp / "tokens.jsonl"
        secret, entry = mint_token("mallory", ["read", "write"], MALLORY)
        append_token(self.tokens, entry)
        self.mallory = secret
        (tmp / "outside.jsonl").write_text("")  # what a linked journal would point at
        self.a = self.host("a")
        for owner in (VICTIM, MALLORY):
            assert self.a.put(f"/api/v1/owners/{owner}", headers=auth(ADMIN)).status_code == 201
        v = f"/api/v1/owners/{VICTIM}"
        assert self.a.put(v + "/items/private/pin", headers=auth(ADMIN), json={"content": SECRET}).status_code == 201
        assert self.a.post(v + "/diary", headers=auth(ADMIN), json={"content": SECRET, "date": "2026-07-21",
                                                                    "time": "09:00"}).status_code == 201
        assert self.a.put(M + "/items/notes/hello", headers=auth(self.mallory),
                          json={"content": "mallory's own note"}).status_code == 201

    def host(self, name: str):
        app = create_app({"TESTING": True, "DATA_ROOT": str(self.tmp / name / "data"), "ADMIN_TOKEN": ADMIN,
                          "TOKENS_FILE": str(self.tokens), "REMOTE": f"file://{self.remotes}/{{owner}}.git",
                          "REMOTE_FRESHNESS": 0})
        client = app.test_client()
        client.data_root = self.tmp / name / "data"
        assert client.get("/api/v1/replication", headers=auth(ADMIN)).status_code == 200  # the host is made
        return client

    def bare(self, owner: str) -> Path:
        return self.remotes / f"{encode_owner_id(owner)}.git"

    def plant(self, case: str) -> str:
        return push_hostile(self.bare(MALLORY), case, encode_owner_id(VICTIM))


@pytest.fixture
def cluster(tmp_path) -> Cluster:
    return Cluster(tmp_path)


def reads(client, token: str) -> list:
    """Every read route of mallory's owner, and of the victim's (which mallory's token may not reach)."""
    out = []
    for owner in (MALLORY, VICTIM):
        base = f"/api/v1/owners/{owner}"
        out.append(client.get(base + "/items", headers=auth(token)))
        out.append(client.get(base + "/items?file=private", headers=auth(token)))
        out.append(client.get(base + "/items/private/pin", headers=auth(token)))
        out.append(client.get(base + "/files", headers=auth(token)))
        out.append(client.post(base + "/retrieve", headers=auth(token), json={"query": "bank PIN", "diary": "all"}))
        out.append(client.get(base + "/diary/2026-07-21", headers=auth(token)))
        out.append(client.get(base + "/diary?start=2026-07-01&end=2026-07-31", headers=auth(token)))
        out.append(client.get(base + "/export?format=tar", headers=auth(token)))
    return out


def assert_no_leak(responses) -> None:
    for r in responses:
        assert SECRET.encode() not in r.get_data(), (r.status_code, r.get_data()[:300])
        assert r.status_code != 500 or r.get_json()["error"]["code"] != "internal"


def outside_changes(cluster: Cluster, host, before: dict) -> set[str]:
    """What changed under the test's folder (the data roots and their parent) but git's own files of
    mallory's copy (objects fetched, the history index), the host's derived indexes, the refusal record and
    the shared auth state (API rate counters, a token's last use)."""
    data = str(host.data_root.relative_to(cluster.tmp))
    mine = f"{data}/owners/{encode_owner_id(MALLORY)}"
    # (a refused write takes the owner's lock, and its journal line is cut back: an empty journal may remain)
    allowed = (f"{data}/replication", f"{data}/index", f"{data}/staging", f"{data}/jobs.sqlite3", f"{data}/auth",
               f"{mine}/.git", f"{mine}/.wikimem.lock")
    journal = cluster.tmp / mine / "journal.jsonl"
    if journal.is_file() and not journal.is_symlink() and journal.stat().st_size == 0:
        allowed += (f"{mine}/journal.jsonl",)
    moved = {m for m in changed(before, snapshot(cluster.tmp)) if not m.startswith(allowed)}
    links = {str(p) for p in cluster.tmp.rglob("*") if p.is_symlink()}
    return moved | links


def refusal(client, owner: str = MALLORY) -> dict:
    status = client.get("/api/v1/replication", headers=auth(ADMIN)).get_json()
    return status["refused"].get(owner)


@pytest.mark.parametrize("case", MAIN_CASES + ["symlinked_journal", "other_top_name", "bad_settings"])
def test_a_hostile_commit_is_refused_on_clone(cluster, case):
    planted = cluster.plant(case)
    b = cluster.host("b")  # failover: b never held mallory
    before = snapshot(cluster.tmp)
    r = b.get(M + "/items", headers=auth(cluster.mallory))
    assert r.status_code == 502 and r.get_json()["error"]["code"] == "remote_refused", r.get_data()
    assert not (b.data_root / "owners" / encode_owner_id(MALLORY)).exists()
    assert_no_leak(reads(b, cluster.mallory))
    found = refusal(b)
    assert found is not None and "refused" in found["reason"] and found["commit"] == planted
    assert outside_changes(cluster, b, before) == set()
    assert list((b.data_root / "staging").iterdir()) == []  # the refused clone left nothing behind


@pytest.mark.parametrize("case", MAIN_CASES + ["symlinked_journal", "other_top_name", "not_a_memory_name",
                                               "bad_settings"])
def test_a_hostile_commit_is_refused_on_fast_forward(cluster, case):
    b = cluster.host("b")
    first = b.get(M + "/items", headers=auth(cluster.mallory))
    assert first.status_code == 200  # cloned while the remote was honest
    folder = b.data_root / "owners" / encode_owner_id(MALLORY)
    good = subprocess.run(["git", "-C", str(folder), "rev-parse", "main"], capture_output=True, text=True).stdout
    planted = cluster.plant(case)
    before = snapshot(cluster.tmp)
    again = b.get(M + "/items", headers=auth(cluster.mallory))  # the read's staleness check fetches: refused
    assert again.status_code == 200 and again.get_json() == first.get_json()  # served from the last good state
    write = b.put(M + "/items/notes/more", headers=auth(cluster.mallory), json={"content": "x"})
    assert write.status_code == 502 and write.get_json()["error"]["code"] == "remote_refused", write.get_data()
    assert_no_leak(reads(b, cluster.mallory))
    assert subprocess.run(["git", "-C", str(folder), "rev-parse", "main"], capture_output=True,
                          text=True).stdout == good
    found = refusal(b)
    assert found is not None and found["commit"] == planted
    assert outside_changes(cluster, b, before) == set()
    # the refused objects never reached the object store (they waited in a quarantine, dropped with it)
    fsck = subprocess.run(["git", "-C", str(folder), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert subprocess.run(["git", "-C", str(folder), "cat-file", "-e", planted], capture_output=True).returncode != 0
    # `wikimem cluster verify` says so too, and names the refused commit
    env = {**os.environ, "PYTHONPATH": str(REPO), "WIKIMEM_DATA": str(b.data_root),
           "WIKIMEM_REMOTE": f"file://{cluster.remotes}/{{owner}}.git"}
    done = subprocess.run([sys.executable, "-m", "wikimem", "cluster", "--json", "verify", "--owner", MALLORY],
                          capture_output=True, text=True, env=env)
    checks = json.loads(done.stdout)
    assert done.returncode == 1 and checks[0]["state"] == "refused", done.stdout + done.stderr
    assert "refused" in checks[0]["detail"]


def test_an_honest_fetch_after_a_refusal_clears_the_report(cluster):
    b = cluster.host("b")
    assert b.get(M + "/items", headers=auth(cluster.mallory)).status_code == 200
    bare = cluster.bare(MALLORY)
    good = subprocess.run(["git", "-C", str(bare), "rev-parse", "main"], capture_output=True, text=True).stdout.strip()
    cluster.plant("symlink")
    b.get(M + "/items", headers=auth(cluster.mallory))
    assert refusal(b) is not None
    subprocess.run(["git", "-C", str(bare), "update-ref", "refs/heads/main", good], check=True)  # the operator
    assert cluster.a.put(M + "/items/notes/after", headers=auth(cluster.mallory),
                         json={"content": "honest again"}).status_code == 201
    got = b.get(M + "/items?file=notes", headers=auth(cluster.mallory)).get_json()
    assert [i["name"] for i in got["items"]] == ["hello", "after"]
    assert refusal(b) is None


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_incoming_refuses_each_case_in_a_local_object_store(tmp_path, case):
    """Objects that reach the store by any transport (dulwich's in-process one too) meet the same checks."""
    from wikimem.errors import RemoteRefused
    from wikimem.versioned import VersionedStore
    from wikimem.versioned.replication.incoming import check_incoming

    vs = VersionedStore(tmp_path / "mem")
    vs.add("notes", "a", "x")
    good = vs.head()
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare.git")], check=True)
    subprocess.run(["git", "-C", str(vs.root), "push", "-q", str(tmp_path / "bare.git"), "main"], check=True)
    planted = push_hostile(tmp_path / "bare.git", case, "victim")
    store = vs.git.repo.object_store
    from dulwich.repo import Repo

    bare = Repo(str(tmp_path / "bare.git"))
    for sha in _all_objects(tmp_path / "bare.git"):
        store.add_object(bare.object_store[sha]) if case != "nul_name" else _copy_loose(tmp_path, vs.root, sha)
    bare.close()
    with pytest.raises(RemoteRefused) as caught:
        check_incoming(store, planted.encode(), [good.encode()])
    assert caught.value.commit == planted
    assert vs.head() == good
    vs.close()


def _all_objects(bare: Path) -> list[bytes]:
    out = subprocess.run(["git", "-C", str(bare), "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
                         capture_output=True, text=True, check=True).stdout.split()
    return [o.encode() for o in out]


def _copy_loose(tmp: Path, root: Path, sha: bytes) -> None:
    src = tmp / "bare.git" / "objects" / sha[:2].decode() / sha[2:].decode()
    if src.exists():
        dst = root / ".git" / "objects" / sha[:2].decode() / sha[2:].decode()
        dst.parent.mkdir(exist_ok=True)
        if not dst.exists():
            dst.write_bytes(src.read_bytes())
