"""Bounds on what a remote may send, and the quarantine fetched objects wait in until they are checked.

A remote is untrusted input: it may stream without end, or drip a byte at a
time so that no single read times out. Every operation of a
:class:`~wikimem.versioned.Remote` runs under a :class:`Meter`:

- :class:`TransferLimits` — at most ``max_bytes`` received and ``max_seconds``
  in all (``WIKIMEM_REMOTE_MAX_MB``, ``WIKIMEM_REMOTE_MAX_SECONDS``);
- the clients made by :func:`metered_client` count every byte they read
  (HTTP: each read of the response; git://, ssh, file: the protocol's
  activity reports) and, when the time is up, break the transfer under the
  blocked read (HTTP's socket shut down, ssh or git's upload-pack killed),
  so a drip cannot outlast the bound (git://, which has no such handle, is
  checked at every packet);
- :func:`quarantine` — a fetch writes its pack into an object store of its
  own under ``.git/wikimem-quarantine/`` (the folder's objects as its
  alternate, so a thin pack resolves and checks read both); only what was
  accepted moves into the folder's object store, and the quarantine is
  deleted whatever happens: a refused object never reaches the object store.
"""

from __future__ import annotations

import os
import secrets
import select
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dulwich.client import (
    HttpGitClient,
    SSHGitClient,
    SubprocessGitClient,
    SubprocessSSHVendor,
    SubprocessWrapper,
    TCPGitClient,
    find_git_command,
)
from dulwich.object_store import DiskObjectStore
from dulwich.objects import Commit, Tree
from dulwich.protocol import Protocol

from ..objects import oid

__all__ = ["TransferLimits", "Meter", "TransferExceeded", "metered_client", "quarantine", "Quarantine",
           "QUARANTINE"]

QUARANTINE = "wikimem-quarantine"  # in .git/: one object store per fetch in progress
STALE_QUARANTINE_SECONDS = 24 * 3600.0  # one a killed process left behind is swept after this


@dataclass(frozen=True)
class TransferLimits:
    """What one remote operation may take: bytes received and seconds in all."""

    max_bytes: int = 1 << 30
    max_seconds: float = 300.0

    def __post_init__(self) -> None:
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int) or self.max_bytes < 1:
            raise ValueError(f"the remote's byte bound must be a positive integer, got {self.max_bytes!r}")
        if not self.max_seconds > 0:
            raise ValueError(f"the remote's time bound must be positive, got {self.max_seconds!r}")


class TransferExceeded(Exception):
    """A bound of :class:`TransferLimits` was passed (the meter's ``reason`` says which)."""


class Meter:
    """The bytes and the time of one remote operation, and how to break it off when its time is up."""

    def __init__(self, limits: TransferLimits):
        self.limits = limits
        self.received = 0
        self.reason: str | None = None
        self._deadline = time.monotonic() + limits.max_seconds
        self._breakers: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(limits.max_seconds, self._expire)
        self._timer.daemon = True

    def start(self) -> Meter:
        self._timer.start()
        return self

    def stop(self) -> None:
        self._timer.cancel()

    def count(self, n: int) -> None:
        """Count ``n`` bytes received; :class:`TransferExceeded` past a bound."""
        self.received += n
        if self.received > self.limits.max_bytes:
            self.reason = (f"the remote sent more than {self.limits.max_bytes:,} bytes (WIKIMEM_REMOTE_MAX_MB); "
                           "refused, nothing it sent was kept")
            raise TransferExceeded(self.reason)
        self.check()

    def check(self) -> None:
        if time.monotonic() > self._deadline:
            self._late()
            raise TransferExceeded(self.reason)

    def on_break(self, breaker: Callable[[], None]) -> None:
        """Run ``breaker`` (it ends a blocked read) when the time is up — now, if it is already."""
        with self._lock:
            late = self.reason is not None and time.monotonic() > self._deadline
            if not late:
                self._breakers.append(breaker)
        if late:
            _quietly(breaker)

    def _late(self) -> None:
        self.reason = self.reason or (f"the remote took more than {self.limits.max_seconds:g} s "
                                      "(WIKIMEM_REMOTE_MAX_SECONDS); refused, nothing it sent was kept")

    def _expire(self) -> None:
        self._late()
        with self._lock:
            breakers, self._breakers = self._breakers, []
        for breaker in breakers:
            _quietly(breaker)


