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

(With ``WIKIMEM_DATABASE_URL`` the run index and the jobs live in the PostgreSQL database the hosts of a
cluster share instead.) :class:`Host` is what the composition root (:func:`wikimem.host.build_host`) put
together: the owners (:class:`~wikimem.host.owners.Owners`), the jobs, the fleet, probation, erasure.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from wikimem.context import WriteContext
from wikimem.errors import BadRequest, DamagedFolder, InvalidName, InvalidValue, LLMNotConfigured, NotFound
from wikimem.host.cluster import Peers, Replication, merge_owner_pages
from wikimem.host.fleet import (
    JOB_THREADS,
    UNFINISHED,
    Erasure,
    Fleet,
    HostJobs,
    JobRunner,
    JobStore,
    MemorizeRetry,
    Probation,
    RunIndex,
)

from .access import OwnerQuota
from .archive import FORMATS, archive_markdown
from .characters import Characters
from .gate import Gate
from .metrics import HostCollector, NullMetrics
from .owner import Owner, OwnerStats
from .owner_ids import Within, encode_owner_id, scope_prefixes, validate_owner_id
from .owners import Owners
from .readiness import DEFAULT_MIN_FREE, Readiness, disk_state
from .retention import Retention

__all__ = ["Host", "HostParts", "MAX_PAGE", "EXPORT_TYPES", "JOB_THREADS"]

# export format → media type: the markdown as an archive, or the whole history as a git bundle
EXPORT_TYPES = {**FORMATS, "bundle": "application/x-git-bundle"}
MAX_PAGE = 1000

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HostParts:
    """What a :class:`Host` is made of (the composition root builds them, :func:`wikimem.host.build_host`)."""

    owners: Owners
    jobs: HostJobs
    run_index: RunIndex
    fleet: Fleet
    probation: Probation
    erasure: Erasure
    gate: Gate
    characters: Characters
    metrics: NullMetrics
    retention: Retention
    name: str
    replication: Replication | None = None
    peers: Peers | None = None
    embedder: Any = None
    llm: Any = None
    recall: Any = None  # wikimem.recall.RecallOptions for every index (None: the library's defaults)
    database: str | None = None
    default_tz: str | None = None
    imports: Any = None  # cards, chats, persons in and out (wikimem/host/imports/: Imports)


