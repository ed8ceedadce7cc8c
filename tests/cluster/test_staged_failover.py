"""Runs on probation in a cluster: a staged run written on one host is on the remote (its branch pushed with
compare-and-swap), a second host that takes the owner over after the first is gone gets it with the clone, reviews
and approves it there, and the first host, back, follows: the approval on main, the branch gone.

Two in-process hosts with their own data roots and one ``file://`` remote per owner (git's own receive-pack
when git is installed); the ``git`` command line checks what the remote holds.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wikimem.context import WriteContext
from wikimem.host import make_host
from wikimem.host.cluster.replication import Settings
from wikimem.host.owner_ids import encode_owner_id

OWNER = "user:ann"
RUN = "run_v7_failover"


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir" if folder.suffix == ".git" else "-C", str(folder), *args],
                          capture_output=True, text=True, check=True).stdout


@pytest.fixture
def remote(tmp_path):
    (tmp_path / "replicas").mkdir()
    return f"file://{tmp_path}/replicas/{{owner}}.git"


def test_a_staged_run_written_on_one_host_is_approved_on_the_other_after_failover(tmp_path, remote):
    bare = tmp_path / "replicas" / f"{encode_owner_id(OWNER)}.git"
    a = make_host(tmp_path / "a", replication=Settings(remote, freshness=0))
    owner = a.create_owner(OWNER)
    owner.add("preferences", "tea", "Drinks green tea.")
    head = owner.head()
    staged = owner.diary_append("Told the new prompt about the lighthouse.", date="2026-07-21", time="10:00",
                                ctx=WriteContext(run=RUN, actor="memorize-v7", staged=True))
    # Acknowledged once on the remote: the branch there, main untouched.
    assert git(bare, "rev-parse", f"refs/heads/staged/{RUN}").strip() == staged.commit
    assert git(bare, "rev-parse", "main").strip() == head
    # Host a is gone; host b, a fresh data root, takes the owner over from the remote alone.
    b = make_host(tmp_path / "b", replication=Settings(remote, freshness=0))
    taken = b.owner(OWNER)
    assert taken.head() == head
    assert [r.run for r in taken.staged_runs()] == [RUN]
    listing = b.probation.runs()
    assert [(r["run"], r["owners"]) for r in listing["runs"]] == [(RUN, 1)]
    review = taken.staged_review(RUN)
    assert [c.after for c in review.changes] == ["Told the new prompt about the lighthouse."]
    assert [h.item.content for h in taken.retrieve("lighthouse", diary="all", include_staged=True).items] == [
        "Told the new prompt about the lighthouse."]
    done = taken.approve_staged(RUN, ctx=WriteContext(actor="bob"))
    assert done.commit and git(bare, "rev-parse", "main").strip() == done.commit
    assert git(bare, "for-each-ref", "refs/heads/staged/") == ""
    assert "Wikimem-Approved-By: bob" in git(bare, "log", "-1", "--format=%B", "main")
    assert [r["state"] for r in b.probation.owners_of(RUN)] == ["approved"]
    # Host a comes back: it follows the remote (the approval on main, the branch gone) and lists nothing staged.
    back = a.owner(OWNER)
    assert back.head() == done.commit
    assert back.staged_runs() == []
    assert [e.content for e in back.diary_day("2026-07-21")] == ["Told the new prompt about the lighthouse."]
    assert a.probation.runs()["runs"] == []
    assert [r["state"] for r in a.probation.owners_of(RUN)] == ["approved"]
    assert git(bare, "fsck").strip() == "" or "dangling" in git(bare, "fsck")
    for host in (a, b):
        assert git(host.owner_path(OWNER), "status", "--porcelain") == ""


def test_a_staged_write_racing_another_hosts_on_the_same_run_keeps_both(tmp_path, remote):
    a = make_host(tmp_path / "a", replication=Settings(remote, freshness=0))
    a.create_owner(OWNER).add("preferences", "tea", "Drinks green tea.")
    b = make_host(tmp_path / "b", replication=Settings(remote, freshness=0))
    b.owner(OWNER)
    ctx = WriteContext(run=RUN, actor="memorize-v7", staged=True)
    a.owner(OWNER).add("people", "mia", "A friend who surfs.", ctx=ctx)
    b.owner(OWNER).add("people", "lu", "A neighbour.", ctx=ctx)  # b's branch was behind: fetched, then written on
    a.owner(OWNER).add("people", "kai", "A cousin.", ctx=ctx)
    names = {c.name for c in a.owner(OWNER).staged_review(RUN).staged}
    assert names == {"mia", "lu", "kai"}
    bare = tmp_path / "replicas" / f"{encode_owner_id(OWNER)}.git"
    assert git(bare, "rev-list", "--count", f"main..refs/heads/staged/{RUN}").strip() == "3"


def test_staged_branches_push_fetch_and_go_over_every_kind_of_remote(remote_kind, tmp_path):
    """file://, smart HTTP (nginx + git http-backend) and git daemon: a staged branch is pushed with CAS, a clone
    brings it, approving removes it on the remote, and a fetch removes it where it was cloned."""
    from wikimem.versioned import Replica, Staging, VersionedStore
    from wikimem.versioned.replication import Remote

    url, bare = remote_kind.new()
    remote = Remote(url)
    remote.create()
    a = VersionedStore(tmp_path / "a", auto_pack=False)
    a.replica = Replica(remote)
    a.add("preferences", "tea", "Drinks green tea.")
    staging = Staging(a)
    done = staging.branch(RUN).add("people", "mia", "A friend who surfs.", ctx=WriteContext(run=RUN, actor="v7"))
    assert git(bare, "rev-parse", f"refs/heads/staged/{RUN}").strip() == done.commit
    Remote(url).clone(tmp_path / "b")
    b = VersionedStore(tmp_path / "b", auto_pack=False)
    b.replica = Replica(Remote(url))
    assert Staging(b).tips() == {RUN: done.commit}
    approved = staging.approve(RUN, ctx=WriteContext(actor="alice"))
    assert git(bare, "rev-parse", "main").strip() == approved.commit
    assert git(bare, "for-each-ref", "refs/heads/staged/") == ""
    b.replica.fetch(b.git)
    assert Staging(b).tips() == {}
    b.catch_up(fetch=False)
    assert b.store.get("people", "mia").content == "A friend who surfs."
    a.close()
    b.close()


def test_a_hostile_staged_branch_on_the_remote_is_refused_and_main_still_follows(tmp_path, remote):
    """The remote is untrusted for staged branches too: a branch whose commit holds a symbolic link never reaches a
    ref here, while main's new commits are fetched as usual."""
    from dulwich.repo import Repo
    from hostile import push_hostile

    a = make_host(tmp_path / "a", replication=Settings(remote, freshness=0))
    a.create_owner(OWNER).add("preferences", "tea", "Drinks green tea.")
    bare = tmp_path / "replicas" / f"{encode_owner_id(OWNER)}.git"
    b = make_host(tmp_path / "b", replication=Settings(remote, freshness=0))
    b.owner(OWNER)
    good_main = git(bare, "rev-parse", "main").strip()
    bad = push_hostile(bare, "symlink", "/etc/passwd")  # moves the remote's main: put it on a staged branch instead
    repo = Repo(str(bare))
    try:
        repo.refs[b"refs/heads/staged/run_evil"] = bad.encode()
        repo.refs[b"refs/heads/main"] = good_main.encode()
    finally:
        repo.close()
    a.owner(OWNER).add("preferences", "coffee", "Never drinks coffee.")
    taken = b.owner(OWNER)
    assert taken.item("preferences", "coffee").content == "Never drinks coffee."
    assert taken.staged_runs() == []
    assert "run_evil" not in git(taken.root, "for-each-ref")
    # main's new objects moved in from the quarantine; the refused branch's never did
    import subprocess

    assert subprocess.run(["git", "-C", str(taken.root), "cat-file", "-e", bad], capture_output=True).returncode != 0
    assert subprocess.run(["git", "-C", str(taken.root), "fsck", "--strict"], capture_output=True).returncode == 0
