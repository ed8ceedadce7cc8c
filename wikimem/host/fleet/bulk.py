"""Bulk rollback: every run a cross-owner search matched, undone owner by owner.

Three parts, each usable alone:

* :func:`select` freezes a search (:class:`~wikimem.host.fleet.runindex.RunQuery`)
  into one :class:`Part` per owner (its run ids, and the ids of matching
  commits that carry no run);
* :func:`preview` plans every part without writing (what changes per owner,
  and the conflicts);
* :func:`rollback_part` is the step of the job for one owner: one commit
  (run id = the job id, ``Wikimem-Reverts`` / ``Wikimem-Reverts-Run`` naming
  what it undid), conflicts skipped unless forced, an idempotency key made
  of the job id so a retried step writes nothing twice.

Runs a standing revert or rollback already undid are left out (undoing them
again would only conflict with what came after). Because every step's
commit carries the job id as its run, the whole bulk action is undone by a
bulk rollback of ``run = <job id>``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from wikimem.errors import BadRequest, Conflict, InvalidValue, NotFound, StoreBusy, WikimemError
from wikimem.host.gate import job_context
from wikimem.host.owner_ids import Within, within_json

from .jobtypes import RetryLater
from .runindex import RunIndex, RunQuery

if TYPE_CHECKING:
    from wikimem.host.owner import Owner

    from .jobs import JobStore
    from .jobtypes import Handler, Job, Step

__all__ = ["Part", "OwnerPlan", "BulkPreview", "select", "preview", "rollback_part", "submit", "handler", "owner_rows",
           "owner_step", "job_view", "StepFailed", "MAX_BULK_OWNERS", "MAX_CONFLICTS_SHOWN", "JOB_KIND"]

JOB_KIND = "bulk-rollback"
MAX_BULK_OWNERS = 10_000
MAX_CONFLICTS_SHOWN = 20  # per owner, in a preview or a job result


@dataclass
class Part:
    """What one owner's step undoes: whole runs, and single commits that carry no run id."""

    owner: str
    runs: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Part:
        return cls(str(data["owner"]), [str(r) for r in data.get("runs") or ()],
                   [str(c) for c in data.get("commits") or ()])


@dataclass
class OwnerPlan:
    """The preview of one owner's step: its part, what would change, what conflicts."""

    part: Part
    changes: list = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)
    error: str | None = None  # e.g. the owner was deleted meanwhile

    def to_dict(self) -> dict:
        return {**self.part.to_dict(), "changes": [asdict(c) for c in self.changes],
                "conflicts": self.conflicts[:MAX_CONFLICTS_SHOWN], "conflict_count": len(self.conflicts),
                "error": self.error}


@dataclass
class BulkPreview:
    """Every owner's plan, and the totals an operator confirms."""

    query: RunQuery
    plans: list[OwnerPlan]

    @property
    def total(self) -> dict:
        plans = self.plans
        return {"owners": len(plans), "runs": sum(len(p.part.runs) + len(p.part.commits) for p in plans),
                # what the job writes unless forced: owners with a conflict are skipped whole
                "changes": sum(len(p.changes) for p in plans if not p.conflicts),
                "changes_if_forced": sum(len(p.changes) + len(p.conflicts) for p in plans),
                "conflicts": sum(len(p.conflicts) for p in plans),
                "owners_with_conflicts": sum(1 for p in plans if p.conflicts),
                # owners whose step writes a commit unless forced (the others are skipped or have nothing to do)
                "owners_to_change": sum(1 for p in plans if p.changes and not p.conflicts and not p.error),
                "owners_with_nothing_to_do": sum(1 for p in plans if not p.changes and not p.conflicts)}

    def to_dict(self, *, limit: int | None = None, offset: int = 0) -> dict:
        shown = self.plans[offset:None if limit is None else offset + limit]
        nxt = offset + len(shown) if offset + len(shown) < len(self.plans) else None
        return {"selection": self.query.to_dict(), "total": self.total, "owners": [p.to_dict() for p in shown],
                "next": None if nxt is None else str(nxt)}


def select(index: RunIndex, query: RunQuery, *, within: Within = "") -> list[Part]:
    """The search frozen into one part per owner (owners in id order); runs already rolled back are left out."""
    if not query.selective():
        raise BadRequest("a bulk rollback needs run, actor, source_conv, action, since or until: "
                         "an owner prefix alone would select everything those owners ever wrote")
    groups = index.selection(query, within=within, limit=MAX_BULK_OWNERS + 1)
    if len(groups) > MAX_BULK_OWNERS:
        raise InvalidValue(f"the selection spans more than {MAX_BULK_OWNERS} owners: narrow it (owner_prefix, time)")
    parts = []
    for owner_id, rows in groups.items():
        live = [r for r in rows if r.rolled_back_by is None]
        if live:
            parts.append(Part(owner_id, [r.run for r in live if r.run], [r.commit for r in live if not r.run]))
    return parts


def preview(index: RunIndex, owner: Callable[[str], Owner], query: RunQuery, *, within: Within = "") -> BulkPreview:
    """Plan every owner's step of a bulk rollback of ``query``, writing nothing (``owner`` opens one by id)."""
    plans = []
    for part in select(index, query, within=within):
        try:
            plan = owner(part.owner).review.preview_selection(part.runs, part.commits)
        except NotFound as exc:
            plans.append(OwnerPlan(part, error=str(exc)))
            continue
        plans.append(OwnerPlan(part, plan.changes, plan.conflicts))
    return BulkPreview(query, plans)


