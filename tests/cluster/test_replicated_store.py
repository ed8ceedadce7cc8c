"""A versioned store that replicates to a git remote (sync and async), against a real file:// remote.

git's receive-pack serves the remote; the ``git`` command line witnesses
what the remote holds. Crashes are real: a child process killed at the
worst moment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from wikimem.context import WriteContext
from wikimem.errors import WikimemError
from wikimem.versioned import VersionedStore
from wikimem.versioned.intent import IntentLog
from wikimem.versioned.replication import TRACKING, Remote, RemoteMoved, RemoteUnavailable
from wikimem.versioned.replication.replica import Replica, ReplicationLagging

REPO = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def linear(bare: Path) -> bool:
    return all(len(line.split()) <= 2 for line in git(bare, "rev-list", "--parents", "main").splitlines())


@pytest.fixture
def world(tmp_path):
    """A remote folder (``replicas/``), and ``open(name, mode)`` for replicating stores of one owner."""
    (tmp_path / "replicas").mkdir()
    url = f"file://{tmp_path}/replicas/owner.git"
    opened: list[VersionedStore] = []

    def open_store(name: str, mode: str = "sync", max_lag: int = 1000) -> VersionedStore:
        root = tmp_path / name
        if not root.exists():
            try:
                Remote(url).clone(root)
            except WikimemError:
                pass
        vs = VersionedStore(root)
        vs.replica = Replica(Remote(url), mode, max_lag=max_lag)
        opened.append(vs)
        return vs

    open_store.bare = tmp_path / "replicas" / "owner.git"
    open_store.url = url
    yield open_store
    for vs in opened:
        vs.close()


def test_sync_a_write_returns_once_its_commit_is_on_the_remote(world):
    a = world("a")
    for i in range(3):
        done = a.add("notes", f"n{i}", f"note {i}")
        assert git(world.bare, "rev-parse", "main") == done.commit == a.head()
    assert git(a.root, "rev-parse", TRACKING.decode()) == a.head()
    assert git(world.bare, "rev-list", "--count", "main") == git(a.root, "rev-list", "--count", "main")
    assert a.replication_lag() == 0


def test_sync_a_remote_that_moved_refuses_the_write_then_the_next_one_lands_on_top(world):
    a = world("a")
    a.add("prefs", "sea", "likes the sea")
    b = world("b")  # a clone: another host holding the same owner
    b.add("prefs", "tea", "green tea")
    before = (a.root / "wiki" / "prefs.md").read_bytes()
    journal = (a.root / "journal.jsonl").read_bytes()
    with pytest.raises(RemoteMoved):
        a.add("prefs", "coffee", "black coffee")
    assert (a.root / "wiki" / "prefs.md").read_bytes() == before  # the write was rolled back...
    assert (a.root / "journal.jsonl").read_bytes() == journal
    assert git(world.bare, "rev-parse", "main") == b.head()  # ...and nothing overwritten
    done = a.add("prefs", "coffee", "black coffee")  # caught up on the lock, applied on b's commit
    names = [i.name for i in a.store.items("prefs")]
    assert sorted(names) == ["coffee", "sea", "tea"]
    assert git(world.bare, "rev-parse", "main") == done.commit
    assert linear(world.bare)


def test_sync_remote_down_refuses_writes_keeps_reads_and_recovers(world, tmp_path):
    a = world("a")
    a.add("prefs", "sea", "likes the sea")
    head = a.head()
    os.rename(tmp_path / "replicas", tmp_path / "unmounted")
    with pytest.raises(RemoteUnavailable) as info:
        a.add("prefs", "tea", "green tea")
    assert info.value.retry_after > 0
    assert a.head() == head and a.store.get("prefs", "tea") is None  # nothing acknowledged, nothing kept
    assert a.store.get("prefs", "sea").content == "likes the sea"  # reads go on
    os.rename(tmp_path / "unmounted", tmp_path / "replicas")
    done = a.add("prefs", "tea", "green tea")
    assert git(world.bare, "rev-parse", "main") == done.commit


def test_a_vanished_remote_repository_is_never_silently_seeded_again(world, tmp_path):
    a = world("a")
    a.add("prefs", "sea", "likes the sea")
    os.rename(world.bare, tmp_path / "replicas" / "moved-away.git")
    with pytest.raises(WikimemError):
        a.add("prefs", "tea", "green tea")
    assert not world.bare.exists()


_KILLED_AFTER_PUSH = textwrap.dedent("""
    import os, sys
    from wikimem.context import WriteContext
    from wikimem.versioned import VersionedStore
    from wikimem.versioned.replication import Remote
    from wikimem.versioned.replication.replica import Replica
    vs = VersionedStore(sys.argv[1])
    vs.replica = Replica(Remote(sys.argv[2]), "sync")
    real_move = vs.git.move_ref
    vs.git.move_ref = lambda old, new, **kw: os._exit(9)   # the machine dies right after the push
    vs.diary_append("the killed write", date="2026-07-21", time="10:00", ctx=WriteContext(idempotency_key="key-1"))
