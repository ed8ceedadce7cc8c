"""The approved memory plus every staged run, kept up to date path by path, for a retrieve with ``include_staged``.

:meth:`Staging.overlay <wikimem.versioned.Staging.overlay>` plans every run
over ``main`` whenever anything moved. :class:`OverlayCache` keeps what it
planned: a new head of ``main`` re-plans only the paths it changed that a
run touches; a new, moved or settled run re-plans the paths it touches
(the runs touching a path are applied in order, oldest first, as before).
What a run is (its base, its first commit, the paths it touches) is read
once per tip. :class:`ViewStore` is the store an index reads: the current
:class:`~wikimem.versioned.Snapshot`, replaced as the overlay moves on,
telling the index which RecallFiles (and, through its diary's signature,
which days) changed, so the index catches up incrementally; a file ``main``
holds as it is on disk may be read from the live store (``main_items``:
its parse is cached there) instead of parsed again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wikimem.format import WIKI_DIR, memory_path
from wikimem.store import DiaryReader

from .history import Snapshot, State, path_changes, plan_apply
from .staging import item_key

if TYPE_CHECKING:
    from .staging import Staging

__all__ = ["OverlayCache", "ViewStore"]

_KEEP_CHANGES = 64  # change sets a ViewStore remembers (an index further behind rebuilds)


@dataclass(frozen=True)
class _Run:
    run: str
    tip: bytes
    first: int  # time of its first commit: runs apply oldest first
    base_tree: bytes | None
    tip_tree: bytes | None
    paths: frozenset[str]  # the memory files it changes


class OverlayCache:
    """One owner's overlay, updated by what moved since the last one (not thread-safe: its caller serialises)."""

    def __init__(self, staging: Staging):
        self.staging = staging
        self.git = staging.git
        self.key: tuple | None = None
        self._runs: dict[tuple[str, bytes], _Run] = {}
        self._overrides: dict[str, bytes | None] = {}  # path -> the view's content, where it differs from main
        self._keys: dict[str, frozenset] = {}  # path -> the staged items it holds (item_key)
        self._staged: frozenset = frozenset()  # the union of _keys

    def update(self, key: tuple) -> tuple[Snapshot, frozenset, set[str] | None]:
        """Bring the overlay to ``key`` (:meth:`Staging.overlay_key`): the view's snapshot, the staged items, and the
        paths whose content in the view may have changed since the last update (None: the first one)."""
        head, tips = key
        runs = sorted((self._run(run, tip.encode("ascii")) for run, tip in tips), key=lambda r: (r.first, r.run))
        touched = {p for r in runs for p in r.paths}
        if self.key is None:
            todo, changed = set(touched) | set(self._overrides), None
        else:
            old_head, old_tips = self.key
            main = (self.git.changed_paths(self.git.commit_tree(old_head.encode()), self.git.commit_tree(head.encode()))
                    if old_head != head else set())
            before, after = dict(old_tips), dict(tips)
            todo = main & (touched | set(self._overrides))
            for run in before.keys() | after.keys():
                if before.get(run) != after.get(run):
                    for tip in (before.get(run), after.get(run)):
                        if tip is not None:
                            todo |= self._run(run, tip.encode("ascii")).paths
            changed = main | todo
        if self._replan(todo, head, runs, touched):
            self._staged = frozenset().union(*self._keys.values()) if self._keys else frozenset()
        self._runs = {(r.run, r.tip): r for r in runs}
        self.key = key
        return Snapshot(self.git, head.encode(), dict(self._overrides)), self._staged, changed

    def _replan(self, paths: set[str], head: str, runs: list[_Run], touched: set[str]) -> bool:
        """Plan ``paths`` again over ``head``; whether the staged items of any of them changed."""
        tree = self.git.commit_tree(head.encode())
        before = {p: self._keys.get(p) for p in paths}
        state = State(lambda p: self.git.blob_at(tree, p))
        for r in runs:
            if r.paths & paths:
                plan_apply(self.git, state, r.base_tree, r.tip_tree, [], True, r.tip.decode()[:12])
        for path in paths:
            self._overrides.pop(path, None)
            self._keys.pop(path, None)
            if path not in touched:
                continue
            new = state.get(path)  # (what the runs made of it; read from main when none changed it)
            main = state.original[path]
            if new == main:
                continue
            self._overrides[path] = new
            keys = frozenset(item_key(c) for c in path_changes(path, main, new) if c.status != "removed")
            if keys:
                self._keys[path] = keys
        return any(self._keys.get(p) != before[p] for p in paths)

    def _run(self, run: str, tip: bytes) -> _Run:
        found = self._runs.get((run, tip))
        if found is None:
            base = self.staging.base_of(tip)
            commits = self.staging.commits(tip)
            first = self.git.commit(commits[-1] if commits else tip).commit_time
            base_tree, tip_tree = self.git.commit_tree(base), self.git.commit_tree(tip)
            paths = frozenset(p for p in self.git.changed_paths(base_tree, tip_tree) if memory_path(p) is not None)
            found = _Run(run, tip, first, base_tree, tip_tree, paths)
            self._runs[(run, tip)] = found
        return found


class ViewStore:
    """A read-only store over a snapshot that :meth:`replace` moves on, for a :class:`~wikimem.MemoryIndex`: its
    ``revision`` changes with each replacement and ``changed_files_since`` says which RecallFiles changed."""

    def __init__(self, snapshot: Snapshot, main_items: Callable[[str, bytes], list | None] | None = None):
        self._snapshot = snapshot
        self._main_items = main_items  # (file, its blob in main) -> the items, parsed already, or None
        self.root = snapshot.root
        self._revision = 0
        self._changes: dict[int, set[str] | None] = {}
        self.diary = _ViewDiary(self)

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def revision(self) -> str:
        return f"view:{self._revision}"

    def replace(self, snapshot: Snapshot, paths: Iterable[str] | None) -> None:
        """Move on to ``snapshot``; ``paths``: the memory paths that may differ (None: anything may)."""
        files = None if paths is None else {k[1] for k in map(memory_path, paths) if k is not None and k[0] == WIKI_DIR}
        self._snapshot = snapshot
        self._revision += 1
        self._changes[self._revision] = files
        self._changes.pop(self._revision - _KEEP_CHANGES, None)

    def changed_files_since(self, revision: object) -> set[str] | None:
        if not isinstance(revision, str) or not revision.startswith("view:"):
            return None
        out: set[str] = set()
        for n in range(int(revision[5:]) + 1, self._revision + 1):
            found = self._changes.get(n)
            if found is None:
                return None
            out |= found
        return out

    def files(self) -> list[str]:
        return self._snapshot.files()

    def items(self, file: str | None = None):
        blob = self._snapshot.blob_id(file) if file is not None and self._main_items is not None else None
        if blob is not None and self._main_items is not None:
            found = self._main_items(file, blob)  # type: ignore[arg-type]
            if found is not None:
                return found
        return self._snapshot.items(file)

    def get(self, file: str, name: str):
        return self._snapshot.get(file, name)

    def invalidate(self) -> None:
        return None


class _ViewDiary(DiaryReader):
    """The diary of a :class:`ViewStore`'s current snapshot, with its signature (each day's content id)."""

    def __init__(self, view: ViewStore):
        self._view = view

    def dates(self) -> list[str]:
        return self._view.snapshot.diary.dates()

    def day(self, date: str):
        return self._view.snapshot.diary.day(date)

    def signature(self) -> dict[str, object]:
        return self._view.snapshot.diary.signature()
