"""The memory as it was at one commit, read from the object store (the work tree is not touched)."""

from __future__ import annotations

from datetime import date as _date
from pathlib import Path

from ..models import DiaryItem, RecallItem
from ..naming import validate_date
from .itemdiff import diary_entries, wiki_items
from .objects import GitRepo

__all__ = ["Snapshot"]


class Snapshot:
    """A read-only, store-like view of one commit (enough for :class:`~wikimem.MemoryIndex`)."""

    def __init__(self, git: GitRepo, commit: bytes):
        self._git = git
        self.commit = commit.decode()
        self._tree = git.commit_tree(commit)
        self.root = Path(git.root)
        self._wiki = {p[len("wiki/"):-3]: sha for p, sha in git.files_under(self._tree, "wiki").items()
                      if p.endswith(".md")}
        self._items: dict[str, list[RecallItem]] = {}
        self.diary = _SnapshotDiary(git, self._tree)

    @property
    def revision(self) -> str:
        return self.commit

    def files(self) -> list[str]:
        return sorted(self._wiki)

    def items(self, file: str | None = None) -> list[RecallItem]:
        if file is not None:
            return list(self._read(file))
        return [i for f in self.files() for i in self._read(f)]

    def get(self, file: str, name: str) -> RecallItem | None:
        wanted = " ".join(name.split())
        return next((i for i in self._read(file) if i.name == wanted), None)

    def _read(self, file: str) -> list[RecallItem]:
        if file not in self._items:
            sha = self._wiki.get(file)
            self._items[file] = list(wiki_items(self._git.blob(sha), file).values()) if sha else []
        return self._items[file]

    def changed_files_since(self, revision) -> set[str] | None:
        return set() if revision == self.commit else None

    def invalidate(self) -> None:
        return None


class _SnapshotDiary:
    def __init__(self, git: GitRepo, tree: bytes | None):
        self._git = git
        self._days = {p[len("diary/"):-3]: sha for p, sha in git.files_under(tree, "diary").items()
                      if p.endswith(".md")}

    def dates(self) -> list[str]:
        return sorted(self._days)

    def day(self, date: str) -> list[DiaryItem]:
        validate_date(date)
        sha = self._days.get(date)
        if sha is None:
            return []
        return [DiaryItem(date, *e) for e in diary_entries(self._git.blob(sha))]

    def window(self, start: str, end: str) -> list[DiaryItem]:
        first, last = _date.fromisoformat(validate_date(start)), _date.fromisoformat(validate_date(end))
        if first > last:
            first, last = last, first
        out: list[DiaryItem] = []
        for d in self.dates():
            if first.isoformat() <= d <= last.isoformat():
                out.extend(self.day(d))
        return out
