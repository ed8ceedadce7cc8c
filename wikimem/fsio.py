"""Durable file primitives: atomic replace, delete, tolerant read, stat stamps, a file system's sync.

Every write goes to a temp file in the same folder, is flushed and fsynced,
then moved over the target with ``os.replace`` and the folder is fsynced, so
a crash at any point leaves either the old file or the new one, never a mix.
``durable=False`` keeps the atomic replace and skips the syncs: for a caller
whose own log makes the write durable (the versioned store's intent log) and
syncs the file system later (:func:`sync_filesystem`).
:func:`stat_stamp` / :func:`folder_signature`: what every cache of a file's
content keys on.

The reading side for files someone else may have made (:func:`open_regular`,
:func:`read_regular`, :func:`open_folder`): never follow a symbolic link,
never block on a FIFO, accept a regular file only, read at most a limit —
anything else is :class:`~wikimem.errors.DamagedFolder`. The owner folder's
own rules (which paths, which limits) are :class:`wikimem.store.Door`'s.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .errors import DamagedFolder

__all__ = ["write_all", "atomic_write", "atomic_replace", "remove_file", "read_bytes", "decode", "fsync_dir",
           "sweep_temp_files", "sync_filesystem", "TEMP_SUFFIX", "Stamp", "stat_stamp", "folder_signature",
           "open_regular", "read_regular", "open_folder", "file_kind"]

# Never follow a link in the last component, never wait on a FIFO's writer, never become a controlling tty.
_SAFE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
REPAIR_HINT = "`wikimem repair` moves it aside"

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


def sync_filesystem(path: Path) -> None:
    """Make everything written so far on the file system that holds ``path`` durable, in one call.

    ``syncfs(2)`` on Linux (one flush of that file system, however many files
    were written); ``os.sync()`` where there is none. Raises ``OSError`` when
    the kernel reports a write-back error.
    """
    syncfs = _syncfs()
    if syncfs is None:
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            import ctypes

            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)


_SYNCFS: list = []


def _syncfs():
    """libc's ``syncfs`` (looked up once), or None where the platform has none."""
    if not _SYNCFS:
        found = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                found = ctypes.CDLL(None, use_errno=True).syncfs
                found.argtypes = [ctypes.c_int]
            except (OSError, AttributeError):
                found = None
        _SYNCFS.append(found)
    return _SYNCFS[0]


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def atomic_write(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (and durably, unless ``durable=False``)."""
    with _replacing(path, mode, durable) as fd:
        write_all(fd, data)


def atomic_replace(path: Path, write: Callable[[BinaryIO], None], *, mode: int = 0o644) -> None:
    """Replace ``path`` with what ``write(fh)`` streams into a binary file, atomically and durably."""
    with _replacing(path, mode) as fd:
        with os.fdopen(os.dup(fd), "wb") as fh:
            write(fh)


@contextmanager
def _replacing(path: Path, mode: int, durable: bool = True) -> Iterator[int]:
    """A temp file's descriptor in ``path``'s folder, moved over ``path`` when the block ends well.

    The temp file is a dotfile ending in :data:`TEMP_SUFFIX` (swept by the
    next writer if this one is killed); fsync, ``os.replace``, fsync of the
    folder: a crash leaves the old file or the new one, never a mix.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileNotFoundError:  # (its folder is made only when missing: no mkdir call on the write path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            yield fd
            if durable:
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
    if durable:
        fsync_dir(path.parent)


def remove_file(path: Path, *, durable: bool = True) -> None:
    """Delete ``path`` (if present), durably unless ``durable=False``."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    if durable:
        fsync_dir(path.parent)


def file_kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words (for messages)."""
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISREG, "a regular file")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY, *, dir_fd: int | None = None,
                 shown: str | None = None, mode: int = 0o644) -> int:
    """A descriptor of the regular file ``path`` (relative to ``dir_fd`` when given).

    A symbolic link (as the last component), a FIFO, a device, a socket or a
    folder is :class:`DamagedFolder` — the open never follows the link and
    never blocks waiting for a FIFO's other end. FileNotFoundError when
    missing (unless ``flags`` has ``O_CREAT``).
    """
    shown = shown or str(path)
    try:
        fd = os.open(path, flags | _SAFE_FLAGS, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # (EMLINK: FreeBSD's O_NOFOLLOW)
            raise DamagedFolder(f"{shown} is a symbolic link; only regular files are read or written "
                                f"({REPAIR_HINT})") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR, errno.ENODEV, errno.EOPNOTSUPP):  # a FIFO for writing, a folder…
            raise DamagedFolder(f"{shown} is not a regular file ({exc.strerror}; {REPAIR_HINT})") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DamagedFolder(f"{shown} is {file_kind(st.st_mode)}; only regular files are read or written "
                                f"({REPAIR_HINT})")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], *, dir_fd: int | None = None, limit: int | None = None,
                 shown: str | None = None) -> bytes | None:
    """The bytes of the regular file ``path`` (see :func:`open_regular`), None when it does not exist.

    More than ``limit`` bytes is :class:`DamagedFolder` (read no further than that).
    """
    shown = shown or str(path)
    try:
        fd = open_regular(path, dir_fd=dir_fd, shown=shown)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        if limit is not None and os.fstat(fd).st_size > limit:
            raise DamagedFolder(f"{shown} is {os.fstat(fd).st_size:,} bytes long; files of a memory folder "
                                f"are read up to {limit:,} bytes (wikimem.limits; {REPAIR_HINT})")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if limit is not None and total > limit:  # it grew while read
                raise DamagedFolder(f"{shown} is over {limit:,} bytes long; files of a memory folder are read "
                                    f"up to {limit:,} bytes (wikimem.limits; {REPAIR_HINT})")
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_folder(path: str | os.PathLike[str], *, dir_fd: int | None = None, shown: str | None = None) -> int | None:
    """A descriptor of the folder ``path`` (relative to ``dir_fd``), never through a symbolic link; None when
    it does not exist. A link or a file in its place is :class:`DamagedFolder`."""
    shown = shown or str(path)
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise
        try:
            kind = file_kind(os.lstat(path, dir_fd=dir_fd).st_mode)
        except OSError:
            kind = "not a folder"
        raise DamagedFolder(f"{shown} is {kind}, not a folder; nothing is read through it ({REPAIR_HINT})") from None


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



