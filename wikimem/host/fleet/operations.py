"""What operators do across owners: find runs, keep the run index, preview and run a bulk rollback.

:class:`Fleet` is held by :class:`~wikimem.host.Host` as ``host.fleet``, built with the run index,
the host's owner lookups, its peers and its job queue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wikimem.errors import NotFound
from wikimem.host.errors import BadRequest

from .bulk import JOB_KIND, BulkPreview, Part, job_view, preview, rollback_part, select, submit
from .jobs import UNFINISHED
from .runindex import OwnerCountPage, RunIndex, RunPage, RunQuery

if TYPE_CHECKING:
    from wikimem.host.cluster import Peers
    from wikimem.host.owner import Owner

    from .jobs import JobRunner, JobStore

__all__ = ["Fleet", "MAX_RUNS_PAGE", "job_visible"]

MAX_RUNS_PAGE = 1000


def _limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RUNS_PAGE:
        raise BadRequest(f"limit must be an integer from 1 to {MAX_RUNS_PAGE}")
    return limit


class Fleet:
    """Cross-owner operator actions of one host: run search (cluster-wide with peers), the run index's
    refresh, bulk rollback (preview, now, or as a durable job)."""

    def __init__(self, run_index: RunIndex, owner: Callable[[str], Owner], owner_ids: Callable[[], list[str]], *,
                 jobs: Callable[[], JobStore], run_jobs: Callable[[], JobRunner], peers: Peers | None = None) -> None:
        """``owner`` opens one owner by id (:class:`NotFound` if missing), ``owner_ids`` lists every owner held
        here; ``jobs`` opens the data root's job store, ``run_jobs`` makes this process run jobs (its runner);
        ``peers`` are the other hosts of a cluster, asked the same search."""
        self._run_index = run_index
        self._owner = owner
        self._owner_ids = owner_ids
        self._jobs = jobs
        self._run_jobs = run_jobs
        self._peers = peers

    def find_runs(self, query: RunQuery, *, within: str = "", limit: int = 50, cursor: str | None = None,
                  forward: dict | None = None) -> RunPage:
        """Runs of every owner (under ``within``) matching ``query``, newest first, with totals.

        With peers and ``forward`` (headers that let a peer answer for the
        caller's scope), every host of the cluster is asked the same search
        and cursor and the pages merge into one; peers that did not answer
        are listed in the page's ``unreachable``.
        """
        local = self._run_index.search(query, within=within, limit=_limit(limit), cursor=cursor)
        answers, unreachable = self._ask_peers("/api/v1/runs", query, limit, cursor, forward)
        if not answers and not unreachable:
            return local
        return RunPage.merged([local.to_dict(), *answers], limit, unreachable)

    def runs_per_owner(self, query: RunQuery, *, within: str = "", limit: int = 50, cursor: str | None = None,
                       forward: dict | None = None) -> OwnerCountPage:
        """How many matching runs each owner has (owners in id order), and the next page's cursor (cluster-wide
        with peers and ``forward``, as :meth:`find_runs`)."""
        local = self._run_index.per_owner(query, within=within, limit=_limit(limit), cursor=cursor)
        answers, unreachable = self._ask_peers("/api/v1/runs", query, limit, cursor, forward, by="owner")
        if not answers and not unreachable:
            return local
        return OwnerCountPage.merged([local.to_dict(), *answers], limit, unreachable)

    def _ask_peers(self, path: str, query: RunQuery, limit: int, cursor: str | None, forward: dict | None,
                   **extra: str) -> tuple[list[dict], list[str]]:
        if self._peers is None or forward is None:
            return [], []
        return self._peers.get(path, {**query.to_dict(), "limit": limit, "cursor": cursor, **extra}, forward)

    def refresh_run_index(self, *, full: bool = False) -> dict:
        """Bring the run index up to every owner's history (``full``: index each owner from scratch).

        Owners that no longer exist are dropped. Returns counts: owners,
        commits indexed, owners dropped.
        """
        ids = self._owner_ids()
        commits = 0
        for owner_id in ids:
            try:
                owner = self._owner(owner_id)
            except Exception:  # deleted meanwhile
                continue
            commits += self._run_index.reindex(owner) if full else self._run_index.catch_up(owner)
        dropped = self._run_index.forget_others(set(ids))
        self._run_index.set_complete(True)
        return {"owners": len(ids), "commits": commits, "dropped": dropped}

    def bulk_parts(self, query: RunQuery, *, within: str = "") -> list[Part]:
        """The selection of a bulk rollback, frozen: one part per owner."""
        return select(self._run_index, query, within=within)

    def preview_bulk_rollback(self, query: RunQuery, *, within: str = "") -> BulkPreview:
        """Every owner's plan for a bulk rollback of ``query`` (nothing written)."""
        return preview(self._run_index, self._owner, query, within=within)

    def bulk_rollback_part(self, part: Part, *, job: str, force: bool = False, actor: str = "operator") -> dict:
        """One owner's step of a bulk rollback (see :func:`wikimem.host.fleet.bulk.rollback_part`)."""
        return rollback_part(self._owner, part, job=job, force=force, actor=actor)

    def bulk_rollback_now(self, query: RunQuery, *, job: str, within: str = "", force: bool = False,
                          actor: str = "operator") -> list[dict]:
        """A bulk rollback run here and now, owner after owner (the CLI and the benchmark; the API queues a job)."""
        return [self.bulk_rollback_part(p, job=job, force=force, actor=actor)
                for p in self.bulk_parts(query, within=within)]

    def start_bulk_rollback(self, query: RunQuery, *, within: str = "", force: bool = False,
                            actor: str = "operator", idempotency_key: str | None = None) -> dict:
        """Queue a bulk rollback of ``query`` as a durable job (one step per owner); the job as a dict.

        The selection is frozen now (the preview's owners and runs); each
        step re-reads its runs under the owner's lock. The same
        ``idempotency_key`` returns the same job.
        """
        job, _ = submit(self._jobs(), self._run_index, query, within=within, force=force, actor=actor,
                        key=idempotency_key)
        self._run_jobs().wake()
        return job.to_dict()

    def bulk_job(self, job_id: str, *, within: str = "") -> dict[str, Any]:
        """A bulk rollback job as its page shows it (:func:`wikimem.host.fleet.bulk.job_view`).

        :class:`NotFound` for another kind of job, or one whose selection
        reaches beyond ``within`` (the caller's owner prefix). While the job
        is unfinished, this process helps run it.
        """
        job = self._jobs().get(job_id)
        if job.state in UNFINISHED:
            self._run_jobs()  # e.g. the development server restarted: resume its jobs on the first look
        if job.kind != JOB_KIND or not job_visible(job.params, within):
            raise NotFound(f"no bulk rollback job {job_id!r}")
        return job_view(job)


def job_visible(params: dict, within: str) -> bool:
    """Whether a caller limited to owner prefix ``within`` may see a job made over ``params["within"]``."""
    return str(params.get("within", "")).startswith(within)
