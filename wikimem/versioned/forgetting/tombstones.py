"""The tombstone an erased owner's remote is left with: one commit, no parent, an empty tree, no id, no text.

Erasure first *replaces* the remote's ``main`` with it (compare-and-swap from
what the remote holds), so that a host still holding a copy, on its next
fetch, finds the erasure (:func:`~wikimem.versioned.forgetting.rewrite.rewrite_barrier`)
and drops its copy instead of replaying it; then the repository is deleted
where the transport allows. The commit is the same everywhere (fixed time
and author), so a second erasure finds it already there.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from dulwich.objects import Commit, Tree
from dulwich.repo import Repo

from wikimem.errors import RemoteMissing

from ..objects import COMMITTER
from ..replication import Remote
from .rewrite import tombstone_message

__all__ = ["tombstone", "bury"]


def tombstone() -> tuple[Tree, Commit]:
    """The empty tree and the tombstone commit (always the same ids)."""
    tree = Tree()
    commit = Commit()
    commit.tree = tree.id
    commit.parents = []
    commit.author = commit.committer = COMMITTER
    commit.author_time = commit.commit_time = 0
    commit.author_timezone = commit.commit_timezone = 0
    commit.encoding = b"UTF-8"
    commit.message = tombstone_message().encode("utf-8")
    return tree, commit


def bury(remote: Remote, scratch: Path | str | None = None) -> str:
    """Replace the remote's history by the tombstone: ``"buried"`` (now), ``"already"`` or ``"absent"`` (no
    repository there). The remote's staged branches (runs on probation) are deleted with it: they hold the
    owner's history too. A remote that moves meanwhile raises :class:`RemoteMoved` (call again)."""
    try:
        head = remote.remote_head()
    except RemoteMissing:
        return "absent"
    tree, commit = tombstone()
    staged = remote.staged_heads()
    if head == commit.id.decode() and not staged:
        return "already"
    folder = Path(tempfile.mkdtemp(prefix="wikimem-tombstone-", dir=scratch))
    try:
        repo = Repo.init_bare(str(folder))
        try:
            if head != commit.id.decode():
                repo.object_store.add_object(tree)
                repo.object_store.add_object(commit)
                remote.replace(repo, commit.id.decode(), head)
            for name, sha in staged.items():
                remote.push(repo, None, sha, name=name)
        finally:
            repo.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return "buried"