def sweep_temp_files(root: Path, folders: tuple[str, ...] = ("wiki", "diary", ".git")) -> list[str]:
    """Remove the temp files killed writers left in ``root``'s folders; the names removed.

    Call only while holding the folder's write lock: then no live writer has
    a temp file there, and every one found is debris.
    """
    removed = []
    for folder in folders:
        try:
            fd = open_folder(Path(root) / folder)
        except DamagedFolder:  # a link in the folder's place: never swept through (reads report it)
            continue
        if fd is None:
            continue
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.name.startswith(".") and entry.name.endswith(TEMP_SUFFIX):
                        try:
                            os.unlink(entry.name, dir_fd=fd)
                            removed.append(f"{folder}/{entry.name}")
                        except FileNotFoundError:
                            pass
        finally:
            os.close(fd)
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
    """``{key(name): stamp}`` of the entries in ``folder`` whose ``key`` is not None; {} without the folder.

    Stamps are the entries' own (a symbolic link's, never its target's); a
    folder that is itself a link is :class:`DamagedFolder`. A file replaced
    between listing and stat is left out (the next look sees it).
    """
    out: dict[str, Stamp] = {}
    fd = open_folder(folder)
    if fd is None:
        return out
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                name = key(entry.name)
                if name is None:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                out[name] = (st.st_ino, st.st_mtime_ns, st.st_size)
    finally:
        os.close(fd)
    return out
