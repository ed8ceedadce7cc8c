"""What a remote sends is untrusted input: every new commit is checked before any ref moves to it.

Design notes: docs/explanation/replication-internals.md (``wikimem/versioned/replication/incoming.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

from dulwich.errors import ObjectFormatException
from dulwich.objects import Blob, Commit, ShaFile, Tree

from wikimem.errors import RemoteRefused
from wikimem.format import LAYERS_DIR, MEMORY_DIRS, SETTINGS_PATH, memory_path, parse_settings
from wikimem.limits import MAX_FILE_BYTES, MAX_SETTINGS_BYTES
from wikimem.naming import is_character_id
from wikimem.store import GITIGNORE_NAME, JOURNAL_NAME

from ..objects import oid

__all__ = ["check_incoming", "FILE_MODES", "DIR_MODE"]

FILE_MODES = (0o100644, 0o100755)
DIR_MODE = 0o040000
_TOP_FILES = (SETTINGS_PATH, GITIGNORE_NAME, JOURNAL_NAME)
_MALFORMED = (ObjectFormatException, ValueError, KeyError, AssertionError, TypeError, IndexError)


class _Broken(Exception):
    """One rule broken (the message says which); turned into RemoteRefused with the commit."""


def check_incoming(store, head: bytes, trusted: Iterable[bytes | None], url: str = "") -> int:
    """Check every commit from ``head`` back to the ``trusted`` ones (excluded); the number checked.

    :class:`RemoteRefused` at the first commit that breaks a rule (a missing
    object included): nothing was applied, the caller moves no ref.
    """
    stop = {t for t in trusted if t}
    seen: set[bytes] = set()
    trees: set[bytes] = set()
    blobs: set[tuple[bytes, str]] = set()
    todo = [head]
    while todo:
        cid = todo.pop()
        if cid in seen or cid in stop:
            continue
        seen.add(cid)
        try:
            commit = _load(store, cid, Commit, "commit")
            _check_top(store, commit.tree, trees, blobs)
        except (_Broken, *_MALFORMED) as exc:
            shown = cid.decode("ascii", "replace")
            raise RemoteRefused(f"the remote's main {head.decode('ascii', 'replace')[:12]} was refused: commit "
                                f"{shown[:12]} {_reason(exc)}", url, commit=shown) from None
        todo.extend(commit.parents)
    return len(seen)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, _Broken):
        return str(exc)
    return f"is malformed ({type(exc).__name__}: {exc})"


def _load(store, sha: bytes, kind: type[ShaFile], what: str):
    try:
        obj = store[oid(sha)]
    except KeyError:
        raise _Broken(f"lacks its {what} {sha.decode('ascii', 'replace')[:12]}") from None
    if not isinstance(obj, kind):
        raise _Broken(f"names {sha.decode('ascii', 'replace')[:12]} as a {what}, but it is a {obj.type_name.decode()}")
    obj.check()
    return obj


def _name(raw: bytes, where: str) -> str:
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Broken(f"holds {where}{raw!r}, a name that is not UTF-8") from None
    if "\0" in name or "/" in name or name in ("", ".", ".."):
        raise _Broken(f"holds {where}{name!r}, a name no memory folder has")
    return name


def _check_top(store, tree_id: bytes, trees: set[bytes], blobs: set[tuple[bytes, str]]) -> None:
    if tree_id in trees:
        return
    tree = _load(store, tree_id, Tree, "tree")
    for entry in tree.iteritems():
        name = _name(entry.path, "")
        if name in MEMORY_DIRS:
            _check_folder(store, name, _folder_sha(name, entry.mode, entry.sha), trees, blobs)
        elif name == LAYERS_DIR:
            _check_layers(store, _folder_sha(name, entry.mode, entry.sha), trees, blobs)
        elif name in _TOP_FILES:
            _check_file(store, name, entry.mode, entry.sha, blobs)
        else:
            raise _Broken(f"holds {name!r} (mode {entry.mode:06o}); a memory folder holds only "
                          f"{', '.join(MEMORY_DIRS + (LAYERS_DIR,) + _TOP_FILES)}")
    trees.add(tree_id)


def _folder_sha(name: str, mode: int, sha: bytes) -> bytes:
    if mode != DIR_MODE:
        raise _Broken(f"holds {name} as mode {mode:06o}; it must be a folder")
    return sha


def _check_layers(store, tree_id: bytes, trees: set[bytes], blobs: set[tuple[bytes, str]]) -> None:
    """``characters/``: one folder per character (an id), holding only its ``wiki/`` and ``diary/``."""
    if tree_id in trees:
        return
    for entry in _load(store, tree_id, Tree, "tree").iteritems():
        layer = _name(entry.path, f"{LAYERS_DIR}/")
        if not is_character_id(layer):
            raise _Broken(f"holds {LAYERS_DIR}/{layer!r}, which is not a character id")
        where = f"{LAYERS_DIR}/{layer}"
        for inner in _load(store, _folder_sha(where, entry.mode, entry.sha), Tree, "tree").iteritems():
            name = _name(inner.path, f"{where}/")
            if name not in MEMORY_DIRS:
                raise _Broken(f"holds {where}/{name!r}; a character's layer holds only {' and '.join(MEMORY_DIRS)}")
            _check_folder(store, f"{where}/{name}", _folder_sha(f"{where}/{name}", inner.mode, inner.sha), trees,
                          blobs)
    trees.add(tree_id)


def _check_folder(store, folder: str, tree_id: bytes, trees: set[bytes], blobs: set[tuple[bytes, str]]) -> None:
    if tree_id in trees:
        return
    tree = _load(store, tree_id, Tree, "tree")
    for entry in tree.iteritems():
        name = _name(entry.path, f"{folder}/")
        rel = f"{folder}/{name}"
        if memory_path(rel) is None:
            raise _Broken(f"holds {rel!r} (mode {entry.mode:06o}), which is not a memory file "
                          f"({folder}/<name>.md)")
        _check_file(store, rel, entry.mode, entry.sha, blobs)
    trees.add(tree_id)


def _check_file(store, rel: str, mode: int, sha: bytes, blobs: set[tuple[bytes, str]]) -> None:
    if mode not in FILE_MODES:
        what = {0o120000: "a symbolic link", 0o160000: "a submodule", DIR_MODE: "a folder"}.get(mode, "not a file")
        raise _Broken(f"holds {rel!r} as {what} (mode {mode:06o}); only regular files are accepted")
    kind = "memory" if "/" in rel or rel == JOURNAL_NAME else rel
    if (sha, kind) in blobs:
        return
    blob = _load(store, sha, Blob, "blob")
    # (the journal is never written from a commit, it is this host's own log: only its size is checked)
    limit = MAX_FILE_BYTES if kind == "memory" else MAX_SETTINGS_BYTES
    size = len(blob.as_raw_string())
    if size > limit:
        raise _Broken(f"holds {rel!r} of {size:,} bytes; at most {limit:,} are accepted (wikimem.limits)")
    if rel == SETTINGS_PATH:
        try:
            parse_settings(blob.as_raw_string())
        except ValueError as exc:
            raise _Broken(f"holds a {SETTINGS_PATH} that cannot be read: {exc}") from None
    blobs.add((sha, kind))
