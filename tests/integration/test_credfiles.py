"""The shared files behind sign-in: credentials files re-read on change, the SQLite state of a data root."""

from __future__ import annotations

import json
import multiprocessing
import os
import time

import pytest

from wikimem.host.access.authstate import AuthState
from wikimem.host.access.credfile import WatchedFile, edit_lines


def _names(row: dict):
    return row.get("name")


def test_an_edit_that_keeps_size_inode_and_mtime_is_still_seen(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text('{"name": "aaaa"}\n')
    watched = WatchedFile(path, _names)
    assert watched.entries() == ["aaaa"]
    st = os.stat(path)
    with open(path, "r+") as fh:  # same inode, same size ...
        fh.write('{"name": "bbbb"}\n')
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # ... and the same mtime: one timestamp tick
    assert os.stat(path).st_ino == st.st_ino
    assert watched.entries() == ["bbbb"]


def test_an_old_unchanged_file_is_not_read_again(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text('{"name": "a"}\n')
    old = time.time_ns() - 60 * 10**9
    os.utime(path, ns=(old, old))
    watched = WatchedFile(path, _names)
    first = watched.entries()
    assert watched.entries() is first


def test_edit_lines_keeps_comments_and_changes_nothing_when_the_edit_fails(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text('# a comment\n{"name": "a"}\nnot json\n')
    edit_lines(path, lambda rows: [*rows, {"name": "b"}])
    assert path.read_text() == '# a comment\n{"name": "a"}\nnot json\n{"name": "b"}\n'
    assert path.stat().st_mode & 0o777 == 0o600

    def refuse(rows):
        raise ValueError("no")

    with pytest.raises(ValueError):
        edit_lines(path, refuse)
    assert path.read_text().endswith('{"name": "b"}\n')
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def _count(root: str, n: int, out) -> None:
    state = AuthState(root)
    out.put([state.incr("k", 60) for _ in range(n)])


def _counted(tmp_path, target, each: int, processes: int) -> list[int]:
    """Every count the ``processes`` processes running ``target`` saw, sorted."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=target, args=(str(tmp_path), each, out)) for _ in range(processes)]
    for p in procs:
        p.start()
    seen = sorted(n for _ in procs for n in out.get(timeout=120))
    for p in procs:
        p.join()
    return seen


def test_counters_are_exact_across_processes(tmp_path):
    assert _counted(tmp_path, _count, 40, 4) == list(range(1, 161))  # every increment counted once
    assert AuthState(tmp_path).count("k") == 160


def test_a_window_ends_and_a_new_one_begins(tmp_path, monkeypatch):
    state = AuthState(tmp_path)
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)
    assert [state.incr("k", 60) for _ in range(3)] == [1, 2, 3]
    assert state.expiry("k") == pytest.approx(now + 60)
    monkeypatch.setattr(time, "time", lambda: now + 61)
    assert state.count("k") == 0
    assert state.incr("k", 60) == 1


def test_revoked_sessions_are_kept_until_they_would_have_ended(tmp_path, monkeypatch):
    state = AuthState(tmp_path)
    now = time.time()
    state.revoke("old", now + 10)
    state.revoke("new", now + 1000)
    assert state.is_revoked("old") and state.is_revoked("new") and not state.is_revoked("other")
    monkeypatch.setattr(time, "time", lambda: now + 100)
    state.revoke("later", now + 2000)  # each revoke purges what has expired
    assert not state.is_revoked("old") and state.is_revoked("new")


def test_the_state_file_is_shared_by_every_connection_of_a_data_root(tmp_path):
    a, b = AuthState(tmp_path), AuthState(tmp_path)
    a.revoke("sid", time.time() + 60)
    assert b.is_revoked("sid")
    assert json.loads(json.dumps(a.check())) is True


def _hold_counter_lock(path: str, held, release) -> None:
    import fcntl

    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        held.set()
        release.wait(60)


def test_counter_writers_wait_on_one_lock_across_processes_and_a_busy_one_says_locked(tmp_path):
    """Every API request counts here: its writers queue on a file lock that hands over at once (SQLite's own busy
    handler sleeps 1, 2, 5 … 100 ms between tries), and a lock held past the busy timeout is SQLite's "locked"."""
    from wikimem.host.access.authstate import LOCK_FILE, STATE_FILE

    state = AuthState(tmp_path, busy_timeout=0.5)
    assert state.incr("k", 60) == 1
    ctx = multiprocessing.get_context("spawn")
    held, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_counter_lock, args=(str(tmp_path / STATE_FILE.parent / LOCK_FILE), held,
                                                          release))
    holder.start()
    try:
        assert held.wait(60)
        import sqlite3

        with pytest.raises(sqlite3.OperationalError, match="locked"):
            state.incr("k", 60)  # another process writes: this one waits its turn, here past the timeout
        assert state.count("k") == 1  # (reading never waits)
    finally:
        release.set()
        holder.join(60)
    assert state.incr("k", 60) == 2


def _count_threads(root: str, n: int, out) -> None:
    import threading

    state = AuthState(root)
    got: list[int] = []
    threads = [threading.Thread(target=lambda: got.extend(state.incr("k", 60) for _ in range(n))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(got)


def test_counters_are_exact_across_processes_and_their_threads(tmp_path):
    assert _counted(tmp_path, _count_threads, 25, 3) == list(range(1, 301))  # 3 processes × 4 threads × 25


def test_ended_windows_are_swept_once_a_minute_per_process(tmp_path, monkeypatch):
    from wikimem.host.access.authstate import SWEEP_EVERY

    state = AuthState(tmp_path)
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)
    state.incr("old", 10)
    monkeypatch.setattr(time, "time", lambda: now + 20)  # "old" ended; the last sweep was 20 s ago
    state.incr("new", 10)

    def rows() -> set[str]:
        import sqlite3

        with sqlite3.connect(tmp_path / "auth" / "state.sqlite3") as db:
            return {key for (key,) in db.execute("SELECT key FROM hits")}

    assert rows() == {"old", "new"}
    monkeypatch.setattr(time, "time", lambda: now + SWEEP_EVERY + 1)
    state.incr("new", 10)
    assert rows() == {"new"}
