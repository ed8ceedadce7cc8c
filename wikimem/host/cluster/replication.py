"""The host's side of replication: every owner repository to its own git remote.

Design notes: docs/explanation/replication-internals.md (``wikimem/host/cluster/replication.py``).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem.errors import Erased, RemoteError, RemoteMissing, RemoteRefused, RemoteUnavailable
from wikimem.format import utc_now
from wikimem.fsio import atomic_write, read_regular, remove_file
from wikimem.host.owner_ids import decode_owner_id

if TYPE_CHECKING:
    from wikimem.host.owner import Owner

__all__ = ["Settings", "Replication", "Pusher", "PROBE_FOLDER"]

log = logging.getLogger(__name__)

# The folder name /readyz asks the remote about: never an owner's ("_" + non-hex is no encoding).
PROBE_FOLDER = "_wikimem-probe"


@dataclass(frozen=True)
class Settings:
    """Replication settings of a host (made by :mod:`wikimem.host.config` from the environment variables)."""

    remote: str  # the URL template, with {owner}
    mode: str = "sync"  # or "async"
    max_lag: int = 1000  # async: commits per owner not yet on the remote before writes wait
    freshness: float = 2.0  # seconds: staleness bound of reads on a host that was away
    timeout: float = 10.0  # seconds per remote operation
    ssh_command: str | None = None  # for ssh:// remotes (GIT_SSH_COMMAND; None: ssh in batch mode)
    hook: str | None = None  # WIKIMEM_REMOTE_HOOK: a command run as ``hook erase|prune URL`` on the git server's side
    max_bytes: int = 1 << 30  # WIKIMEM_REMOTE_MAX_MB: what one remote operation may receive
    max_seconds: float = 300.0  # WIKIMEM_REMOTE_MAX_SECONDS: how long it may take in all
    # WIKIMEM_SECRET_KEY (the same on every host): keys the names of erasure markers (None: the remote template)
    secret: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        from wikimem.versioned import MODES, validate_template

        validate_template(self.remote)
        if self.mode not in MODES:
            raise ValueError(f"WIKIMEM_REPLICATION must be one of {', '.join(MODES)}, got {self.mode!r}")
        if isinstance(self.max_lag, bool) or not isinstance(self.max_lag, int) or self.max_lag < 1:
            raise ValueError(f"the replication lag bound must be a positive integer, got {self.max_lag!r}")
        if not self.freshness >= 0 or not self.timeout > 0:
            raise ValueError("freshness must be >= 0 and timeout > 0 seconds")
        self.limits()  # (checked once)

    def limits(self):
        """What one remote operation may take (:class:`~wikimem.versioned.TransferLimits`)."""
        from wikimem.versioned import TransferLimits

        return TransferLimits(self.max_bytes, self.max_seconds)


class Replication:
    """Replication of a host's owners to their remotes, for one process."""

    def __init__(self, settings: Settings, owners: Callable[[], Iterable[Owner]] | None = None,
                 state_dir: Path | None = None, *, metrics=None):
        self.settings = settings
        self.metrics = metrics  # the host's (wikimem/host/metrics.py): async push failures are counted there
        # Where refusals of a remote are recorded (None: in this process only, for a host without a data root).
        self.refused_dir = Path(state_dir) / "refused" if state_dir is not None else None
        self._refused: dict[str, dict] = {}
        self._checked: dict[str, float] = {}
        self._lock = threading.Lock()
        self.pusher = Pusher(self) if settings.mode == "async" else None
        # Set by the host: whether an owner whose remote repository is missing was erased (its copy goes).
        self.erased: Callable[[Owner], bool] | None = None

    @property
    def mode(self) -> str:
        return self.settings.mode

    def url(self, folder: str) -> str:
        from wikimem.versioned import remote_url

        return remote_url(self.settings.remote, folder)

    def remote(self, folder: str):
        """The transport to the remote of one owner folder."""
        from wikimem.versioned import Remote

        return Remote(self.url(folder), timeout=self.settings.timeout, ssh_command=self.settings.ssh_command,
                      limits=self.settings.limits())

    def marker_folder(self, owner_id: str) -> str:
        """The name of the repository on the remote that marks an erasure of ``owner_id``: a keyed digest (no id)."""
        import hashlib
        import hmac

        key = hashlib.sha256(b"wikimem erasure marker\n" + (self.settings.secret or self.shown()).encode()).digest()
        return "_erased-" + hmac.new(key, owner_id.encode("utf-8"), hashlib.sha256).hexdigest()[:40]

    def mark_erased(self, owner_id: str, when: float, scratch: Path | None = None) -> bool:
        """Leave the marker of ``owner_id``'s erasure at ``when`` on the remote; whether it is there."""
        from wikimem.versioned import mark

        return mark(self.remote(self.marker_folder(owner_id)), when, scratch)

    def erased_at(self, owner_id: str, scratch: Path | None = None) -> float | None:
        """When ``owner_id`` was erased, by the marker on the remote (None: no marker, or the remote is away)."""
        from wikimem.versioned import marked

        try:
            return marked(self.remote(self.marker_folder(owner_id)), scratch)
        except RemoteError as exc:
            log.warning("cannot read the erasure marker of %s: %s", owner_id, exc)
            return None

    def _gone(self, owner: Owner) -> bool:
        """Whether the owner's missing remote was erased: the register says so (a shared database), or the marker
        on the remote, after this copy was made."""
        if self.erased is not None and self.erased(owner):
            return True
        when = self.erased_at(owner.id)
        try:
            made = (owner.root / ".git" / "HEAD").stat().st_mtime
        except FileNotFoundError:
            return when is not None
        return when is not None and made <= when

    def shown(self) -> str:
        """The remote template without credentials."""
        from wikimem.versioned import Remote

        return Remote(self.settings.remote.replace("{owner}", "OWNER")).shown.replace("OWNER", "{owner}")

    # -- owners ---------------------------------------------------------------------

    def attach(self, owner: Owner, folder: str | None = None) -> None:
        """Give a just-opened owner its replica (and, in async mode, the pusher's ear).

        ``folder`` names the owner's remote when the owner is opened somewhere
        else than its folder (a new owner made in a staging folder).
        """
        from wikimem.versioned import Replica

        vstore = owner.vstore
        name = folder or owner.root.name

        def report(refusal: RemoteRefused | None) -> None:
            self.note(name, refusal)

        vstore.replica = Replica(self.remote(name), self.settings.mode, max_lag=self.settings.max_lag, report=report)
        pusher = self.pusher
        if pusher is not None and folder is None:  # (a staging folder is renamed away: never queue it)
            def queue(_cid: str, o: Owner = owner) -> None:
                pusher.enqueue(o)

            vstore.on_commit.append(queue)
            if vstore.replication_lag():
                pusher.enqueue(owner)  # what a restart left unpushed

    def clone(self, folder: str, target: Path) -> bool:
        """Clone the owner ``folder`` from the remote into ``target``; False when the remote has no such owner."""
        remote = self.remote(folder)
        try:
            known = self._refusal(folder)
            if known is not None and known.get("commit") and known["commit"] == remote.remote_head():
                # Refused before, and the remote has not moved since: no need to fetch it all again.
                raise RemoteRefused(known["reason"], remote.shown, commit=known["commit"])
            head = remote.clone(target)
        except RemoteMissing:
            return False
        except RemoteRefused as exc:
            self.note(folder, exc)
            raise
        self.note(folder, None)
        return head is not None

    # -- refusals -------------------------------------------------------------------

    def note(self, folder: str, refusal: RemoteRefused | None) -> None:
        """Record that the remote of ``folder`` was refused (or, None, that a fetch of it was accepted)."""
        path = self.refused_dir / f"{folder}.json" if self.refused_dir is not None else None
        if refusal is None:
            self._refused.pop(folder, None)
            if path is not None:
                remove_file(path)
            return
        record = {"owner": decode_owner_id(folder) or folder, "commit": refusal.commit, "reason": str(refusal),
                  "at": utc_now()}
        log.error("replication of %s refused: %s", record["owner"], refusal)
        self._refused[folder] = record
        if path is not None:
            atomic_write(path, json.dumps(record, ensure_ascii=False).encode("utf-8"))

    def _refusal(self, folder: str) -> dict | None:
        """The recorded refusal of ``folder``'s remote, or None."""
        if self.refused_dir is None:
            return self._refused.get(folder)
        return _record(self.refused_dir / f"{folder}.json")

    def refused(self) -> dict[str, dict]:
        """``{owner id: {"commit", "reason", "at"}}`` of the owners whose remote is refused now."""
        out = {r["owner"]: r for r in self._refused.values()}
        if self.refused_dir is not None:
            try:
                names = sorted(os.listdir(self.refused_dir))
            except FileNotFoundError:
                names = []
            for name in names:
                record = _record(self.refused_dir / name) if name.endswith(".json") else None
                if record is not None:
                    out[record["owner"]] = record
        return {k: {f: v for f, v in r.items() if f != "owner"} for k, r in sorted(out.items())}

    def publish_new(self, owner: Owner) -> None:
        """A just-created owner's first commit: pushed now (sync); async: queued when the owner is opened in
        its folder (:meth:`attach` sees the lag), not here in the staging folder it is made in."""
        if self.pusher is None:
            owner.vstore.push_pending()

    def refresh(self, owner: Owner, force: bool = False) -> bool:
        """Catch the owner up with the remote if it was not checked within the staleness bound; True if it moved."""
        now = time.monotonic()
        with self._lock:
            last = self._checked.get(owner.id)
            if not force and last is not None and now - last < self.settings.freshness:
                return False
            self._checked[owner.id] = now
        vstore = owner.vstore
        assert vstore.replica is not None  # attach() gave every owner of a replicated host its replica
        try:
            theirs = vstore.replica.remote.remote_head()
        except RemoteMissing as exc:  # erased on another host (the register or the marker says so): this copy goes
            if vstore.replica_known() and self._gone(owner):
                raise Erased(f"no owner {owner.id!r}: erased") from None
            log.warning("cannot check %s against its remote: %s", owner.id, exc)
            return False
        except RemoteError as exc:  # reads go on from the local copy; writes will say so
            log.warning("cannot check %s against its remote: %s", owner.id, exc)
            return False
        known = self._refusal(owner.root.name)
        if known is not None and known.get("commit") == theirs:
            return False  # refused already (reported): reads go on from the last accepted state
        if theirs and theirs != vstore.head():
            try:
                vstore.catch_up(fetch=theirs != vstore.replica_known())
            except RemoteRefused:  # (recorded by the replica) reads go on from the last accepted state
                return False
            return True
        return False

    def forget(self, owner_id: str) -> None:
        with self._lock:
            self._checked.pop(owner_id, None)

    def run_hook(self, action: str, url: str) -> bool:
        """Run ``WIKIMEM_REMOTE_HOOK action url`` (``erase``: delete the repository; ``prune``: drop its
        unreachable objects) for a server this host cannot reach itself; whether it succeeded (False: none)."""
        import shlex
        import subprocess

        if not self.settings.hook:
            return False
        argv = [*shlex.split(self.settings.hook), action, url]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=self.settings.timeout * 6,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RemoteUnavailable(f"WIKIMEM_REMOTE_HOOK {action}: {exc}", self.shown()) from None
        if done.returncode != 0:
            raise RemoteUnavailable(f"WIKIMEM_REMOTE_HOOK {action} failed ({done.returncode}): "
                                    f"{done.stderr.strip()[-300:]}", self.shown())
        return True

    # -- the whole host -------------------------------------------------------------------

    def ready(self) -> tuple[bool, str]:
        """Whether the remote answers (a missing probe repository is an answer)."""
        try:
            self.remote(PROBE_FOLDER).remote_head()
        except RemoteMissing:
            pass
        except RemoteUnavailable as exc:
            return False, str(exc)
        except RemoteError as exc:
            return False, str(exc)
        return True, "reachable"

    def lags(self, folders: Iterable[tuple[str, Path]]) -> dict[str, int]:
        """``{owner id: commits not on the remote yet}`` of the owners with a lag."""
        from wikimem.versioned import folder_lag

        out = {}
        for owner_id, path in folders:
            try:
                lag = folder_lag(path, cap=self.settings.max_lag)
            except Exception:  # a folder deleted or half-made meanwhile
                continue
            if lag:
                out[owner_id] = lag
        return out

    def resume(self, open_owner: Callable[[str], object], folders: Callable[[], Iterable[tuple[str, Path]]]) -> None:
        """Async: in the background, re-queue every owner a restart left with unpushed commits."""
        if self.pusher is None:
            return

        def scan() -> None:
            for owner_id in self.lags(folders()):
                try:
                    open_owner(owner_id)  # attach() queues it
                except Exception:
                    log.exception("cannot resume pushing %s", owner_id)

        threading.Thread(target=scan, name="wikimem-resume", daemon=True).start()

    def status(self, folders: Iterable[tuple[str, Path]]) -> dict:
        """Mode, remote and lag (commits not on the remote yet), per owner and in total."""
        lags = self.lags(folders)
        return {"mode": self.mode, "remote": self.shown(), "lag": {"total": sum(lags.values()), "owners": lags},
                "max_lag": self.settings.max_lag, "freshness": self.settings.freshness,
                "queued": self.pusher.queued() if self.pusher is not None else 0, "refused": self.refused()}


