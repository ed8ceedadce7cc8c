"""The one door of a memory folder: every file of an owner folder is listed, read, written and removed here.

Design notes: docs/explanation/durability-internals.md (``wikimem/store/door.py``).
"""

from __future__ import annotations

import itertools
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from wikimem.errors import DamagedFolder, TooLarge
from wikimem.format import LAYERS_DIR, MEMORY_DIRS, SETTINGS_PATH, is_memory_name, layer_of, memory_path
from wikimem.fsio import TEMP_SUFFIX, Stamp, open_folder, open_regular, read_regular, write_all
from wikimem.limits import MAX_FILE_BYTES, MAX_SETTINGS_BYTES
from wikimem.naming import is_character_id

__all__ = ["Door", "OverlayDoor", "TOP_FILES", "JOURNAL_NAME", "GITIGNORE_NAME", "folder_file"]

JOURNAL_NAME = "journal.jsonl"
GITIGNORE_NAME = ".gitignore"
# The files a memory folder holds at its top, besides wiki/ and diary/.
TOP_FILES = (SETTINGS_PATH, GITIGNORE_NAME, JOURNAL_NAME)


def folder_file(rel: str) -> tuple[str | None, str]:
    """``(folder or None, name)`` of a path of a memory folder; :class:`DamagedFolder` for any other path."""
    if isinstance(rel, str) and "\0" not in rel:
        if rel in TOP_FILES:
            return None, rel
        layer, inner = layer_of(rel)
        if layer is not None and inner == JOURNAL_NAME:
            return f"{LAYERS_DIR}/{layer}", inner
        if memory_path(rel) is not None:
            folder, _, name = rel.rpartition("/")
            return folder, name
    raise DamagedFolder(f"refused path {rel!r}: not a file of a memory folder (wiki/<name>.md, diary/<name>.md, "
                        f"characters/<id>/ the same, {', '.join(TOP_FILES)})")


def memory_folder(folder: str) -> bool:
    """Whether ``folder`` holds memory files: ``wiki``, ``diary``, or those of a character's layer."""
    if folder in MEMORY_DIRS:
        return True
    layer, inner = layer_of(folder + "/")
    return layer is not None and inner[:-1] in MEMORY_DIRS


_EPOCHS = itertools.count(1)  # every OverlayDoor base gets its own, so no stamp of one base matches another's


def _limit(folder: str | None) -> int:
    return MAX_FILE_BYTES if folder is not None and memory_folder(folder) else MAX_SETTINGS_BYTES


def _check_folder(folder: str) -> None:
    if not memory_folder(folder):
        raise DamagedFolder(f"refused folder {folder!r}: memory files live in {' and '.join(MEMORY_DIRS)} (of the "
                            "folder, or of a character's layer characters/<id>/)")


