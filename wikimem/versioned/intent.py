"""The intent log of one memory folder: each round of commits, recorded durably before any of it lands.

Design notes: docs/explanation/durability-internals.md (``wikimem/versioned/intent.py``).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import struct
import weakref
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikimem.fsio import atomic_write, read_bytes, remove_file, sync_filesystem

__all__ = ["IntentLog", "Step", "Record", "Pending", "LOG_NAME", "LOG_LIMIT", "PENDING", "APPLIED", "ABORTED",
           "UNDONE", "boot_id"]

LOG_NAME = "wikimem-intent.log"
LEGACY_NAME = "wikimem-intent.json"  # the previous version's one-write intent file
# Past this many bytes of records the next round checkpoints first (one file-system sync).
LOG_LIMIT = 256 * 1024
PENDING, APPLIED, ABORTED, UNDONE = b"P", b"A", b"X", b"U"

_HEADER_SIZE = 512  # one sector: the header is rewritten in place, never torn across sectors
_HEADER = struct.Struct("<8s8sI")  # magic, salt, crc32 of (salt + boot)
_HEADER_MAGIC = b"WMLOG\x00\x01\x00"
_RECORD = struct.Struct("<4sc3x8sII")  # magic, state, salt, payload length, crc32 of (salt + payload)
_RECORD_MAGIC = b"WMR\x01"
_STATE_AT = 4  # offset of the state byte in a record

log = logging.getLogger(__name__)


def boot_id() -> str | None:
    """This boot of the machine (Linux), or None where the platform does not say."""
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as fh:
            return fh.read().strip().decode("ascii", "replace") or None
    except OSError:
        return None


@dataclass
class Step:
    """One commit of a round, as the log records it."""

    commit: str
    parent: str | None
    blobs: dict[str, str | None]  # path -> the blob it holds after the commit (None: removed)
    result: dict[str, Any] | None = None  # {"key", "payload", "request"}: what a keyed retry replays
    touches: list | None = None  # the items it touched (a hint for the history index)
    external: bool = False  # a hand edit being committed: its files are the editor's, never put back


@dataclass
class Record:
    """One round as the log holds it."""

    offset: int
    state: bytes
    steps: list[Step]
    journal_size: int | None = None  # the journal's size before the round (None: no journal lines)
    journal: list[dict] = field(default_factory=list)  # the round's journal records
    objects: dict[str, bytes] = field(default_factory=dict)  # sha -> the loose object (zlib), new in the round

    @property
    def base(self) -> str | None:
        return self.steps[0].parent

    @property
    def tip(self) -> str:
        return self.steps[-1].commit

    def paths(self) -> dict[str, str | None]:
        """Each path the round changed, with the blob it ends with."""
        out: dict[str, str | None] = {}
        for step in self.steps:
            out.update(step.blobs)
        return out


@dataclass
class Pending:
    """What :meth:`IntentLog.pending` found to reconcile: ``restart`` (redo every record) or the last one."""

    restart: bool
    records: list[Record]


def _encode(steps: list[Step], journal_size: int | None, journal: list[dict], objects: dict[str, bytes]) -> bytes:
    meta = {"steps": [{"commit": st.commit, "parent": st.parent, "blobs": st.blobs, "result": st.result,
                       "touches": st.touches, "external": st.external} for st in steps],
            "journal_size": journal_size, "journal": journal,
            "objects": [[sha, len(data)] for sha, data in objects.items()]}
    head = json.dumps(meta, ensure_ascii=False, default=str, separators=(",", ":")).encode("utf-8")
    return b"".join([struct.pack("<I", len(head)), head, *objects.values()])


def _decode(offset: int, state: bytes, payload: bytes) -> Record:
    (size,) = struct.unpack_from("<I", payload)
    meta = json.loads(payload[4:4 + size])
    at = 4 + size
    objects: dict[str, bytes] = {}
    for sha, length in meta["objects"]:
        objects[sha] = payload[at:at + length]
        at += length
    steps = [Step(raw["commit"], raw["parent"], dict(raw["blobs"]), raw.get("result"), raw.get("touches"),
                  bool(raw.get("external"))) for raw in meta["steps"]]
    return Record(offset, state, steps, meta.get("journal_size"), meta.get("journal") or [], objects)


class IntentLog:
    """The intent log of one repository, as this process sees it (call everything under the owner lock)."""

    def __init__(self, git_dir: Path, *, limit: int = LOG_LIMIT):
        self.path = Path(git_dir) / LOG_NAME
        self.limit = limit
        self._fd: int | None = None
        self._closer: weakref.finalize | None = None
        self._salt: bytes | None = None  # the epoch this process last read
        self._end = _HEADER_SIZE  # where the next record goes
        self._last: Record | None = None  # the newest record of the epoch (None: none yet)
        self._head: str | None = None  # the branch at the epoch's checkpoint
        self._boot = boot_id()
        self._verified = False  # without a boot id: this process redid the log once already
        self._legacy_checked = False

    # -- the file ------------------------------------------------------------

    def _open(self, check: bool = False) -> int:
        """The log's descriptor (``check``: still the file at :attr:`path`, else opened again)."""
        if self._fd is not None and check:
            try:
                same = os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the folder was deleted (and maybe made again): never write to a dead file
                self.close()
                self._salt, self._end, self._last = None, _HEADER_SIZE, None
        if self._fd is None:
            if not self.path.exists():
                atomic_write(self.path, self._header(secrets.token_bytes(8), None))
            self._fd = os.open(self.path, os.O_RDWR)
            self._closer = weakref.finalize(self, os.close, self._fd)
        return self._fd

    def _header(self, salt: bytes, head: str | None) -> bytes:
        body = json.dumps({"boot": self._boot, "head": head}).encode("ascii")[:_HEADER_SIZE - 64]
        data = _HEADER.pack(_HEADER_MAGIC, salt, zlib.crc32(salt + body)) + struct.pack("<H", len(body)) + body
        return data.ljust(_HEADER_SIZE, b"\0")

    def _read_header(self, fd: int) -> tuple[bytes, str | None, str | None] | None:
        """``(salt, boot id, head at the checkpoint)``, or None for a torn or foreign header."""
        data = os.pread(fd, _HEADER_SIZE, 0)
        if len(data) < _HEADER.size + 2:
            return None
        magic, salt, crc = _HEADER.unpack_from(data)
        (size,) = struct.unpack_from("<H", data, _HEADER.size)
        body = data[_HEADER.size + 2:_HEADER.size + 2 + size]
        if magic != _HEADER_MAGIC or zlib.crc32(salt + body) != crc:
            return None
        try:
            meta = json.loads(body)
        except ValueError:
            return None
        return salt, meta.get("boot"), meta.get("head")

    def close(self) -> None:
        if self._fd is not None:
            if self._closer is not None:
                self._closer()  # closes the descriptor, once
            self._fd = None

    # -- reading ---------------------------------------------------------------

    def _scan(self, fd: int, salt: bytes, start: int) -> list[Record]:
        """The valid records of epoch ``salt`` from ``start`` on (the first torn or foreign one ends them)."""
        found = []
        offset = start
        size = os.fstat(fd).st_size
        while offset + _RECORD.size <= size:
            head = os.pread(fd, _RECORD.size, offset)
            magic, state, rec_salt, length, crc = _RECORD.unpack(head)
            if magic != _RECORD_MAGIC or rec_salt != salt or offset + _RECORD.size + length > size:
                break
            payload = os.pread(fd, length, offset + _RECORD.size)
            if len(payload) != length or zlib.crc32(salt + payload) != crc:
                break
            try:
                found.append(_decode(offset, state, payload))
            except (ValueError, KeyError, TypeError, struct.error):
                log.warning("%s: an undecodable record at %d ends the log", self.path, offset)
                break
            offset += _RECORD.size + length
        self._end = offset
        return found

    def _refresh(self) -> tuple[bytes | None, str | None, list[Record]]:
        """Catch up with what other processes wrote: ``(salt, boot id, records read now)``."""
        fd = self._open(check=True)
        header = self._read_header(fd)
        if header is None:  # a torn header is only ever rewritten after a file-system sync: nothing to redo
            self._salt, self._end, self._last = None, _HEADER_SIZE, None
            return None, None, []
        salt, boot, self._head = header
        if salt != self._salt:
            self._salt, self._end, self._last = salt, _HEADER_SIZE, None
        records = self._scan(fd, salt, self._end)
        if records:
            self._last = records[-1]
        elif self._last is not None:  # its state may have changed (another process marked it)
            self._last.state = os.pread(fd, 1, self._last.offset + _STATE_AT)
        return salt, boot, records

    def pending(self, head: str | None) -> Pending | None:
        """What needs reconciling before the next round, or None (the usual case: two small reads).

        ``head``: the branch as it is now (a checkpoint made here records it).
        """
        if not self.path.exists():
            atomic_write(self.path, self._header(secrets.token_bytes(8), head))  # fsync + folder fsync, once
        salt, boot, _ = self._refresh()
        if salt is None:
            self.checkpoint(head)
            return None
        restart = boot != self._boot if self._boot is not None else not self._verified
        if restart:
            self._verified = True
            records = self._scan(self._open(), salt, _HEADER_SIZE)
            self._last = records[-1] if records else None
            if not records:
                self.checkpoint(head)  # this boot's id in the header, so later looks are cheap
                return None
            return Pending(True, records)
        if self._last is not None and self._last.state in (PENDING, ABORTED):
            return Pending(False, [self._last])
        return None

    def in_flight(self) -> Record | None:
        """The last round, when a writer left it pending or aborted (what a killed writer leaves), else None."""
        self._refresh()
        last = self._last
        return last if last is not None and last.state in (PENDING, ABORTED) else None

    def legacy(self) -> dict[str, Any] | None:
        """The intent file a writer of the previous version left (``wikimem-intent.json``), once per process."""
        if self._legacy_checked:
            return None
        self._legacy_checked = True
        data = read_bytes(self.path.with_name(LEGACY_NAME))
        if data is None:
            return None
        try:
            found = json.loads(data)
        except ValueError:
            found = None
        if not isinstance(found, dict) or not isinstance(found.get("paths"), list):
            self.clear_legacy()  # never complete: it was written atomically, so it never started
            return None
        return found

    def clear_legacy(self) -> None:
        remove_file(self.path.with_name(LEGACY_NAME))

    # -- writing ---------------------------------------------------------------

    def append(self, steps: list[Step], objects: dict[str, bytes], journal_size: int | None = None,
               journal: list[dict] | None = None) -> Record:
        """Record a round, durably (one ``fdatasync``): from here on it can be redone.

        Checkpoints first when the log is full, or when the round does not
        start where the log left the branch (something moved it without a
        record — a fetch, a ``git`` command —: its objects are synced before a
        record builds on them).
        """
        payload = _encode(steps, journal_size, journal or [], objects)
        fd = self._open()
        self._refresh()
        last = self._last
        known = self._head if last is None else last.tip if last.state in (PENDING, APPLIED) else last.base
        if self._salt is None or known != steps[0].parent or (
                self._end > _HEADER_SIZE and self._end + _RECORD.size + len(payload) > self.limit):
            self.checkpoint(steps[0].parent)
        assert self._salt is not None
        offset = self._end
        head = _RECORD.pack(_RECORD_MAGIC, PENDING, self._salt, len(payload), zlib.crc32(self._salt + payload))
        data = head + payload
        view = memoryview(data)
        at = offset
        while view:
            done = os.pwrite(fd, view, at)
            view, at = view[done:], at + done
        os.fdatasync(fd)
        self._end = offset + len(data)
        self._last = Record(offset, PENDING, steps, journal_size, list(journal or []), objects)
        return self._last

    def mark(self, record: Record, state: bytes, *, durable: bool = False) -> None:
        """Set a record's state (synced only when ``durable``: an abort must outlive a power loss)."""
        fd = self._open()
        os.pwrite(fd, state, record.offset + _STATE_AT)
        if durable:
            os.fdatasync(fd)
        record.state = state

    def checkpoint(self, head: str | None = None, *, wipe: bool = False) -> None:
        """Sync the file system once (every round so far is then on disk), then start a new, empty epoch.

        ``head``: the branch now (the next record should start there); ``wipe``
        also overwrites the old records with zeros (after history was
        rewritten to forget something, no copy of it may stay here).
        """
        fd = self._open()
        sync_filesystem(self.path.parent)
        salt = secrets.token_bytes(8)
        if wipe:
            size = os.fstat(fd).st_size
            if size > _HEADER_SIZE:
                os.pwrite(fd, b"\0" * (size - _HEADER_SIZE), _HEADER_SIZE)
                os.fdatasync(fd)
                os.ftruncate(fd, _HEADER_SIZE)
        elif os.fstat(fd).st_size > 2 * self.limit:
            os.ftruncate(fd, self.limit)  # one huge round grew the file: give the space back
        os.pwrite(fd, self._header(salt, head), 0)
        os.fdatasync(fd)
        self._salt, self._end, self._last, self._head = salt, _HEADER_SIZE, None, head
        self._verified = True
