"""One memory folder's replication to its git remote: what the versioned store does in its critical section.

The remote-tracking ref ``refs/remotes/origin/main`` is what this folder
knows the remote holds: a push that succeeds sets it, a fetch sets it.
Everything on ``main`` beyond it is not replicated yet (the *lag*).

- ``sync`` mode: :meth:`Replica.before_move` pushes the new commit with
  compare-and-swap from the tracking ref *before* the local branch moves, so
  a write is acknowledged only once its commit is on the remote. A push that
  fails leaves the branch where it was and the writer restores the files; a
  remote that moved is fetched first (so the next unit starts from it), then
  :class:`~wikimem.versioned.replication.remote.RemoteMoved` is raised.
- ``async`` mode: the branch moves at once; :meth:`Replica.push_pending`
  (called by a background pusher) sends what is beyond the tracking ref.
  :meth:`Replica.before_move` only refuses a write that would take the lag
  past ``max_lag`` commits (:class:`ReplicationLagging`, retriable).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import cast

from dulwich.objects import Commit
from dulwich.repo import Repo

from ..objects import BRANCH, GitRepo, oid, ref
from .catchup import is_ancestor
from .gitio import TRACKING, set_tracking
from .remote import Remote, RemoteMissing, RemoteMoved, RemoteRefused, RemoteUnavailable

__all__ = ["Replica", "ReplicationLagging", "MODES", "tracking", "folder_lag", "REPLACED", "replaced",
           "note_replaced"]

log = logging.getLogger(__name__)

MODES = ("sync", "async")
DEFAULT_MAX_LAG = 1000
# What this folder knew its remote to hold when a fetch found the remote's main no longer descending from it
# (a history replaced: a forget or an erasure on another host). Removed once followed (``Forgetting.follow``).
REPLACED = ref(b"refs/wikimem/replaced")


class ReplicationLagging(RemoteUnavailable):
    """Async mode: this owner has ``max_lag`` commits not on the remote yet; writes wait for the pusher."""

    code = "replication_lagging"


def tracking(repo: Repo) -> bytes | None:
    """What this folder knows the remote's ``main`` to be (None: nothing known yet)."""
    return _value(repo, TRACKING)


def replaced(repo: Repo) -> bytes | None:
    """What a fetch noted as :data:`REPLACED` (None: no replaced history to follow)."""
    return _value(repo, REPLACED)


def _value(repo: Repo, name) -> bytes | None:
    try:
        return repo.refs[name]
    except KeyError:
        return None