""")


def test_a_host_killed_between_push_and_branch_move_keeps_the_write_once(world):
    a = world("a")
    a.add("prefs", "sea", "likes the sea")
    a.close()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.run([sys.executable, "-c", _KILLED_AFTER_PUSH, str(a.root), world.url], env=env)
    assert child.returncode == 9
    assert IntentLog(a.root / ".git").in_flight() is not None  # the round was recorded, never landed
    a = world("a")
    pushed = git(world.bare, "rev-parse", "main")
    assert a.head() != pushed  # the branch did not move before the kill
    again = a.diary_append("the killed write", date="2026-07-21", time="10:00",
                           ctx=WriteContext(idempotency_key="key-1"))
    assert again.replayed and again.commit == pushed  # the client's retry: replayed, not written twice
    assert [e.content for e in a.diary.day("2026-07-21")] == ["the killed write"]
    assert a.head() == pushed and a.external_changes() == []


def test_async_writes_at_once_and_the_pusher_sends_them_in_order(world):
    a = world("a", "async")
    for i in range(4):
        a.add("notes", f"n{i}", f"note {i}")
    assert a.replication_lag() == 4
    assert a.push_pending() is True and a.push_pending() is False
    assert a.replication_lag() == 0 and git(world.bare, "rev-parse", "main") == a.head()


def test_async_lag_is_bounded(world):
    a = world("a", "async", max_lag=3)
    for i in range(3):
        a.add("notes", f"n{i}", f"note {i}")
    with pytest.raises(ReplicationLagging):
        a.add("notes", "n3", "one too many")
    assert a.store.get("notes", "n3") is None
    a.push_pending()
    a.add("notes", "n3", "now it fits")
    assert a.replication_lag() == 1


def test_async_two_hosts_writing_one_owner_keep_both_and_stay_linear(world):
    a = world("a", "async")
    a.add("prefs", "sea", "likes the sea")
    a.push_pending()
    b = world("b", "async")
    a.add("prefs", "tea", "green tea")
    a.diary_append("A was here", date="2026-07-21", time="09:00", ctx=WriteContext(idempotency_key="from-a"))
    b.add("prefs", "coffee", "black coffee")
    b.diary_append("B was here", date="2026-07-21", time="09:30", ctx=WriteContext(idempotency_key="from-b"))
    a.push_pending()
    assert b.push_pending() is True  # moved: replayed on top of a's commits, then pushed
    assert git(world.bare, "rev-parse", "main") == b.head()
    assert sorted(i.name for i in b.store.items("prefs")) == ["coffee", "sea", "tea"]
    assert sorted(e.content for e in b.diary.day("2026-07-21")) == ["A was here", "B was here"]
    assert b.replay("from-b", "diary")["commit"] == b.head()  # the key follows the replayed commit
    assert linear(world.bare)
    fsck = subprocess.run(["git", "-C", str(world.bare), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr


def test_a_retry_on_another_host_replays_the_write_made_there(world):
    """Host B applied a keyed write; the client's retry lands on host A: replayed from the commit, not re-applied."""
    a = world("a")
    a.add("prefs", "sea", "likes the sea")
    b = world("b")
    first = b.diary_append("only once", date="2026-07-21", time="10:00", ctx=WriteContext(idempotency_key="turn-7"))
    time.sleep(1.1)  # within the same second A would make the very same commit (same content, parent, time)
    with pytest.raises(RemoteMoved):  # A's copy is behind: its attempt is refused and rolled back...
        a.diary_append("only once", date="2026-07-21", time="10:00", ctx=WriteContext(idempotency_key="turn-7"))
    again = a.diary_append("only once", date="2026-07-21", time="10:00", ctx=WriteContext(idempotency_key="turn-7"))
    assert again.replayed and again.commit == first.commit  # ...and the retry finds B's commit
    assert again.value.content == "only once" and again.value.time == "10:00"
    assert [e.content for e in a.diary.day("2026-07-21")] == ["only once"]


