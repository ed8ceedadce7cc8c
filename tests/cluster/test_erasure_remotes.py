"""Erasure and forgetting against each transport: file://, smart HTTP (nginx + git http-backend), git://.

Hosts share the remote and, as a cluster should, one PostgreSQL database
(the run index, the jobs, the erasure register). One erases (or forgets);
another, which holds a copy, finds out on its next look — from the
tombstone on the remote, or, where the repository is gone, from the shared
register — and a third, which nobody asks, drops its copy in its
housekeeping sweep. Where the transport can delete (file://) the
repository goes; where it cannot (http, git://) its ``main`` is replaced by
the erasure tombstone — no text, no id — and the receipt says what the git
server must still do.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from engines import bare_repo
from traces import traces

from wikimem.errors import NotFound
from wikimem.host import build_host, encode_owner_id, load_config

OWNER = "user:far-away"
SECRET = "FARSECRET-told-only-once"


def _template(kind: str, tmp_path, request) -> tuple[str, object]:
    if kind == "file":
        (tmp_path / "remote").mkdir()
        return f"file://{tmp_path}/remote/{{owner}}.git", lambda: tmp_path / "remote" / f"{encode_owner_id(OWNER)}.git"
    server = request.getfixturevalue("git_http" if kind == "http" else "git_daemon")
    if kind == "git":  # git daemon cannot create a repository: prepared as an operator would
        bare_repo(server.repo(encode_owner_id(OWNER)))
    return server.template(), lambda: server.repo(encode_owner_id(OWNER))


_STARTED: list = []


@pytest.fixture(autouse=True)
def _stop_runners():
    """The hosts' job runners poll the test's database: stopped before it goes."""
    yield
    while _STARTED:
        host = _STARTED.pop()
        if host.jobs_started:
            host.start_jobs().stop()


def _hosts(tmp_path, template: str, database: str, names: str = "ab"):
    hosts = [build_host(load_config({"DATA_ROOT": str(tmp_path / n), "REMOTE": template, "REMOTE_FRESHNESS": 0.0,
                                     "DATABASE_URL": database, "SELF": f"http://127.0.0.1:{9000 + i}"}))
             for i, n in enumerate(names)]
    _STARTED.extend(hosts)
    return hosts


def _done(host, job, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while host.jobs.get(job.id).state not in ("done", "failed") and time.monotonic() < deadline:
        time.sleep(0.05)
    return host.jobs.get(job.id)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["file", "http", "git"])
def test_erasing_with_each_transport_and_the_other_hosts_drop_their_copies(kind, tmp_path, request, database_url):
    template, bare = _template(kind, tmp_path, request)
    a, b, c = _hosts(tmp_path, template, database_url, "abc")
    a.create_owner(OWNER).add("prefs", "secret", SECRET)
    for other in (b, c):
        assert other.owner(OWNER).item("prefs", "secret").content == SECRET  # b and c hold copies
    job = _done(a, a.erase_owner(OWNER)[0])
    assert job.state == "done", job.results
    receipt = job.results[0]["result"]
    remote = next(p for p in receipt["places"] if p["place"] == "remote")
    if kind == "file":
        assert remote["state"] == "deleted" and receipt["remains"] == [] and not bare().exists()
    else:
        assert remote["state"].startswith("emptied") and "delete the owner's repository" in receipt["remains"][0]
        log = subprocess.run(["git", "--git-dir", str(bare()), "log", "-p", "--all"], capture_output=True,
                             text=True, check=True).stdout
        assert SECRET not in log and OWNER not in log and "erased" in log
    with pytest.raises(NotFound):
        b.owner(OWNER)  # the tombstone (or the missing repository and the register) says erased: b's copy goes
    assert c.erasure.sweep() == [OWNER]  # c's housekeeping: a copy nobody asks for goes too
    for name in "abc":
        assert traces([tmp_path / name], [SECRET, OWNER, encode_owner_id(OWNER)]) == [], name
    fresh = a.create_owner(OWNER)  # the id may be used again: a new, empty owner
    assert fresh.items() == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["file", "http", "git"])
def test_forgetting_with_each_transport_replaces_the_remote_history(kind, tmp_path, request, database_url):
    template, bare = _template(kind, tmp_path, request)
    a, b = _hosts(tmp_path, template, database_url)
    owner = a.create_owner(OWNER)
    owner.add("prefs", "secret", SECRET)
    owner.add("prefs", "sea", "likes the sea")
    b.owner(OWNER)
    job = _done(a, a.forget(OWNER, {"file": "prefs", "name": "secret"})[0])
    assert job.state == "done", job.results
    receipt = job.results[0]["result"]
    objects = next(p for p in receipt["places"] if p["place"] == "remote objects")
    log = subprocess.run(["git", "--git-dir", str(bare()), "log", "-p", "--all"], capture_output=True, text=True,
                         check=True).stdout
    assert SECRET not in log and "likes the sea" in log
    if kind == "file":
        assert objects["state"].startswith("pruned") and traces([bare()], [SECRET]) == []
    else:
        assert "git gc --prune=now" in objects["remains"]  # the server's old objects: its operator's step
    seen = b.owner(OWNER)
    assert [i.name for i in seen.items()] == ["sea"]
    assert traces([tmp_path / "b"], [SECRET]) == []


@pytest.mark.slow
def test_without_a_shared_database_a_peer_drops_its_copy_at_its_next_lookup(tmp_path):
    """Each host its own SQLite (no register in common): the erasure deletes the file:// repository and leaves a
    marker named by a keyed digest; the other host answers 404 at its next look and keeps no object of it."""
    (tmp_path / "remote").mkdir()
    template = f"file://{tmp_path}/remote/{{owner}}.git"
    a, b = [build_host(load_config({"DATA_ROOT": str(tmp_path / n), "REMOTE": template, "REMOTE_FRESHNESS": 0.0,
                                    "SECRET_KEY": "the-same-secret-on-every-host-0123456789"}))
            for n in "ab"]
    _STARTED.extend([a, b])
    a.create_owner(OWNER).add("prefs", "secret", SECRET)
    assert b.owner(OWNER).item("prefs", "secret").content == SECRET  # b holds a copy
    job = _done(a, a.erase_owner(OWNER)[0])
    assert job.state == "done", job.results
    remote = next(p for p in job.results[0]["result"]["places"] if p["place"] == "remote")
    assert remote["state"] == "deleted" and remote["marker"].startswith("left")
    assert not (tmp_path / "remote" / f"{encode_owner_id(OWNER)}.git").exists()
    assert [p.name for p in (tmp_path / "remote").iterdir()][0].startswith("_erased-")  # the marker: no id
    assert traces([tmp_path / "remote"], [SECRET, OWNER, encode_owner_id(OWNER)]) == []
    with pytest.raises(NotFound):
        b.owner(OWNER)  # the API answers 404 for it
    assert not (tmp_path / "b" / "owners" / encode_owner_id(OWNER)).exists()
    assert traces([tmp_path / "b"], [SECRET, OWNER, encode_owner_id(OWNER)]) == []
    assert b.create_owner(OWNER).items() == []  # the id may be used again: the marker does not take the new copy
    assert b.owner(OWNER).items() == []
