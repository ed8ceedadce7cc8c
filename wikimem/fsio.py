"""Durable file primitives: atomic replace, delete, tolerant read, stat stamps.

Every write goes to a temp file in the same folder, is flushed and fsynced,
then moved over the target with ``os.replace`` and the folder is fsynced, so
a crash at any point leaves either the old file or the new one, never a mix.
:func:`stat_stamp` / :func:`folder_signature`: what every cache of a file's
content keys on.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "atomic_replace", "remove_file", "read_bytes", "decode", "fsync_dir", "folder_entries",
           "sweep_temp_files", "TEMP_SUFFIX", "Stamp", "stat_stamp", "folder_signature"]

TEMP_SUFFIX = ".wikimem-tmp"

Stamp = tuple[int, int, int]  # (st_ino, st_mtime_ns, st_size)


def fsync_dir(folder: Path) -> None:
    """Persist a folder's entries (a rename or unlink inside it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not supported on this platform (Windows): best effort
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    with _replacing(path, mode) as fd:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]


def atomic_replace(path: Path, write: Callable[[BinaryIO], None], *, mode: int = 0o644) -> None:
    """Replace ``path`` with what ``write(fh)`` streams into a binary file, atomically and durably."""
    with _replacing(path, mode) as fd:
        with os.fdopen(os.dup(fd), "wb") as fh:
            write(fh)


@contextmanager
def _replacing(path: Path, mode: int) -> Iterator[int]:
    """A temp file's descriptor in ``path``'s folder, moved over ``path`` when the block ends well.

    The temp file is a dotfile ending in :data:`TEMP_SUFFIX` (swept by the
    next writer if this one is killed); fsync, ``os.replace``, fsync of the
    folder: a crash leaves the old file or the new one, never a mix.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            yield fd
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def remove_file(path: Path) -> None:
    """Delete ``path`` (if present) durably."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    fsync_dir(path.parent)


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def decode(data: bytes) -> str:
    """Text of a memory file; bytes that are not UTF-8 never make a read fail."""
    return data.decode("utf-8", errors="replace")


def folder_entries(folder: str | os.PathLike[str]) -> Iterator[os.DirEntry]:
    """The directory entries of ``folder``; none when it is missing or not a folder."""
    try:
        entries = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return
    with entries:
        yield from entries


def sweep_temp_files(root: Path, folders: tuple[str, ...] = ("wiki", "diary", ".git")) -> list[str]:
    """Remove the temp files killed writers left in ``root``'s folders; the names removed.

    Call only while holding the folder's write lock: then no live writer has
    a temp file there, and every one found is debris.
    """
    removed = []
    for folder in folders:
        for entry in folder_entries(Path(root) / folder):
            if entry.name.startswith(".") and entry.name.endswith(TEMP_SUFFIX):
                try:
                    os.unlink(entry.path)
                    removed.append(f"{folder}/{entry.name}")
                except FileNotFoundError:
                    pass
    return removed


def stat_stamp(path: str | os.PathLike[str]) -> Stamp | None:
    """``(st_ino, st_mtime_ns, st_size)`` of a file (a path or a directory entry); None when it is missing.

    An atomic replace gives a new inode, an edit in place a new mtime or size:
    a cache of the file's content stays valid while the stamp is the same.
    """
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def folder_signature(folder: Path, key: Callable[[str], str | None]) -> dict[str, Stamp]:
    """``{key(name): stat_stamp}`` of the files in ``folder`` whose ``key`` is not None; {} without the folder.

    A file replaced between listing and stat is left out (the next look sees it).
    """
    out: dict[str, Stamp] = {}
    for entry in folder_entries(folder):
        name = key(entry.name)
        if name is not None and (stamp := stat_stamp(entry)) is not None:
            out[name] = stamp
    return out
