"""Where bytes survive: a byte search over every file under some folders, git objects decompressed.

What erasure tests ask after erasing or forgetting: every regular file is
searched raw (SQLite files, their WAL, packs, indexes, JSON…), and every git
repository found under the folders (a work tree's ``.git`` or a bare one) is
also searched object by object through ``git cat-file --batch-all-objects
--batch`` — loose objects are zlib-compressed and packed ones may be deltas,
so a raw search alone would miss them. ``git`` is the independent witness.
Any other file is also searched through every zlib stream it holds
(:func:`inflated`): the intent log keeps each round's git objects
compressed as loose objects are.
"""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path

__all__ = ["traces", "repositories", "object_bytes", "inflated"]

_ZLIB_HEADS = (b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda")


def repositories(root: Path) -> list[Path]:
    """Every git directory under ``root`` (``X/.git`` of a work tree, or a bare repository ``X``)."""
    found = []
    for head in Path(root).rglob("HEAD"):
        folder = head.parent
        if (folder / "objects").is_dir() and (folder / "refs").is_dir():
            found.append(folder)
    return sorted(set(found))


def object_bytes(git_dir: Path) -> bytes:
    """Every object of a repository (reachable or not), decompressed, one after the other."""
    done = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True)
    return done.stdout


def inflated(data: bytes) -> bytes:
    """Every zlib stream found anywhere in ``data``, decompressed, one after the other."""
    out = []
    for head in _ZLIB_HEADS:
        at = data.find(head)
        while at != -1:
            try:
                out.append(zlib.decompressobj().decompress(data[at:], 1 << 24))
            except zlib.error:
                pass
            at = data.find(head, at + 1)
    return b"".join(out)


def traces(roots: list[Path], needles: list[str | bytes]) -> list[str]:
    """``"<where>: <needle>"`` for every needle found in a file's bytes or a repository's objects."""
    wanted = [n.encode("utf-8") if isinstance(n, str) else n for n in needles]
    hits = []
    for root in roots:
        root = Path(root)
        if not root.exists():
            continue
        for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            try:
                data = path.read_bytes()
            except FileNotFoundError:  # a live server's SQLite -shm/-wal, gone meanwhile
                continue
            hits += [f"{path}: {n!r}" for n in wanted if n in data]
            if "objects" not in path.parts:  # (git's own objects: searched through git below)
                hits += [f"{path} (zlib): {n!r}" for n in wanted if n in inflated(data)]
            hits += [f"{path} (name): {n!r}" for n in wanted if n in str(path.relative_to(root)).encode()]
        for git_dir in repositories(root):
            data = object_bytes(git_dir)
            hits += [f"{git_dir} (objects): {n!r}" for n in wanted if n in data]
    return hits
