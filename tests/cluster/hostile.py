"""Hostile commits, made the way an attacker with push rights on the replication server would.

git's porcelain (and ``receive.fsckObjects``) refuses these trees, so they are
written with dulwich objects straight into the bare repository and ``main``
is moved by hand: what a server that does not check, or someone with a shell
on it, can serve. Each case changes the root tree of the remote's ``main``:
``CASES[name](store, entries)``, where ``entries`` is ``{name: (mode, sha)}``
of the root tree and ``victim`` the encoded folder name of another owner.
"""

from __future__ import annotations

import hashlib
import time
import zlib
from pathlib import Path

from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

LINK, GITLINK, DIR, FILE = 0o120000, 0o160000, 0o040000, 0o100644


def _blob(store, data: bytes) -> bytes:
    blob = Blob.from_string(data)
    store.add_object(blob)
    return blob.id


def _tree(store, entries: dict[bytes, tuple[int, bytes]]) -> bytes:
    tree = Tree()
    for name, (mode, sha) in entries.items():
        tree.add(name, mode, sha)
    store.add_object(tree)
    return tree.id


def _raw_tree(store, raw: bytes) -> bytes:
    """A loose tree object holding exactly ``raw`` (bytes no well-formed tree holds), written by hand."""
    data = b"tree %d\x00" % len(raw) + raw
    sha = hashlib.sha1(data).hexdigest()
    path = Path(store.path) / sha[:2] / sha[2:]
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(zlib.compress(data))
    return sha.encode()


def _sub(store, entries, folder: bytes) -> dict[bytes, tuple[int, bytes]]:
    if folder not in entries:
        return {}
    return {e.path: (e.mode, e.sha) for e in store[entries[folder][1]].iteritems()}


def _in_wiki(store, entries, name: bytes, mode: int, sha: bytes) -> None:
    wiki = _sub(store, entries, b"wiki")
    wiki[name] = (mode, sha)
    entries[b"wiki"] = (DIR, _tree(store, wiki))


def symlink(store, entries, victim):
    _in_wiki(store, entries, b"link.md", LINK, _blob(store, f"../../{victim}/wiki/private.md".encode()))


def symlinked_diary(store, entries, victim):
    entries[b"diary"] = (LINK, _blob(store, f"../{victim}/diary".encode()))


def symlinked_journal(store, entries, victim):
    entries[b"journal.jsonl"] = (LINK, _blob(store, b"../../../outside.jsonl"))


def submodule(store, entries, victim):
    _in_wiki(store, entries, b"sub.md", GITLINK, b"1" * 40)


def slash_name(store, entries, victim):
    """A blob named ``../../../../tokens.jsonl`` inside ``wiki/`` (a name with slashes)."""
    _in_wiki(store, entries, b"../../../../tokens.jsonl", FILE, _blob(store, b"{}\n"))


def dotdot_chain(store, entries, victim):
    """``wiki/../../../../x.md``, made of trees named ``..``."""
    sha = _tree(store, {b"x.md": (FILE, _blob(store, b"## planted\n\nfrom the remote\n"))})
    for _ in range(4):
        sha = _tree(store, {b"..": (DIR, sha)})
    entries[b"wiki"] = (DIR, _tree(store, {**_sub(store, entries, b"wiki"), b"..": (DIR, sha)}))


def dot_git(store, entries, victim):
    hooks = _tree(store, {b"post-checkout": (0o100755, _blob(store, b"#!/bin/sh\ntouch /tmp/pwned\n"))})
    entries[b".git"] = (DIR, _tree(store, {b"hooks": (DIR, hooks)}))


def absolute_name(store, entries, victim):
    _in_wiki(store, entries, b"/etc/x.md", FILE, _blob(store, b"## a\n\nb\n"))


def nul_name(store, entries, victim):
    """A ``wiki`` tree whose one entry's name holds a NUL byte (written raw: git's format cannot say it)."""
    sha = _blob(store, b"## a\n\nb\n")
    raw = b"100644 x\x00y.md\x00" + bytes.fromhex(sha.decode())
    entries[b"wiki"] = (DIR, _raw_tree(store, raw))


def other_top_name(store, entries, victim):
    entries[b"tokens.jsonl"] = (FILE, _blob(store, b'{"sha256": "planted"}\n'))


def not_a_memory_name(store, entries, victim):
    _in_wiki(store, entries, b"notes.txt", FILE, _blob(store, b"hello\n"))


def bad_settings(store, entries, victim):
    entries[b"settings.json"] = (FILE, _blob(store, b"[" * 20000 + b"]" * 20000))


def _layer(store, entries, layer: bytes, inner: dict[bytes, tuple[int, bytes]]) -> None:
    layers = _sub(store, entries, b"characters")
    layers[layer] = (DIR, _tree(store, inner))
    entries[b"characters"] = (DIR, _tree(store, layers))


def layer_bad_id(store, entries, victim):
    wiki = _tree(store, {b"x.md": (FILE, _blob(store, b"## a\n\nb\n"))})
    _layer(store, entries, b"Kai", {b"wiki": (DIR, wiki)})


def layer_other_file(store, entries, victim):
    _layer(store, entries, b"kai", {b"notes.txt": (FILE, _blob(store, b"hello\n"))})


def layer_symlink(store, entries, victim):
    layers = _sub(store, entries, b"characters")
    layers[b"kai"] = (LINK, _blob(store, f"../../{victim}".encode()))
    entries[b"characters"] = (DIR, _tree(store, layers))


def layer_nested(store, entries, victim):
    wiki = _tree(store, {b"x.md": (FILE, _blob(store, b"## a\n\nb\n"))})
    inner = _tree(store, {b"mira": (DIR, _tree(store, {b"wiki": (DIR, wiki)}))})
    _layer(store, entries, b"kai", {b"characters": (DIR, inner)})


def big_journal(store, entries, victim):
    """A ``journal.jsonl`` beyond the size of any file a memory folder takes (the journal is never read)."""
    from wikimem.limits import MAX_FILE_BYTES

    entries[b"journal.jsonl"] = (FILE, _blob(store, b'{"action": "add"}\n' * (MAX_FILE_BYTES // 18 + 2)))


CASES = {f.__name__: f for f in (symlink, symlinked_diary, symlinked_journal, submodule, slash_name, dotdot_chain,
                                  dot_git, absolute_name, nul_name, other_top_name, not_a_memory_name, bad_settings,
                                  layer_bad_id, layer_other_file, layer_symlink, layer_nested, big_journal)}
# The cases the issue names (symlink, submodule, .., .git, absolute, NUL, a chain of ..).
MAIN_CASES = ["symlink", "symlinked_diary", "submodule", "slash_name", "dotdot_chain", "dot_git", "absolute_name",
              "nul_name"]


def push_hostile(bare: Path, case: str, victim: str) -> str:
    """A commit on top of the bare repository's ``main`` with ``case`` applied to its tree; ``main`` moved to it."""
    repo = Repo(str(bare))
    try:
        store = repo.object_store
        head = repo.refs[b"refs/heads/main"]
        parent = store[head]
        entries = {e.path: (e.mode, e.sha) for e in store[parent.tree].iteritems()}
        CASES[case](store, entries, victim)
        commit = Commit()
        commit.tree = _tree(store, entries)
        commit.parents = [head]
        commit.author = commit.committer = b"mallory <mallory@example>"
        commit.author_time = commit.commit_time = int(time.time())
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = f"innocent looking {case}\n".encode()
        store.add_object(commit)
        repo.refs[b"refs/heads/main"] = commit.id
        return commit.id.decode()
    finally:
        repo.close()
