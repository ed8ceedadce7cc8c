"""Memorize as a durable job: submitting one turn, and the handler that runs it (idempotent under the step's
key, see :mod:`wikimem.host.fleet.jobs`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wikimem.errors import StoreBusy

from .jobtypes import MEMORIZE, Handler, Job, RetryLater, Step

if TYPE_CHECKING:
    from .jobs import JobStore

__all__ = ["MEMORIZE", "submit_memorize", "memorize_handler"]

# Step parameters of a memorize job that make its WriteContext; the rest go to Owner.memorize.
_CONTEXT_FIELDS = ("run", "actor", "source_conv", "idempotency_key", "fingerprint", "staged")


def submit_memorize(store: JobStore, owner: str, turn: str, *, key: str | None = None, tenant: str = "",
                    request_id: str | None = None, **memorize_kwargs: Any) -> tuple[Job, bool]:
    """Submit a memorize of one turn as a one-step job; ``(job, created)``.

    ``memorize_kwargs`` are :meth:`Owner.memorize`'s (``character``,
    ``prompt``, ``ts``, ``tz``) and the write context's (``run``, ``actor``,
    ``source_conv``). The turn's time (``ts``, default now) and the run id
    (default a new one) are fixed here, at submission: entries are dated from
    when the turn was told, not from when the job ran, and the run id is
    known at once. ``tenant`` is the submitter's owner prefix (its fair share
    and cap). ``key`` (the request's Idempotency-Key) is scoped to the
    owner, names the job, and is the memorize's own idempotency key, so a
    memorize already applied under it synchronously is replayed, not redone.
    ``request_id`` (the submitting request's) is kept in the job's params.
    """
    from wikimem.context import new_run_id
    from wikimem.format import normalize_ts

    params = {k: v for k, v in memorize_kwargs.items() if v is not None}
    request = {"owner": owner, "turn": turn, **params}
    params["ts"] = normalize_ts(params.get("ts"))
    params.setdefault("run", new_run_id())
    if key is not None:
        params["idempotency_key"] = key
    step = {"owner": owner, "turn": turn, **params}
    scoped = None if key is None else f"{MEMORIZE}\n{owner}\n{key}"
    meta = {"owner": owner, "run": params["run"], **({"request_id": request_id} if request_id else {})}
    return store.submit(MEMORIZE, [step], params=meta, key=scoped, request=request, tenant=tenant)


def memorize_handler(host: Any) -> Handler:
    """Steps made by :func:`submit_memorize` → ``MemorizeResult.to_dict()``.

    The memorize's idempotency key is the request's, else the step key: a
    step re-run after its process died between the commit and the "done"
    mark replays the commit's result instead of asking the model and writing
    again.
    """
    from wikimem.host.gate import job_context

    def run(step: Step) -> dict[str, Any]:
        params = dict(step.params)
        owner, turn = params.pop("owner"), params.pop("turn")
        ctx = job_context({k: params.pop(k, None) for k in _CONTEXT_FIELDS}, idempotency_key=step.key)
        try:
            return host.owner(owner).memorize(turn, ctx=ctx, **params).to_dict()
        except StoreBusy as exc:
            raise RetryLater(str(exc), delay=1.0) from None

    return run
