"""The owners of one data root, for one process: :class:`Owners` (where each lives, the LRU of open ones, lookup
— cloned from the remote or caught up with it —, creation and removal). Held by the
:class:`~wikimem.host.Host` as ``host.owners``; what spans owners (the fleet, probation, erasure) asks it.

Nothing a client sends reaches the file system except through :func:`encode_owner_id`.
"""

from __future__ import annotations

import gc
import logging
import os
import secrets
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem.errors import Conflict, Erased, NotFound, RemoteError, RemoteMoved

from .access import OwnerQuota
from .metrics import NULL_METRICS, NullMetrics
from .owner import Owner
from .owner_ids import decode_owner_id, encode_owner_id
from .retention import Retention

if TYPE_CHECKING:
    from .cluster import Replication
    from .fleet import RunIndex

__all__ = ["Owners", "GONE_ACTIONS"]

log = logging.getLogger(__name__)

# The newest commit of an owner that is gone everywhere: deleted (its history kept), or erased (a tombstone).
GONE_ACTIONS = ("delete-owner", "erase-owner")
# An owner left out of the LRU holds four files (its history index with WAL and shm, its intent log) until the
# garbage collector breaks its reference cycles, which may be minutes away: a scan through a few hundred owners
# ran out of files first. Every so many evictions the process collects (an owner a request still uses stays).
COLLECT_EVERY = 32


