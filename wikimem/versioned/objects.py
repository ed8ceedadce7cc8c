"""Git objects written directly: blob → tree → commit, and the branch moved by compare-and-swap.

Nothing here stages through the git index or calls porcelain: a commit
rebuilds only the trees on the changed paths and writes loose objects, so
its cost does not grow with history. dulwich is imported here and in the
rest of :mod:`wikimem.versioned` only.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from wikimem.errors import DamagedFolder
from wikimem.format import MEMORY_DIRS
from wikimem.naming import is_unsafe

if TYPE_CHECKING:
    from dulwich.objects import ObjectID
    from dulwich.refs import Ref

__all__ = ["GitRepo", "BRANCH", "GITIGNORE", "oid", "ref", "init_repo", "folder_head"]


def oid(sha: bytes) -> ObjectID:
    """``sha`` as dulwich's type of an object id (a ``NewType`` of bytes: nothing happens at run time)."""
    return cast("ObjectID", sha)


def ref(name: bytes) -> Ref:
    """``name`` as dulwich's type of a ref name (a ``NewType`` of bytes)."""
    return cast("Ref", name)


BRANCH = ref(b"refs/heads/main")
GITIGNORE = b"""# wikimem: the journal goes into commit messages, caches are derived
journal.jsonl
vectors*
diary-vectors/
.wikimem.lock
*.wikimem-tmp
"""
_FILE_MODE = 0o100644
_DIR_MODE = 0o040000
_TREE_CACHE = 512
COMMITTER = b"wikimem <wikimem@localhost>"


def _person(name: str | None) -> bytes:
    """``Name <email>`` for a free-text actor (no angle brackets, line breaks or control characters survive)."""
    text = "".join(c for c in str(name or "wikimem") if not is_unsafe(c))
    clean = " ".join(text.replace("<", "").replace(">", "").split()) or "wikimem"
    local = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in clean).strip("-") or "actor"
    return f"{clean} <{local[:64]}@wikimem>".encode()


# The config of a repository wikimem makes: auto-gc off (packing is scheduled) and, in a memory folder,
# paths unquoted; a bare one (a file remote) checks the objects it receives.
_CONFIG = {False: ((b"gc", b"auto", b"0"), (b"core", b"quotepath", b"false")),
           True: ((b"receive", b"fsckObjects", b"true"), (b"gc", b"auto", b"0"))}


def init_repo(root: Path, *, bare: bool = False) -> Repo:
    """``git init`` of a memory folder (made here or cloned) or of a bare remote, on branch ``main``."""
    repo = (Repo.init_bare if bare else Repo.init)(str(root), default_branch=b"main")
    try:
        config = repo.get_config()
        for section, key, value in _CONFIG[bare]:
            config.set((section,), key, value)
        config.write_to_path()
    except BaseException:
        repo.close()
        raise
    return repo


def folder_head(root: Path | str) -> str | None:
    """The commit ``main`` of a memory folder points at, read from its ref files without opening the repository
    (a cheap look at many owners: is an index behind?); None when there is none."""
    git = Path(root) / ".git"
    try:
        value = (git / "refs" / "heads" / "main").read_bytes().strip()
        if len(value) == 40:
            return value.decode("ascii")
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        pass
    try:
        for line in (git / "packed-refs").read_bytes().splitlines():
            sha, _, name = line.partition(b" ")
            if name == BRANCH and len(sha) == 40:
                return sha.decode("ascii")
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        pass
    return None


