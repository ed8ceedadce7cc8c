"""A power-loss simulator for the write path, in Python (no LD_PRELOAD, no ptrace, no mounts).

:class:`Recorder` runs inside the writing process. It wraps the calls that
make data durable (``os.fsync``, ``os.fdatasync``, ``os.sync``,
:func:`wikimem.fsio.sync_filesystem`) and the renames that publish files
(``os.replace``, ``os.rename``), and keeps two images of the folder:

- the **durable** image: what a disk holds for sure — a file's content as of
  its last ``fsync``/``fdatasync``; a folder's names as of its last fsync;
  everything at a ``syncfs``/``sync``;
- the **current** image: the folder as the process sees it (page cache).

At every sync, every rename and every acknowledged write it records a
*crash point*: both images and the writes acknowledged so far.
:func:`crash_image` then builds what a disk could hold after the power went
out at that point: each file independently either its durable or its
current version (the kernel writes back dirty files in any order), a new
file possibly empty (its name reached the disk, its data did not), the
intent log possibly torn (part of an unsynced write landed), SQLite files
(whose syncs happen in C, unseen here) as of the last file-system sync or
gone — they are derived and rebuilt.
"""

from __future__ import annotations

import os
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path

LOG = ".git/wikimem-intent.log"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root``: ``{relative path: bytes}``."""
    out: dict[str, bytes] = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as fh:
                    out[os.path.relpath(path, root)] = fh.read()
            except (FileNotFoundError, IsADirectoryError):
                continue
    return out


@dataclass
class Point:
    """One moment the power may go out: what is surely on disk, what the process saw, what was acknowledged."""

    label: str
    durable: dict[str, bytes]
    current: dict[str, bytes]
    acked: list[tuple] = field(default_factory=list)


class Recorder:
    """Records crash points of the writes made to ``root`` by this process (see the module docstring)."""

    def __init__(self, root: Path):
        self.root = os.path.realpath(root)
        self.lock = threading.RLock()
        self.durable = snapshot(Path(self.root))  # the starting state is taken as on disk
        self.acked: list[tuple] = []
        self.points: list[Point] = []
        self.syncs = 0

    def point(self, label: str) -> None:
        with self.lock:
            self.points.append(Point(label, dict(self.durable), snapshot(Path(self.root)), list(self.acked)))

    def ack(self, *write: object) -> None:
        """A write returned to its caller: from now on it must survive."""
        with self.lock:
            self.acked.append(tuple(write))
            self.point(f"ack {write[0]}")

    def _rel(self, path: str) -> str | None:
        if path.endswith(" (deleted)"):
            return None
        real = os.path.realpath(path)
        if real != self.root and not real.startswith(self.root + os.sep):
            return None
        return os.path.relpath(real, self.root)

    def _synced(self, fd: int) -> None:
        """``fd`` was synced: its file's content (or its folder's names) are durable now."""
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return
        rel = self._rel(target)
        if rel is None:
            return
        full = os.path.join(self.root, rel)
        if os.path.isdir(full):
            prefix = "" if rel == "." else rel + os.sep
            names = {prefix + n for n in os.listdir(full) if os.path.isfile(os.path.join(full, n))}
            for name in list(self.durable):
                if os.path.dirname(name) == (rel if rel != "." else "") and name not in names:
                    del self.durable[name]
            for name in names - self.durable.keys():
                with open(os.path.join(self.root, name), "rb") as fh:
                    self.durable[name] = fh.read()
        else:
            with open(full, "rb") as fh:
                self.durable[rel] = fh.read()

    def install(self) -> None:
        """Wrap the sync and rename calls of this process (for good: it is a test child)."""
        import wikimem.fsio as fsio
        import wikimem.versioned.intent as intent
        import wikimem.versioned.vstore as vstore

        real = {"fsync": os.fsync, "fdatasync": os.fdatasync, "replace": os.replace, "rename": os.rename,
                "sync": os.sync, "syncfs": fsio.sync_filesystem}

        def file_sync(name):
            def wrapped(fd):
                with self.lock:
                    self.point(f"before {name}")
                    real[name](fd)
                    self.syncs += 1
                    self._synced(fd)
                    self.point(f"after {name}")
            return wrapped

        def whole_sync(*args):
            with self.lock:
                self.point("before syncfs")
                (real["syncfs"](*args) if args else real["sync"]())
                self.syncs += 1
                self.durable = snapshot(Path(self.root))
                self.point("after syncfs")

        def renamer(name):
            def wrapped(src, dst, *args, **kwargs):
                with self.lock:
                    real[name](src, dst, *args, **kwargs)
                    if self._rel(os.fspath(dst)) is not None:
                        self.point(f"{name} {os.path.basename(os.fspath(dst))}")
            return wrapped

        os.fsync, os.fdatasync = file_sync("fsync"), file_sync("fdatasync")
        os.replace, os.rename = renamer("replace"), renamer("rename")
        os.sync = whole_sync
        fsio.sync_filesystem = intent.sync_filesystem = vstore.sync_filesystem = whole_sync


def crash_image(point: Point, rng: random.Random, mode: str) -> dict[str, bytes]:
    """What the disk holds if the power goes out at ``point``: ``mode`` is ``durable`` (nothing unsynced
    survived), ``current`` (everything did: a process kill), or ``mixed`` (each file one or the other)."""
    out: dict[str, bytes] = {}
    for rel in point.durable.keys() | point.current.keys():
        if rel.endswith("-shm"):
            continue  # SQLite's shared memory: rebuilt on open
        old, new = point.durable.get(rel), point.current.get(rel)
        if ".sqlite3" in rel:  # synced by SQLite itself, unseen: as of the last file-system sync, or gone
            chosen = old if mode != "current" and rng.random() < 0.5 else (new if mode == "current" else None)
        elif mode == "durable":
            chosen = old
        elif mode == "current":
            chosen = new
        elif rel == LOG and old is not None and new is not None and old != new and rng.random() < 0.5:
            chosen = _torn(old, new, rng)
        elif old is None and new is not None and rng.random() < 0.25:
            chosen = b""  # the name reached the disk, its data did not (a rename before write-back)
        else:
            chosen = old if rng.random() < 0.5 else new
        if chosen is not None:
            out[rel] = chosen
    return out


def _torn(old: bytes, new: bytes, rng: random.Random) -> bytes:
    """``old`` with one random stretch of ``new`` written over it (a write that partly reached the disk)."""
    size = max(len(old), len(new))
    a = rng.randrange(0, size)
    b = rng.randrange(a, size + 1)
    base = bytearray(old.ljust(size, b"\0"))
    base[a:b] = new.ljust(size, b"\0")[a:b]
    keep = len(new) if b >= len(old) else len(old)
    return bytes(base[:keep])


def materialize(files: dict[str, bytes], root: Path) -> None:
    """Write an image to ``root`` (a fresh folder)."""
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for sub in ("refs/heads", "refs/tags", "objects/info", "objects/pack"):
        (root / ".git" / sub).mkdir(parents=True, exist_ok=True)
