"""Catching a memory folder up with commits fetched from its remote.

Two moves, both made by the caller under the owner lock, with the work tree
equal to ``HEAD`` (hand edits committed first):

- :func:`fast_forward` — the local branch is an ancestor of the fetched
  commit: write the files that differ, then move ``main`` (compare-and-swap).
  Files go first: a crash in between leaves files newer than ``HEAD``, which
  the next writer commits as a hand edit whose replay is a no-op, whereas the
  other order could commit the old files back over the remote's changes;
- :func:`replay` — the local branch has commits the remote lacks (async
  mode, or hand edits) and the remote moved too: each local commit is applied
  again, item by item, on top of the remote's head (an added or changed item
  takes the local value, a removed one goes, a diary entry appended locally is
  appended unless it is already there, a setting written locally takes its
  local value), as a new commit with the same message and author. History
  stays linear and nothing of either side is lost: a remote version an item
  replaces is still in the remote's history.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from wikimem.errors import DamagedFolder
from wikimem.format import (
    SETTINGS_PATH,
    entry_key,
    memory_path,
    parse_day,
    parse_settings,
    parse_wiki,
    render_day,
    render_settings,
    render_wiki,
    same_item,
)
from wikimem.store import GITIGNORE_NAME, Door

from ..objects import GitRepo
from .incoming import FILE_MODES

__all__ = ["Diverged", "is_ancestor", "merge_base", "local_only", "fast_forward", "switch_to", "replay"]

# Commits walked at most when looking for an ancestor (a folder behind by more is re-cloned).
MAX_WALK = 100_000
# The files at the top of a folder a catch-up keeps as the branch has them (the journal is this host's own).
_KEPT = (SETTINGS_PATH, GITIGNORE_NAME)


class Diverged(Exception):
    """The local branch is not an ancestor of the commit to fast-forward to."""


def is_ancestor(git: GitRepo, old: bytes | None, new: bytes) -> bool:
    """Whether ``old`` is ``new`` or one of its ancestors (None is everyone's ancestor)."""
    return old is None or old in _walk(git, new, stop=old)


def merge_base(git: GitRepo, a: bytes, b: bytes) -> bytes | None:
    """The newest commit both ``a`` and ``b`` descend from (None: unrelated histories)."""
    theirs = set(_walk(git, b, stop=None))
    for cid in _walk(git, a, stop=None):
        if cid in theirs:
            return cid
    return None


def local_only(git: GitRepo, head: bytes, base: bytes | None) -> list[bytes]:
    """The commits from ``base`` (excluded) to ``head``, oldest first; :class:`Diverged` if ``base`` is not an
    ancestor."""
    found = _walk(git, head, stop=base)
    if base is not None and base not in found:
        raise Diverged(f"{base.decode()[:12]} is not an ancestor of {head.decode()[:12]}")
    return [c for c in reversed(found) if c != base]


def _walk(git: GitRepo, start: bytes, stop: bytes | None) -> list[bytes]:
    """Commits from ``start`` backwards (first parents, then the rest), up to and including ``stop``."""
    out: list[bytes] = []
    todo, seen = [start], set()
    while todo and len(out) < MAX_WALK:
        cid = todo.pop()
        if cid in seen:
            continue
        seen.add(cid)
        out.append(cid)
        if cid == stop:
            break
        todo.extend(reversed(git.commit(cid).parents))
    return out


def fast_forward(git: GitRepo, root: Path, new: bytes) -> list[str]:
    """Make the work tree and ``main`` equal to ``new``, a descendant of ``HEAD``; the paths written."""
    head = git.head()
    if head == new:
        return []
    if not is_ancestor(git, head, new):
        raise Diverged(f"{(head or b'none').decode()[:12]} is not an ancestor of {new.decode()[:12]}")
    return switch_to(git, root, new)


def switch_to(git: GitRepo, root: Path, new: bytes) -> list[str]:
    """Make the work tree and ``main`` equal to ``new`` whatever it is (after :func:`replay`: it holds
    every local change on top of the remote's; for a clone, ``main`` is not set yet); the paths written.

    Every file goes through the folder's :class:`~wikimem.store.Door`: the memory files that differ, and
    the files at the top this host keeps as the branch has them (``settings.json``, ``.gitignore``) —
    compared with the disk, so a copy left stale by an older host is put right too. A path that is
    not a regular memory file of ``new`` is :class:`~wikimem.errors.DamagedFolder` (the remote's
    commits are checked before they are fetched: see :mod:`wikimem.versioned.replication.incoming`).
    """
    head = git.head()
    if head == new:
        return []
    door = Door(root)
    old_tree, new_tree = git.commit_tree(head), git.commit_tree(new)
    # (only memory files are the host's: a name that is not one is never written)
    paths = sorted(p for p in git.changed_paths(old_tree, new_tree) if memory_path(p) is not None)
    written: dict[str, bytes | None] = {}
    for path in paths:
        found = git.entry(new_tree, path)
        if found is not None and found[0] not in FILE_MODES:
            raise DamagedFolder(f"{path} of commit {new.decode()[:12]} is not a regular file (mode {found[0]:06o})")
        door.put(path, None if found is None else git.blob(found[1]))
        written[path] = None if found is None else found[1]
    for top in _KEPT:
        found = git.entry(new_tree, top)
        if found is None:
            if top == SETTINGS_PATH and git.entry(old_tree, top) is not None:
                door.remove(top)
                written[top] = None
            continue
        want = git.blob(found[1]) if found[0] in FILE_MODES else None
        if want is not None and _on_disk(door, top) != want:
            door.write(top, want)
            written[top] = found[1]
    git.update_index(written)
    if not git.move_ref(head, new):
        raise RuntimeError(f"{root}: branch moved while the owner lock was held")
    return paths


def _on_disk(door: Door, rel: str) -> bytes | None:
    try:
        return door.read(rel)
    except DamagedFolder:  # a link or a FIFO in its place: written over
        return None


def replay(git: GitRepo, commits: list[bytes], onto: bytes) -> bytes:
    """New commits on top of ``onto`` doing, item by item, what ``commits`` did; the new tip.

    Nothing is written to the work tree or the branch: the caller pushes the
    tip, then :func:`switch_to` s it. A commit whose changes are all
    already on ``onto`` is dropped.
    """
    tip = onto
    for cid in commits:
        commit = git.commit(cid)
        parent_tree = git.commit_tree(commit.parents[0]) if commit.parents else None
        tip_tree = git.commit_tree(tip)
        changes: dict[str, bytes | None] = {}
        for path in sorted(git.changed_paths(parent_tree, commit.tree)):
            kind = memory_path(path)
            if kind is None:
                continue
            old, new, current = (git.blob_at(parent_tree, path), git.blob_at(commit.tree, path),
                                 git.blob_at(tip_tree, path))
            picked = (_pick_wiki if kind[0] == "wiki" else _pick_diary)(kind[1], old, new, current)
            if picked != current:
                changes[path] = picked
        old, new = git.blob_at(parent_tree, SETTINGS_PATH), git.blob_at(commit.tree, SETTINGS_PATH)
        if old != new:  # a settings write: the keys it changed, on top of the remote's settings
            current = git.blob_at(tip_tree, SETTINGS_PATH)
            picked = _pick_settings(old, new, current)
            if picked != current:
                changes[SETTINGS_PATH] = picked
        if not changes:
            continue
        tree = git.write_tree(tip_tree, changes)
        message = commit.message.decode("utf-8", "replace")
        author = commit.author.decode("utf-8", "replace").split(" <")[0]
        tip = git.make_commit(tree, [tip], message, author, when=commit.author_time)
    return tip


def _pick_settings(old: bytes | None, new: bytes | None, current: bytes | None) -> bytes | None:
    """``current`` settings with the keys that changed from ``old`` to ``new`` set (or unset) as in ``new``."""
    before, after, now = parse_settings(old), parse_settings(new), parse_settings(current)
    result = dict(now)
    for key in before.keys() | after.keys():
        if before.get(key) == after.get(key):
            continue
        if key in after:
            result[key] = after[key]
        else:
            result.pop(key, None)
    return current if result == now else render_settings(result)


def _pick_wiki(file: str, old: bytes | None, new: bytes | None, current: bytes | None) -> bytes | None:
    before = {i.name: i for i in parse_wiki(old, file)}
    after = {i.name: i for i in parse_wiki(new, file)}
    now = {i.name: i for i in parse_wiki(current, file)}
    result = dict(now)
    for name in list(before) + [n for n in after if n not in before]:
        if same_item(before.get(name), after.get(name)):
            continue
        if after.get(name) is None:
            result.pop(name, None)
        else:
            result[name] = after[name]
    if list(result) == list(now) and all(same_item(result[n], now[n]) for n in now):
        return current
    return render_wiki(file, list(result.values()))


def _pick_diary(date: str, old: bytes | None, new: bytes | None, current: bytes | None) -> bytes | None:
    before, after, now = parse_day(old, date), parse_day(new, date), parse_day(current, date)
    a, b, have = Counter(map(entry_key, before)), Counter(map(entry_key, after)), Counter(map(entry_key, now))
    result = list(now)
    for entry in after:  # appended here: add what the current file does not hold yet
        key = entry_key(entry)
        missing = b[key] - max(a[key], have[key])
        if missing > 0:
            result.append(entry)
            have[key] += 1
    for key in a.keys() - set():  # removed here (a revert): remove it there too, the newest first
        for _ in range(min(max(0, a[key] - b[key]), have[key])):
            i = max(j for j, e in enumerate(result) if entry_key(e) == key)
            del result[i]
            have[key] -= 1
    if list(map(entry_key, result)) == list(map(entry_key, now)):
        return current
    return render_day(date, result)