def _record(path: Path) -> dict | None:
    try:
        record = json.loads(read_regular(path, limit=1 << 16) or b"null")
    except (ValueError, OSError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("owner"), str) else None


class Pusher:
    """Async mode: one background thread per process pushing owners in the order their commits came.

    An owner is queued once however many commits it gains meanwhile; each
    push sends everything the remote lacks. A failed push (remote down) is
    retried after a pause, in order; nothing is lost by a restart, because
    what is unpushed is what ``main`` has beyond the tracking ref (see
    :meth:`Replication.attach`, which re-queues it).
    """

    RETRY_SECONDS = 2.0

    def __init__(self, replication: Replication):
        self.replication = replication
        self._queue: queue.Queue[Owner] = queue.Queue()
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._busy = False
        self.pushed = 0
        self.failures = 0

    def enqueue(self, owner: Owner) -> None:
        with self._lock:
            if owner.id in self._pending:
                return
            self._pending.add(owner.id)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="wikimem-pusher", daemon=True)
                self._thread.start()
        self._queue.put(owner)

    def queued(self) -> int:
        with self._lock:
            return len(self._pending)

    def _run(self) -> None:
        while True:
            owner = self._queue.get()
            with self._lock:
                self._pending.discard(owner.id)
                self._busy = True
            try:
                if owner.exists():
                    owner.vstore.push_pending()
                    self.pushed += 1
            except RemoteError as exc:
                self.failures += 1
                self._count_failure()
                log.warning("push of %s failed (%s); retrying in %.0fs", owner.id, exc, self.RETRY_SECONDS)
                time.sleep(self.RETRY_SECONDS)
                self.enqueue(owner)
            except Exception:  # a bug must not stop replication of every other owner
                self.failures += 1
                self._count_failure()
                log.exception("push of %s failed", owner.id)
            finally:
                with self._lock:
                    self._busy = False

    def _count_failure(self) -> None:
        metrics = self.replication.metrics
        if metrics is not None:
            metrics.push_failed("async")

    def drain(self, timeout: float) -> bool:
        """Wait until nothing is queued (tests, shutdown); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._pending and not self._busy:
                    return True
            time.sleep(0.02)
        return False
