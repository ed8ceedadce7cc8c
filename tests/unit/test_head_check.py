"""The branch tip checked against the object store: a lookup that fails because another thread of the process is
using dulwich's shared store (its pack cache is not thread-safe) must not call the folder damaged."""

from __future__ import annotations

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
