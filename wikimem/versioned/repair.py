"""Putting a damaged memory folder right (``wikimem repair``): the steps, each a function of what it needs.

Design notes: docs/explanation/durability-internals.md (``wikimem/versioned/repair.py``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from dulwich.objects import Commit

from wikimem.errors import DamagedFolder, RemoteRefused
from wikimem.format import LAYERS_DIR, MEMORY_DIRS, SETTINGS_PATH, is_memory_name, parse_settings
from wikimem.fsio import file_kind
from wikimem.limits import MAX_FILE_BYTES, MAX_SETTINGS_BYTES
from wikimem.naming import is_character_id
from wikimem.store import TOP_FILES

from .objects import BRANCH, GitRepo, oid
from .replication import TRACKING, check_incoming

__all__ = ["good_head", "move_branch", "quarantine", "readable", "readable_settings", "QUARANTINE"]

QUARANTINE = "wikimem-quarantine"  # under .git/: never part of the work tree, never committed


def good_head(git: GitRepo, known: list[bytes]) -> tuple[bytes | None, str | None]:
    """``(commit, why)`` to move a damaged branch to; ``(None, None)`` when the branch is fine.

    ``known`` are the commits the history index saw on the branch, newest
    first. :class:`DamagedFolder` when no good commit is found (restore the
    owner from its remote: ``wikimem cluster restore``).
    """
    try:
        git.head()
        return None, None
    except DamagedFolder:
        pass
    for cid in known:
        if _complete(git, cid):
            return cid, "the newest commit the history index saw on the branch"
    tracked = _ref(git, TRACKING)
    if tracked is not None and _complete(git, tracked):
        return tracked, "the commit the remote was last known to hold"
    for cid in _commits_newest_first(git):
        try:
            check_incoming(git.store, cid, ())
        except RemoteRefused:
            continue
        return cid, "the newest commit of the object store whose whole history passes the checks"
    raise DamagedFolder(f"{git.root.name}: the branch main names no commit and no good commit was found; "
                        "bring the owner back from its remote (wikimem cluster restore --owner …)")


def _ref(git: GitRepo, name) -> bytes | None:
    try:
        return git.repo.refs[name]
    except Exception:
        return None


def _complete(git: GitRepo, cid: bytes) -> bool:
    """Whether the commit, its tree and every memory file of it are in the object store."""
    try:
        commit = git.commit(cid)
        for sha in git.tracked(commit.tree).values():
            git.blob(sha)
        for parent in commit.parents:
            git.commit(parent)
    except (KeyError, ValueError, AssertionError):
        return False
    return True


def _commits_newest_first(git: GitRepo) -> list[bytes]:
    found = []
    for sha in git.store:
        try:
            obj = git.store[oid(sha)]
        except Exception:
            continue
        if isinstance(obj, Commit):
            found.append((obj.commit_time, sha))
    return [sha for _, sha in sorted(found, reverse=True)]


def move_branch(git: GitRepo, new: bytes) -> None:
    """Point ``main`` at ``new`` whatever it holds now (only for a branch that names no commit)."""
    git.clear_stale_locks()
    git.repo.refs.remove_if_equals(BRANCH, None)
    if not git.repo.refs.set_if_equals(BRANCH, None, oid(new)):
        raise DamagedFolder(f"{git.root.name}: cannot move the branch main to {new.decode()[:12]}")


def quarantine(root: Path, only: tuple[str, ...] | None = None) -> list[str]:
    """Move what the door refuses out of the work tree (never following a link); the paths moved.

    ``only``: just these names at the top (the lock file, before the lock can be taken).
    """
    root = Path(root)
    aside = root / ".git" / QUARANTINE / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    moved: list[str] = []

    def move(rel: str, why: str) -> None:
        target = aside / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(root / rel, target)
        moved.append(f"{rel} ({why})")

    for rel in only or TOP_FILES:
        why = _refused(root / rel, MAX_SETTINGS_BYTES if rel in TOP_FILES and rel != "journal.jsonl" else None)
        if why:
            move(rel, why)
    for folder in () if only else _folders(root, move):
        if not _is_folder(root, folder, move):
            continue
        with os.scandir(root / folder) as entries:
            names = [e.name for e in entries if is_memory_name(e.name)]
        for name in names:
            why = _refused(root / folder / name, MAX_FILE_BYTES)
            if why:
                move(f"{folder}/{name}", why)
    return moved


def _folders(root: Path, move: Callable[[str, str], None]) -> list[str]:
    """The memory folders to look into: ``wiki/``, ``diary/`` and those of each character's layer (a link or a file
    where ``characters/`` or a layer's folder should be is moved aside first)."""
    out = list(MEMORY_DIRS)
    for folder in [LAYERS_DIR, *(f"{LAYERS_DIR}/{n}" for n in _names(root / LAYERS_DIR))]:
        if _is_folder(root, folder, move) and folder != LAYERS_DIR:
            out += [f"{folder}/{d}" for d in MEMORY_DIRS]
    return out


def _is_folder(root: Path, folder: str, move: Callable[[str, str], None]) -> bool:
    """Whether ``folder`` is a folder here; a file or a link in its place is moved aside (False, as when missing)."""
    try:
        st = os.lstat(root / folder)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        move(folder, file_kind(st.st_mode))
        return False
    return True


def _names(folder: Path) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return sorted(e.name for e in entries if is_character_id(e.name))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _refused(path: Path, limit: int | None) -> str | None:
    """Why the door refuses ``path`` (None: it does not, or there is nothing there)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return file_kind(st.st_mode)
    if limit is not None and st.st_size > limit:
        return f"{st.st_size:,} bytes, over the limit of {limit:,}"
    return None


def readable(data: bytes | None, rel: str) -> bool:
    """Whether a file at the top of a folder (``settings.json``, ``.gitignore``) with these bytes passes the door."""
    if data is None or len(data) > MAX_SETTINGS_BYTES:
        return False
    try:
        parse_settings(data) if rel == SETTINGS_PATH else None
    except ValueError:
        return False
    return True


def readable_settings(git: GitRepo, head: bytes) -> tuple[bytes | None, str] | None:
    """When ``settings.json`` at ``head`` cannot be read: ``(the newest readable version or None, its commit)``;
    None when it can be read."""
    try:
        parse_settings(git.blob_at(git.commit_tree(head), SETTINGS_PATH))
        return None
    except ValueError:
        pass
    cid: bytes | None = head
    while cid is not None:
        commit = git.commit(cid)
        data = git.blob_at(commit.tree, SETTINGS_PATH)
        try:
            parse_settings(data)
            return data, cid.decode()
        except ValueError:
            cid = commit.parents[0] if commit.parents else None
    return None, ""
