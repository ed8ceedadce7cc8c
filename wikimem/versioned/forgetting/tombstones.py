"""The tombstone an erased owner's remote is left with: one commit, no parent, an empty tree, no id, no text.

Erasure first *replaces* the remote's ``main`` with it (compare-and-swap from
what the remote holds), so that a host still holding a copy, on its next
fetch, finds the erasure (:func:`~wikimem.versioned.forgetting.rewrite.rewrite_barrier`)
and drops its copy instead of replaying it; then the repository is deleted
where the transport allows. The commit is the same everywhere (fixed time
and author), so a second erasure finds it already there.

Where the repository is deleted, a host holding a copy finds nothing at all;
without a shared database (the erasure register) it could not tell an
erasure from an outage. So the erasure first leaves a **marker**
(:func:`mark`): a repository of its own on the remote, named by a keyed
digest of the owner id (no id, no text: ``_erased-<digest>``), holding one
commit whose time is the erasure's. :func:`marked` reads that time back; a
copy made before it goes.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from pathlib import Path

from dulwich.objects import Commit, Tree
from dulwich.repo import Repo

from wikimem.errors import RemoteError, RemoteMissing

from ..objects import COMMITTER, oid
from ..replication import Remote
from .rewrite import tombstone_message

__all__ = ["tombstone", "bury", "mark", "marked"]

MARKER_MESSAGE = "erased: an owner's memory was erased here at this commit's time\n"


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


def _marker(when: float) -> tuple[Tree, Commit]:
    """The marker commit of an erasure at ``when`` (an empty tree; the time is all it says)."""
    tree = Tree()
    commit = Commit()
    commit.tree = tree.id
    commit.parents = []
    commit.author = commit.committer = COMMITTER
    commit.author_time = commit.commit_time = math.ceil(when)  # (whole seconds: a copy made before it still is)
    commit.author_timezone = commit.commit_timezone = 0
    commit.encoding = b"UTF-8"
    commit.message = MARKER_MESSAGE.encode("utf-8")
    return tree, commit


def mark(remote: Remote, when: float, scratch: Path | str | None = None) -> bool:
    """Leave the marker of an erasure at ``when`` in the repository ``remote`` names (made where the transport
    can: file, ssh; an http server that creates on push); whether it is there now."""
    tree, commit = _marker(when)
    try:
        try:
            head = remote.remote_head()
        except RemoteMissing:
            head = None
            remote.create()
        if head == commit.id.decode():
            return True
        folder = Path(tempfile.mkdtemp(prefix="wikimem-marker-", dir=scratch))
        try:
            repo = Repo.init_bare(str(folder))
            try:
                repo.object_store.add_object(tree)
                repo.object_store.add_object(commit)
                remote.replace(repo, commit.id.decode(), head)
            finally:
                repo.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    except RemoteError:
        return False
    return True


def marked(remote: Remote, scratch: Path | str | None = None) -> float | None:
    """The time of the erasure whose marker ``remote`` holds, or None (no marker there)."""
    try:
        if remote.remote_head() is None:
            return None
    except RemoteMissing:
        return None
    folder = Path(tempfile.mkdtemp(prefix="wikimem-marker-", dir=scratch))
    try:
        repo = Repo.init_bare(str(folder))
        try:
            head = remote.fetch(repo)
            if head is None:
                return None
            found = repo.object_store[oid(head.encode("ascii"))]
            if not isinstance(found, Commit) or found.message.decode("utf-8", "replace") != MARKER_MESSAGE:
                return None
            return float(found.commit_time)
        finally:
            repo.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
