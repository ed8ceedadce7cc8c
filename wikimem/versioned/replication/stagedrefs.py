"""The refs of staged runs: ``refs/heads/staged/<run>`` here, ``refs/remotes/origin/staged/<run>`` for the remote.

- :func:`validate_staged_run` — a run id that can be staged is one path component of a ref (checked once,
  at the edge: ``InvalidName`` otherwise);
- :func:`staged_tips` — ``{run: tip}`` of a repository; :func:`folder_staged` the same from the ref files
  alone (a cheap look at many owners);
- :func:`keep_discarded`, :func:`discarded_tips`, :func:`drop_discarded` — a discarded run's tip kept reachable under
  ``refs/wikimem/discarded/<run>`` (a wrong click can be undone) until housekeeping drops it after its days;
- :func:`follow_remote` — after a checked fetch, the tracking refs are what the remote holds and the local
  branches follow them (created, fast-forwarded, or removed once the remote removed them), each by
  compare-and-swap, so a staged write racing the fetch is never lost.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from dulwich.repo import Repo

from wikimem.errors import InvalidName

from ..objects import oid, ref

__all__ = ["STAGED", "TRACKED", "DISCARDED", "validate_staged_run", "staged_ref", "tracked_ref", "staged_tips",
           "folder_staged", "follow_remote", "is_before", "keep_discarded", "discarded_tips", "drop_discarded",
           "discarded_ages"]

log = logging.getLogger(__name__)

STAGED = b"refs/heads/staged/"
TRACKED = b"refs/remotes/origin/staged/"
DISCARDED = b"refs/wikimem/discarded/"  # a discarded run's tip, kept reachable for a while
# One ref component: no "..", no ".lock" at the end, no leading "." or "-", none of git's forbidden characters.
_RUN_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}")
# Names git gives a meaning of its own (``HEAD``, ``FETCH_HEAD``…) and the branch every run is based on; in any case
# (a case-insensitive file system makes ``Main`` the same ref file as ``main``).
_RESERVED = ("head", "main")


def validate_staged_run(run: object) -> str:
    """``run`` if it can name a staged branch (``refs/heads/staged/<run>``), else :class:`InvalidName`."""
    if (not isinstance(run, str) or not _RUN_RE.fullmatch(run) or ".." in run or "@{" in run
            or run.endswith((".", ".lock")) or run.casefold() in _RESERVED or run.upper().endswith("_HEAD")):
        raise InvalidName(f"run {str(run)[:60]!r} cannot be staged: a staged run id is 1-128 letters, digits and "
                          "_ . @ + - (not starting with . or -, no '..', not ending with . or .lock, not HEAD, "
                          "*_HEAD or main)")
    return run


def staged_ref(run: str):
    return ref(STAGED + validate_staged_run(run).encode("ascii"))


def tracked_ref(run: str):
    return ref(TRACKED + validate_staged_run(run).encode("ascii"))


def staged_tips(repo: Repo, prefix: bytes = STAGED) -> dict[str, bytes]:
    """``{run: tip}`` of the refs under ``prefix`` (names that are not valid run ids are ignored)."""
    out: dict[str, bytes] = {}
    for name, sha in repo.refs.as_dict(ref(prefix)).items():
        try:
            run = validate_staged_run(name.decode("ascii"))
        except (UnicodeDecodeError, InvalidName):
            continue
        out[run] = sha
    return out


def folder_staged(root: Path | str) -> dict[str, str]:
    """``{run: tip}`` of a memory folder's staged branches, from its ref files only (no repository opened)."""
    git = Path(root) / ".git"
    out: dict[str, str] = {}
    try:
        for line in (git / "packed-refs").read_bytes().splitlines():
            sha, _, name = line.partition(b" ")
            if name.startswith(STAGED) and len(sha) == 40:
                out[name[len(STAGED):].decode("ascii", "replace")] = sha.decode("ascii")
    except (FileNotFoundError, NotADirectoryError):
        pass
    folder = git / "refs" / "heads" / "staged"
    try:
        for path in folder.iterdir():
            if path.name.endswith(".lock"):
                continue
            value = path.read_bytes().strip()
            if len(value) == 40:
                out[path.name] = value.decode("ascii", "replace")
    except (FileNotFoundError, NotADirectoryError, OSError):
        pass
    return {run: sha for run, sha in out.items() if _RUN_RE.fullmatch(run)}


def keep_discarded(repo: Repo, run: str, tip: bytes) -> None:
    """Keep a discarded run's tip reachable (``refs/wikimem/discarded/<run>``; a later discard of the same id
    replaces it)."""
    repo.refs[ref(DISCARDED + validate_staged_run(run).encode("ascii"))] = oid(tip)


def discarded_tips(repo: Repo) -> dict[str, bytes]:
    """``{run: tip}`` of the discarded runs kept here."""
    return staged_tips(repo, DISCARDED)


def drop_discarded(repo: Repo, run: str, tip: bytes) -> bool:
    """Let a discarded run's commits go (compare-and-swap from ``tip``); whether the ref was removed."""
    return bool(repo.refs.remove_if_equals(ref(DISCARDED + validate_staged_run(run).encode("ascii")), oid(tip)))


def discarded_ages(root: Path | str, now: float) -> dict[str, float]:
    """``{run: seconds since it was discarded}`` from the ref files' times (no repository opened; a ref that was
    packed has no time of its own and is left out)."""
    folder = Path(root) / ".git" / DISCARDED.decode()
    out: dict[str, float] = {}
    try:
        for path in folder.iterdir():
            if not path.name.endswith(".lock") and _RUN_RE.fullmatch(path.name):
                out[path.name] = now - path.stat().st_mtime
    except (FileNotFoundError, NotADirectoryError, OSError):
        pass
    return out


def is_before(repo: Repo, old: bytes, new: bytes, limit: int = 10_000) -> bool:
    """Whether ``old`` is on the first-parent line of ``new`` (a staged branch is linear)."""
    cid: bytes | None = new
    for _ in range(limit):
        if cid is None:
            return False
        if cid == old:
            return True
        try:
            parents = repo[oid(cid)].parents  # type: ignore[attr-defined]
        except KeyError:
            return False
        cid = parents[0] if parents else None
    return False


def follow_remote(repo: Repo, fetched: dict[str, bytes], before: dict[str, bytes]) -> None:
    """Set the tracking refs to ``fetched`` (what the remote's staged branches hold, checked) and let the local
    branches follow; ``before`` is what the tracking refs held until now."""
    refs = repo.refs
    for run, sha in fetched.items():
        refs[tracked_ref(run)] = oid(sha)
        local = staged_tips(repo).get(run)
        if local is None:
            if before.get(run) == sha:
                continue  # settled here (approved or discarded), its removal on the remote still to come
            refs.add_if_new(staged_ref(run), oid(sha))
        elif local != sha and is_before(repo, local, sha):
            refs.set_if_equals(staged_ref(run), oid(local), oid(sha))
    for run, sha in before.items():
        if run in fetched:
            continue
        refs.remove_if_equals(tracked_ref(run), None)
        local = staged_tips(repo).get(run)
        if local == sha:  # settled on another host: nothing of it is only here
            refs.remove_if_equals(staged_ref(run), oid(sha))
