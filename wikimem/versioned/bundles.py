"""A memory folder's whole history as one git bundle, and a folder made again from one.

- :func:`write_bundle_of` — every branch of a folder (``refs/heads/*``) with all its history, as a
  version-2 git bundle (``git clone x.bundle`` reads it);
- :func:`bundle_refs` — the refs a bundle holds, read from its header;
- :func:`restore_bundle` — a new working folder from a bundle: the pack added whole (one pack, its index
  built), the branches set, ``main`` checked out.

The branch head is read once: objects are immutable, so a writer moving the
branch meanwhile changes nothing of what is bundled (the bundle is the
folder as of that head).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import BinaryIO

from dulwich.bundle import create_bundle_from_repo, write_bundle
from dulwich.repo import Repo

from wikimem.errors import InvalidName, RemoteRefused

from .forgetting import bump_generation
from .objects import BRANCH, GitRepo, init_repo, oid, ref
from .replication import STAGED, check_incoming, switch_to, validate_staged_run

__all__ = ["write_bundle_of", "bundle_refs", "restore_bundle", "branch_head", "BundleError"]

_SIGNATURES = (b"# v2 git bundle\n", b"# v3 git bundle\n")
_HEX_RE = re.compile(rb"[0-9a-f]{40}")


class BundleError(ValueError):
    """Not a bundle this host can restore (no ``main``, a prerequisite, a ref its pack lacks)."""


def write_bundle_of(root: Path | str, out: BinaryIO) -> dict[str, str]:
    """Write every branch of the folder ``root`` (a work tree or a bare repository) with all its history as a
    bundle to ``out``; the refs written (``{name: commit}``). A folder without commits raises ``BundleError``."""
    repo = Repo(str(root))
    try:
        heads = {}
        for name in repo.refs.keys(base=ref(b"refs/heads/")):
            full = ref(b"refs/heads/" + name)
            try:
                heads[full] = repo.refs[full]
            except KeyError:
                continue
        if BRANCH not in heads:
            raise BundleError(f"{root}: no branch main to bundle")
        # HEAD too, so that ``git clone x.bundle`` checks main out
        bundle = create_bundle_from_repo(repo, refs=[ref(b"HEAD"), *sorted(heads)])
        # dulwich reads the refs again, one by one: a write landing meanwhile moved main. What the bundle holds is
        # what it says (HEAD set to its main: both commits' objects are in its pack).
        held = {k: v for k, v in bundle.references.items() if k.startswith(b"refs/heads/")}
        if BRANCH not in held:
            raise BundleError(f"{root}: no branch main to bundle")
        bundle.references[ref(b"HEAD")] = held[BRANCH]
        write_bundle(out, bundle)
        return {k.decode(): v.decode() for k, v in held.items()}
    finally:
        repo.close()


def branch_head(root: Path | str) -> str | None:
    """The head of ``main`` of a folder (loose or packed ref), or None."""
    repo = Repo(str(root))
    try:
        return repo.refs[BRANCH].decode("ascii")
    except KeyError:
        return None
    finally:
        repo.close()


def _header(f: BinaryIO) -> tuple[dict[bytes, bytes], list[bytes]]:
    """``(refs, prerequisites)`` of a bundle; ``f`` is left at the start of its pack."""
    first = f.readline()
    if first not in _SIGNATURES:
        raise BundleError("not a git bundle (v2 or v3)")
    refs: dict[bytes, bytes] = {}
    prerequisites: list[bytes] = []
    while True:
        line = f.readline()
        if not line:
            raise BundleError("a bundle without its pack")
        if line == b"\n":
            return refs, prerequisites
        line = line.rstrip(b"\n")
        if line.startswith(b"@"):
            continue  # a v3 capability
        if line.startswith(b"-"):
            prerequisites.append(line[1:41])
            continue
        sha, _, name = line.partition(b" ")
        if len(sha) != 40 or not name:
            raise BundleError(f"a bundle ref line that does not parse: {line[:80]!r}")
        refs[name] = sha


def _check_branch(name: bytes, sha: bytes) -> None:
    """A branch a memory folder has: ``main``, or a staged run's (a valid run id); else :class:`BundleError`."""
    if not _HEX_RE.fullmatch(sha):
        raise BundleError(f"the bundle names {name[:80]!r} at {sha[:40]!r}, not a commit id")
    if name == BRANCH:
        return
    try:
        validate_staged_run(name[len(STAGED):].decode("ascii") if name.startswith(STAGED) else None)
    except (InvalidName, UnicodeDecodeError):
        raise BundleError(f"the bundle holds the branch {name[:120]!r}: a memory folder has only main and "
                          "staged/<run> branches (a valid run id); nothing was restored") from None


def bundle_refs(path: Path | str) -> dict[str, str]:
    """The refs a bundle file holds (``{name: commit}``)."""
    with open(path, "rb") as f:
        refs, _ = _header(f)
    return {k.decode("utf-8", "replace"): v.decode("ascii") for k, v in refs.items()}


def restore_bundle(path: Path | str, target: Path | str) -> str:
    """Make ``target`` (absent or empty) a working folder holding the bundle's branches, ``main`` checked out;
    the head of ``main``. A bundle is untrusted input like a remote: every commit is checked
    (:func:`~wikimem.versioned.replication.check_incoming`) before a ref moves, and the files are written as a
    clone writes them (:func:`~wikimem.versioned.replication.switch_to`, through the folder's door). Only
    ``refs/heads/*`` are set; a bundle with prerequisites (incremental) is refused."""
    target = Path(target)
    if target.exists() and any(target.iterdir()):
        raise FileExistsError(f"{target} is not empty")
    target.mkdir(parents=True, exist_ok=True)
    repo = init_repo(target)
    try:
        with open(path, "rb") as f:
            refs, prerequisites = _header(f)
            if prerequisites:
                raise BundleError("an incremental bundle (it has prerequisites): give the whole history")
            if BRANCH not in refs:
                raise BundleError("the bundle has no branch main")
            for name, sha in refs.items():
                if name.startswith(b"refs/heads/"):
                    _check_branch(name, sha)
            pack, commit, abort = repo.object_store.add_pack()
            try:
                shutil.copyfileobj(f, pack, 1 << 20)
            except BaseException:
                abort()
                raise
            commit()
        heads = {name: sha for name, sha in refs.items() if name.startswith(b"refs/heads/")}
        for sha in set(heads.values()):
            check_incoming(repo.object_store, sha, (), str(path))
        for name, sha in heads.items():
            if name != BRANCH:
                repo.refs.set_if_equals(ref(name), None, oid(sha))
    except RemoteRefused as exc:
        raise BundleError(f"{path}: {exc}") from None
    except KeyError as exc:
        raise BundleError(f"the bundle lacks object {exc}") from None
    finally:
        repo.close()
    git = GitRepo(target)
    try:
        switch_to(git, target, refs[BRANCH])  # the files through the door, then main
    finally:
        git.close()
    bump_generation(target)  # a folder put in place of another: every process opens it again
    return refs[BRANCH].decode("ascii")
