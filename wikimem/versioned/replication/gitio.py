"""What the transport does to a repository's refs and objects: the objects a push sends (:func:`new_objects`),
a ref moved under git's own lock (:func:`locked_ref_update`), the remote-tracking ref (:data:`TRACKING`,
:func:`set_tracking`), and small readers of refs (:func:`peek`, :func:`refs_of`, :func:`hexsha`)."""

from __future__ import annotations

import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dulwich.objects import S_ISGITLINK, ZERO_SHA
from dulwich.repo import Repo

from wikimem.errors import RemoteUnavailable

from ..objects import BRANCH, init_repo, oid, ref

__all__ = ["TRACKING", "new_objects", "locked_ref_update", "set_tracking", "peek", "refs_of", "hexsha", "short",
           "opened", "init_bare", "STALE_LOCK_SECONDS"]

TRACKING = ref(b"refs/remotes/origin/main")


def hexsha(sha: bytes | None) -> str | None:
    return None if sha is None or sha == ZERO_SHA else sha.decode("ascii")


def new_objects(store, new: bytes, base: bytes | None) -> list:
    """The objects of the commits after ``base`` up to ``new``: commits plus the trees and blobs they changed.

    Our commits rebuild only the trees on changed paths, so the new objects of
    a commit are those of its tree that its parent's tree lacks; walking them
    costs what changed, not the size of the history (dulwich's generic
    ``generate_pack_data`` walks every tree of every common commit). With
    ``base`` None everything reachable from ``new`` is sent.
    """
    out: dict[bytes, object] = {}
    todo, seen = [new], {base}
    while todo:
        cid = todo.pop()
        if cid in seen:
            continue
        seen.add(cid)
        commit = store[cid]
        out[cid] = commit
        parents = list(commit.parents)
        parent_tree = store[parents[0]].tree if parents else None
        _new_tree_objects(store, commit.tree, parent_tree, out)
        todo.extend(parents)
        if not parents and base is not None:
            raise ValueError(f"{base.decode()} is not an ancestor of {new.decode()}: not a fast-forward")
    return list(out.values())


def _new_tree_objects(store, tree_id: bytes, old_id: bytes | None, out: dict) -> None:
    """Add ``tree_id`` and what under it is not in the tree ``old_id`` (same place, parent commit)."""
    if tree_id == old_id or tree_id in out:
        return
    tree = store[tree_id]
    out[tree_id] = tree
    old = {e.path: (e.mode, e.sha) for e in store[old_id].iteritems()} if old_id else {}
    for entry in tree.iteritems():
        before = old.get(entry.path)
        if (before and before[1] == entry.sha) or entry.sha in out or S_ISGITLINK(entry.mode):
            continue
        if stat.S_ISDIR(entry.mode):
            _new_tree_objects(store, entry.sha, before[1] if before and stat.S_ISDIR(before[0]) else None, out)
        else:
            out[entry.sha] = store[entry.sha]


# A ref lock older than this was left by a killed process (an update holds it for milliseconds).
STALE_LOCK_SECONDS = 10.0


def locked_ref_update(update, lock: Path, attempts: int = 40):
    """Run a dulwich ref update; a ``.lock`` a killed writer left is removed once it is stale, a live one waited for."""
    from dulwich.file import FileLocked

    for _ in range(attempts):
        try:
            return update()
        except FileLocked:
            try:
                if time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS:
                    lock.unlink()
                    continue
            except FileNotFoundError:
                continue
            time.sleep(0.05)
    raise RemoteUnavailable(f"{lock} stays locked", "")


def set_tracking(repo: Repo, value: bytes | None, name=TRACKING) -> None:
    """Set (None: remove) a remote-tracking ref (``main``'s by default); best effort, as it is only what this
    folder knows.

    A tracking ref left behind is safe: the next push meets the remote at a
    commit it already holds and moves the ref then (see ``Replica.push``).
    """
    lock = Path(repo.controldir()) / name.decode()
    lock = lock.with_name(lock.name + ".lock")
    try:
        if value is None:
            locked_ref_update(lambda: repo.refs.remove_if_equals(name, None), lock)
        else:
            locked_ref_update(lambda: repo.refs.__setitem__(name, oid(value)), lock)
    except (RemoteUnavailable, OSError):
        pass


def peek(repo: Repo, name=BRANCH) -> bytes | None:
    try:
        return repo.refs[name]
    except KeyError:
        return None


def refs_of(refs) -> dict:
    """A plain dict of refs (dulwich returns a dict, or an LsRemoteResult/FetchPackResult wrapping one)."""
    inner = getattr(refs, "refs", refs)
    return dict(inner or {})


def short(sha: bytes | None) -> str:
    return "nothing" if not sha else sha.decode("ascii")[:12]


@contextmanager
def opened(repo: Path | str | Repo) -> Iterator[Repo]:
    if isinstance(repo, Repo):
        yield repo
        return
    local = Repo(str(repo))
    try:
        yield local
    finally:
        local.close()


def init_bare(path: Path) -> bool:
    """A bare repository with ``main`` as HEAD and fsck on receive (for git servers that serve it later)."""
    if (path / "HEAD").exists():
        return False
    path.mkdir(exist_ok=True)
    init_repo(path, bare=True).close()
    return True