def test_a_deleted_owner_is_not_cloned_back_and_can_be_created_again(tmp_path):
    from wikimem.errors import NotFound
    from wikimem.host import make_host
    from wikimem.host.cluster.replication import Settings

    (tmp_path / "replicas").mkdir()
    settings = Settings(f"file://{tmp_path}/replicas/{{owner}}.git")
    a, b = make_host(tmp_path / "a", replication=settings), make_host(tmp_path / "b", replication=settings)
    a.create_owner("user:gone").add("prefs", "sea", "likes the sea")
    assert b.owner("user:gone").item("prefs", "sea").content == "likes the sea"  # cloned on first use
    a.delete_owner("user:gone")
    b.replication.forget("user:gone")  # (b's staleness window is over)
    with pytest.raises(NotFound):
        b.owner("user:gone")  # b's copy caught up with the deletion and went
    assert not b.exists("user:gone")
    with pytest.raises(NotFound):
        b.owner("user:gone")  # and nothing clones it back
    again, created = b.ensure_owner("user:gone")
    assert created and again.files() == []
    again.add("prefs", "tea", "green tea")
    assert [i.name for i in a.create_owner("user:gone").items("prefs")] == ["tea"]


def test_a_remove_retried_on_another_host_is_replayed_as_done(world):
    a = world("a")
    a.add("prefs", "sea", "likes the sea")
    b = world("b")
    assert b.remove("prefs", "sea", ctx=WriteContext(idempotency_key="rm-1")).value is True
    time.sleep(1.1)
    with pytest.raises(RemoteMoved):
        a.remove("prefs", "sea", ctx=WriteContext(idempotency_key="rm-1"))
    again = a.remove("prefs", "sea", ctx=WriteContext(idempotency_key="rm-1"))
    assert again.replayed and again.value is True and a.store.get("prefs", "sea") is None


def test_ref_locks_left_by_a_killed_host_do_not_block_replication(world):
    """A host killed while updating its tracking ref, or (file://) the remote's main, leaves a .lock file."""
    a = world("a")
    a.add("prefs", "sea", "likes the sea")
    stale = [a.root / ".git" / "refs" / "remotes" / "origin" / "main.lock",
             world.bare / "refs" / "heads" / "main.lock"]
    for lock in stale:
        lock.write_text("0" * 40 + "\n")
        os.utime(lock, (time.time() - 60, time.time() - 60))
    done = a.add("prefs", "tea", "green tea")
    assert git(world.bare, "rev-parse", "main") == done.commit
    assert git(a.root, "rev-parse", TRACKING.decode()) == done.commit
    assert not any(lock.exists() for lock in stale)
