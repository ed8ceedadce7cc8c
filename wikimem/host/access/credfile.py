"""A credentials file in JSON Lines (tokens, operator accounts): read when it changes, edited atomically.

Readers (every worker of a host, every host of a cluster that shares the
file) re-read the file when its inode, mtime or size changed, so an edit —
a revoked token, a removed account — takes effect on the next request.
A file changed within :data:`RACY_SECONDS` of being read is read again on
the next request whatever its stamp says (git's "racily clean" rule): two
edits within one filesystem timestamp tick, of equal size, on a reused
inode, would otherwise look unchanged.

Edits rewrite the whole file (a temporary file, fsync, rename; mode 0600)
under an inter-process lock beside it, so a reader never sees half a file
and two editors never lose each other's change.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from wikimem.fsio import atomic_write, stat_stamp
from wikimem.locking import FileLock

__all__ = ["WatchedFile", "edit_lines", "RACY_SECONDS"]

log = logging.getLogger(__name__)

T = TypeVar("T")
RACY_SECONDS = 2.0


def _rows(text: str, path: Path) -> list[tuple[int, dict]]:
    """``(line number, object)`` of every JSON object line; comments and blank lines skipped."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict):
            log.warning("%s line %d is not a JSON object; skipped", path, number)
            continue
        out.append((number, row))
    return out


class WatchedFile(Generic[T]):
    """The parsed entries of a JSON Lines file, re-read when it changes.

    ``parse(row)`` turns one JSON object into an entry, or returns None to
    skip it (a malformed line is logged and skipped rather than locking
    everyone out).
    """

    def __init__(self, path: Path | str | None, parse: Callable[[dict], T | None], what: str = "entry"):
        self.path = Path(path) if path else None
        self._parse = parse
        self._what = what
        self._entries: list[T] = []
        self._stamp: tuple | None = None
        self._trusted_after = 0
        self._lock = threading.Lock()

    def entries(self) -> list[T]:
        """The current entries (the same list object until the file changes)."""
        path = self.path
        if path is None:
            return []
        stamp = stat_stamp(path)
        if stamp is None:
            with self._lock:
                self._entries, self._stamp = [], None
            return []
        with self._lock:
            if stamp != self._stamp or time.time_ns() < self._trusted_after:
                self._entries = self._read(path)
                self._stamp = stamp
                # A change this recent may hide a second one behind the same stamp: look again next time.
                self._trusted_after = stamp[1] + int(RACY_SECONDS * 1e9)  # its mtime_ns
            return self._entries

    def _read(self, path: Path) -> list[T]:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("cannot read %s: %s", path, exc)
            return []
        out = []
        for number, row in _rows(text, path):
            entry = self._parse(row)
            if entry is None:
                log.warning("%s line %d is not a valid %s; skipped", path, number, self._what)
            else:
                out.append(entry)
        return out


def _lines(text: str) -> list[dict | str]:
    """Each line as its JSON object, or as the text itself when it is not one (comments, blanks)."""
    out: list[dict | str] = []
    for line in text.splitlines():
        try:
            row = json.loads(line) if line.strip() and not line.lstrip().startswith("#") else None
        except ValueError:
            row = None
        out.append(row if isinstance(row, dict) else line)
    return out


def edit_lines(path: Path | str, edit: Callable[[list[dict | str]], list[dict | str]]) -> None:
    """Rewrite a JSON Lines file as ``edit(lines)`` returns it, atomically and under the file's lock.

    ``lines`` holds each line as its JSON object, or as the plain text when
    it is not one (a comment, a blank or malformed line), which is written
    back verbatim. ``edit`` may raise to abandon the change; the file is
    then untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_name(path.name + ".lock")).hold():
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        new = edit(_lines(text))
        body = "".join((json.dumps(row, ensure_ascii=False) if isinstance(row, dict) else row) + "\n"
                       for row in new)
        atomic_write(path, body.encode("utf-8"), mode=0o600)


