"""Catching a folder up from its remote: fast-forward, and replaying local commits on a moved remote.

Real repositories and a real ``file://`` remote (git's receive-pack); the
``git`` command line checks the result (``status`` clean, ``fsck``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wikimem.versioned import VersionedStore
from wikimem.versioned.replication import TRACKING, Remote
from wikimem.versioned.replication.catchup import Diverged, fast_forward, local_only, replay, switch_to


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def pair(tmp_path):
    """Two folders of one owner, A and B, both at the remote's first commit."""
    (tmp_path / "remotes").mkdir()
    remote = Remote(f"file://{tmp_path}/remotes/owner.git")
    remote.create()
    a = VersionedStore(tmp_path / "a")
    a.add("preferences", "sea", "likes the sea")
    a.diary_append("walked by the sea", date="2026-07-21", time="09:00")
    remote.push(a.root, a.head(), None)
    remote.clone(tmp_path / "b")
    b = VersionedStore(tmp_path / "b")
    yield remote, a, b
    a.close()
    b.close()


def reopen(vs: VersionedStore) -> VersionedStore:
    vs.close()
    return VersionedStore(vs.root)


def test_fast_forward_brings_files_index_and_branch_to_the_remote(pair):
    remote, a, b = pair
    start = a.head()
    a.add("preferences", "tea", "green tea")
    a.remove("preferences", "sea")
    a.diary_append("rain all day", date="2026-07-22", time="18:00")
    remote.push(a.root, a.head(), start)
    head = remote.fetch(b.root)
    paths = fast_forward(b.git, b.root, head.encode())
    assert set(paths) == {"wiki/preferences.md", "diary/2026-07-22.md"}
    assert b.head() == a.head() and git(b.root, "status", "--porcelain") == ""
    b = reopen(b)
    assert [i.name for i in b.store.items("preferences")] == ["tea"]
    assert b.external_changes() == []


def test_fast_forward_refuses_a_diverged_branch(pair):
    remote, a, b = pair
    start = a.head()
    a.add("preferences", "tea", "green tea")
    remote.push(a.root, a.head(), start)
    b.add("preferences", "coffee", "black coffee")
    with pytest.raises(Diverged):
        fast_forward(b.git, b.root, remote.fetch(b.root).encode())
    assert b.store.get("preferences", "coffee") is not None  # nothing was touched


def test_replay_keeps_both_sides_and_history_stays_linear(pair):
    remote, a, b = pair
    start = a.head()
    a.add("preferences", "tea", "green tea")
    a.add("preferences", "sea", "loves the sea (A)")
    a.diary_append("A: morning swim", date="2026-07-21", time="07:00")
    remote.push(a.root, a.head(), start)
    b.add("preferences", "coffee", "black coffee")
    b.add("preferences", "sea", "loves the sea (B)")
    b.diary_append("B: evening walk", date="2026-07-21", time="20:00")
    theirs = remote.fetch(b.root).encode()
    mine = local_only(b.git, b.git.head(), start.encode())
    assert len(mine) == 3
    tip = replay(b.git, mine, theirs)
    remote.push(b.root, tip.decode(), theirs.decode())
    switch_to(b.git, b.root, tip)
    assert git(b.root, "status", "--porcelain") == ""
    b = reopen(b)
    items = {i.name: i.content for i in b.store.items("preferences")}
    assert items == {"sea": "loves the sea (B)", "tea": "green tea", "coffee": "black coffee"}
    day = [e.content for e in b.diary.day("2026-07-21")]
    assert sorted(day) == sorted(["walked by the sea", "A: morning swim", "B: evening walk"])
    log = git(b.root, "log", "--format=%s", "main").splitlines()
    assert len(log) == 1 + 2 + 3 + 3  # init, A's first two, A's three, B's three replayed on top
    assert all(len(line.split()) <= 2 for line in git(b.root, "rev-list", "--parents", "main").splitlines())
    assert "loves the sea (A)" in git(b.root, "log", "-p", "main")  # A's version is in the history
    assert git(b.root, "rev-parse", TRACKING.decode()) == tip.decode()
    fsck = subprocess.run(["git", "-C", str(b.root), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr


def test_replay_of_changes_already_on_the_remote_is_empty(pair):
    """A folder whose files were written from the remote but whose branch did not move (a crash
    between the two) commits them as a hand edit; replaying that commit changes nothing."""
    remote, a, b = pair
    start = a.head()
    a.diary_append("A: morning swim", date="2026-07-21", time="07:00")
    a.add("preferences", "tea", "green tea")
    remote.push(a.root, a.head(), start)
    theirs = remote.fetch(b.root).encode()
    for path in ("diary/2026-07-21.md", "wiki/preferences.md"):
        (b.root / path).write_bytes((a.root / path).read_bytes())
    external = b.sync_external()
    assert external is not None
    assert replay(b.git, [external.encode()], theirs) == theirs
