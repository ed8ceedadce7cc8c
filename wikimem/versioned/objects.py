"""Git objects written directly: blob → tree → commit, and the branch moved by compare-and-swap.

Nothing here stages through the git index or calls porcelain: a commit
rebuilds only the trees on the changed paths and writes loose objects, so
its cost does not grow with history. dulwich is imported here and in the
rest of :mod:`wikimem.versioned` only.

Loose objects are written without syncs; the branch and ``.git/index`` may be
too (``durable=False``): the versioned store's intent log holds what rebuilds
them, and :meth:`GitRepo.repairing` rewrites objects a power loss left torn.
A commit can be built in memory first (``out=``: its objects kept in
:attr:`GitRepo.pending`, readable, not written) and written once its round
is recorded (:meth:`GitRepo.write_objects`), so that no object file ever
reaches the disk before the record that can rebuild it.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import struct
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

from dulwich.object_store import DiskObjectStore
from dulwich.objects import Blob, Commit, Tree, object_header
from dulwich.repo import Repo

from wikimem.errors import DamagedFolder
from wikimem.format import LAYERS_DIR, MEMORY_DIRS, layer_dirs
from wikimem.fsio import atomic_write, stat_stamp, write_all
from wikimem.naming import is_character_id, is_unsafe

if TYPE_CHECKING:
    from dulwich.objects import ObjectID
    from dulwich.refs import Ref

__all__ = ["GitRepo", "BRANCH", "GITIGNORE", "oid", "ref", "loose_bytes", "init_repo", "folder_head"]


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
_HEX = re.compile(rb"[0-9a-f]{40}")
_TREE_CACHE = 512
_COMMIT_CACHE = 256
_GIT_LOCKS = ("refs/heads/main.lock", "index.lock", "HEAD.lock", "packed-refs.lock", "config.lock")
COMMITTER = b"wikimem <wikimem@localhost>"


def loose_bytes(obj) -> bytes:
    """The bytes of an object's loose file: zlib at level 1, git's default for loose objects (core.looseCompression).

    One ``zlib.compress`` call (dulwich's ``as_legacy_object`` sets up a compressor object per call, some three
    times the cost for the small objects of a write); the same inflated bytes, which is all git reads.
    """
    raw = obj.as_raw_string()
    return zlib.compress(object_header(obj.type_num, len(raw)) + raw, 1)


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
        self._commits: OrderedDict[bytes, Commit] = OrderedDict()  # (FIFO: the newest commits are read most)
        self._lock = threading.Lock()
        self._repair = False  # rewrite loose objects found unsound (see repairing())
        self._branch_path = self.root / ".git" / "refs" / "heads" / "main"
        self._branch_file = str(self._branch_path)
        self._git_locks = [str(self.root / ".git" / rel) for rel in _GIT_LOCKS]
        self._objects_dir = self.root / ".git" / "objects"
        self._objects_path = str(self._objects_dir)
        self._index_file = str(self.root / ".git" / "index")
        self._index: tuple | None = None  # (stat stamp, dulwich Index) of the .git/index this process wrote last
        self._entry_bytes: dict[bytes, tuple[object, bytes]] = {}  # path -> (index entry, its bytes), see _index_bytes
        # Objects built for a round in progress and not written yet, readable here (see write_objects()).
        self.pending: dict[bytes, object] = {}
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
        from wikimem.fsio import sync_filesystem

        sync_filesystem(root)  # the first objects are on disk before a branch names them
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
        value: bytes | None = None
        try:  # the loose ref, as this layer writes it: one small read (three system calls, no buffered file)
            fd = os.open(self._branch_file, os.O_RDONLY | os.O_CLOEXEC)
            try:
                data = os.read(fd, 64)
            finally:
                os.close(fd)
            if len(data) == 41 and data[40:] == b"\n" and _HEX.fullmatch(data[:40]):
                value = data[:40]
        except OSError:
            pass
        try:  # anything else (packed refs, a symref): dulwich
            if value is None:
                value = self.repo.refs[BRANCH]
        except KeyError:
            return None
        except Exception as exc:  # (dulwich on an unreadable ref file)
            raise DamagedFolder(f"{self.root.name}: .git/refs/heads/main cannot be read ({exc}); run "
                                "`wikimem repair` on this owner") from None
        if value == self._checked_head:  # (the store lookup costs more than the read: once per head)
            return value
        well_formed = len(value) == 40 and not value.strip(b"0123456789abcdef")
        if not (well_formed and self.has(value)):  # (a torn object file counts as missing: the intent log's redo)
            raise DamagedFolder(f"{self.root.name}: the branch main names {value[:60]!r}, which is not a commit "
                                "of this repository; run `wikimem repair` on this owner (it moves the branch back "
                                "to the last good commit)")
        self._checked_head = value
        return value

    def has(self, sha: bytes) -> bool:
        """Whether the object is in the store (a miss of the shared store asked again afresh: see :meth:`_afresh`)."""
        try:
            if oid(sha) in self.store:
                return True
        except Exception:  # noqa: BLE001 - a pack closed under the lookup, or a torn object file: asked afresh
            pass
        return bool(self._afresh(lambda store: oid(sha) in store))

    def _afresh(self, look):
        """``look(store)`` asked of a store of its own, or None when that fails too.

        A lookup in the shared store can fail while another thread of this process uses it: dulwich's pack cache is
        not thread-safe (a pack that a repack removed is closed under a reader; a pack another thread just cached is
        missed, while the loose copy is already pruned). An object is called missing, and a folder damaged, only
        when a fresh look agrees.
        """
        try:
            repo = Repo(str(self.root))
        except Exception:  # noqa: BLE001 - a repository that cannot be opened: the caller's verdict stands
            return None
        try:
            return look(repo.object_store)
        except Exception:  # noqa: BLE001 - missing there too, or a torn object file (see head)
            return None
        finally:
            repo.close()

    def _read(self, sha: bytes):
        """An object of the store, asked again afresh when the shared store fails to give it (see :meth:`_afresh`)."""
        try:
            return self.store[oid(sha)]
        except (KeyError, ValueError, OSError, BufferError):  # (a pack closed under the read, or while read)
            found = self._afresh(lambda store: store[oid(sha)])
            if found is None:
                raise
            return found

    def _get(self, sha: bytes):
        found = self.pending.get(sha)
        return found if found is not None else self._read(sha)

    def commit(self, commit_id: bytes) -> Commit:
        with self._lock:
            cached = self._commits.get(commit_id)
        if cached is not None:
            return cached
        obj = self.pending.get(commit_id)
        if obj is not None:  # not written yet (and maybe never): not remembered
            if not isinstance(obj, Commit):
                raise KeyError(commit_id)
            return obj
        obj = self._read(commit_id)
        if not isinstance(obj, Commit):
            raise KeyError(commit_id)
        self._remember_commit(commit_id, obj)
        return obj

    def _remember_commit(self, commit_id: bytes, obj: Commit) -> None:
        with self._lock:
            self._commits[commit_id] = obj
            while len(self._commits) > _COMMIT_CACHE:
                self._commits.popitem(last=False)

    def tree(self, tree_id: bytes) -> Tree:
        with self._lock:
            cached = self._trees.get(tree_id)
            if cached is not None:
                self._trees.move_to_end(tree_id)
                return cached
        obj = self._get(tree_id)
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
        return self._get(found[1]).as_raw_string()

    def blob(self, sha: bytes) -> bytes:
        return self._get(sha).as_raw_string()

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

    def layers(self, tree_id: bytes | None) -> list[str]:
        """The characters with a layer (``characters/<id>/``) in the tree."""
        found = self.entry(tree_id, LAYERS_DIR)
        if found is None or found[0] != _DIR_MODE:
            return []
        names = (item.path.decode("utf-8", "replace") for item in self.tree(found[1]).iteritems()
                 if item.mode == _DIR_MODE)
        return sorted(name for name in names if is_character_id(name))

    def memory_dirs(self, tree_id: bytes | None) -> list[str]:
        """The memory folders of the tree: ``wiki/``, ``diary/`` and those of every character's layer."""
        return [*MEMORY_DIRS, *(d for layer in self.layers(tree_id) for d in layer_dirs(layer))]

    def tracked(self, tree_id: bytes | None) -> dict[str, bytes]:
        """Every file of the memory folders (``wiki/``, ``diary/``, in every layer) in the tree."""
        out: dict[str, bytes] = {}
        for folder in self.memory_dirs(tree_id):
            out.update(self.files_under(tree_id, folder))
        return out

    def changed_paths(self, old_tree: bytes | None, new_tree: bytes | None) -> set[str]:
        """Tracked paths whose blob differs between two trees (only differing subtrees are read)."""
        out: set[str] = set()
        same_layers = (self.entry(old_tree, LAYERS_DIR) if old_tree else None) == \
            (self.entry(new_tree, LAYERS_DIR) if new_tree else None)
        folders = MEMORY_DIRS if same_layers else dict.fromkeys(
            [*self.memory_dirs(old_tree), *self.memory_dirs(new_tree)])
        for folder in folders:
            a = self.entry(old_tree, folder) if old_tree else None
            b = self.entry(new_tree, folder) if new_tree else None
            if a == b:
                continue
            fa, fb = self.files_under(old_tree, folder), self.files_under(new_tree, folder)
            out.update(p for p in fa.keys() | fb.keys() if fa.get(p) != fb.get(p))
        return out

    # -- writing ------------------------------------------------------------

    def write_tree(self, base_tree: bytes | None, changes: dict[str, bytes | None], out: list | None = None) -> bytes:
        """A new root tree: ``base_tree`` with ``{path: content or None}`` applied.

        Only the trees along the changed paths are rebuilt; empty folders vanish.
        ``out``: the new objects are appended there and kept pending, not written.
        """
        grouped: dict[str, dict[str, bytes | None]] = {}
        here: dict[str, bytes | None] = {}
        for path, content in changes.items():
            head, sep, rest = path.partition("/")
            if sep:
                grouped.setdefault(head, {})[rest] = content
            else:
                here[head] = content
        # (a copy parses the base's raw bytes in C: not one Python call per entry of a large folder)
        tree = cast(Tree, self.tree(base_tree).copy()) if base_tree is not None else Tree()
        for name, content in here.items():
            key = name.encode("utf-8")
            if content is None:
                if key in tree:
                    del tree[key]
            else:
                blob = Blob.from_string(content)
                self._add(blob, out)
                tree.add(key, _FILE_MODE, blob.id)
        for name, sub in grouped.items():
            key = name.encode("utf-8")
            base_sub = None
            if key in tree:
                mode, sha = tree[key]
                base_sub = sha if mode == _DIR_MODE else None
            new_sub = self.write_tree(base_sub, sub, out)
            if not len(self.tree(new_sub)):
                if key in tree:
                    del tree[key]
            else:
                tree.add(key, _DIR_MODE, oid(new_sub))
        self._add(tree, out)
        with self._lock:
            self._trees[tree.id] = tree
        return tree.id

    def make_commit(self, tree_id: bytes, parents: list[bytes], message: str, actor: str | None,
                    when: int | None = None, out: list | None = None) -> bytes:
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
        self._add(commit, out)
        return commit.id

    def _add(self, obj, out: list | None = None) -> None:
        """Write a loose object (``out``: keep it pending instead); a ``.lock`` a killed writer left on it is
        removed (we hold the owner lock)."""
        from dulwich.file import FileLocked

        if out is not None:
            out.append(obj)
            self.pending[obj.id] = obj
            return
        if isinstance(self.store, DiskObjectStore):
            self.write_raw(obj.id.decode("ascii"), loose_bytes(obj))
            return
        try:
            self.store.add_object(obj)
        except FileLocked as exc:
            os.unlink(exc.lockfilename)
            self.store.add_object(obj)

    def write_raw(self, sha: str, data: bytes, *, logged: bool = False) -> None:
        """Write a loose object from its file's bytes (:func:`loose_bytes`); an existing sound copy is kept
        (repairing: an unsound one is replaced). Not synced.

        As git does, through a temp file renamed into place, unless ``logged``: the object belongs to a
        round whose intent record (synced first) holds its bytes, and it goes straight to its name
        (created exclusively: one inode, no rename). A kill mid-write may then leave a torn copy under
        its name, named by no ref (the branch moves after every object is written); every writer settles
        first, and recovery deletes the unsound copies of a round it undoes (:meth:`drop_unsound`) and
        rewrites those of a round it redoes (under :meth:`repairing`) before any later write could take
        a torn copy as present.
        """
        folder = os.path.join(self._objects_path, sha[:2])  # (strings, not pathlib: on every write)
        path = os.path.join(folder, sha[2:])
        if self._repair:
            self._drop_unsound(sha.encode("ascii"))
        if not logged:
            if not os.path.exists(path):
                atomic_write(Path(path), data, mode=0o444, durable=False)
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags, 0o444)
        except FileExistsError:
            return
        except FileNotFoundError:  # (its folder is made only when missing: no mkdir call on the write path)
            os.makedirs(folder, exist_ok=True)
            try:
                fd = os.open(path, flags, 0o444)
            except FileExistsError:
                return
        try:
            write_all(fd, data)
        except BaseException:
            os.close(fd)
            os.unlink(path)  # (never leave a torn copy behind a failure we see)
            raise
        os.close(fd)

    def write_objects(self, objects: dict[str, bytes]) -> None:
        """Write objects built with ``out=`` from their loose bytes (they stop being pending; a commit is
        remembered, so that the history index reads it from memory, not back from its file)."""
        for sha, data in objects.items():
            self.write_raw(sha, data, logged=True)
            obj = self.pending.pop(sha.encode("ascii"), None)
            if isinstance(obj, Commit):
                self._remember_commit(obj.id, obj)

    def forget(self, shas) -> None:
        """Objects built with ``out=`` that will never be written (their ids, hex strings)."""
        for sha in shas:
            self.pending.pop(sha.encode("ascii") if isinstance(sha, str) else sha, None)

    @contextmanager
    def repairing(self) -> Iterator[None]:
        """Objects written inside replace a loose copy that is torn or empty (after a power loss)."""
        self._repair = True
        try:
            yield
        finally:
            self._repair = False

    def drop_unsound(self, shas) -> None:
        """Delete the loose copies of these objects (hex ids) that are torn or empty (a killed writer's)."""
        for sha in shas:
            self._drop_unsound(sha.encode("ascii") if isinstance(sha, str) else sha)

    def _drop_unsound(self, sha: bytes) -> None:
        path = self.root / ".git" / "objects" / sha[:2].decode() / sha[2:].decode()
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return
        try:
            sound = hashlib.sha1(zlib.decompress(data)).hexdigest().encode() == sha
        except zlib.error:
            sound = False
        if not sound:
            os.unlink(path)

    def move_ref(self, old: bytes | None, new: bytes, *, durable: bool = True) -> bool:
        """Compare-and-swap the branch (a stale ``main.lock`` is cleared first; we hold the owner lock).

        ``durable=False``: the new value is not synced (the caller's log can set it again).
        """
        if durable:
            self.clear_stale_locks()
            return self.repo.refs.set_if_equals(BRANCH, None if old is None else oid(old), oid(new))
        path, lock = self._branch_file, self._branch_file + ".lock"
        fd = self._take_git_lock(lock)
        try:
            if self.head() != old:  # read under main.lock, as git does
                os.close(fd)
                os.unlink(lock)
                return False
            os.write(fd, new + b"\n")
            os.close(fd)
        except BaseException:
            try:
                os.close(fd)
            except OSError:
                pass
            os.unlink(lock)
            raise
        os.replace(lock, path)
        self._checked_head = new  # (its commit was written before: no need to look it up on the next read)
        return True

    def _take_git_lock(self, lock: str) -> int:
        """Create git's ``<file>.lock`` (we hold the owner lock: one found is a killed writer's, cleared)."""
        try:
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            self.clear_stale_locks()
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)

    def clear_stale_locks(self) -> None:
        """Remove git lock files left by a killed writer. Call only under the owner lock."""
        for path in self._git_locks:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def update_index(self, written: Mapping[str, bytes | None], *, durable: bool = True) -> None:
        """Keep ``.git/index`` in step with the work tree, so ``git status`` stays clean (``durable=False``:
        not synced — it is derived, and rebuilt for the paths a recovery names)."""
        from dulwich.index import Index, index_entry_from_stat

        path_ = self._index_file
        cached = self._index
        if cached is not None and cached[0] == stat_stamp(path_):
            index = cached[1]  # the file is the one we wrote last: no need to parse it again
        else:
            index = Index(self.repo.index_path())  # not open_index(): it re-reads the config every time
        self._index = None
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
        if durable:
            index.write()
        else:
            self._write_index(index)
        self._index = (stat_stamp(path_), index)

    def _write_index(self, index) -> None:
        path, lock = self._index_file, self._index_file + ".lock"
        data = self._index_bytes(index)
        fd = self._take_git_lock(lock)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(lock, path)

    def _index_bytes(self, index) -> bytes:
        """The bytes of ``.git/index`` for ``index``, as dulwich writes them (version 2, sorted by path, no
        extensions, SHA-1 trailer), each entry serialized once while it stays the same object: a write changes
        one or two entries, and serializing every one of a large folder's files cost milliseconds a write."""
        from dulwich.index import IndexEntry, Stage, write_cache_entry

        cache = self._entry_bytes
        fresh: dict[bytes, tuple[object, bytes]] = {}
        chunks = []
        for name, entry in sorted(index.items()):
            known = cache.get(name)
            if known is not None and known[0] is entry:
                chunk = known[1]
            else:
                if not isinstance(entry, IndexEntry) or entry.extended_flags:
                    return self._index_bytes_in_full(index)  # (a conflict or a version-3 entry: not ours)
                buf = io.BytesIO()
                write_cache_entry(buf, entry.serialize(name, Stage.NORMAL), version=2)
                chunk = buf.getvalue()
            fresh[name] = (entry, chunk)
            chunks.append(chunk)
        self._entry_bytes = fresh
        data = b"DIRC" + struct.pack(">LL", 2, len(chunks)) + b"".join(chunks)
        return data + hashlib.sha1(data).digest()

    def _index_bytes_in_full(self, index) -> bytes:
        from dulwich.index import IndexChecksumWriter, write_index_dict

        self._entry_bytes = {}
        buf = io.BytesIO()
        writer = IndexChecksumWriter(buf)
        write_index_dict(writer, dict(index.items()))
        writer.write_checksum()
        return buf.getvalue()

    def close(self) -> None:
        self.repo.close()

    def reopen(self) -> None:
        """Open the repository again (after its packs were rewritten: a prune), forgetting cached trees."""
        self.repo.close()
        self.repo = Repo(str(self.root))
        self.store = self.repo.object_store
        self._index, self._checked_head = None, None
        with self._lock:
            self._trees.clear()
            self._commits.clear()  # (a forget pruned the old history: none of it is read again)