class Door:
    """The files of the memory folder ``root`` (the folder itself is the host's, trusted)."""

    def __init__(self, root: Path | str):
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"Door({str(self.root)!r})"

    def _shown(self, rel: str) -> str:
        return f"{self.root.name}/{rel}"

    def _dir(self, folder: str | None, create: bool = False) -> int | None:
        """A descriptor of ``root`` (None) or of ``root/folder``, each folder on the way opened without following a
        link; None if missing."""
        if create:
            self.root.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        walked = ""
        for part in folder.split("/") if folder is not None else ():
            walked = f"{walked}/{part}" if walked else part
            try:
                if create:
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                inner = open_folder(part, dir_fd=fd, shown=self._shown(walked))
            finally:
                os.close(fd)
            if inner is None:
                return None
            fd = inner
        return fd

    @contextmanager
    def _folder(self, folder: str | None) -> Iterator[int | None]:
        """:meth:`_dir` of ``folder`` (None when it is missing), closed when the block ends."""
        fd = self._dir(folder)
        try:
            yield fd
        finally:
            if fd is not None:
                os.close(fd)

    # -- reading ---------------------------------------------------------------

    def read(self, rel: str) -> bytes | None:
        """The bytes of a file of the folder, None when it does not exist (see the module's rules)."""
        folder, name = folder_file(rel)
        with self._folder(folder) as fd:
            return None if fd is None else read_regular(name, dir_fd=fd, limit=_limit(folder), shown=self._shown(rel))

    def stamp(self, rel: str) -> Stamp | None:
        """``(inode, mtime_ns, size)`` of the entry itself (a link's, not its target's); None when missing."""
        folder, name = folder_file(rel)
        with self._folder(folder) as fd:
            if fd is None:
                return None
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                return None
        return st.st_ino, st.st_mtime_ns, st.st_size

    def stamps(self, folder: str) -> dict[str, Stamp]:
        """``{name: stamp}`` of the memory files in ``wiki/`` or ``diary/`` (of a layer: ``characters/<id>/wiki``)
        ({} without the folder)."""
        _check_folder(folder)
        out: dict[str, Stamp] = {}
        with self._folder(folder) as fd:
            if fd is None:
                return out
            with os.scandir(fd) as entries:
                for entry in entries:
                    if not is_memory_name(entry.name):
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    out[entry.name] = (st.st_ino, st.st_mtime_ns, st.st_size)
        return out

    def names(self, folder: str) -> list[str]:
        """The memory files' names (``<stem>.md``) in ``wiki/`` or ``diary/``, sorted."""
        return sorted(self.stamps(folder))

    def layers(self) -> list[str]:
        """The characters whose layer folder is here (``characters/<id>/``), sorted; names that are no character
        id are ignored, a link or a file named like one is :class:`DamagedFolder` (as a link in place of ``wiki/``)."""
        with self._folder(LAYERS_DIR) as fd:
            if fd is None:
                return []
            with os.scandir(fd) as entries:
                found = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in entries if is_character_id(e.name))
        for name, is_dir in found:
            if not is_dir:
                raise DamagedFolder(f"{self._shown(f'{LAYERS_DIR}/{name}')} is not a folder; nothing is read through "
                                    f"it (wikimem repair moves it aside)")
        return [name for name, _ in found]

    # -- writing ---------------------------------------------------------------

    def write(self, rel: str, data: bytes, *, durable: bool = True) -> None:
        """Replace a file of the folder with ``data``, atomically and durably (a link in its place is replaced,
        never followed). ``durable=False`` skips the file's and the folder's fsync: for a caller whose own log
        makes the write durable (the versioned store's intent log, see :mod:`wikimem.fsio`)."""
        folder, name = folder_file(rel)
        limit = _limit(folder)
        if len(data) > limit:
            raise TooLarge(f"{rel} would be {len(data):,} bytes long; a file of a memory folder holds at most "
                           f"{limit:,} bytes (wikimem.limits)")
        fd = self._dir(folder, create=True)
        if fd is None:
            raise FileNotFoundError(self.root)
        tmp = f".{name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        try:
            out = open_regular(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, dir_fd=fd, shown=self._shown(rel))
            try:
                try:
                    write_all(out, data)
                    if durable:
                        os.fsync(out)
                finally:
                    os.close(out)
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=fd)
                except FileNotFoundError:
                    pass
                raise
            if durable:
                os.fsync(fd)
        except IsADirectoryError:
            raise DamagedFolder(f"{self._shown(rel)} is a folder; only regular files are written") from None
        finally:
            os.close(fd)

    def put(self, rel: str, data: bytes | None, *, durable: bool = True) -> None:
        """:meth:`write` ``data``, or :meth:`remove` the file when ``data`` is None (a file as a commit has it)."""
        if data is None:
            self.remove(rel, durable=durable)
        else:
            self.write(rel, data, durable=durable)

    def remove(self, rel: str, *, durable: bool = True) -> None:
        """Delete a file of the folder (if present), durably unless ``durable=False`` (a link is removed itself,
        never its target)."""
        folder, name = folder_file(rel)
        with self._folder(folder) as fd:
            if fd is None:
                return
            try:
                os.unlink(name, dir_fd=fd)
                if durable:
                    os.fsync(fd)
            except (FileNotFoundError, NotADirectoryError):
                pass
            except IsADirectoryError:
                raise DamagedFolder(f"{self._shown(rel)} is a folder; only regular files are removed") from None
            except PermissionError:  # Linux answers EPERM when unlinking a folder
                if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise DamagedFolder(f"{self._shown(rel)} is a folder; only regular files are removed") from None
                raise


class OverlayDoor(Door):
    """The files of a memory folder that exists only as a base (a git tree) plus what was written over it, in memory.

    The writer of a staged run (:mod:`wikimem.versioned.staging`) writes through one: the same path rules and
    size limits as :class:`Door`, nothing ever reaches the disk. ``base_read(rel)`` gives a file of the base
    (None: absent), ``base_names(folder)`` the memory file names of a folder there; :meth:`rebase` starts over
    from another base (the branch tip a unit starts from).
    """

    def __init__(self, root: Path | str, base_read: Callable[[str], bytes | None],
                 base_names: Callable[[str], list[str]]):
        super().__init__(root)
        self.rebase(base_read, base_names)

    def rebase(self, base_read: Callable[[str], bytes | None], base_names: Callable[[str], list[str]]) -> None:
        self._base_read, self._base_names = base_read, base_names
        self.written: dict[str, bytes | None] = {}
        self._version = next(_EPOCHS) << 32

    def read(self, rel: str) -> bytes | None:
        folder_file(rel)
        return self.written[rel] if rel in self.written else self._base_read(rel)

    def stamp(self, rel: str) -> Stamp | None:
        data = self.read(rel)
        return None if data is None else (hash(rel) & 0xFFFFFFFF, self._version, len(data))

    def stamps(self, folder: str) -> dict[str, Stamp]:
        _check_folder(folder)
        names = set(self._base_names(folder))
        for rel, data in self.written.items():
            where, _, name = rel.rpartition("/")
            if where == folder:
                (names.add if data is not None else names.discard)(name)
        out: dict[str, Stamp] = {}
        for name in names:
            found = self.stamp(f"{folder}/{name}")
            if found is not None:
                out[name] = found
        return out

    def write(self, rel: str, data: bytes, *, durable: bool = True) -> None:  # (in memory: nothing to sync)
        folder, _ = folder_file(rel)
        limit = _limit(folder)
        if len(data) > limit:
            raise TooLarge(f"{rel} would be {len(data):,} bytes long; a file of a memory folder holds at most "
                           f"{limit:,} bytes (wikimem.limits)")
        self.written[rel] = bytes(data)
        self._version += 1

    def remove(self, rel: str, *, durable: bool = True) -> None:
        folder_file(rel)
        self.written[rel] = None
        self._version += 1
