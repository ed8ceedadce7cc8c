"""Runs on probation across owners: the Staged review, bulk approve and discard as durable jobs.

(Which writes are staged is an owner's write policy: :class:`~wikimem.host.probation.StagingPolicy`.)

- :class:`Probation` — held by the :class:`~wikimem.host.Host` as ``host.probation``: the staged-run index
  (:mod:`wikimem.host.fleet.staged`) fed by every owner's :class:`~wikimem.versioned.Staging` and by sweeps,
  the cross-owner listing, a run's per-owner preview, hold, and bulk approve / discard of a run as one durable
  job (kinds :data:`APPROVE_JOB` and :data:`DISCARD_JOB`, one step per owner, each step's commit keyed by the
  job so a step run again after a crash writes nothing twice), and :meth:`Probation.tick`, which queues the
  policy's auto-approvals and expiries.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wikimem.errors import InvalidValue, NotFound
from wikimem.format import instant_epoch
from wikimem.host.gate import job_context
from wikimem.host.probation import StagingPolicy

from .bulk import owner_rows, owner_step
from .jobtypes import UNFINISHED, Job
from .operations import job_visible

if TYPE_CHECKING:
    from wikimem.host.owner import Owner
    from wikimem.host.owner_ids import Within
    from wikimem.host.owners import Owners

    from .runner import HostJobs
    from .staged import StagedIndex

__all__ = ["Probation", "APPROVE_JOB", "DISCARD_JOB", "JOB_KINDS", "settle_part", "staged_handler",
           "staged_job_view"]

log = logging.getLogger(__name__)

APPROVE_JOB = "staged-approve"
DISCARD_JOB = "staged-discard"
JOB_KINDS = (APPROVE_JOB, DISCARD_JOB)
SWEEP_BUDGET = 2.0  # seconds a listing may spend finding owners whose staged branches the index does not know
MAX_PREVIEW_CHANGES = 50  # per owner, in a preview


# -- one owner's step ------------------------------------------------------------------------------------

def settle_part(owner: Callable[[str], Owner], owner_id: str, run: str, *, action: str, job: str,
                force: bool = False, actor: str = "operator", reason: str = "discarded") -> dict[str, Any]:
    """One owner's step of a bulk approve or discard of ``run``: the result as JSON-ready data.

    ``status``: ``done`` (its commit), ``settled`` (no staged branch left: settled before, by this job's earlier
    attempt or by someone else), ``missing`` (the owner was deleted). The commit's idempotency key is made of the
    job id, so a step run again after its process died replays instead of writing twice.
    """
    out: dict[str, Any] = {"owner": owner_id, "run": run}
    ctx = job_context({}, actor=actor, idempotency_key=f"staged:{job}")
    try:
        holder = owner(owner_id)
        if action == APPROVE_JOB:
            done = holder.approve_staged(run, force=force, ctx=ctx)
        else:
            done = holder.discard_staged(run, ctx=ctx, reason=reason)
    except NotFound as exc:
        try:
            holder = owner(owner_id)
        except NotFound:
            return {**out, "status": "missing", "commit": None, "error": str(exc)}
        found = holder.staging.settled(run)
        return {**out, "status": "settled", "commit": (found or {}).get("commit"),
                "by": (found or {}).get("Approved-By") or (found or {}).get("Actor")}
    value = done.value if isinstance(done.value, dict) else {}
    result = {**out, "status": "done", "commit": done.commit, "replayed": bool(done.replayed)}
    if action == APPROVE_JOB:
        result.update(changes=len(value.get("changes") or []), skipped=int(value.get("skipped") or 0),
                      conflicts=(value.get("conflicts") or [])[:20])
    else:
        result.update(discarded=int(value.get("discarded") or 0))
    return result


def staged_handler(owner: Callable[[str], Owner], action: str) -> Callable[[Any], dict]:
    """The step handler of a bulk approve (``action`` = :data:`APPROVE_JOB`) or discard job."""
    def run(step) -> dict:
        params = step.job_params
        with owner_step(str(step.params.get("owner"))):
            return settle_part(owner, str(step.params["owner"]), str(params["run"]), action=action, job=step.job,
                               force=bool(params.get("force")), actor=params.get("actor") or "operator",
                               reason=params.get("reason") or "discarded")
    return run


def staged_job_view(job: Job) -> dict[str, Any]:
    """A bulk approve or discard job as its page shows it: the run, progress, one row per owner, counts."""
    rows, counts = owner_rows(job)
    params = job.params
    return {"id": job.id, "kind": job.kind, "action": "approve" if job.kind == APPROVE_JOB else "discard",
            "state": job.state, "done": job.done, "total": job.total, "failed": job.failed, "run": params.get("run"),
            "force": params.get("force", False), "actor": params.get("actor"), "reason": params.get("reason"),
            "within": params.get("within", ""), "counts": counts, "results": rows, "created": job.created,
            "finished": job.finished}


# -- across owners --------------------------------------------------------------------------------------------

class Probation:
    """The host's runs on probation across its owners (or a cluster's, on the shared database)."""

    def __init__(self, index: StagedIndex, owners: Owners, jobs: HostJobs, *,
                 policy: StagingPolicy | None = None) -> None:
        """``owners`` are the host's (lookup caught up with the remote, ``peek`` as this host's disk holds one,
        ids, folders); ``jobs`` its job store and runner."""
        self.index = index
        self.policy = policy or StagingPolicy()
        self.owners = owners
        self.jobs = jobs

    # -- feeding the index -------------------------------------------------------------------

    def attach(self, owner: Owner) -> None:
        """An owner just opened: it writes under the policy, and each change of its staged runs is recorded."""
        owner.policy = self.policy
        owner.staging.on_change.append(lambda _run: self.sync(owner))

    def forget_copy(self, owner_id: str) -> None:
        """This host's copy of an owner is gone: its rows go (a cluster's shared index keeps them)."""
        if not self.index.shared:
            self.index.forget(owner_id)

    def sync(self, owner: Owner) -> None:
        """Record one owner's staged runs (and how the ones that went were settled) in the index."""
        staging = owner.staging
        runs = staging.runs()
        known = self.index.known([owner.id]).get(owner.id, {})
        settled = {run: found for run in known if run not in {r.run for r in runs}
                   and (found := staging.settled(run)) is not None}
        self.index.sync(owner.id, runs, settled)

    def sweep(self, prefix: str = "", *, budget: float | None = SWEEP_BUDGET) -> bool:
        """Record the owners held here (under ``prefix``) whose staged branches on disk differ from the index — a
        clone or a fetch brought them, or took them away. Whether all were done within ``budget`` seconds."""
        from wikimem.versioned import folder_staged

        ids = self.owners.owner_ids(prefix)
        known = self.index.known(ids)
        deadline = None if budget is None else time.monotonic() + budget
        for owner_id in ids:
            on_disk = folder_staged(self.owners.owner_path(owner_id))
            if on_disk == known.get(owner_id, {}):
                continue
            if deadline is not None and time.monotonic() > deadline:
                return False
            try:
                self.sync(self.owners.peek(owner_id))
            except NotFound:
                continue
            except Exception:
                log.exception("staged-run index: could not record %s", owner_id)
        return True

    # -- reading ---------------------------------------------------------------------------------

    def runs(self, *, within: Within = "", state: str | None = "staged", run: str | None = None,
             actor: str | None = None, owner_prefix: str = "") -> dict[str, Any]:
        """The Staged page's list: one line per run (actor, owners, first and last write, size, held owners), and
        how many wait and since when."""
        from wikimem.host.owner_ids import scope_prefixes

        if state is not None and state not in ("staged", "approved", "discarded", "expired", "gone"):
            raise InvalidValue(f"state must be staged, approved, discarded, expired or gone, got {state!r}")
        complete = all([self.sweep(p) for p in scope_prefixes(within, owner_prefix)])
        lines = self.index.summary(within=within, state=state, run=run, actor=actor, owner_prefix=owner_prefix)
        now = time.time()
        for line in lines:
            line["age_seconds"] = _age(line["first"], now)
        return {"runs": lines, "waiting": self.waiting(within=within), "complete": complete,
                "policy": self.policy.to_dict()}

    def waiting(self, *, within: Within = "") -> dict[str, Any]:
        """How many staged runs wait (runs, owners' copies) and the oldest one's age in seconds."""
        out = self.index.waiting(within=within)
        out["oldest_age_seconds"] = _age(out["oldest"], time.time()) if out["oldest"] else None
        return out

    def owners_of(self, run: str, *, within: Within = "", state: str | None = None) -> list[dict[str, Any]]:
        """Every owner's copy of ``run`` (staged or settled), oldest first."""
        from wikimem.host.owner_ids import scope_prefixes
        from wikimem.versioned import validate_staged_run

        validate_staged_run(run)
        for prefix in scope_prefixes(within, ""):
            self.sweep(prefix)
        return [r.to_dict() for r in self.index.rows(run=run, within=within, state=state)]

    def preview(self, run: str, *, within: Within = "", owners: list[str] | None = None,
                except_owners: list[str] | None = None) -> dict[str, Any]:
        """What approving ``run`` would change on each owner now (its staged owners under ``within``, or ``owners``
        only, less ``except_owners``), with conflicts; nothing is written."""
        chosen = self._chosen(run, within, owners, except_owners)
        plans: list[dict[str, Any]] = []
        totals = {"owners": 0, "changes": 0, "conflicts": 0, "owners_with_conflicts": 0}
        for owner_id in chosen:
            try:
                review = self.owners.owner(owner_id).staged_review(run)
            except NotFound as exc:
                plans.append({"owner": owner_id, "error": str(exc), "changes": [], "conflicts": []})
                continue
            totals["owners"] += 1
            totals["changes"] += len(review.changes)
            totals["conflicts"] += len(review.conflicts)
            totals["owners_with_conflicts"] += bool(review.conflicts)
            plans.append({"owner": owner_id, "tip": review.run.tip, "staged": len(review.staged),
                          "changes": [c.to_dict() for c in review.changes[:MAX_PREVIEW_CHANGES]],
                          "change_count": len(review.changes), "conflicts": review.conflicts[:20],
                          "conflict_count": len(review.conflicts)})
        return {"run": run, "total": totals, "owners": plans}

    def _chosen(self, run: str, within: Within, owners: list[str] | None, except_owners: list[str] | None) -> list[str]:
        staged = [r["owner"] for r in self.owners_of(run, within=within, state="staged")]
        if owners is not None:
            wanted = set(owners)
            staged = [o for o in staged if o in wanted]
        skip = set(except_owners or ())
        return [o for o in staged if o not in skip]

    # -- acting ------------------------------------------------------------------------------------

    def start(self, action: str, run: str, **kwargs: Any) -> dict[str, Any]:
        """:meth:`submit` the job, and have this process help run it; the job as its page shows it."""
        job = self.submit(action, run, **kwargs)
        self.jobs.wake()
        return job

    def submit(self, action: str, run: str, *, within: Within = "", force: bool = False, actor: str = "operator",
               owners: list[str] | None = None, except_owners: list[str] | None = None, reason: str = "discarded",
               idempotency_key: str | None = None, tenant: str | None = None,
               request_id: str | None = None) -> dict[str, Any]:
        """Queue a bulk approve (``action`` = ``approve``) or discard of ``run`` across its staged owners (under
        ``within``; ``owners`` only, less ``except_owners``) as one durable job, one step per owner; the job.

        The same ``idempotency_key`` returns the same job. :class:`NotFound` when no owner holds the run staged.
        """
        if action not in ("approve", "discard"):
            raise InvalidValue(f"action must be approve or discard, got {action!r}")
        kind = APPROVE_JOB if action == "approve" else DISCARD_JOB
        from wikimem.host.owner_ids import scope_text, within_json

        request = {"run": run, "within": within_json(within), "force": bool(force), "actor": actor, "reason": reason,
                   "owners": sorted(owners) if owners is not None else None,
                   "except_owners": sorted(except_owners or [])}
        jobs = self.jobs.store
        scoped, existing = jobs.keyed(kind, within, idempotency_key, request)
        if existing is not None:
            return staged_job_view(existing)
        chosen = self._chosen(run, within, owners, except_owners)
        if not chosen:
            raise NotFound(f"no owner holds run {run!r} staged (approved, discarded, or never staged)")
        params = {**request, "request_id": request_id} if request_id else request
        job, _ = jobs.submit(kind, [{"owner": o} for o in chosen], params=params, key=scoped, request=request,
                             tenant=scope_text(within) if tenant is None else tenant)
        return staged_job_view(job)

    def settle_now(self, action: str, run: str, *, within: Within = "", force: bool = False, actor: str = "operator",
                   owners: list[str] | None = None, except_owners: list[str] | None = None,
                   job: str = "cli") -> list[dict[str, Any]]:
        """Approve or discard ``run`` here and now, owner after owner (the CLI; the API queues a job)."""
        kind = APPROVE_JOB if action == "approve" else DISCARD_JOB
        return [settle_part(self.owners.owner, o, run, action=kind, job=job, force=force, actor=actor)
                for o in self._chosen(run, within, owners, except_owners)]

    def job(self, job_id: str, *, within: Within = "") -> dict[str, Any]:
        """A bulk approve or discard job (:class:`NotFound` for another kind, or one beyond ``within``)."""
        job = self.jobs.store.get(job_id)
        if job.state in UNFINISHED:
            self.jobs.start()
        if job.kind not in JOB_KINDS or not job_visible(job.params, within):
            raise NotFound(f"no staged-run job {job_id!r}")
        return staged_job_view(job)

    def hold(self, run: str, held: bool = True, *, within: Within = "", owners: list[str] | None = None) -> int:
        """Keep ``run`` (its staged copies under ``within``, or of ``owners``) from auto-approval and expiry, or let
        it go again; how many copies were marked."""
        from wikimem.versioned import validate_staged_run

        return self.index.hold(validate_staged_run(run), held, within=within, owners=owners)

    def tick(self, now: float | None = None) -> dict[str, list[str]]:
        """The policy at work: queue the auto-approval of unheld runs staged longer than ``auto_approve`` and the
        expiry of those staged longer than ``expire`` (one job per run, keyed so that a tick repeated by every
        worker queues it once). Runs on each worker's maintenance beat."""
        now = time.time() if now is None else now
        out: dict[str, list[str]] = {"approve": [], "expire": []}
        policy = self.policy
        if not policy.auto_approve and not policy.expire:
            return out
        self.sweep(budget=None)
        # Approval comes first: a run expires only where no approval would come before its expiry.
        if policy.auto_approve and (not policy.expire or policy.auto_approve < policy.expire):
            plans = [("approve", "approve", int(now - policy.auto_approve))]
        else:
            plans = [("discard", "expire", int(now - policy.expire))]
        for action, label, cutoff in plans:
            for run in self.index.due(cutoff):
                try:
                    self.start(action, run, actor="auto-approve" if action == "approve" else "expiry",
                               reason="expired", idempotency_key=f"policy:{label}:{run}:{cutoff // 86400}")
                    out[label].append(run)
                except NotFound:
                    continue
                except Exception:
                    log.exception("staged runs: could not queue the %s of %s", label, run)
        return out


def _age(iso: str | None, now: float) -> int | None:
    return max(0, int(now - instant_epoch(iso))) if iso else None
