"""Unreachable objects removed for good: what follows a history rewrite, here and on a file:// remote.

:func:`prune` keeps exactly what some ref reaches: reflogs expired, every
reachable object repacked into one pack, the old packs and every loose
object left over deleted — with the ``git`` command line when it is
installed (``reflog expire``, ``repack -a -d``, ``prune``), else with
dulwich (slower: it holds the objects in memory while it repacks). It works
on a work tree's ``.git`` and on a bare repository alike. The caller holds
whatever keeps writers out (the owner lock; a remote's pushes are
compare-and-swapped, so a push racing the prune of its remote at worst
writes objects that the next prune removes, never loses a reachable one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dulwich.repo import Repo

from ..replication import Remote

__all__ = ["prune", "Pruned", "git_dir_of", "prune_remote"]

# Files of a git directory that can name an old commit (and so keep it alive for git fsck's reflog walk).
_STALE = ("ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "logs")


@dataclass(frozen=True)
class Pruned:
    """What a prune did: objects before and after, and how (``git`` or ``dulwich``)."""

    before: int
    after: int
    tool: str

    @property
    def removed(self) -> int:
        return max(0, self.before - self.after)

    def to_dict(self) -> dict:
        return {"objects_before": self.before, "objects_after": self.after, "removed": self.removed,
                "tool": self.tool}


def git_dir_of(path: Path | str) -> Path:
    """The git directory of a work tree (``path/.git``) or a bare repository (``path``)."""
    path = Path(path)
    return path / ".git" if (path / ".git").is_dir() else path


def _count(git_dir: Path) -> int:
    repo = Repo(str(git_dir))
    try:
        return sum(1 for _ in repo.object_store)
    finally:
        repo.close()


def prune(path: Path | str) -> Pruned:
    """Delete every object no ref reaches in the repository at ``path`` (a work tree or a bare repository)."""
    git_dir = git_dir_of(path)
    for leftover in (git_dir / "objects" / "pack").glob("*"):
        if leftover.name.startswith(("tmp_", ".tmp-")):  # a pack a killed writer or repack left half-made
            leftover.unlink(missing_ok=True)
    for name in _STALE:
        target = git_dir / name
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        else:
            try:
                os.unlink(target)
            except FileNotFoundError:
                pass
    before = _count(git_dir)
    git = shutil.which("git")
    if git:
        def run(*args: str) -> None:
            subprocess.run([git, "--git-dir", str(git_dir), "-c", "gc.auto=0", "-c", "core.logAllRefUpdates=false",
                            *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True,
                           stdin=subprocess.DEVNULL)

        run("repack", "-a", "-d", "-q")
        run("prune", "--expire=now")
        tool = "git"
    else:
        _prune_with_dulwich(git_dir)
        tool = "dulwich"
    return Pruned(before, _count(git_dir), tool)


def _prune_with_dulwich(git_dir: Path) -> None:
    from dulwich.gc import find_unreachable_objects

    repo = Repo(str(git_dir))
    try:
        store = repo.object_store
        unreachable = find_unreachable_objects(store, repo.refs)
        for sha in unreachable:
            if store.contains_loose(sha):
                store.delete_loose_object(sha)
        store.repack(exclude=unreachable)
    finally:
        repo.close()


def prune_remote(remote: Remote) -> bool:
    """Remove the objects no ref reaches on ``remote`` where this host can (file://: :func:`prune` here; ssh:
    ``git`` over a shell); False when the scheme cannot (the server's own housekeeping must)."""
    if remote.scheme == "file":
        prune(remote.path)
        return True
    if remote.scheme in ("ssh", "git+ssh"):
        return remote.ssh_script("prune", "rm -rf {q}/logs && git --git-dir={q} -c gc.auto=0 repack -a -d -q && "
                                          "git --git-dir={q} prune --expire=now && echo gone")
    return False
