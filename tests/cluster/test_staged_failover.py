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
from wikimem.host import Host
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
    a = Host(tmp_path / "a", replication=Settings(remote, freshness=0))
    owner = a.create_owner(OWNER)
    owner.add("preferences", "tea", "Drinks green tea.")
    head = owner.head()
    staged = owner.diary_append("Told the new prompt about the lighthouse.", date="2026-07-21", time="10:00",
                                ctx=WriteContext(run=RUN, actor="memorize-v7", staged=True))
    # Acknowledged once on the remote: the branch there, main untouched.
    assert git(bare, "rev-parse", f"refs/heads/staged/{RUN}").strip() == staged.commit
    assert git(bare, "rev-parse", "main").strip() == head
    # Host a is gone; host b, a fresh data root, takes the owner over from the remote alone.
    b = Host(tmp_path / "b", replication=Settings(remote, freshness=0))
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
    a = Host(tmp_path / "a", replication=Settings(remote, freshness=0))
    a.create_owner(OWNER).add("preferences", "tea", "Drinks green tea.")
    b = Host(tmp_path / "b", replication=Settings(remote, freshness=0))
    b.owner(OWNER)
    ctx = WriteContext(run=RUN, actor="memorize-v7", staged=True)
    a.owner(OWNER).add("people", "mia", "A friend who surfs.", ctx=ctx)
    b.owner(OWNER).add("people", "lu", "A neighbour.", ctx=ctx)  # b's branch was behind: fetched, then written on
    a.owner(OWNER).add("people", "kai", "A cousin.", ctx=ctx)
    names = {c.name for c in a.owner(OWNER).staged_review(RUN).staged}
    assert names == {"mia", "lu", "kai"}
    bare = tmp_path / "replicas" / f"{encode_owner_id(OWNER)}.git"
    assert git(bare, "rev-list", "--count", f"main..refs/heads/staged/{RUN}").strip() == "3"
