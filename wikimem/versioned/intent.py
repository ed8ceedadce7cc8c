"""The write in flight of one memory folder: recorded before its files are touched, so a crash can be undone.

``.git/wikimem-intent.json`` (written atomically, fsynced) says which
files a unit is changing and from which commit it started; just before
the branch moves it also holds the new commit id and the result an
idempotent retry will replay. Whoever takes the owner lock next reconciles
it (:func:`reconcile`):

- the branch is still where the unit started → the unit never committed:
  its files are put back as that commit has them and the journal is cut
  back, so nothing of the half-done write remains (and the client's retry,
  never acknowledged, writes it once);
- the branch is at the unit's new commit → the unit committed: the steps
  after the branch move (``.git/index``, the history index with its
  idempotent result) are completed, so the retry replays.

Either way the write is never committed later as an anonymous
``external-edit``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from wikimem.fsio import atomic_write, read_bytes, remove_file

__all__ = ["Intent", "INTENT_NAME"]

INTENT_NAME = "wikimem-intent.json"
log = logging.getLogger(__name__)


class Intent:
    """The intent file of one repository, and the in-memory copy of the unit that owns it."""

    def __init__(self, git_dir: Path):
        self.path = Path(git_dir) / INTENT_NAME
        self.current: dict[str, Any] | None = None

    def read(self) -> dict[str, Any] | None:
        """What a previous writer left, or None (a file that does not parse is no intent: it was never complete)."""
        data = read_bytes(self.path)
        if data is None:
            return None
        try:
            found = json.loads(data)
        except ValueError:
            log.warning("%s: unreadable intent file ignored", self.path)
            return None
        return found if isinstance(found, dict) and isinstance(found.get("paths"), list) else None

    def begin(self, head: str | None, journal_size: int, paths: tuple[str, ...]) -> None:
        """Record (or extend) the unit's write before ``paths`` are touched."""
        if self.current is None:
            self.current = {"state": "writing", "head": head, "journal_size": journal_size, "paths": []}
        new = [p for p in paths if p not in self.current["paths"]]
        if new:
            self.current["paths"].extend(new)
            self._save()

    def committing(self, commit: str, result: dict[str, Any] | None) -> None:
        """Record the commit about to become the branch, with what its retry replays."""
        if self.current is None:
            return
        self.current.update(state="committing", commit=commit, result=result)
        self._save()

    def clear(self) -> None:
        self.current = None
        remove_file(self.path)

    def _save(self) -> None:
        atomic_write(self.path, json.dumps(self.current, ensure_ascii=True, default=str).encode("ascii"))