def _quietly(call: Callable[[], None]) -> None:
    with suppress(Exception):
        call()


class _Metered:
    """What every metered client shares: the meter of the operation running in this thread."""

    def __init__(self) -> None:
        self._meters = threading.local()

    def current(self) -> Meter | None:
        return getattr(self._meters, "meter", None)

    @contextmanager
    def metered(self, meter: Meter) -> Iterator[Meter]:
        self._meters.meter = meter
        meter.start()
        try:
            yield meter
        finally:
            meter.stop()
            self._meters.meter = None

    def activity(self, n: int, kind: str) -> None:
        """dulwich's ``report_activity``: every byte a traditional client's protocol reads."""
        meter = self.current()
        if meter is not None and kind == "read":
            meter.count(n)


class _MeteredPool:
    """urllib3's pool manager of an HTTP client, each response's reads counted and its socket shut down when the
    time is up (a drip inside one read cannot outlast the bound)."""

    def __init__(self, pool: Any, meters: _Metered):
        self._pool = pool
        self._meters = meters

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def request(self, *args: Any, **kwargs: Any) -> Any:
        resp = self._pool.request(*args, **kwargs)
        meter = self._meters.current()
        if meter is None:
            return resp
        sock = getattr(getattr(resp, "connection", None), "sock", None)
        if sock is not None:
            meter.on_break(lambda: sock.shutdown(socket.SHUT_RDWR))
        read = resp.read

        def metered(amt: int | None = None, *args: Any, **kwargs: Any) -> bytes:
            meter.check()
            chunk = read(amt, *args, **kwargs)
            meter.count(len(chunk))
            return chunk

        resp.read = metered
        return resp


class _KillingSSHVendor(SubprocessSSHVendor):
    """ssh as dulwich runs it, the process killed when the operation's time is up."""

    def __init__(self, meters: _Metered):
        super().__init__()
        self.meters = meters

    def run_command(self, *args: Any, **kwargs: Any) -> Any:
        wrapper = super().run_command(*args, **kwargs)
        meter = self.meters.current()
        if meter is not None:
            meter.on_break(wrapper.proc.kill)
        wrapper.can_read = _poller(wrapper.proc.stdout.fileno())  # type: ignore[method-assign,union-attr]
        return wrapper


def _poller(fileno: int) -> Callable[[], bool]:
    """Whether ``fileno`` has bytes to read now, by poll(2): dulwich asks select(2), which refuses a descriptor
    above 1023 (FD_SETSIZE) — a long-lived process holding many owners open reaches that, and every fetch of a
    file://, ssh or git:// remote then failed with "filedescriptor out of range in select()"."""
    poller = select.poll()
    poller.register(fileno, select.POLLIN)
    return lambda: bool(poller.poll(0))