class GitRepo:
    """The repository of one memory folder, as seen by the versioned store."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.repo = Repo(str(self.root))  # NotGitRepository when there is none
        self.store = self.repo.object_store
        self._trees: OrderedDict[bytes, Tree] = OrderedDict()
        self._lock = threading.Lock()
        self._checked_head: bytes | None = None  # the last head found to name a commit of the store

    @classmethod
    def init(cls, root: Path) -> GitRepo:
        """Create the repository (branch ``main``, auto-gc off) with a first commit of ``.gitignore``."""
        root = Path(root)
        init_repo(root).close()
        self = cls(root)
        from wikimem.store import GITIGNORE_NAME, Door

        door = Door(root)  # (a folder made by hand may hold a link or a FIFO there: refused, never read)
        data = door.read(GITIGNORE_NAME)
        if data is None:
            data = GITIGNORE
            door.write(GITIGNORE_NAME, data)
        tree = self.write_tree(None, {".gitignore": data})
        commit = self.make_commit(tree, [], "init memory folder\n\nWikimem-Action: init\n", None)
        self.move_ref(None, commit)
        self.update_index({".gitignore": Blob.from_string(data).id})
        return self

    # -- reading ------------------------------------------------------------

    def head(self) -> bytes | None:
        """The branch tip, read from disk every time (other processes move it).

        A branch that names no commit of this repository (a garbage ref file,
        a commit lost with its objects) is :class:`~wikimem.errors.DamagedFolder`:
        ``wikimem repair`` moves it back to the last good commit.
        """
        try:
            value = self.repo.refs[BRANCH]
        except KeyError:
            return None
        except Exception as exc:  # (dulwich on an unreadable ref file)
            raise DamagedFolder(f"{self.root.name}: .git/refs/heads/main cannot be read ({exc}); run "
                                "`wikimem repair` on this owner") from None
        if value == self._checked_head:  # (the store lookup costs more than the read: once per head)
            return value
        if len(value) != 40 or value.strip(b"0123456789abcdef") or oid(value) not in self.store:
            raise DamagedFolder(f"{self.root.name}: the branch main names {value[:60]!r}, which is not a commit "
                                "of this repository; run `wikimem repair` on this owner (it moves the branch back "
                                "to the last good commit)")
        self._checked_head = value
        return value

    def commit(self, commit_id: bytes) -> Commit:
        obj = self.store[oid(commit_id)]
        if not isinstance(obj, Commit):
            raise KeyError(commit_id)
        return obj

    def tree(self, tree_id: bytes) -> Tree:
        with self._lock:
            cached = self._trees.get(tree_id)
            if cached is not None:
                self._trees.move_to_end(tree_id)
                return cached
        obj = self.store[oid(tree_id)]
        if not isinstance(obj, Tree):
            raise KeyError(tree_id)
        with self._lock:
            self._trees[tree_id] = obj
            while len(self._trees) > _TREE_CACHE:
                self._trees.popitem(last=False)
        return obj

    def commit_tree(self, commit_id: bytes | None) -> bytes | None:
        return None if commit_id is None else self.commit(commit_id).tree

    def entry(self, tree_id: bytes | None, path: str) -> tuple[int, bytes] | None:
        """``(mode, sha)`` of ``path`` in the tree, or None."""
        if tree_id is None:
            return None
        parts = path.split("/")
        current = tree_id
        for i, part in enumerate(parts):
            tree = self.tree(current)
            try:
                mode, sha = tree[part.encode("utf-8")]
            except KeyError:
                return None
            if i == len(parts) - 1:
                return mode, sha
            if mode != _DIR_MODE:
                return None
            current = sha
        return None

    def blob_at(self, tree_id: bytes | None, path: str) -> bytes | None:
        found = self.entry(tree_id, path)
        if found is None or found[0] == _DIR_MODE:
            return None
        return self.store[oid(found[1])].as_raw_string()

    def blob(self, sha: bytes) -> bytes:
        return self.store[oid(sha)].as_raw_string()

    def files_under(self, tree_id: bytes | None, folder: str) -> dict[str, bytes]:
        """``{relpath: blob sha}`` of the regular files directly in ``folder``."""
        found = self.entry(tree_id, folder)
        if found is None or found[0] != _DIR_MODE:
            return {}
        out: dict[str, bytes] = {}
        for item in self.tree(found[1]).iteritems():
            if item.mode != _DIR_MODE:
                out[f"{folder}/{item.path.decode('utf-8', 'replace')}"] = item.sha
        return out

    def tracked(self, tree_id: bytes | None) -> dict[str, bytes]:
        """Every file of the memory folders (``wiki/``, ``diary/``) in the tree."""
        out: dict[str, bytes] = {}
        for folder in MEMORY_DIRS:
            out.update(self.files_under(tree_id, folder))
        return out

    def changed_paths(self, old_tree: bytes | None, new_tree: bytes | None) -> set[str]:
        """Tracked paths whose blob differs between two trees (only differing subtrees are read)."""
        out: set[str] = set()
        for folder in MEMORY_DIRS:
            a = self.entry(old_tree, folder) if old_tree else None
            b = self.entry(new_tree, folder) if new_tree else None
            if a == b:
                continue
            fa, fb = self.files_under(old_tree, folder), self.files_under(new_tree, folder)
            out.update(p for p in fa.keys() | fb.keys() if fa.get(p) != fb.get(p))
        return out

    # -- writing ------------------------------------------------------------

    def write_tree(self, base_tree: bytes | None, changes: dict[str, bytes | None]) -> bytes:
        """A new root tree: ``base_tree`` with ``{path: content or None}`` applied.

        Only the trees along the changed paths are rebuilt; empty folders vanish.
        """
        grouped: dict[str, dict[str, bytes | None]] = {}
        here: dict[str, bytes | None] = {}
        for path, content in changes.items():
            head, sep, rest = path.partition("/")
            if sep:
                grouped.setdefault(head, {})[rest] = content
            else:
                here[head] = content
        tree = Tree()
        if base_tree is not None:
            for item in self.tree(base_tree).iteritems():
                tree.add(item.path, item.mode, item.sha)
        for name, content in here.items():
            key = name.encode("utf-8")
            if content is None:
                if key in tree:
                    del tree[key]
            else:
                blob = Blob.from_string(content)
                self._add(blob)
                tree.add(key, _FILE_MODE, blob.id)
        for name, sub in grouped.items():
            key = name.encode("utf-8")
            base_sub = None
            if key in tree:
                mode, sha = tree[key]
                base_sub = sha if mode == _DIR_MODE else None
            new_sub = self.write_tree(base_sub, sub)
            if not self.tree(new_sub).items():
                if key in tree:
                    del tree[key]
            else:
                tree.add(key, _DIR_MODE, oid(new_sub))
        self._add(tree)
        with self._lock:
            self._trees[tree.id] = tree
        return tree.id

    def make_commit(self, tree_id: bytes, parents: list[bytes], message: str, actor: str | None,
                    when: int | None = None) -> bytes:
        commit = Commit()
        commit.tree = tree_id
        commit.parents = [oid(p) for p in parents]
        commit.author = _person(actor)
        commit.committer = COMMITTER
        now = int(time.time()) if when is None else when
        commit.author_time = commit.commit_time = now
        commit.author_timezone = commit.commit_timezone = 0
        commit.encoding = b"UTF-8"
        commit.message = message.encode("utf-8")
        self._add(commit)
        return commit.id

    def _add(self, obj) -> None:
        """Write a loose object; a ``.lock`` a killed writer left on it is removed (we hold the owner lock)."""
        from dulwich.file import FileLocked

        try:
            self.store.add_object(obj)
        except FileLocked as exc:
            os.unlink(exc.lockfilename)
            self.store.add_object(obj)

    def move_ref(self, old: bytes | None, new: bytes) -> bool:
        """Compare-and-swap the branch (a stale ``main.lock`` is cleared first; we hold the owner lock)."""
        self.clear_stale_locks()
        return self.repo.refs.set_if_equals(BRANCH, None if old is None else oid(old), oid(new))

    def clear_stale_locks(self) -> None:
        """Remove git lock files left by a killed writer. Call only under the owner lock."""
        git_dir = self.root / ".git"
        for rel in ("refs/heads/main.lock", "index.lock", "HEAD.lock", "packed-refs.lock", "config.lock"):
            try:
                os.unlink(git_dir / rel)
            except FileNotFoundError:
                pass

    def update_index(self, written: Mapping[str, bytes | None]) -> None:
        """Keep ``.git/index`` in step with the work tree, so ``git status`` stays clean."""
        from dulwich.index import Index, index_entry_from_stat

        index = Index(self.repo.index_path())  # not open_index(): it re-reads the config every time
        for path, sha in written.items():
            key = path.encode("utf-8")
            if sha is None:
                if key in index:
                    del index[key]
                continue
            try:
                st = os.lstat(self.root / path)
            except FileNotFoundError:
                if key in index:
                    del index[key]
                continue
            index[key] = index_entry_from_stat(st, sha)
        index.write()

    def close(self) -> None:
        self.repo.close()

    def reopen(self) -> None:
        """Open the repository again (after its packs were rewritten: a prune), forgetting cached trees."""
        self.repo.close()
        self.repo = Repo(str(self.root))
        self.store = self.repo.object_store
        with self._lock:
            self._trees.clear()
