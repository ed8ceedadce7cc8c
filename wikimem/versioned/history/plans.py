"""Revert, roll back, restore — computed item by item on an in-memory copy of the files.

A plan never writes: it reads the current files, works out the new content
of each touched file and lists the conflicts. The versioned store previews
plans as they are, and applies one (under the owner lock, on files re-read
there) as a single commit.

Revert rules (SPEC §5): an item the commit changed goes back to what it was
before the commit only if it still holds what the commit wrote; if it
already holds the old content nothing is to be done; anything else is a
conflict. A diary entry the commit appended is removed (exactly that entry);
one it removed (an earlier revert) comes back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from wikimem.format import entry_key, layer_of, memory_path, parse_day, render_day, render_wiki, same_item, utc_now
from wikimem.store import Writer

from ..objects import GitRepo
from .itemdiff import ItemChange, path_changes, wiki_items

__all__ = ["Plan", "State", "plan_revert", "plan_apply", "plan_restore", "finish", "stage_writes"]


@dataclass
class Plan:
    """What an operation will change (``changes``), what stops it (``conflicts``), and its target."""

    target: str
    changes: list[ItemChange] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


class State:
    """Current file contents, read lazily, and the planned new contents."""

    def __init__(self, read: Callable[[str], bytes | None]):
        self._read = read
        self.original: dict[str, bytes | None] = {}
        self.current: dict[str, bytes | None] = {}

    def get(self, path: str) -> bytes | None:
        if path not in self.current:
            self.original[path] = self.current[path] = self._read(path)
        return self.current[path]

    def set(self, path: str, data: bytes | None) -> None:
        self.get(path)
        self.current[path] = data

    def changed(self) -> dict[str, tuple[bytes | None, bytes | None]]:
        return {p: (self.original[p], new) for p, new in sorted(self.current.items()) if new != self.original[p]}


def plan_revert(git: GitRepo, state: State, commit: bytes, conflicts: list[dict], force: bool) -> None:
    """Undo one commit on ``state``; conflicts are appended (and overridden when ``force``)."""
    obj = git.commit(commit)
    parent_tree = git.commit_tree(obj.parents[0]) if obj.parents else None
    short = commit.decode()[:12]
    for path in sorted(git.changed_paths(parent_tree, obj.tree)):
        kind = memory_path(path)
        if kind is None:
            continue
        folder, name = kind
        old, new = git.blob_at(parent_tree, path), git.blob_at(obj.tree, path)
        if folder == "wiki":
            _revert_wiki(state, path, name, old, new, conflicts, force, short)
        else:
            _revert_diary(state, path, name, old, new)


def plan_apply(git: GitRepo, state: State, base_tree: bytes | None, tip_tree: bytes | None, conflicts: list[dict],
               force: bool, label: str) -> None:
    """Apply what changed from ``base_tree`` to ``tip_tree`` (a staged run) onto ``state``, item by item.

    The mirror of a revert: an item goes to what the tip holds only if it
    still holds what the base held; one that already holds the tip's content
    is left alone; anything else changed on ``main`` since the run started and
    is a conflict (skipped unless ``force``). A diary entry the run appended is
    appended (sorted into its day), one it removed is removed.
    """
    for path in sorted(git.changed_paths(base_tree, tip_tree)):
        kind = memory_path(path)
        if kind is None:
            continue
        folder, name = kind
        base, tip = git.blob_at(base_tree, path), git.blob_at(tip_tree, path)
        if folder == "wiki":
            _revert_wiki(state, path, name, tip, base, conflicts, force, label,
                         reasons=("removed on main since", "changed on main since"))
        else:
            _revert_diary(state, path, name, tip, base)


def _revert_wiki(state, path, file, old, new, conflicts, force, short,
                 reasons=("removed again later", "changed again later")) -> None:
    before_items, after_items = wiki_items(old, file), wiki_items(new, file)
    now = wiki_items(state.get(path), file)
    result = dict(now)
    for name in list(before_items) + [n for n in after_items if n not in before_items]:
        before, after, current = before_items.get(name), after_items.get(name), now.get(name)
        if same_item(before, after):
            continue
        if same_item(current, before):
            continue  # already back to what it was
        if not same_item(current, after):
            conflicts.append({"kind": "wiki", "file": file, "name": name, "commit": short,
                              "reason": reasons[0] if current is None else reasons[1],
                              "current": None if current is None else current.content,
                              "wanted": None if before is None else before.content})
            if not force:
                continue
        if before is None:
            result.pop(name, None)
        else:
            result[name] = before
    if list(result.items()) != list(now.items()):
        state.set(path, render_wiki(file, list(result.values())))


def _revert_diary(state, path, date, old, new) -> None:
    before, after = parse_day(old, date), parse_day(new, date)
    added = Counter(map(entry_key, after)) - Counter(map(entry_key, before))
    removed = Counter(map(entry_key, before)) - Counter(map(entry_key, after))
    current = parse_day(state.get(path), date)
    result = list(current)
    for key, n in added.items():
        for _ in range(n):
            # remove the last occurrence: the appended one (an identical older twin stays)
            for i in range(len(result) - 1, -1, -1):
                if entry_key(result[i]) == key:
                    del result[i]
                    break
    readd = [e for e in before if removed[entry_key(e)] > 0]
    for entry in readd:
        removed[entry_key(entry)] -= 1
    result.extend(readd)
    if list(map(entry_key, result)) != list(map(entry_key, current)):
        state.set(path, render_day(date, result))


def plan_restore(git: GitRepo, state: State, head: bytes | None, target: bytes) -> None:
    """Make every tracked file equal to its content at ``target``."""
    head_tree, target_tree = git.commit_tree(head), git.commit_tree(target)
    for path in sorted(git.changed_paths(head_tree, target_tree)):
        if memory_path(path) is not None:
            state.set(path, git.blob_at(target_tree, path))


def finish(state: State, target: str, conflicts: list[dict]) -> tuple[Plan, dict]:
    """The plan (per-item changes against the current files) and the file writes it needs."""
    writes = state.changed()
    changes: list[ItemChange] = []
    for path, (old, new) in writes.items():
        changes.extend(path_changes(path, old, new))
    return Plan(target, changes, conflicts), writes


def stage_writes(writer: Writer, writes: dict[str, tuple[bytes | None, bytes | None]], action: str,
                 detail: str, *, always: bool = False) -> None:
    """Stage a plan's files (``{path: (old, new)}``) in the writer's unit, one journal record per file naming its
    item's file or day (and its layer); with no file at all and ``always``, one record of the action alone (an
    approval of nothing left to apply still makes its commit; an undo of nothing makes none)."""
    if not writes and always:
        writer.apply({}, {"ts": utc_now(), "action": action, "detail": detail})
    for path, (old, new) in writes.items():
        where = memory_path(path)
        assert where is not None, path  # a plan only ever touches memory files
        folder, name = where
        record = {"ts": utc_now(), "action": action, ("file" if folder == "wiki" else "date"): name, "detail": detail}
        layer = layer_of(path)[0]
        if layer is not None:
            record["layer"] = layer
        writer.apply({path: (old, new)}, record)
