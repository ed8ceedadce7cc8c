"""A history walk over a folder's commits: :func:`parents_first` (the history index and the forget rewrite)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .objects import GitRepo

__all__ = ["parents_first"]


def parents_first(git: GitRepo, tips, *, stop=None, cache: dict | None = None) -> list[bytes]:
    """Every commit reachable from ``tips``, parents before children (a post-order walk).

    ``stop(cid)`` True: that commit and what lies behind it are not walked (the
    caller knows them already); ``cache``: each commit read is kept there.
    """
    order: list[bytes] = []
    seen: set[bytes] = set()
    stack: list[tuple[bytes, bool]] = [(t, False) for t in tips]
    while stack:
        cid, expanded = stack.pop()
        if expanded:
            order.append(cid)
            continue
        if cid in seen:
            continue
        seen.add(cid)
        if stop is not None and stop(cid):
            continue
        stack.append((cid, True))
        commit = cache.get(cid) if cache is not None else None
        if commit is None:
            commit = git.commit(cid)
            if cache is not None:
                cache[cid] = commit
        stack.extend((p, False) for p in reversed(commit.parents) if p not in seen)
    return order
