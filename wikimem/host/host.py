"""Host: many owners' versioned memories under one data root, for one process.

Layout::

    <data root>/
    ├── owners/<encoded owner id>/   one versioned store (git repo) per owner
    ├── staging/                     owners being created or deleted (renamed in/out atomically)
    ├── cache/<encoded owner id>/    derived caches the host may delete at any time
    ├── index/runs.sqlite3           the cross-owner run index (fleet/runindex.py)
    ├── index/staged.sqlite3         the staged runs of every owner (fleet/staged.py, fleet/probation.py)
    ├── replication/refused/         owners whose remote's commits were refused (see cluster/replication.py)
    └── jobs.sqlite3                 background jobs (memorize with Prefer: respond-async), see fleet/jobs.py

(With ``WIKIMEM_DATABASE_URL`` the run index and the jobs live in the
PostgreSQL database the hosts of a cluster share instead.)

Each process keeps an LRU of :class:`Owner` objects (each with its
``MemoryIndex``), bounded by ``index_cache``; every lookup checks that the
owner still exists, and every use of an index checks the repository HEAD and
the wiki folder, so writes from other processes and hand edits are seen.
Nothing a client sends reaches the file system except through
:func:`encode_owner_id`.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path

from wikimem.context import WriteContext
from wikimem.errors import DamagedFolder, Erased, InvalidName, InvalidValue, NotFound, RemoteMoved
from wikimem.host.access import OwnerQuota
from wikimem.host.cluster import Peers, Replication, Settings, merge_owner_pages
from wikimem.host.fleet import (
    APPROVE_JOB,
    DISCARD_JOB,
    INDEX_PATH,
    JOBS_FILE,
    UNFINISHED,
    Erasure,
    Fleet,
    JobRunner,
    JobStore,
    Limits,
    MemorizeRetry,
    Probation,
    RunIndex,
    copy_time,
)

from .archive import FORMATS, archive_markdown
from .backups import known_backups
from .characters import Characters
from .errors import BadRequest, LLMNotConfigured
from .gate import Gate
from .metrics import NULL_METRICS, HostCollector, NullMetrics, TimedEmbedder
from .owner import Owner, OwnerStats
from .owner_ids import Within, decode_owner_id, encode_owner_id, scope_prefixes, validate_owner_id
from .probation import StagingPolicy
from .readiness import DEFAULT_MIN_FREE, Readiness, disk_state
from .retention import Retention

__all__ = ["Host", "MAX_PAGE", "EXPORT_TYPES", "JOB_THREADS"]

# export format → media type: the markdown as an archive, or the whole history as a git bundle
EXPORT_TYPES = {**FORMATS, "bundle": "application/x-git-bundle"}
JOB_THREADS = 2  # background job threads per host process

log = logging.getLogger(__name__)

MAX_PAGE = 1000
# The newest commit of an owner that is gone everywhere: deleted (its history kept), or erased (a tombstone).
GONE_ACTIONS = ("delete-owner", "erase-owner")

log = logging.getLogger(__name__)


class Host:
    """Owners → versioned stores and indexes, for one process.

    ``fleet`` holds what operators do across owners (:class:`~wikimem.host.fleet.Fleet`: run search,
    the run index's refresh, bulk rollback).
    """

    def __init__(self, data_root: Path | str, *, index_cache: int = 64, embedder=None, llm=None, recall=None,
                 quota: OwnerQuota | None = None, replication: Settings | None = None,
                 peers: Peers | None = None, metrics: NullMetrics = NULL_METRICS, database: str | None = None,
                 name: str | None = None, job_limits: Limits | None = None, staging: StagingPolicy | None = None,
                 retention: Retention | None = None, default_tz: str | None = None, memorize_facts: str = "direct"):
        """``database``: the ``postgresql://`` URL of the database a cluster's hosts share for the run index and
        the jobs (None: SQLite files in the data root); ``name`` names this host there (default: the machine's
        name and the data root); ``job_limits`` bound what one tenant may queue; ``staging`` is the policy of
        runs on probation (``host.probation``); ``default_tz`` the time zone of owners without one
        (``WIKIMEM_TZ``)."""
        if isinstance(index_cache, bool) or not isinstance(index_cache, int) or index_cache < 1:
            raise ValueError(f"index_cache must be a positive integer, got {index_cache!r}")
        self.root = Path(data_root)
        self.retention = retention or Retention()  # how long idempotency results, jobs and receipts are kept
        self.owners_dir = self.root / "owners"
        self.staging_dir = self.root / "staging"
        self.cache_dir = self.root / "cache"
        self.index_cache = index_cache
        # What the host reports (wikimem/host/metrics.py); with real metrics the embedder is timed per request.
        self.metrics = metrics
        if metrics.enabled and embedder is not None:
            embedder = TimedEmbedder(embedder)
            self._watch_embedding_backlog()
        self.embedder = embedder
        self.llm = llm
        self.default_tz = default_tz
        self.memorize_facts = memorize_facts  # WIKIMEM_MEMORIZE_FACTS
        self.memorize_retry = MemorizeRetry()  # how long a memorize job waits for a model that is unavailable
        self.quota = quota or OwnerQuota()
        self.recall = recall  # wikimem.recall.index.RecallOptions for every index (None: the library's defaults)
        self._owners: OrderedDict[str, Owner] = OrderedDict()
        self._lock = threading.Lock()
        self._jobs: JobStore | None = None  # opened on first use
        self._runner: JobRunner | None = None  # this process's
        self.database = database
        self.name = name or f"{socket.gethostname()}:{self.root.resolve()}"
        self.job_limits = job_limits or Limits()
        self.owners_dir.mkdir(parents=True, exist_ok=True)
        # Runs of every owner, fed whenever an owner's main moves (see wikimem/host/fleet/runindex.py);
        # derived, rebuildable. On a cluster's shared database, one row per run whichever host holds the owner.
        self.run_index = RunIndex(database or self.root / INDEX_PATH, host=self.name)
        with os.scandir(self.owners_dir) as entries:
            self.run_index.start(has_owners=any(entries))
        # Every owner repository replicates to its own git remote when set (SPEC §9).
        self.replication = (Replication(replication, state_dir=self.root / "replication", metrics=metrics)
                            if replication is not None else None)
        # The other hosts of the cluster, asked for listings (owners are sharded across hosts).
        self.peers = peers
        self.fleet = Fleet(self.run_index, self.owner, self.owner_ids, jobs=lambda: self.jobs,
                           run_jobs=self.start_jobs, peers=peers, peek=self.peek, heads=self.owner_heads,
                           lock_dir=self.root / INDEX_PATH.parent)
        # Runs on probation (SPEC §10): the staged-run index beside the run index, bulk approve / discard, policy.
        from wikimem.host.fleet import STAGED_PATH, StagedIndex

        self.probation = Probation(StagedIndex(database or self.root / STAGED_PATH), self.owner, peek=self.peek,
                                   owner_ids=self.owner_ids, folder=self.owner_path, jobs=lambda: self.jobs,
                                   run_jobs=self.start_jobs, policy=staging)
        self._listing = threading.local()  # per request thread: the peers the last listing could not reach
        # Erasing owners everywhere and forgetting items with their history (jobs; see fleet/erase.py).
        self.erasure = Erasure(self.root, jobs=lambda: self.jobs, run_index=self.run_index, owner=self.owner,
                               drop_local=self.drop_if_here, replication=self.replication,
                               wake=lambda: self.start_jobs().wake(), retention=self.retention.receipts,
                               staged_index=self.probation.index, backups=lambda: known_backups(self.root))
        # Every change an edge asks for passes here: its write context, staging decision and audit event.
        self.gate = Gate(self.owner, lambda: self.probation.policy, self.erasure.digest)
        # The bot's characters, each defined in its own owner char:<id> (wikimem/host/characters.py).
        self.characters = Characters(owner=self.owner, ensure=self.ensure_owner, ids=self.owner_ids, gate=self.gate)
        if self.replication is not None:
            self.replication.erased = lambda owner: self.erasure.erased(owner.id, copy_time(owner.root))
            self.replication.resume(self.owner, self._folders)

    def __repr__(self) -> str:
        return f"Host({str(self.root)!r})"

    # -- paths -------------------------------------------------------------

    def owner_path(self, owner_id: str) -> Path:
        """The folder of an owner (validated; never outside the data root)."""
        return self.owners_dir / encode_owner_id(owner_id)

    def _open(self, owner_id: str, path: Path, folder: str | None = None) -> Owner:
        owner = Owner(owner_id, path, embedder=self.embedder, llm=self.llm,
                      cache_dir=self.cache_dir / (folder or path.name), recall=self.recall, metrics=self.metrics)
        owner.vstore.on_commit.append(self.run_index.listener(owner))
        owner.vstore.on_commit.append(lambda _cid: self.metrics.commit())
        owner.vstore.idempotency_ttl = self.retention.idempotency
        owner.policy = self.probation.policy
        owner.default_tz = self.default_tz
        owner.characters = self.characters
        owner.memorize_facts = self.memorize_facts
        owner.profile_of = self.profile_of
        owner.staging.on_change.append(self.probation.listener(owner))
        if self.replication is not None:
            self.replication.attach(owner, folder)
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
            if not self.replication.clone(path.name, tmp) or (not revive and self._deleted(tmp)):
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

    # -- lookup ------------------------------------------------------------

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
        opened = self._open(owner_id, path)
        if cloned:  # its commits reached this host without a write: the run index learns of them now
            self._learn(opened)
            try:
                self.probation.sync(opened)  # (and its staged runs, which the clone brought too)
            except Exception:
                log.exception("staged-run index: could not record the cloned owner %s", owner_id)
        with self._lock:
            owner = self._owners.setdefault(owner_id, opened)  # another thread may have won
            self._owners.move_to_end(owner_id)
            while len(self._owners) > self.index_cache:
                self._owners.popitem(last=False)
                self.metrics.owner_cache("eviction")
        return self._fresh(owner)

    def _learn(self, owner: Owner) -> None:
        try:
            self.run_index.catch_up(owner)
        except Exception:  # derived: a search or the next sweep catches it up
            log.exception("run index: could not index the cloned owner %s", owner.id)

    def profile_of(self, character: str) -> Owner | None:
        """A character's own profile (the owner ``char:<id>``), or None when it has none here."""
        try:
            return self.owner(f"char:{character}")
        except NotFound:
            return None

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
        return self._open(owner_id, path)

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

    def _revived(self, owner_id: str) -> bool:
        """Whether an owner just cloned for creation was a deleted one (then it is created again: True)."""
        owner = self.owner(owner_id)
        return owner.vstore.head_action() in GONE_ACTIONS

    @staticmethod
    def _deleted(folder: Path) -> bool:
        """Whether a cloned folder's newest commit is the deletion (or the erasure) of its owner."""
        from wikimem.versioned import VersionedStore

        vs = VersionedStore(folder)
        try:
            return vs.head_action() in GONE_ACTIONS
        finally:
            vs.close()

    def _fresh(self, owner: Owner) -> Owner:
        if self.replication is None:
            return owner
        try:
            moved = self.replication.refresh(owner)
        except Erased:  # erased on another host: the tombstone on its remote, its marker, or the register says so
            self.erasure.drop_erased(owner.id)
            raise NotFound(f"no owner {owner.id!r}") from None
        if moved and owner.vstore.head_action() in GONE_ACTIONS:  # deleted on another host meanwhile
            self.drop_local(owner.id, owner)
            raise NotFound(f"no owner {owner.id!r}")
        return owner

    def ready(self, min_free: int = DEFAULT_MIN_FREE) -> Readiness:
        """Whether the host can serve: its data root's disk is writable with ``min_free`` bytes left, and the
        remote (if any) answers (:class:`~wikimem.host.readiness.Readiness`)."""
        disk, details = disk_state(self.owners_dir, min_free)
        if self.replication is None:
            return Readiness(disk, "none", {"disk": details})
        reachable, message = self.replication.ready()
        return Readiness(disk, "reachable" if reachable else "unreachable",
                         {"disk": details, "remote": {"url": self.replication.shown(), "state": message}})

    def replication_status(self) -> dict:
        """Replication mode, remote and lag of every owner held here (``{"mode": "none"}`` without a remote)."""
        if self.replication is None:
            return {"mode": "none"}
        return self.replication.status(self._folders())

    def _folders(self) -> list[tuple[str, Path]]:
        """``(owner id, folder)`` of every owner held here."""
        return [(i, self.owner_path(i)) for i in self.owner_ids()]

    def exists(self, owner_id: str) -> bool:
        return (self.owner_path(owner_id) / ".git").is_dir()

    def cached_owners(self) -> list[str]:
        """Owner ids this process holds, least recently used first."""
        with self._lock:
            return list(self._owners)

    # -- create / delete ---------------------------------------------------

    def create_owner(self, owner_id: str) -> Owner:
        """Create the owner if it does not exist yet (idempotent); return it."""
        return self.ensure_owner(owner_id)[0]

    def ensure_owner(self, owner_id: str, *, quota_prefix: str | None = None) -> tuple[Owner, bool]:
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
            from wikimem.host.access import AuthState

            self.quota.check(quota_prefix, lambda prefix: len(self.owner_ids(prefix)), AuthState(self.root))
        if self._from_remote(owner_id, path, revive=True):
            return self.owner(owner_id), self._revived(owner_id)
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.staging_dir / f"new-{path.name}-{secrets.token_hex(4)}"
        tmp.mkdir()
        created = False
        try:
            fresh = self._open(owner_id, tmp, folder=path.name)  # initialises the repository
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

    def delete_owner(self, owner_id: str) -> None:
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
            owner = self._open(owner_id, path)
        self.staging_dir.mkdir(parents=True, exist_ok=True)
        trash = self.staging_dir / f"del-{owner.root.name}-{secrets.token_hex(4)}"
        with owner.vstore.held():  # (not a unit: settling with a remote that holds a tombstone would refuse)
            if not owner.exists():
                raise NotFound(f"no owner {owner_id!r}")
            os.rename(owner.root, trash)
        with self._lock:
            self._owners.pop(owner_id, None)
        self.run_index.forget_copy(owner_id)  # (a cluster's shared index keeps it: the owner lives elsewhere)
        if not self.probation.index.shared:
            self.probation.index.forget(owner_id)
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

    def sweep_discarded(self, now: float | None = None) -> dict[str, list[str]]:
        """Housekeeping: drop the discarded staged runs kept longer than the retention (``WIKIMEM_DISCARDED_DAYS``);
        ``{owner id: runs dropped}``. Only owners whose ref files show one that old are opened."""
        from wikimem.versioned import discarded_ages

        now = time.time() if now is None else now
        keep = self.retention.discarded
        out: dict[str, list[str]] = {}
        for owner_id, folder in self._folders():
            if any(age > keep for age in discarded_ages(folder, now).values()):
                try:
                    gone = self.peek(owner_id).staging.sweep_discarded(keep, now)
                except NotFound:
                    continue
                if gone:
                    out[owner_id] = gone
        return out

    def _discard(self, path: Path) -> None:
        trash = self.staging_dir / f"debris-{path.name}-{secrets.token_hex(4)}"
        os.rename(path, trash)
        shutil.rmtree(trash, ignore_errors=True)

    # -- erasure -----------------------------------------------------------

    def erase_owner(self, owner_id: str, *, actor: str = "operator", within: Within = ""):
        """Erase an owner everywhere, as a job (see :mod:`wikimem.host.fleet.erase`): ``(job, created)``. Its
        result is the receipt; asking again is the same job."""
        return self.erasure.submit_erase(owner_id, actor=actor, within=within)

    def forget(self, owner_id: str, target: dict, *, actor: str = "operator", within: Within = ""):
        """Forget one item (``{file, name}``) or diary entry (``{date, time, index?}``) of an owner with its
        history, as a job: ``(job, created)``. The owner must exist here (or on the remote)."""
        self.owner(owner_id)
        return self.erasure.submit_forget(owner_id, target, actor=actor, within=within)

    def erasure_job(self, job_id: str, *, within: Within = ""):
        """An erase or forget job (its result: the receipt) for a caller limited to ``within``; helps run it."""
        found = self.erasure.job(job_id, within=within)
        if found.state in UNFINISHED:
            self.start_jobs()
        return found

    def erasure_receipt(self, owner_id: str) -> dict:
        """The receipt of an owner's erasure; :class:`NotFound` if it was not erased (or not yet)."""
        found = self.erasure.receipt(owner_id)
        if found is None:
            raise NotFound(f"no finished erasure of {owner_id!r} is recorded")
        return found

    # -- listing -----------------------------------------------------------

    def owner_ids(self, prefix: str = "") -> list[str]:
        """Every owner id starting with ``prefix``, sorted."""
        try:
            names = os.listdir(self.owners_dir)
        except FileNotFoundError:
            return []
        ids = (decode_owner_id(n) for n in names)
        return sorted(i for i in ids if i is not None and i.startswith(prefix)
                      and (self.owners_dir / encode_owner_id(i) / ".git").is_dir())

    def list_owners(self, prefix: str = "", limit: int = 50, cursor: str | None = None, *,
                    within: Within = "", forward: dict | None = None) -> tuple[list[OwnerStats], str | None]:
        """A page of owners (sorted by id) with their stats, and the cursor of the next page.

        ``within`` is the owner-id prefix the caller may see (a token's or an
        operator's scope); ``prefix`` narrows it. A prefix outside the scope
        lists nothing. With peers and ``forward`` (the caller's credentials,
        as headers), the page spans every host of the cluster; peers that did
        not answer are in :attr:`last_unreachable` (of this thread's last listing).
        """
        self._listing.unreachable = []
        rows, nxt = self._local_owners(prefix, limit, cursor, within)
        if self.peers is None or forward is None:
            return rows, nxt
        answers, self._listing.unreachable = self.peers.get(
            "/api/v1/owners", {"prefix": prefix or None, "limit": limit, "cursor": cursor}, forward)
        pages = [([r.to_dict() for r in rows], nxt)] + [(a.get("owners", []), a.get("next")) for a in answers]
        merged, nxt = merge_owner_pages(pages, limit)
        return [OwnerStats.from_dict(r) for r in merged], nxt

    def owners_by_last_change(self, prefix: str = "", limit: int = 50, cursor: str | None = None, *,
                              within: str = "") -> tuple[list[OwnerStats], str | None]:
        """A page of this host's owners, the last changed first (from the run index), and the next page's cursor.

        With a shared run index (a cluster's database) owners held by other hosts are left out: their stats
        are theirs to give.
        """
        if not isinstance(prefix, str) or len(prefix) > 128:
            raise InvalidName("prefix must be a string of at most 128 characters")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise InvalidValue(f"limit must be an integer from 1 to {MAX_PAGE}")
        page, nxt = self.run_index.owners_by_last_change(within=within, prefix=prefix, limit=limit, cursor=cursor)
        local = set(self.owner_ids(prefix))
        stats = [s for s in (self._stats_of(o) for o, _ in page if o in local) if s is not None]
        return stats, nxt

    @property
    def last_unreachable(self) -> list[str]:
        """The peers that did not answer this thread's last :meth:`list_owners` (requests share a host, not a
        thread)."""
        return getattr(self._listing, "unreachable", [])

    def _local_owners(self, prefix: str, limit: int, cursor: str | None,
                      within: Within) -> tuple[list[OwnerStats], str | None]:
        if not isinstance(prefix, str) or len(prefix) > 128:
            raise InvalidName("prefix must be a string of at most 128 characters")
        scoped = scope_prefixes(within, prefix)
        if not scoped:
            return [], None
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise InvalidValue(f"limit must be an integer from 1 to {MAX_PAGE}")
        if cursor is not None:
            try:
                validate_owner_id(cursor)
            except InvalidName:
                raise BadRequest(f"invalid cursor {cursor[:40]!r}: give the next of a previous page") from None
        listed = sorted({i for p in scoped for i in self.owner_ids(p)})
        ids = [i for i in listed if cursor is None or i > cursor]
        page, more = ids[:limit], len(ids) > limit
        stats = [s for s in map(self._stats_of, page) if s is not None]
        return stats, (page[-1] if more and page else None)

    def _stats_of(self, owner_id: str) -> OwnerStats | None:
        """Stats of a listed owner without pushing hot owners out of the LRU."""
        with self._lock:
            owner = self._owners.get(owner_id)
        try:
            if owner is None:
                owner = self._open(owner_id, self.owner_path(owner_id))
            return owner.stats()
        except (NotFound, FileNotFoundError):  # deleted meanwhile
            return None
        except DamagedFolder as exc:  # listed all the same: one damaged folder never hides the others
            return OwnerStats(owner_id, 0, 0, 0, None, None, damaged=str(exc))

    # -- export ------------------------------------------------------------

    def export_owner(self, owner_id: str, fmt: str = "zip", layers: tuple[str | None, ...] | None = (None,)) -> bytes:
        """A zip or tar archive of the owner's markdown (``wiki/``, ``diary/``; of ``layers``, the shared one by
        default, ``None``: every layer), or (``bundle``) its whole history with its settings and every layer as a
        git bundle (``git clone x.bundle``); named by :meth:`export_name`."""
        if fmt not in EXPORT_TYPES:
            raise InvalidValue(f"unknown export format {fmt!r}: use one of {', '.join(EXPORT_TYPES)}")
        owner = self.owner(owner_id)
        if fmt == "bundle":
            import io

            from wikimem.versioned import write_bundle_of

            buf = io.BytesIO()
            write_bundle_of(owner.root, buf)
            return buf.getvalue()
        return archive_markdown(owner.root, owner.root.name, fmt, layers)

    def export_name(self, owner_id: str, fmt: str = "zip") -> str:
        """The file name of an owner's export: its folder name (the reversible encoding of its id) + extension."""
        return f"{encode_owner_id(owner_id)}.{fmt}"

    # -- background jobs ---------------------------------------------------

    @property
    def jobs(self) -> JobStore:
        """The data root's :class:`~wikimem.host.fleet.jobs.JobStore` (shared by every process)."""
        jobs = self._jobs
        if jobs is None:
            with self._lock:
                if self._jobs is None:
                    self._jobs = JobStore(self.database or self.root / JOBS_FILE, host=self.name,
                                          limits=self.job_limits, retention=self.retention.jobs)
                jobs = self._jobs
        return jobs

    def warm_up(self) -> None:
        """Load now what the first requests of this process would otherwise wait for: numpy's ranking
        module, jieba when the tokenizer is jieba, the local embedding model. Best effort."""
        from wikimem.recall import BM25Index, tokenize

        try:
            BM25Index().warm()
            if self.recall is not None and self.recall.use_jieba:
                tokenize("预热", use_jieba=True)
            load = getattr(self.embedder, "load", None)
            if callable(load):
                load()
        except Exception:  # a request loads it again (and reports what fails)
            log.exception("warming up the host failed")

    @property
    def jobs_started(self) -> bool:
        """Whether this process runs jobs (:meth:`start_jobs` was called)."""
        return self._runner is not None

    def start_jobs(self, threads: int = JOB_THREADS) -> JobRunner:
        """Run jobs in this process (idempotent; again after a fork): the host's workers each call it."""
        from wikimem.host.fleet import ERASE, FORGET, MEMORIZE, memorize_handler, staged_handler
        from wikimem.host.fleet import JOB_KIND as BULK_ROLLBACK
        from wikimem.host.fleet import handler as bulk_handler

        jobs = self.jobs  # (takes the lock itself)
        with self._lock:
            if self._runner is None:
                # With a remote this host can act on any owner: it takes over the steps of a host that is gone.
                self._runner = JobRunner(jobs, threads=threads, host=self.name,
                                         foreign=self.replication is not None,
                                         maintenance=[self.fleet.sweep_run_index, self.probation.tick,
                                                      self.erasure.maintain, self.sweep_discarded,
                                                      lambda: self.erasure.sweep(self._folders())])
                self._runner.register(MEMORIZE, self._counted(MEMORIZE, memorize_handler(self)))
                self._runner.register(BULK_ROLLBACK, self._counted(BULK_ROLLBACK, bulk_handler(self.owner)))
                self._runner.register(ERASE, self._counted(ERASE, self.erasure.run_erase))
                self._runner.register(FORGET, self._counted(FORGET, self.erasure.run_forget))
                for kind in (APPROVE_JOB, DISCARD_JOB):
                    self._runner.register(kind, self._counted(kind, staged_handler(self.owner, kind)))
            runner = self._runner
        return runner.start()

    def _counted(self, kind: str, handler):
        """``handler``, its outcomes counted in the metrics (done, failed, retry)."""
        from wikimem.host.fleet import RetryLater

        def run(step):
            try:
                result = handler(step)
            except RetryLater:
                self.metrics.job_step(kind, "retry")
                raise
            except Exception:
                self.metrics.job_step(kind, "failed")
                raise
            self.metrics.job_step(kind, "done")
            return result

        return run

    def metrics_collector(self) -> HostCollector:
        """What a scrape reads from the shared files (jobs, replication lag): see :mod:`wikimem.host.metrics`."""
        def lags() -> dict[str, int] | None:
            return None if self.replication is None else self.replication.lags(self._folders())

        return HostCollector(lambda: self.jobs.stats(), lags, lambda: self.probation.waiting())

    def _watch_embedding_backlog(self) -> None:
        from wikimem.vectors import shared_worker

        shared_worker().on_backlog.append(self.metrics.embedding_backlog)

    def submit_memorize(self, owner_id: str, turn: str, *, ctx: WriteContext | None = None, key: str | None = None,
                        tenant: str = "", request_id: str | None = None, **memorize_kwargs):
        """Memorize one turn in the background: ``(job, created)``; the same idempotency key is the same job.

        The owner must exist and the host must have a chat endpoint (checked
        now, not when the job runs); the job survives a restart of the host.
        ``ctx`` is the write's context (from the gate: :meth:`Act.ctx`; ``key`` sets its idempotency key);
        ``tenant`` (the submitter's owner prefix) is its fair share and cap
        (:class:`~wikimem.host.errors.QueueFull` past it).
        ``request_id`` (the submitting request's) is kept in the job's params.
        """
        from wikimem.host.fleet import submit_memorize
        from wikimem.limits import MAX_TURN_CHARS, check_length

        owner = self.owner(owner_id)
        if self.llm is None:
            raise LLMNotConfigured("memorize needs a chat endpoint: set WIKIMEM_LLM_URL and WIKIMEM_LLM_MODEL")
        if not isinstance(turn, str):
            raise ValueError("turn must be a string")
        check_length(turn, MAX_TURN_CHARS, "turn")  # refused now, not when the job runs
        ctx = WriteContext.of(ctx, idempotency_key=key)
        given = {"run": ctx.run, "actor": ctx.actor, "source_conv": ctx.source_conv, "staged": ctx.staged or None}
        if ctx.idempotency_key is not None:  # the memorize's own key is the request's: bound as the route binds it
            request = owner.memorize_request(turn, ctx=replace(ctx, fingerprint=None), **memorize_kwargs)
            given["fingerprint"] = request.fingerprint
        job, created = submit_memorize(self.jobs, owner_id, turn, key=ctx.idempotency_key, tenant=tenant,
                                       request_id=request_id, **given, **memorize_kwargs)
        self.start_jobs().wake()
        return job, created

    def job(self, job_id: str):
        """A job (:class:`NotFound` if unknown); while it is unfinished, this process helps run it."""
        job = self.jobs.get(job_id)
        if job.state in UNFINISHED:
            self.start_jobs()  # e.g. the development server restarted: resume its jobs on the first look
        return job