class Replica:
    """The remote of one folder and the replication mode."""

    def __init__(self, remote: Remote, mode: str = "sync", max_lag: int = DEFAULT_MAX_LAG,
                 report: Callable[[RemoteRefused | None], None] | None = None):
        if mode not in MODES:
            raise ValueError(f"replication mode must be one of {', '.join(MODES)}, got {mode!r}")
        if isinstance(max_lag, bool) or not isinstance(max_lag, int) or max_lag < 1:
            raise ValueError(f"max_lag must be a positive integer, got {max_lag!r}")
        self.remote = remote
        self.mode = mode
        self.max_lag = max_lag
        # Told of every fetch's verdict: the refusal of the remote's main, or None once a fetch was accepted.
        self.report = report

    def __repr__(self) -> str:
        return f"Replica({self.remote.shown!r}, {self.mode})"

    # -- the critical section ----------------------------------------------------

    def before_move(self, git: GitRepo, head: bytes | None, new: bytes) -> None:
        """Called with the owner lock held, after the commit object is made and before ``main`` moves."""
        if self.mode == "sync":
            self.push(git, new)
        elif self.lag(git, head) + 1 > self.max_lag:
            raise ReplicationLagging(f"{self.max_lag} commits are waiting for {self.remote.shown}; "
                                     f"writes resume as they are pushed", self.remote.shown)

    def push(self, git: GitRepo, new: bytes) -> None:
        """Push ``new`` with compare-and-swap from the tracking ref (creating the remote once if it is missing)."""
        for attempt in range(3):
            expected = tracking(git.repo)
            try:
                self.remote.push(git.repo, new.decode(), expected.decode() if expected else None)
                return
            except RemoteMissing:
                # Create it only for a folder that never replicated: a remote repository that vanished
                # after we pushed to it is an operator's matter, never silently seeded again.
                if attempt or expected is not None or not self.remote.create():
                    raise
            except RemoteMoved as moved:
                theirs = moved.head.encode() if moved.head else None
                if theirs is not None and theirs != expected and _holds(git, theirs) and is_ancestor(git, theirs, new):
                    # The remote holds our own older commit (another process of this host pushed it
                    # and our tracking ref is behind): move the tracking ref and push the rest.
                    set_tracking(git.repo, theirs)
                    continue
                self.fetch(git)
                raise
        raise RemoteMoved(f"push: {self.remote.shown} keeps moving", self.remote.shown)

    def replace(self, git: GitRepo, new: bytes, expected: bytes | None) -> None:
        """Replace the remote's ``main`` with ``new``, a rewritten history, by compare-and-swap from ``expected``
        (what this folder knows it holds). A remote that moved is fetched, then :class:`RemoteMoved` raised."""
        try:
            self.remote.replace(git.repo, new.decode(), expected.decode() if expected else None)
        except RemoteMissing:
            if expected is not None or not self.remote.create():
                raise
            self.remote.replace(git.repo, new.decode(), None)
        except RemoteMoved:
            self.fetch(git)
            raise

    def fetch(self, git: GitRepo) -> bytes | None:
        """Fetch the remote's ``main`` (objects + tracking ref), best effort; its head.

        A remote whose new commits break the rules of
        :mod:`~wikimem.versioned.replication.incoming` raises :class:`RemoteRefused`
        (reported, nothing moved). A remote whose history was replaced (not
        a descendant of what was known: a forget, an erasure) is noted for
        the next settle to follow.
        """
        before = tracking(git.repo)
        try:
            head = self.remote.fetch(git.repo)
        except RemoteMissing:
            return None
        except RemoteRefused as exc:
            self._tell(exc)
            raise
        self._tell(None)
        found = head.encode() if head else None
        note_replaced(git, before, found)
        return found

    def _tell(self, refusal: RemoteRefused | None) -> None:
        if self.report is not None:
            try:
                self.report(refusal)
            except Exception:  # a report is bookkeeping: the fetch's own outcome stands
                log.exception("reporting the fetch of %s failed", self.remote.shown)

    # -- lag -----------------------------------------------------------------------

    def lag(self, git: GitRepo, head: bytes | None = None) -> int:
        """Commits on ``main`` that the remote is not known to hold (counted up to ``max_lag``)."""
        head = git.head() if head is None else head
        known = tracking(git.repo)
        if head is None or head == known:
            return 0
        count = 0
        cid: bytes | None = head
        while cid is not None and cid != known and count <= self.max_lag:  # (diverged: every local commit)
            count += 1
            parents = git.commit(cid).parents
            cid = parents[0] if parents else None
        return count

    def push_pending(self, git: GitRepo) -> bool:
        """Async: push ``main`` if it is ahead of the tracking ref; True when something was pushed."""
        head = git.head()
        if head is None or head == tracking(git.repo):
            return False
        self.push(git, head)
        return True


def folder_lag(root, cap: int = DEFAULT_MAX_LAG) -> int:
    """Commits of the folder's ``main`` its remote is not known to hold (up to ``cap``), without opening a store."""
    repo = Repo(str(root))
    try:
        try:
            cid: bytes | None = repo.refs[BRANCH]
        except KeyError:
            return 0
        known, count = tracking(repo), 0
        while cid is not None and cid != known and count < cap:
            count += 1
            parents = cast(Commit, repo[cid]).parents
            cid = parents[0] if parents else None
        return count
    finally:
        repo.close()


def _holds(git: GitRepo, sha: bytes) -> bool:
    return oid(sha) in git.store


def note_replaced(git: GitRepo, before: bytes | None, after: bytes | None) -> None:
    """After a fetch moved the tracking ref from ``before`` to ``after``: remember ``before`` as :data:`REPLACED`
    when ``after`` does not descend from it (the first such value is kept until followed)."""
    if before is None or after is None or before == after or replaced(git.repo) is not None:
        return
    if oid(before) not in git.store or is_ancestor(git, before, after):
        return
    git.repo.refs.set_if_equals(REPLACED, None, oid(before))
