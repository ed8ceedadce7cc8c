"""Reads of dulwich's shared object store: a lookup that fails because another thread of the process is using the
store (its pack cache is not thread-safe) is asked again afresh, so that neither the branch tip is called damaged
nor a commit, tree or blob missing; an object really missing still is."""

from __future__ import annotations

import threading
import time

import pytest

from wikimem.context import WriteContext
from wikimem.errors import DamagedFolder
from wikimem.host import make_host


class FailsOnce:
    """The shared object store, whose next membership test fails as one does when another thread closes a pack
    under it (a real pack and real objects behind it)."""

    def __init__(self, store):
        self.store = store
        self.failures = 1
        self.error: Exception = KeyError(b"pruned while its pack was cached by another thread")

    def __getitem__(self, sha):
        if self.failures:
            self.failures -= 1
            raise self.error
        return self.store[sha]

    def __contains__(self, sha) -> bool:
        if self.failures:
            self.failures -= 1
            raise ValueError("mmap closed or invalid")
        return sha in self.store

    def __getattr__(self, name):
        return getattr(self.store, name)


@pytest.fixture
def owner(tmp_path):
    owner, _ = make_host(tmp_path).ensure_owner("user:ann")
    owner.add("notes", "tea", "Drinks oolong.", ctx=WriteContext(actor="seed"))
    return owner


def test_a_lookup_another_thread_broke_is_asked_again(owner):
    git = owner.vstore.git
    tip = git.head()
    git._checked_head = None  # (the next read checks the store again, as after another process's write)
    git.store = FailsOnce(git.store)
    assert git.head() == tip
    assert git.store.failures == 0  # the shared store was asked, and failed


def test_a_commit_that_is_really_missing_is_still_damage(owner):
    git = owner.vstore.git
    (owner.root / ".git" / "refs" / "heads" / "main").write_text("0123456789abcdef0123456789abcdef01234567\n")
    git._checked_head = None
    with pytest.raises(DamagedFolder, match="which is not a commit"):
        git.head()


@pytest.mark.parametrize("error", [KeyError(b"gone loose, pack missed"), ValueError("read from closed PackData"),
                                   BufferError("cannot close exported pointers exist")])
def test_a_commit_tree_or_blob_read_another_thread_broke_is_read_again(owner, error):
    git = owner.vstore.git
    tip = git.head()
    commit = git.commit(tip)
    sha = git.entry(commit.tree, "wiki/notes.md")[1]
    git._commits.clear()
    git._trees.clear()
    git.store = FailsOnce(git.store)
    for read in (lambda: git.commit(tip).tree, lambda: git.tree(commit.tree).id, lambda: git.blob(sha)):
        git.store.failures, git.store.error = 1, error
        assert read()
        assert git.store.failures == 0


def test_an_object_really_missing_is_still_missing(owner):
    git = owner.vstore.git
    with pytest.raises(KeyError):
        git.commit(b"0123456789abcdef0123456789abcdef01234567")
    assert not git.has(b"0123456789abcdef0123456789abcdef01234567")
    assert git.has(git.head())


@pytest.mark.slow
def test_readers_of_history_beside_a_writer_that_packs_see_no_error(owner):
    """Real threads on one owner: three walk the history (caches cleared each round) while one writes and packs
    (``git repack`` removing packs, ``prune-packed`` the loose copies). Without the fresh look, some 0.8 reads a
    second failed on this machine (KeyError, a closed PackData, BufferError). Bounded: 8 s."""
    git = owner.vstore.git
    ctx = WriteContext(actor="seed")
    for i in range(20):
        owner.add("notes", f"n{i}", f"fact {i}", ctx=ctx)
    stop = time.monotonic() + 8
    errors: list[str] = []

    def read() -> None:
        while time.monotonic() < stop:
            try:
                sha, steps = git.head(), 0
                while sha and steps < 40:
                    commit = git.commit(sha)
                    git.tree(commit.tree)
                    sha, steps = (commit.parents[0] if commit.parents else None), steps + 1
            except Exception as exc:  # noqa: BLE001 - every failure is the finding
                errors.append(repr(exc))
            git._commits.clear()
            git._trees.clear()
            git._checked_head = None

    def write() -> None:
        n = 0
        while time.monotonic() < stop:
            owner.add("notes", f"w{n}", f"more {n}", ctx=ctx)
            n += 1
            if n % 3 == 0:
                owner.vstore.pack()

    threads = [threading.Thread(target=read) for _ in range(3)] + [threading.Thread(target=write)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