class _PollingSubprocessClient(SubprocessGitClient):
    """git's own upload-pack and receive-pack, read with :func:`_poller` instead of select(2) (dulwich's connect
    as it stands, that one call aside)."""

    def _connect(self, cmd: bytes, path: bytes | str, protocol_version: int | None = None) -> Any:
        if isinstance(path, bytes):
            path = path.decode(self._remote_path_encoding)
        git_command = self.git_command if self.git_command is not None else find_git_command()
        proc = subprocess.Popen([*git_command, cmd.decode("ascii"), path], bufsize=0, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        pipe = SubprocessWrapper(proc)
        assert proc.stdout is not None
        return (Protocol(pipe.read, pipe.write, pipe.close, report_activity=self._report_activity),
                _poller(proc.stdout.fileno()), proc.stderr)


class _PollingTCPClient(TCPGitClient):
    """git:// read with :func:`_poller` instead of select(2) (dulwich's connect as it stands, its reader aside)."""

    def _connect(self, cmd: bytes, path: bytes | str, protocol_version: int | None = None) -> Any:
        proto, _select, stderr = super()._connect(cmd, path, protocol_version)
        reader = getattr(proto.read, "__self__")  # noqa: B009 - the socket's buffered reader, its descriptor the socket's
        return proto, _poller(reader.fileno()), stderr


def metered_client(kind: str, *args: Any, limits: TransferLimits | None = None, **kwargs: Any) -> Any:
    """A dulwich client of ``kind`` (``http``, ``tcp``, ``subprocess``: git's own upload-pack, ``ssh``) whose
    operations a :class:`Meter` bounds: ``with client.metered(meter): …`` (the meters are the client's
    ``meters``). git:// has no handle to break: its bytes and its time are checked at every packet."""
    meters = _Metered()
    client: Any
    if kind == "http":
        client = HttpGitClient(*args, **kwargs)
        client.pool_manager = _MeteredPool(client.pool_manager, meters)
        client.metered = meters.metered
        return client
    kwargs["report_activity"] = meters.activity
    if kind == "tcp":
        client = _PollingTCPClient(*args, **kwargs)
    elif kind == "ssh":
        kwargs["vendor"] = _KillingSSHVendor(meters)
        client = SSHGitClient(*args, **kwargs)
    else:
        client = _PollingSubprocessClient(*args, **kwargs)
        seconds = (limits or TransferLimits()).max_seconds
        if shutil.which("timeout"):  # coreutils: git's upload-pack killed at the time bound
            client.git_command = ["timeout", "-s", "KILL", f"{seconds:g}", "git"]
    client.metered = meters.metered
    return client


# -- the quarantine ------------------------------------------------------------------------------------


class Quarantine:
    """An object store of one fetch, under ``.git/wikimem-quarantine/``, that reads through to the folder's."""

    def __init__(self, main: DiskObjectStore, folder: Path):
        self.main = main
        self.folder = folder
        self.store = DiskObjectStore.init(str(folder))
        self.store.add_alternate_path(main.path)

    def pack(self) -> tuple[Any, Callable[[], Any], Callable[[], None]]:
        """Where the fetched pack is written: ``(file, commit, abort)`` (commit indexes it, completing a thin
        pack from the folder's objects)."""
        return self.store.add_pack()

    def keep(self, heads: Iterable[bytes], everything: bool) -> None:
        """Move what was accepted into the folder's object store: the whole pack when every fetched head was
        (``everything``), else only the objects ``heads`` reach that the folder lacks."""
        if everything:
            pack_dir = Path(self.store.pack_dir)
            for name in sorted(os.listdir(pack_dir), key=lambda n: not n.endswith(".pack")):  # .pack before .idx
                if name.endswith((".pack", ".idx")):
                    os.replace(pack_dir / name, Path(self.main.pack_dir) / name)
            return
        found = _reachable(self.store, self.main, heads)
        if found:
            self.main.add_objects([(obj, None) for obj in found])


def _reachable(view: DiskObjectStore, main: DiskObjectStore, heads: Iterable[bytes]) -> list:
    """The objects ``heads`` reach in ``view`` that ``main`` lacks (a walk that stops at what ``main`` holds)."""
    out: dict[bytes, Any] = {}
    todo = list(heads)
    while todo:
        sha = todo.pop()
        if sha in out or oid(sha) in main:
            continue
        obj = view[oid(sha)]
        out[sha] = obj
        if isinstance(obj, Commit):
            todo.append(obj.tree)
            todo.extend(obj.parents)
        elif isinstance(obj, Tree):
            todo.extend(entry.sha for entry in obj.iteritems() if entry.mode != 0o160000)
    return list(out.values())


@contextmanager
def quarantine(repo: Any) -> Iterator[Quarantine]:
    """A :class:`Quarantine` for one fetch into ``repo`` (a dulwich ``Repo``), deleted at the end whatever happens;
    one a killed process left behind is swept first."""
    top = Path(repo.controldir()) / QUARANTINE
    top.mkdir(exist_ok=True)
    _sweep(top)
    folder = top / f"q-{os.getpid()}-{secrets.token_hex(6)}"
    folder.mkdir()
    try:
        yield Quarantine(repo.object_store, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _sweep(top: Path) -> None:
    """Remove quarantines whose process is gone (a kill mid-fetch), or older than a day."""
    now = time.time()
    for entry in top.iterdir():
        with suppress(OSError, ValueError):
            if not _alive(int(entry.name.split("-")[1])) or now - entry.stat().st_mtime > STALE_QUARANTINE_SECONDS:
                shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