class Owners:
    """Owner ids → open :class:`Owner` objects of one data root (an LRU of ``index_cache``), for one process.

    Every lookup checks that the owner still exists (and, with a remote, is caught up with it). ``open_owner``
    makes an :class:`Owner` of a folder (``(id, folder, cache_dir=…)``); ``on_open``, ``on_clone`` and
    ``on_drop`` are told of each owner opened, cloned from the remote, and whose copy left this host
    (the composition root subscribes what must follow them: the staged-run index)."""

    def __init__(self, root: Path, *, open_owner: Callable[..., Owner], run_index: RunIndex,
                 replication: Replication | None = None, index_cache: int = 64, quota: OwnerQuota | None = None,
                 retention: Retention | None = None, metrics: NullMetrics = NULL_METRICS,
                 default_tz: str | None = None) -> None:
        if isinstance(index_cache, bool) or not isinstance(index_cache, int) or index_cache < 1:
            raise ValueError(f"index_cache must be a positive integer, got {index_cache!r}")
        self.root = Path(root)
        self.owners_dir = self.root / "owners"
        self.staging_dir = self.root / "staging"
        self.cache_dir = self.root / "cache"
        self.owners_dir.mkdir(parents=True, exist_ok=True)
        self.index_cache = index_cache
        self.quota = quota or OwnerQuota()
        self.retention = retention or Retention()
        self.run_index = run_index
        self.replication = replication
        self.metrics = metrics
        self.default_tz = default_tz  # the time zone of owners without one (WIKIMEM_TZ)
        self._open_owner = open_owner
        self.on_open: list[Callable[[Owner], None]] = []
        self.on_clone: list[Callable[[Owner], None]] = []
        self.on_drop: list[Callable[[str], None]] = []
        # Told of an owner erased on another host (its copy and what this host's databases hold of it go);
        # nobody told: the copy is dropped.
        self.on_erased: list[Callable[[str], None]] = []
        self._owners: OrderedDict[str, Owner] = OrderedDict()
        self._lock = threading.Lock()
        self._evicted = 0  # owners left out of the LRU since the last collection

    # -- paths -------------------------------------------------------------

    def owner_path(self, owner_id: str) -> Path:
        """The folder of an owner (validated; never outside the data root)."""
        return self.owners_dir / encode_owner_id(owner_id)

    def exists(self, owner_id: str) -> bool:
        return (self.owner_path(owner_id) / ".git").is_dir()

    def owner_ids(self, prefix: str = "") -> list[str]:
        """Every owner id starting with ``prefix``, sorted."""
        try:
            names = os.listdir(self.owners_dir)
        except FileNotFoundError:
            return []
        ids = (decode_owner_id(n) for n in names)
        return sorted(i for i in ids if i is not None and i.startswith(prefix)
                      and (self.owners_dir / encode_owner_id(i) / ".git").is_dir())

    def folders(self) -> list[tuple[str, Path]]:
        """``(owner id, folder)`` of every owner held here."""
        return [(i, self.owner_path(i)) for i in self.owner_ids()]

    def owner_heads(self, prefix: str = "") -> dict[str, str]:
        """``{owner id: the commit its main points at}`` of every owner held here under ``prefix`` (ref files
        only: cheap for many owners)."""
        from wikimem.versioned import folder_head

        out = {}
        for owner_id in self.owner_ids(prefix):
            head = folder_head(self.owner_path(owner_id))
            if head is not None:
                out[owner_id] = head
        return out

    def cached(self) -> list[str]:
        """Owner ids this process holds, least recently used first."""
        with self._lock:
            return list(self._owners)

    # -- opening -----------------------------------------------------------

    def open(self, owner_id: str, path: Path, folder: str | None = None) -> Owner:
        """An :class:`Owner` of the folder ``path`` (its cache under ``folder``, default the folder's name), with
        what follows its writes attached; outside the LRU."""
        owner = self._open_owner(owner_id, path, cache_dir=self.cache_dir / (folder or path.name))
        owner.vstore.on_commit.append(self.run_index.listener(owner))
        owner.vstore.on_commit.append(lambda _cid: self.metrics.commit())
        owner.vstore.idempotency_ttl = self.retention.idempotency
        owner.default_tz = self.default_tz
        for opened in self.on_open:
            opened(owner)
        if self.replication is not None:
            self.replication.attach(owner, folder)
        return owner

    def owner(self, owner_id: str) -> Owner:
        """The owner, from this process's LRU or opened now; :class:`NotFound` if missing.

        With a remote, an owner this host lacks is cloned from it, and one it
        holds is caught up with it when not checked within the staleness
        bound (:meth:`Replication.refresh`), all before it is served.
        """
        path = self.owner_path(owner_id)
        with self._lock:
            cached = self._owners.get(owner_id)
        if cached is not None:  # (its file checks run outside the lock every owner shares)
            current = cached.current()
            with self._lock:
                if not current and self._owners.get(owner_id) is cached:
                    del self._owners[owner_id]  # deleted, or its history rewritten, by another process
                elif owner_id in self._owners:
                    self._owners.move_to_end(owner_id)
            cached = cached if current else None
        if cached is not None:
            self.metrics.owner_cache("hit")
            return self._fresh(cached)
        self.metrics.owner_cache("miss")
        cloned = False
        if not (path / ".git").is_dir():
            cloned = self._from_remote(owner_id, path)
            if not cloned:
                raise NotFound(f"no owner {owner_id!r}; create it first: PUT /api/v1/owners/{owner_id} "
                               "(Client.create_owner(), Host.create_owner())")
        opened = self.open(owner_id, path)
        if cloned:  # its commits reached this host without a write: the derived indexes learn of them now
            self._cloned(opened)
        with self._lock:
            owner = self._owners.setdefault(owner_id, opened)  # another thread may have won
            self._owners.move_to_end(owner_id)
            while len(self._owners) > self.index_cache:
                self._owners.popitem(last=False)
                self._evicted += 1
                self.metrics.owner_cache("eviction")
            collect, self._evicted = (True, 0) if self._evicted >= COLLECT_EVERY else (False, self._evicted)
        if collect:
            gc.collect()
        return self._fresh(owner)

    def peek(self, owner_id: str) -> Owner:
        """The owner as this host's disk holds it (no catch-up with the remote, the LRU left as it is);
        :class:`NotFound` if this host has no copy."""
        with self._lock:
            owner = self._owners.get(owner_id)
        if owner is not None and owner.exists():
            return owner
        path = self.owner_path(owner_id)
        if not (path / ".git").is_dir():
            raise NotFound(f"no owner {owner_id!r} on this host")
        return self.open(owner_id, path)

    def listed(self, owner_id: str) -> Owner:
        """An owner for a listing: the one this process holds, else opened without entering the LRU (a listing
        never pushes hot owners out)."""
        with self._lock:
            owner = self._owners.get(owner_id)
        return owner if owner is not None else self.open(owner_id, self.owner_path(owner_id))

    def _cloned(self, owner: Owner) -> None:
        try:
            self.run_index.catch_up(owner)
        except Exception:  # derived: a search or the next sweep catches it up
            log.exception("run index: could not index the cloned owner %s", owner.id)
        for cloned in self.on_clone:  # (the staged runs the clone brought too)
            try:
                cloned(owner)
            except Exception:
                log.exception("could not record the cloned owner %s", owner.id)

    def _fresh(self, owner: Owner) -> Owner:
        if self.replication is None:
            return owner
        try:
            moved = self.replication.refresh(owner)
        except Erased:  # erased on another host: the tombstone on its remote, its marker, or the register says so
            for erased in self.on_erased:
                erased(owner.id)
            if not self.on_erased:
                self.drop_local(owner.id, owner)
            raise NotFound(f"no owner {owner.id!r}") from None
        if moved and owner.vstore.head_action() in GONE_ACTIONS:  # deleted on another host meanwhile
            self.drop_local(owner.id, owner)
            raise NotFound(f"no owner {owner.id!r}")
        return owner

    def _from_remote(self, owner_id: str, path: Path, revive: bool = False) -> bool:
        """Clone an owner this host lacks from the remote (staged, renamed into place); False if it has none.

        An owner whose newest commit deleted it counts as none, unless ``revive`` (creating it again
        continues its history).
        """
        if self.replication is None:
            return False
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.staging_dir / f"clone-{path.name}-{secrets.token_hex(4)}"
        try:
            if not self.replication.clone(path.name, tmp) or (not revive and _deleted(tmp)):
                return False
            if (path / ".git").is_dir():
                return True  # another process was faster
            if path.exists():
                self._discard(path)
            try:
                os.rename(tmp, path)
            except OSError:
                if not (path / ".git").is_dir():
                    raise
            return True
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _revived(self, owner_id: str) -> bool:
        """Whether an owner just cloned for creation was a deleted one (then it is created again: True)."""
        return self.owner(owner_id).vstore.head_action() in GONE_ACTIONS

    # -- create / delete ---------------------------------------------------

    def ensure(self, owner_id: str, *, quota_prefix: str | None = None) -> tuple[Owner, bool]:
        """``(owner, created)``: creates the owner unless it exists.

        With ``quota_prefix`` (the owner prefix of the token asking), a new
        owner counts against the host's :class:`OwnerQuota` for that prefix
        (:class:`~wikimem.errors.QuotaExceeded` when it is used up).
        The repository is initialised in a staging folder and renamed into
        place, so two processes creating the same owner at once never see a
        half-made repository: one rename wins, the other is thrown away.
        """
        path = self.owner_path(owner_id)
        if (path / ".git").is_dir():
            return self.owner(owner_id), False
        if quota_prefix is not None:
            from .access import AuthState

            self.quota.check(quota_prefix, lambda prefix: len(self.owner_ids(prefix)), AuthState(self.root))
        if self._from_remote(owner_id, path, revive=True):
            return self.owner(owner_id), self._revived(owner_id)
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.staging_dir / f"new-{path.name}-{secrets.token_hex(4)}"
        tmp.mkdir()
        created = False
        try:
            fresh = self.open(owner_id, tmp, folder=path.name)  # initialises the repository
            if self.replication is not None:
                try:  # sync: on the remote before it exists here (another host may create it at once)
                    self.replication.publish_new(fresh)
                except RemoteMoved:
                    shutil.rmtree(tmp, ignore_errors=True)
                    if self._from_remote(owner_id, path, revive=True):
                        return self.owner(owner_id), self._revived(owner_id)
                    raise
            fresh.vstore.close()  # (folds its WAL back; the folder is renamed into place)
            if path.exists() and not (path / ".git").is_dir():
                self._discard(path)  # debris of an owner deleted while a write was in flight
            try:
                os.rename(tmp, path)
                created = True
            except OSError:
                if not (path / ".git").is_dir():
                    raise
        finally:
            if not created:
                shutil.rmtree(tmp, ignore_errors=True)
        with self._lock:
            self._owners.pop(owner_id, None)
        return self.owner(owner_id), created

    def install(self, owner_id: str, folder: Path, *, replace: bool = False) -> tuple[Owner, bool, bool | None]:
        """Put a folder made elsewhere — a person imported from its portable file, checked already — in place as
        ``owner_id``: ``(owner, replaced, pushed)``. An owner held here is replaced only with ``replace`` (its
        folder moved out under its write lock, what the derived indexes held of it dropped); else Conflict.
        The derived indexes learn of the new folder's history as of a clone. With a remote, a new owner is
        pushed to it now (``pushed``); replacing one there is refused (its remote keeps the old history)."""
        path = self.owner_path(owner_id)
        replaced = (path / ".git").is_dir()
        if replaced and not replace:
            raise Conflict(f"{owner_id} exists on this host; nothing was imported (give replace to replace it)")
        if replaced and self.replication is not None:
            raise Conflict(f"{owner_id} exists, and this host replicates to a remote that keeps its history: erase "
                           "or delete it first, then import it")
        if replaced:
            self.drop_local(owner_id)
            self.run_index.forget(owner_id)
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        os.rename(folder, path)
        with self._lock:
            self._owners.pop(owner_id, None)
        owner = self.open(owner_id, path)
        self._cloned(owner)
        pushed = None
        if self.replication is not None:
            try:
                owner.vstore.push_pending()
                pushed = True
            except RemoteError:
                log.warning("the imported owner %s is not on the remote yet (wikimem cluster push)", owner_id)
                pushed = False
        return self.owner(owner_id), replaced, pushed

    def delete(self, owner_id: str) -> None:
        """Delete an owner and all its history; :class:`NotFound` if missing.

        The folder is renamed out of ``owners/`` under the owner's write lock
        (no write of another process is half-way through), then removed.
        """
        owner = self.owner(owner_id)
        buried = None
        if self.replication is not None:  # on the remote first, so that no host clones it back
            owner.delete_everywhere()
            buried = owner.head()
        self.drop_local(owner_id, owner)
        self.run_index.bury(owner_id, buried)  # (a host with an older copy must not index it back)

    def drop_local(self, owner_id: str, owner: Owner | None = None) -> None:
        """Remove this host's copy of an owner (the remote and other hosts keep theirs)."""
        if owner is None:
            with self._lock:
                owner = self._owners.get(owner_id)
        if owner is None:  # this copy only: never a clone or a catch-up from the remote first
            path = self.owner_path(owner_id)
            if not (path / ".git").is_dir():
                raise NotFound(f"no owner {owner_id!r}")
            owner = self.open(owner_id, path)
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        trash = self.staging_dir / f"del-{owner.root.name}-{secrets.token_hex(4)}"
        with owner.vstore.held():  # (not a unit: settling with a remote that holds a tombstone would refuse)
            if not owner.exists():
                raise NotFound(f"no owner {owner_id!r}")
            os.rename(owner.root, trash)
        with self._lock:
            self._owners.pop(owner_id, None)
        self.run_index.forget_copy(owner_id)  # (a cluster's shared index keeps it: the owner lives elsewhere)
        for dropped in self.on_drop:
            dropped(owner_id)
        if self.replication is not None:
            self.replication.forget(owner_id)
        shutil.rmtree(trash, ignore_errors=True)
        shutil.rmtree(self.cache_dir / owner.root.name, ignore_errors=True)

    def drop_if_here(self, owner_id: str) -> bool:
        """:meth:`drop_local` if this host holds the owner; whether it did."""
        try:
            self.drop_local(owner_id)
            return True
        except NotFound:
            return False

    def _discard(self, path: Path) -> None:
        trash = self.staging_dir / f"debris-{path.name}-{secrets.token_hex(4)}"
        os.rename(path, trash)
        shutil.rmtree(trash, ignore_errors=True)


def _deleted(folder: Path) -> bool:
    """Whether a cloned folder's newest commit is the deletion (or the erasure) of its owner."""
    from wikimem.versioned import VersionedStore

    vs = VersionedStore(folder)
    try:
        return vs.head_action() in GONE_ACTIONS
    finally:
        vs.close()