def rollback_part(owner: Callable[[str], Owner], part: Part, *, job: str, force: bool = False,
                  actor: str = "operator") -> dict:
    """One owner's step of bulk rollback ``job`` (``owner`` opens one by id): the result as JSON-ready data
    (never raises a conflict).

    ``status``: ``done`` (a commit), ``nothing`` (nothing left to undo),
    ``conflict`` (skipped: items changed since; ``force`` writes over them),
    ``missing`` (the owner was deleted meanwhile).
    """
    out = {"owner": part.owner, "runs": part.runs, "commits": part.commits}
    try:
        one = owner(part.owner)
        ctx = job_context({}, run=job, actor=actor, idempotency_key=f"bulk:{job}")
        done = one.review.rollback_selection(part.runs, part.commits, force=force, message=f"bulk rollback {job}",
                                             ctx=ctx)
        one.withdraw_proposals(list(part.runs), ctx=ctx)  # what the runs still propose goes with them
    except Conflict as exc:
        return {**out, "status": "conflict", "commit": None, "conflict_count": len(exc.conflicts),
                "conflicts": exc.conflicts[:MAX_CONFLICTS_SHOWN]}
    except NotFound as exc:
        return {**out, "status": "missing", "commit": None, "error": str(exc)}
    changes = done.value.get("changes", 0) if isinstance(done.value, dict) else len(done.value.changes)
    return {**out, "status": "done" if done.commit else "nothing", "commit": done.commit, "changes": changes,
            "replayed": bool(done.replayed)}


# -- the durable job (wikimem/host/fleet/jobs.py): one step per owner --------------------------------

class StepFailed(WikimemError):
    """One owner's step failed for a reason other than a conflict; the message names the owner."""

    code = "bulk_step_failed"


@contextmanager
def owner_step(owner_id: str) -> Iterator[None]:
    """One owner's step of a bulk job: a busy owner is tried again later (:class:`RetryLater`); any other
    failure fails the step with a message that names the owner (the job goes on with the other owners)."""
    try:
        yield
    except StoreBusy as exc:
        raise RetryLater(str(exc), delay=1.0) from None
    except (WikimemError, ValueError) as exc:
        raise StepFailed(f"{owner_id}: {exc}") from exc


def submit(jobs: JobStore, index: RunIndex, query: RunQuery, *, within: Within = "", force: bool = False,
           actor: str = "operator", key: str | None = None, tenant: str = "",
           request_id: str | None = None) -> tuple[Job, bool]:
    """Freeze the selection and queue the job: ``(job, created)``; the same ``key`` is the same job.

    A retry under the same key gets its job even when the job has since
    rolled everything back (the selection is empty by then). ``request_id``
    (the submitting request's) is kept in the job's params, not compared.
    :class:`~wikimem.errors.NotFound` when nothing is left to roll back.
    On a shared index each step's home is the host that indexed its owner
    last (the one holding it).
    """
    request = {"selection": query.to_dict(), "within": within_json(within), "force": bool(force), "actor": actor}
    scoped, existing = jobs.keyed(JOB_KIND, within, key, request, "bulk rollback")
    if existing is not None:
        return existing, False
    parts = select(index, query, within=within)
    if not parts:
        raise NotFound("nothing to roll back: no run matches, or every match was rolled back already")
    params = {**request, "request_id": request_id} if request_id else request
    homes = None
    if index.shared:
        held = index.holders([p.owner for p in parts])
        homes = [held.get(p.owner) for p in parts]
    return jobs.submit(JOB_KIND, [p.to_dict() for p in parts], params=params, key=scoped, request=request,
                       tenant=tenant, homes=homes)


def handler(owner: Callable[[str], Owner]) -> Handler:
    """The ``bulk-rollback`` step handler: :func:`rollback_part` for the step's owner (``owner`` opens one by id).

    A busy owner is retried later; any other failure fails the step with a
    message that names the owner (the job goes on with the other owners).
    """
    def run(step: Step) -> dict:
        part = Part.from_dict(step.params)
        params = step.job_params
        with owner_step(part.owner):
            return rollback_part(owner, part, job=step.job, force=bool(params.get("force")),
                                 actor=params.get("actor") or "operator")
    return run


def owner_rows(job: Job, **blank: Any) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """A per-owner job's rows (each step's result; a failure or a pending step with ``blank``'s fields) and how
    many rows are in each status. A failure names its owner before ": " (``"?"`` when it does not)."""
    rows: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for entry in job.results:
        if "result" in entry:
            row = dict(entry["result"])
        elif "error" in entry:
            message = entry["error"].get("message", "")
            row = {"owner": message.split(": ", 1)[0] if ": " in message else "?", "status": "failed", **blank,
                   "error": message}
        else:
            row = {"owner": None, "status": entry.get("state", "pending"), **blank}
        counts[row["status"]] = counts.get(row["status"], 0) + 1
        if row.get("owner") is not None:
            rows.append(row)
    return rows, counts


def job_view(job: Job) -> dict:
    """A bulk rollback job as its page shows it: the selection, progress, one row per owner, counts."""
    rows, counts = owner_rows(job, commit=None)
    params = job.params
    return {"id": job.id, "state": job.state, "done": job.done, "total": job.total, "failed": job.failed,
            "selection": params.get("selection", {}), "force": params.get("force", False),
            "actor": params.get("actor"), "within": params.get("within", ""), "counts": counts, "results": rows,
            "created": job.created, "finished": job.finished}
