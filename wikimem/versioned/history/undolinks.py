"""Which commits were undone, and by what: the links between undo commits and what they undid.

An undo commit (``revert`` or ``rollback``) names what it undid in its
trailers: ``Wikimem-Reverts`` (commit ids; full ids one per line since the
operators' issue, twelve-character prefixes on one line before it) and
``Wikimem-Reverts-Run`` (run ids). Commits are immutable, so what a commit
says it undid is parsed once per process and kept by commit id.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from ..messages import trailer_values
from ..objects import GitRepo

__all__ = ["UndoInfo", "UndoLinks", "undo_info", "undo_links"]

_CACHE_SIZE = 8192
_cache: OrderedDict[str, UndoInfo] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class UndoInfo:
    """What one undo commit undid: commit ids (or prefixes, in old commits) and runs."""

    commit: str
    reverts: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"commit": self.commit, "reverts": list(self.reverts), "runs": list(self.runs)}


def undo_info(git: GitRepo, cid: str) -> UndoInfo:
    """What commit ``cid`` says it undid (empty for a commit that undid nothing)."""
    with _cache_lock:
        hit = _cache.get(cid)
        if hit is not None:
            _cache.move_to_end(cid)
            return hit
    message = git.commit(cid.encode()).message.decode("utf-8", "replace")
    reverts = tuple(v for value in trailer_values(message, "Reverts") for v in value.split())
    info = UndoInfo(cid, reverts, tuple(trailer_values(message, "Reverts-Run")))
    with _cache_lock:
        _cache[cid] = info
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return info


@dataclass
class UndoLinks:
    """The undo commits of one history, looked up from what they undid."""

    infos: list[UndoInfo] = field(default_factory=list)  # newest first
    _by_commit: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _by_run: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for info in self.infos:
            for target in info.reverts:
                self._by_commit.setdefault(target, []).append(info.commit)
            for run in info.runs:
                self._by_run.setdefault(run, []).append(info.commit)

    def reverted_by(self, cid: str) -> list[str]:
        """The undo commits that undid commit ``cid``, newest first (by full id or an old 12-character prefix)."""
        found = self._by_commit.get(cid, []) + self._by_commit.get(cid[:12], [])
        return list(dict.fromkeys(found))

    def run_rolled_back_by(self, run: str) -> list[str]:
        """The rollback commits that name ``run``, newest first."""
        return list(self._by_run.get(run, []))

    def live(self, undo: str) -> bool:
        """Whether an undo commit still stands (no later undo undid it)."""
        return not self.reverted_by(undo)


def undo_links(git: GitRepo, undo_commits: list[str]) -> UndoLinks:
    """The links of a history whose undo commits (newest first) are ``undo_commits``."""
    return UndoLinks([undo_info(git, cid) for cid in undo_commits])
