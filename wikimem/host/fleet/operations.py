"""What operators do across owners: find runs, keep the run index, preview and run a bulk rollback, list jobs.

:class:`Fleet` is held by :class:`~wikimem.host.Host` as ``host.fleet``, built with the run index,
the host's owners, its peers and its jobs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikimem.errors import InvalidValue, NotFound

from .bulk import JOB_KIND, BulkPreview, Part, job_view, preview, rollback_part, select, submit
from .jobtypes import UNFINISHED, Job, JobPage, JobQuery
from .runindex import OwnerCountPage, RunIndex, RunPage, RunQuery

if TYPE_CHECKING:
    from wikimem.host.cluster import Peers
    from wikimem.host.owner_ids import Within
    from wikimem.host.owners import Owners

    from .runner import HostJobs

__all__ = ["Fleet", "MAX_RUNS_PAGE", "job_visible"]

log = logging.getLogger(__name__)

MAX_RUNS_PAGE = 1000
INLINE_CATCH_UP = 2.0  # seconds a search may spend indexing owners whose head went beyond the index


def _limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RUNS_PAGE:
        raise InvalidValue(f"limit must be an integer from 1 to {MAX_RUNS_PAGE}")
    return limit


class Fleet:
    """Cross-owner operator actions of one host: run search (cluster-wide with peers or a shared database), the
    run index's refresh, bulk rollback (preview, now, or as a durable job), the jobs list."""

    def __init__(self, run_index: RunIndex, owners: Owners, jobs: HostJobs, *, peers: Peers | None = None,
                 lock_dir: Path | None = None) -> None:
        """``owners`` are the host's (lookup, ids, heads); ``jobs`` its job store and runner; ``peers`` the
        other hosts of a cluster, asked the same search when the index is this host's alone; ``lock_dir`` holds
        the lock one sweep at a time takes."""
        self._run_index = run_index
        self.owners = owners
        self.jobs = jobs
        self._peers = peers
        self._lock_dir = lock_dir
        self._stale: dict[str, str] = {}  # owner → a head of this host's copy known to be behind the index
        self._sweeping = threading.Lock()

    @property
    def shared(self) -> bool:
        """Whether the run index and the jobs are a cluster's shared database (no gathering over peers)."""
        return self._run_index.shared

    # -- every commit indexed ----------------------------------------------------

    def catch_up_index(self, prefix: str = "", *, budget: float | None) -> bool:
        """Index the commits of every owner held here (under ``prefix``) whose head went beyond what the run index
        holds — a clone, a hand edit with git, a writer killed before its listener ran. Whether every such
        owner was caught up within ``budget`` seconds (None: no bound)."""
        heads = self.owners.owner_heads(prefix)
        known = self._run_index.heads(prefix)
        behind = [o for o, h in heads.items() if h and known.get(o) != h and self._stale.get(o) != h]
        deadline = None if budget is None else time.monotonic() + budget
        for owner_id in behind:
            if deadline is not None and time.monotonic() > deadline:
                return False
            try:
                owner = self.owners.peek(owner_id)
                self._run_index.catch_up(owner)
            except NotFound:  # deleted meanwhile
                continue
            except Exception:
                log.exception("run index: could not catch up %s", owner_id)
                return False
            if self._run_index.indexed_head(owner_id) != heads[owner_id]:
                self._stale[owner_id] = heads[owner_id]  # this copy is behind another host's: not ours to index
        return True

    def sweep_run_index(self) -> bool:
        """Catch every owner of this host up (one process of the host at a time); then the index is complete
        for this host. False when another process is sweeping."""
        if not self._sweeping.acquire(blocking=False):
            return False
        try:
            with self._sweep_lock() as mine:
                if not mine:
                    return False
                if self.catch_up_index(budget=None):
                    self._run_index.set_complete(True)
                return True
        finally:
            self._sweeping.release()

    @contextmanager
    def _sweep_lock(self) -> Iterator[bool]:
        if self._lock_dir is None:
            yield True
            return
        import fcntl

        self._lock_dir.mkdir(parents=True, exist_ok=True)
        with open(self._lock_dir / "sweep.lock", "a+b") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _fresh(self, query: RunQuery, within: Within) -> bool:
        """Before a search: this host's owners under the search's prefixes caught up (bounded)."""
        from wikimem.host.owner_ids import scope_prefixes

        caught = [self.catch_up_index(p, budget=INLINE_CATCH_UP) for p in scope_prefixes(within, query.owner_prefix)]
        return all(caught)

    # -- searching -----------------------------------------------------------------

    def find_runs(self, query: RunQuery, *, within: Within = "", limit: int = 50, cursor: str | None = None,
                  forward: dict | None = None, by_owner: bool = False) -> RunPage:
        """Runs of every owner (under ``within``) matching ``query``, newest first, with totals.

        The owners held here are caught up first (bounded: past it the page
        says ``complete: false``). On a shared database the page is the
        cluster's. Otherwise, with peers and ``forward`` (headers that let a
        peer answer for the caller's scope), every host of the cluster is asked
        the same search and cursor and the pages merge into one; peers that
        did not answer are listed in the page's ``unreachable``; the totals count an owner two hosts hold once
        (each host gives them per owner, ``by_owner``: what a peer is asked for).
        """
        fresh = self._fresh(query, within)
        local = self._run_index.search(query, within=within, limit=_limit(limit), cursor=cursor,
                                       by_owner=by_owner or self._gathers(forward))
        local.complete = local.complete and fresh
        answers, unreachable = self._ask_peers("/api/v1/runs", query, limit, cursor, forward, totals="owners")
        if not answers and not unreachable:
            return local
        return RunPage.merged([local.to_dict(), *answers], limit, unreachable)

    def runs_per_owner(self, query: RunQuery, *, within: Within = "", limit: int = 50, cursor: str | None = None,
                       forward: dict | None = None) -> OwnerCountPage:
        """How many matching runs each owner has (owners in id order), and the next page's cursor (cluster-wide
        as :meth:`find_runs`)."""
        self._fresh(query, within)
        local = self._run_index.per_owner(query, within=within, limit=_limit(limit), cursor=cursor)
        answers, unreachable = self._ask_peers("/api/v1/runs", query, limit, cursor, forward, by="owner")
        if not answers and not unreachable:
            return local
        return OwnerCountPage.merged([local.to_dict(), *answers], limit, unreachable)

    def _gathers(self, forward: dict | None) -> bool:
        """Whether a search asks the peers too (a cluster without a shared database, a caller a peer may answer)."""
        return self._peers is not None and forward is not None and not self.shared

    def _ask_peers(self, path: str, query: RunQuery, limit: int, cursor: str | None, forward: dict | None,
                   **extra: str) -> tuple[list[dict], list[str]]:
        if self._peers is None or forward is None or not self._gathers(forward):
            return [], []
        return self._peers.get(path, {**query.to_dict(), "limit": limit, "cursor": cursor, **extra}, forward)

    def refresh_run_index(self, *, full: bool = False) -> dict:
        """Bring the run index up to every owner's history (``full``: index each owner from scratch).

        Owners that no longer exist are dropped (on a shared index: only
        those this host indexed). Returns counts: owners, commits indexed,
        owners dropped.
        """
        ids = self.owners.owner_ids()
        commits = 0
        for owner_id in ids:
            try:
                owner = self.owners.peek(owner_id)
            except Exception:  # deleted meanwhile
                continue
            commits += self._run_index.reindex(owner) if full else self._run_index.catch_up(owner)
        dropped = self._run_index.forget_others(set(ids))
        self._stale.clear()
        self._run_index.set_complete(True)
        return {"owners": len(ids), "commits": commits, "dropped": dropped}

    # -- bulk rollback -------------------------------------------------------------

    def bulk_parts(self, query: RunQuery, *, within: Within = "") -> list[Part]:
        """The selection of a bulk rollback, frozen: one part per owner (on a shared index, of every host)."""
        self._fresh(query, within)
        return select(self._run_index, query, within=within)

    def preview_bulk_rollback(self, query: RunQuery, *, within: Within = "") -> BulkPreview:
        """Every owner's plan for a bulk rollback of ``query`` (nothing written)."""
        self._fresh(query, within)
        return preview(self._run_index, self.owners.owner, query, within=within)

    def bulk_rollback_part(self, part: Part, *, job: str, force: bool = False, actor: str = "operator") -> dict:
        """One owner's step of a bulk rollback (see :func:`wikimem.host.fleet.bulk.rollback_part`)."""
        return rollback_part(self.owners.owner, part, job=job, force=force, actor=actor)

    def bulk_rollback_now(self, query: RunQuery, *, job: str, within: Within = "", force: bool = False,
                          actor: str = "operator") -> list[dict]:
        """A bulk rollback run here and now, owner after owner (the CLI and the benchmark; the API queues a job)."""
        return [self.bulk_rollback_part(p, job=job, force=force, actor=actor)
                for p in self.bulk_parts(query, within=within)]

    def start_bulk_rollback(self, query: RunQuery, *, within: Within = "", force: bool = False,
                            actor: str = "operator", idempotency_key: str | None = None,
                            tenant: str | None = None, request_id: str | None = None) -> dict:
        """Queue a bulk rollback of ``query`` as a durable job (one step per owner); the job as a dict.

        The selection is frozen now (the preview's owners and runs); each
        step re-reads its runs under the owner's lock. The same
        ``idempotency_key`` returns the same job; ``request_id`` is kept in its params. On a shared database the
        job spans the owners of every host: each step is run by the host
        holding its owner (another host takes it over if that one is gone).
        """
        from wikimem.host.owner_ids import scope_text

        self._fresh(query, within)
        job, _ = submit(self.jobs.store, self._run_index, query, within=within, force=force, actor=actor,
                        key=idempotency_key, tenant=scope_text(within) if tenant is None else tenant,
                        request_id=request_id)
        self.jobs.wake()
        return job.to_dict()

    def bulk_job(self, job_id: str, *, within: Within = "") -> dict[str, Any]:
        """A bulk rollback job as its page shows it (:func:`wikimem.host.fleet.bulk.job_view`).

        :class:`NotFound` for another kind of job, or one whose selection
        reaches beyond ``within`` (the caller's owner prefix). While the job
        is unfinished, this process helps run it.
        """
        job = self.jobs.store.get(job_id)
        if job.state in UNFINISHED:
            self.jobs.start()  # e.g. the development server restarted: resume its jobs on the first look
        if job.kind != JOB_KIND or not job_visible(job.params, within):
            raise NotFound(f"no bulk rollback job {job_id!r}")
        return job_view(job)

    def visible_job(self, job_id: str, *, within: str = "", admin: bool = True) -> Job:
        """A job of any kind, for a caller limited to owner prefix ``within`` (:class:`NotFound` when it may not
        see it; jobs over many owners only when ``admin``). While it is unfinished, this process helps run it."""
        job = self.jobs.store.get(job_id)
        if job.state in UNFINISHED:
            self.jobs.start()
        if not job_visible(job.params, within, admin=admin, kind=job.kind):
            raise NotFound(f"no job {job_id!r}")
        return job

    # -- the jobs list ---------------------------------------------------------------

    def list_jobs(self, query: JobQuery, *, within: Within = "", admin: bool = False, limit: int = 50,
                  cursor: str | None = None) -> JobPage:
        """Jobs newest first that a caller limited to owner prefix ``within`` may see: jobs of its owners, and
        bulk jobs only when ``admin``."""
        return self.jobs.store.list(query, within=within, admin=admin, limit=_limit(limit), cursor=cursor)

    def cancel_job(self, job_id: str, *, within: Within = "", admin: bool = False) -> Job:
        """Cancel a job that has not started (:class:`~wikimem.errors.Conflict` once it has); the job."""
        jobs = self.jobs.store
        job = jobs.get(job_id)
        if not job_visible(job.params, within, admin=admin, kind=job.kind):
            raise NotFound(f"no job {job_id!r}")
        return jobs.cancel(job_id)


def job_visible(params: dict, within: Within, *, admin: bool = True, kind: str | None = None) -> bool:
    """Whether a caller limited to owner prefix ``within`` may see a job: one owner's job (``params["owner"]``)
    when that owner is under the prefix; a group turn's (``params["persons"]``) when every person is; a job over
    many owners (``params["within"]``, the prefix it was made over) when that prefix is under the caller's, and
    only for an ``admin``."""
    from wikimem.host.owner_ids import covers, reaches

    owner = params.get("owner")
    if owner is not None and kind != JOB_KIND:
        return covers(within, str(owner))
    persons = params.get("persons")
    if isinstance(persons, list) and kind != JOB_KIND:
        return all(reaches(within, str(p)) for p in persons)
    made_over = params.get("within", "")
    return admin and covers(within, made_over if isinstance(made_over, list) else str(made_over))
