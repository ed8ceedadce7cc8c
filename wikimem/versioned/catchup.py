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
  appended unless it is already there), as a new commit with the same message
  and author. History stays linear and nothing of either side is lost: a
  remote version an item replaces is still in the remote's history.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..fsio import atomic_write, remove_file
from ..models import RecallItem
from .itemdiff import diary_entries, render_diary, render_wiki, split_path, wiki_items
from .objects import GitRepo

__all__ = ["Diverged", "is_ancestor", "local_only", "fast_forward", "switch_to", "replay"]

# Commits walked at most when looking for an ancestor (a folder behind by more is re-cloned).
MAX_WALK = 100_000


class Diverged(Exception):
    """The local branch is not an ancestor of the commit to fast-forward to."""


def is_ancestor(git: GitRepo, old: bytes | None, new: bytes) -> bool:
    """Whether ``old`` is ``new`` or one of its ancestors (None is everyone's ancestor)."""
    return old is None or old in _walk(git, new, stop=old)


def local_only(git: GitRepo, head: bytes, base: bytes | None) -> list[bytes]:
    """The commits from ``base`` (excluded) to ``head``, oldest first; :class:`Diverged` if ``base`` is not an ancestor."""
    found = _walk(git, head, stop=base)
    if base is not None and base not in found:
        raise Diverged(f"{base.decode()[:12]} is not an ancestor of {head.decode()[:12]}")
    return [c for c in reversed(found) if c != base]


def _walk(git: GitRepo, start: bytes, stop: bytes | None) -> list[bytes]:
    """Commits from ``start`` backwards (first parents, then the rest), up to and including ``stop``."""
    out, todo, seen = [], [start], set()
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
    every local change on top of the remote's); the paths written."""
    head = git.head()
    if head == new:
        return []
    old_tree, new_tree = git.commit_tree(head), git.commit_tree(new)
    paths = sorted(git.changed_paths(old_tree, new_tree))
    written: dict[str, bytes | None] = {}
    for path in paths:
        data = git.blob_at(new_tree, path)
        if data is None:
            remove_file(root / path)
        else:
            atomic_write(root / path, data)
        found = git.entry(new_tree, path)
        written[path] = None if found is None else found[1]
    ignore = git.blob_at(new_tree, ".gitignore")
    if ignore is not None and ignore != git.blob_at(old_tree, ".gitignore"):
        atomic_write(root / ".gitignore", ignore)
        written[".gitignore"] = git.entry(new_tree, ".gitignore")[1]
    git.update_index(written)
    if not git.move_ref(head, new):
        raise RuntimeError(f"{root}: branch moved while the owner lock was held")
    return paths


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
            kind = split_path(path)
            if kind is None:
                continue
            old, new, current = (git.blob_at(parent_tree, path), git.blob_at(commit.tree, path),
                                 git.blob_at(tip_tree, path))
            picked = (_pick_wiki if kind[0] == "wiki" else _pick_diary)(kind[1], old, new, current)
            if picked != current:
                changes[path] = picked
        if not changes:
            continue
        tree = git.write_tree(tip_tree, changes)
        message = commit.message.decode("utf-8", "replace")
        author = commit.author.decode("utf-8", "replace").split(" <")[0]
        tip = git.make_commit(tree, [tip], message, author, when=commit.author_time)
    return tip


def _same(a: RecallItem | None, b: RecallItem | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.content, a.owner, a.source_conv, a.ts) == (b.content, b.owner, b.source_conv, b.ts)


def _pick_wiki(file: str, old: bytes | None, new: bytes | None, current: bytes | None) -> bytes | None:
    before, after, now = wiki_items(old, file), wiki_items(new, file), wiki_items(current, file)
    result = dict(now)
    for name in list(before) + [n for n in after if n not in before]:
        if _same(before.get(name), after.get(name)):
            continue
        if after.get(name) is None:
            result.pop(name, None)
        else:
            result[name] = after[name]
    if list(result.items()) == list(now.items()):
        return current
    return render_wiki(file, list(result.values()))


def _pick_diary(date: str, old: bytes | None, new: bytes | None, current: bytes | None) -> bytes | None:
    a, b, now = Counter(diary_entries(old)), Counter(diary_entries(new)), diary_entries(current)
    have = Counter(now)
    result = list(now)
    for entry in b.keys() | a.keys():
        if b[entry] > a[entry]:  # appended here: add what the current file does not hold yet
            result.extend([entry] * max(0, b[entry] - max(a[entry], have[entry])))
        elif a[entry] > b[entry]:  # removed here (a revert): remove it there too, the newest first
            for _ in range(min(a[entry] - b[entry], have[entry])):
                i = len(result) - 1 - result[::-1].index(entry)
                del result[i]
    if result == now:
        return current
    return render_diary(date, result)
