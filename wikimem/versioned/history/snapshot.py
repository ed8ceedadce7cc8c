"""The memory as it was at one commit, read from the object store (the work tree is not touched).

With ``overrides`` (``{path: bytes or None}``) some files read otherwise than the commit has them: the
overlay of a retrieve that includes staged runs (:mod:`wikimem.versioned.staging`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from wikimem.format import DIARY_DIR, WIKI_DIR, layer_of, layer_prefix, memory_path, parse_day, parse_wiki
from wikimem.models import DiaryItem, RecallItem
from wikimem.naming import validate_date
from wikimem.store import DiaryReader

from ..objects import GitRepo

__all__ = ["Snapshot"]


class Snapshot:
    """A read-only, store-like view of one commit (enough for :class:`~wikimem.MemoryIndex`)."""

    def __init__(self, git: GitRepo, commit: bytes, overrides: Mapping[str, bytes | None] | None = None,
                 revision: str | None = None, layer: str | None = None):
        self._git = git
        self.commit = commit.decode()
        self.layer_id = layer  # a character's layer of the folder (None: the shared one)
        self._revision = revision or self.commit
        self._tree = git.commit_tree(commit)
        self.root = Path(git.root)
        self._overrides = dict(overrides or {})
        self._wiki = _memory_files(git, self._tree, WIKI_DIR, self._overrides, layer)
        self._items: dict[str, list[RecallItem]] = {}
        self.diary = _SnapshotDiary(git, self._tree, self._overrides, layer)

    def layer(self, layer: str | None) -> Snapshot:
        """A character's layer at the same commit (as :meth:`wikimem.MemoryStore.layer`)."""
        if layer == self.layer_id:
            return self
        return Snapshot(self._git, self.commit.encode(), self._overrides, f"{self._revision}:{layer}", layer)

    @property
    def revision(self) -> str:
        return self._revision

    def files(self) -> list[str]:
        return sorted(self._wiki)

    def items(self, file: str | None = None) -> list[RecallItem]:
        if file is not None:
            return list(self._read(file))
        return [i for f in self.files() for i in self._read(f)]

    def get(self, file: str, name: str) -> RecallItem | None:
        wanted = " ".join(name.split())
        return next((i for i in self._read(file) if i.name == wanted), None)

    def blob_id(self, file: str) -> bytes | None:
        """The blob the commit holds for the RecallFile ``file`` (None: absent, or read otherwise: an override)."""
        found = self._wiki.get(file)
        return found if isinstance(found, bytes) else None

    def _read(self, file: str) -> list[RecallItem]:
        if file not in self._items:
            sha = self._wiki.get(file)
            self._items[file] = parse_wiki(_content(self._git, sha), file) if sha else []
        return self._items[file]

    def changed_files_since(self, revision) -> set[str] | None:
        return set() if revision == self._revision else None

    def invalidate(self) -> None:
        return None


class _SnapshotDiary(DiaryReader):
    def __init__(self, git: GitRepo, tree: bytes | None, overrides: Mapping[str, bytes | None] | None = None,
                 layer: str | None = None):
        self._git = git
        self._days = _memory_files(git, tree, DIARY_DIR, overrides, layer)

    def dates(self) -> list[str]:
        return sorted(self._days)

    def day(self, date: str) -> list[DiaryItem]:
        validate_date(date)
        sha = self._days.get(date)
        return parse_day(_content(self._git, sha), date) if sha is not None else []

    def signature(self) -> dict[str, object]:
        """``{date: what identifies the day's content}`` (its blob, or its override's bytes): a diary index
        re-reads the days whose entry changed."""
        return dict(self._days)


def _content(git: GitRepo, found: bytes | tuple[bytes]) -> bytes:
    """A file's bytes: a blob sha of the tree, or ``(bytes,)`` given by an override."""
    return found[0] if isinstance(found, tuple) else git.blob(found)


def _memory_files(git: GitRepo, tree: bytes | None, folder: str, overrides: Mapping[str, bytes | None] | None = None,
                  layer: str | None = None) -> dict[str, bytes | tuple[bytes]]:
    """``{file or date: blob sha, or (bytes,) of an override}`` of the memory files of one folder (``wiki`` or
    ``diary``) of a layer of a tree."""
    out: dict[str, bytes | tuple[bytes]] = {}
    for path, sha in git.files_under(tree, layer_prefix(layer) + folder).items():
        kind = memory_path(path)
        if kind is not None:
            out[kind[1]] = sha
    for path, data in (overrides or {}).items():
        kind = memory_path(path)
        if kind is None or kind[0] != folder or layer_of(path)[0] != layer:
            continue
        if data is None:
            out.pop(kind[1], None)
        else:
            out[kind[1]] = (data,)
    return out
