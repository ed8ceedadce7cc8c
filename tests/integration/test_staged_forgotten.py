"""Runs on probation meet forgetting and erasure: a staged branch holds memory too.

A forget rewrites every ref, and with a remote it must replace the staged
branches there as well; an erasure must delete them from the remote and drop
the owner's rows from the staged-run index. Searched with :mod:`traces` (every
byte, git objects decompressed) on the data root and the file:// remote.
"""

from __future__ import annotations

import time

import pytest
from traces import traces

from wikimem.context import WriteContext
from wikimem.host import load_config
from wikimem.host.config import build_host

OWNER = "user:ann"
SECRET = "Her locker code is 4471-ZEBRA."
V7 = WriteContext(run="run_v7_1", actor="memorize-v7")


def _finish(host, job) -> dict:
    deadline = time.monotonic() + 60
    while host.jobs.get(job.id).state not in ("done", "failed") and time.monotonic() < deadline:
        time.sleep(0.05)
    done = host.jobs.get(job.id)
    assert done.state == "done", done.results
    return done.results[0]["result"]


@pytest.fixture
def world(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    host = build_host(load_config({"DATA_ROOT": str(tmp_path / "data"), "REMOTE": f"file://{remote}/{{owner}}.git",
                                   "REMOTE_FRESHNESS": 0.0, "STAGED_ACTORS": "memorize-v7"}))
    owner = host.create_owner(OWNER)
    owner.add("prefs", "locker", SECRET)  # approved memory first …
    owner.add("prefs", "sea", "Likes the sea.")
    owner.add("prefs", "locker", SECRET + " (again)", ctx=V7)  # … then a staged run naming it too
    owner.add("prefs", "tea", "Drinks green tea.", ctx=V7)
    bare = remote / f"{owner.root.name}.git"
    assert "refs/heads/staged/run_v7_1" in {line.split()[-1] for line in _refs(bare)}  # the run was pushed
    yield host, owner, tmp_path
    host.start_jobs().stop()


def _refs(bare) -> list[str]:
    from dulwich.repo import Repo

    repo = Repo(str(bare))
    try:
        return [f"{sha.decode()} {name.decode()}" for name, sha in repo.get_refs().items()]
    finally:
        repo.close()


def test_forgetting_an_item_rewrites_the_staged_branch_here_and_on_the_remote(world):
    host, owner, tmp = world
    job, _ = host.forget(OWNER, {"file": "prefs", "name": "locker"})
    _finish(host, job)
    assert traces([tmp / "data", tmp / "remote"], [SECRET]) == []
    seen = host.owner(OWNER)
    runs = {r.run: r for r in seen.staging.runs()}
    assert "run_v7_1" in runs  # the run survives, without the forgotten item
    staged = seen.retrieve("green tea", include_staged=True)
    assert any(hit.item.content == "Drinks green tea." and hit.staged for hit in staged.items)
    local = {line.split()[1]: line.split()[0] for line in _refs(seen.root)}
    remote = {line.split()[1]: line.split()[0] for line in _refs(tmp / "remote" / f"{seen.root.name}.git")}
    assert remote["refs/heads/staged/run_v7_1"] == local["refs/heads/staged/run_v7_1"]
    assert remote["refs/heads/main"] == local["refs/heads/main"]
    seen.add("prefs", "coffee", "A staged write after the forget.", ctx=V7)  # the branch still pushes
    assert ({line.split()[1]: line.split()[0] for line in _refs(tmp / "remote" / f"{seen.root.name}.git")}
            ["refs/heads/staged/run_v7_1"] == seen.staging.runs()[0].tip)


def test_erasing_an_owner_deletes_its_staged_branches_on_the_remote_and_its_staged_rows(world):
    host, owner, tmp = world
    folder = owner.root.name
    assert host.probation.index.rows(run="run_v7_1")  # indexed while staged
    job, _ = host.erase_owner(OWNER)
    receipt = _finish(host, job)
    places = {p["place"]: p for p in receipt["places"]}
    assert places["staged-run index"]["state"] == "rows removed"
    assert host.probation.index.rows(run="run_v7_1") == []
    bare = tmp / "remote" / f"{folder}.git"
    assert not bare.exists() or not [r for r in _refs(bare) if "staged" in r]
    assert traces([tmp / "data", tmp / "remote"], [SECRET, OWNER, "Drinks green tea."]) == []