class Host:
    """Owners → versioned stores and indexes, for one process.

    ``fleet`` holds what operators do across owners (:class:`~wikimem.host.fleet.Fleet`: run search,
    the run index's refresh, bulk rollback); ``probation`` the runs on probation; ``erasure`` erasing owners
    and forgetting items; ``owners`` the owners held here.
    """

    def __init__(self, parts: HostParts) -> None:
        self.owners = parts.owners
        self.root = self.owners.root
        self.owners_dir, self.staging_dir, self.cache_dir = (self.owners.owners_dir, self.owners.staging_dir,
                                                             self.owners.cache_dir)
        self.index_cache = self.owners.index_cache
        self.quota: OwnerQuota = self.owners.quota
        self.job_service = parts.jobs
        self.run_index = parts.run_index
        self.fleet = parts.fleet
        self.probation = parts.probation
        self.erasure = parts.erasure
        self.gate = parts.gate  # every change an edge asks for passes here: its context, staging, audit event
        self.characters = parts.characters  # the bot's characters, each defined in its own owner char:<id>
        self.metrics = parts.metrics
        self.retention = parts.retention  # how long idempotency results, jobs and receipts are kept
        self.name = parts.name
        self.replication = parts.replication
        self.peers = parts.peers  # the other hosts of the cluster, asked for listings (owners are sharded)
        self.embedder = parts.embedder
        self.llm = parts.llm
        self.recall = parts.recall
        self.database = parts.database
        self.default_tz = parts.default_tz  # the time zone of owners without one (WIKIMEM_TZ)
        self.imports = parts.imports  # cards → characters, chats → memory, persons in and out (host/imports/)
        self.memorize_retry = MemorizeRetry()  # how long a memorize job waits for a model that is unavailable
        self._listing = threading.local()  # per request thread: the peers the last listing could not reach

    def __repr__(self) -> str:
        return f"Host({str(self.root)!r})"

    # -- the owners (see owners.py) ------------------------------------------

    def owner(self, owner_id: str) -> Owner:
        """The owner (cloned from the remote or caught up with it); :class:`NotFound` if missing."""
        return self.owners.owner(owner_id)

    def peek(self, owner_id: str) -> Owner:
        """The owner as this host's disk holds it; :class:`NotFound` if this host has no copy."""
        return self.owners.peek(owner_id)

    def owner_path(self, owner_id: str) -> Path:
        """The folder of an owner (validated; never outside the data root)."""
        return self.owners.owner_path(owner_id)

    def owner_ids(self, prefix: str = "") -> list[str]:
        """Every owner id starting with ``prefix``, sorted."""
        return self.owners.owner_ids(prefix)

    def owner_heads(self, prefix: str = "") -> dict[str, str]:
        """``{owner id: head}`` of every owner held here under ``prefix``."""
        return self.owners.owner_heads(prefix)

    def exists(self, owner_id: str) -> bool:
        return self.owners.exists(owner_id)

    def cached_owners(self) -> list[str]:
        """Owner ids this process holds, least recently used first."""
        return self.owners.cached()

    def create_owner(self, owner_id: str) -> Owner:
        """Create the owner if it does not exist yet (idempotent); return it."""
        return self.owners.ensure(owner_id)[0]

    def ensure_owner(self, owner_id: str, *, quota_prefix: str | None = None) -> tuple[Owner, bool]:
        """``(owner, created)`` (see :meth:`Owners.ensure`: a new owner counts against ``quota_prefix``'s quota)."""
        return self.owners.ensure(owner_id, quota_prefix=quota_prefix)

    def delete_owner(self, owner_id: str) -> None:
        """Delete an owner and all its history (on the remote first); :class:`NotFound` if missing."""
        self.owners.delete(owner_id)

    def drop_local(self, owner_id: str, owner: Owner | None = None) -> None:
        """Remove this host's copy of an owner (the remote and other hosts keep theirs)."""
        self.owners.drop_local(owner_id, owner)

    def drop_if_here(self, owner_id: str) -> bool:
        """:meth:`drop_local` if this host holds the owner; whether it did."""
        return self.owners.drop_if_here(owner_id)

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
        return self.replication.status(self.owners.folders())

    def sweep_discarded(self, now: float | None = None) -> dict[str, list[str]]:
        """Housekeeping: drop the discarded staged runs kept longer than the retention (``WIKIMEM_DISCARDED_DAYS``);
        ``{owner id: runs dropped}``. Only owners whose ref files show one that old are opened."""
        from wikimem.versioned import discarded_ages

        now = time.time() if now is None else now
        keep = self.retention.discarded
        out: dict[str, list[str]] = {}
        for owner_id, folder in self.owners.folders():
            if any(age > keep for age in discarded_ages(folder, now).values()):
                try:
                    gone = self.peek(owner_id).staging.sweep_discarded(keep, now)
                except NotFound:
                    continue
                if gone:
                    out[owner_id] = gone
        return out

    # -- erasure -----------------------------------------------------------

    def erase_owner(self, owner_id: str, *, actor: str = "operator", within: Within = ""):
        """Erase an owner everywhere, as a job (see :mod:`wikimem.host.fleet.erasure.erase`): ``(job, created)``. Its
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
        try:
            return self.owners.listed(owner_id).stats()
        except (NotFound, FileNotFoundError):  # deleted meanwhile
            return None
        except DamagedFolder as exc:  # listed all the same: one damaged folder never hides the others
            return OwnerStats(owner_id, 0, 0, 0, None, None, damaged=str(exc))

    # -- export ------------------------------------------------------------

    def export_owner(self, owner_id: str, fmt: str = "zip", layers: tuple[str | None, ...] | None = (None,), *,
                     by: str | None = None) -> bytes:
        """A zip or tar archive of the owner's markdown (``wiki/``, ``diary/``; of ``layers``, the shared one by
        default, ``None``: every layer), or (``bundle``) its whole history with its settings and every layer as a
        git bundle (``git clone x.bundle``: the person's portable file, see :mod:`wikimem.host.imports`); named
        by :meth:`export_name`. Each export is recorded (``by``: who asked), so that an erasure's receipt can
        say which copies left the host before it."""
        if fmt not in EXPORT_TYPES:
            raise InvalidValue(f"unknown export format {fmt!r}: use one of {', '.join(EXPORT_TYPES)}")
        owner = self.owner(owner_id)
        head = owner.head()
        if fmt == "bundle":
            import io

            from wikimem.versioned import write_bundle_of

            buf = io.BytesIO()
            head = write_bundle_of(owner.root, buf).get("refs/heads/main", head)
            data = buf.getvalue()
        else:
            data = archive_markdown(owner.root, owner.root.name, fmt, layers)
        self.erasure.note_export(owner_id, fmt, by, head)
        return data

    def export_name(self, owner_id: str, fmt: str = "zip") -> str:
        """The file name of an owner's export: its folder name (the reversible encoding of its id) + extension."""
        return f"{encode_owner_id(owner_id)}.{fmt}"

    # -- background jobs ---------------------------------------------------

    @property
    def jobs(self) -> JobStore:
        """The data root's :class:`~wikimem.host.fleet.JobStore` (shared by every process; opened on first use)."""
        return self.job_service.store

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
        return self.job_service.started

    @property
    def _runner(self) -> JobRunner | None:
        return self.job_service.runner

    def start_jobs(self, threads: int = JOB_THREADS) -> JobRunner:
        """Run jobs in this process (idempotent; again after a fork): the host's workers each call it."""
        return self.job_service.start(threads)

    def metrics_collector(self) -> HostCollector:
        """What a scrape reads from the shared files (jobs, replication lag): see :mod:`wikimem.host.metrics`."""
        def lags() -> dict[str, int] | None:
            return None if self.replication is None else self.replication.lags(self.owners.folders())

        return HostCollector(lambda: self.jobs.stats(), lags, lambda: self.probation.waiting())

    def submit_memorize(self, owner_id: str, turn: str, *, ctx: WriteContext | None = None, key: str | None = None,
                        tenant: str = "", request_id: str | None = None, **memorize_kwargs):
        """Memorize one turn in the background: ``(job, created)``; the same idempotency key is the same job.

        The owner must exist and the host must have a chat endpoint (checked
        now, not when the job runs); the job survives a restart of the host.
        ``ctx`` is the write's context (from the gate: :meth:`Act.ctx`; ``key`` sets its idempotency key);
        ``tenant`` (the submitter's owner prefix) is its fair share and cap
        (:class:`~wikimem.errors.QueueFull` past it).
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
