"""Memorize as a durable job: submitting one turn, and the handler that runs it (idempotent under the step's
key, see :mod:`wikimem.host.fleet.jobs`).

A model that is down, busy (429) or failing (5xx) is tried again: first
within the call (:class:`~wikimem.llm.ChatRetry`), then by running the step
again later, as :class:`MemorizeRetry` bounds it, the model's
``Retry-After`` honoured. Past those bounds the job fails with the model's
error as its cause (``llm_error`` and the endpoint's own words).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wikimem.errors import StoreBusy

from .jobtypes import MEMORIZE, Handler, Job, RetryLater, Step

if TYPE_CHECKING:
    from .jobs import JobStore

__all__ = ["MEMORIZE", "submit_memorize", "memorize_handler", "MemorizeRetry", "model_retry"]


@dataclass(frozen=True)
class MemorizeRetry:
    """How long a memorize job waits for a model that is unavailable.

    The step runs at most ``1 + len(delays)`` times; before run ``n + 1`` it
    waits ``delays[n − 1]`` seconds, or the model's ``Retry-After`` when
    longer. A ``Retry-After`` over ``max_retry_after`` fails the job at once.
    The defaults (with the chat client's own retries, ~12 s of waits a run)
    ride out an outage of about a minute and a half.
    """

    delays: tuple[float, ...] = (2.0, 8.0, 30.0)
    max_retry_after: float = 300.0

    def delay(self, exc: Any, attempt: int) -> float | None:
        """Seconds before the next run after ``exc`` on run ``attempt``; None: fail the job now."""
        if not getattr(exc, "transient", False) or attempt > len(self.delays):
            return None
        wanted = getattr(exc, "retry_after", None) or 0.0
        if wanted > self.max_retry_after:
            return None
        return max(self.delays[attempt - 1], wanted)

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


def memorize_handler(host: Any, retry: MemorizeRetry | None = None) -> Handler:
    """Steps made by :func:`submit_memorize` → ``MemorizeResult.to_dict()``.

    The memorize's idempotency key is the request's, else the step key: a
    step re-run after its process died between the commit and the "done"
    mark replays the commit's result instead of asking the model and writing
    again. ``retry`` (default: ``host.memorize_retry``, else
    :class:`MemorizeRetry`) bounds the runs while the model is unavailable.
    """
    from wikimem.host.gate import job_context
    from wikimem.llm import LLMError

    from ..duplicates import forget_turn

    def run(step: Step) -> dict[str, Any]:
        params = dict(step.params)
        owner, turn = params.pop("owner"), params.pop("turn")
        ctx = job_context({k: params.pop(k, None) for k in _CONTEXT_FIELDS}, idempotency_key=step.key)
        target = host.owner(owner)
        try:
            return target.memorize(turn, ctx=ctx, **params).to_dict()
        except StoreBusy as exc:
            raise RetryLater(str(exc), delay=1.0) from None
        except LLMError as exc:
            model_retry(retry or getattr(host, "memorize_retry", None), exc, step)
            # failed for good: a new request for this turn is no duplicate of this one
            forget_turn(target, turn, ctx, params.get("character"), params.get("prompt"))  # (as memorize noted it)
            raise

    return run


def model_retry(retry: MemorizeRetry | None, exc: Exception, step: Step) -> None:
    """Raise :class:`RetryLater` when the model's error ``exc`` is worth another run of ``step`` (``retry``'s bounds,
    default :class:`MemorizeRetry`); return when the step fails for good."""
    policy = retry or MemorizeRetry()
    delay = policy.delay(exc, step.attempt)
    if delay is not None:
        raise RetryLater(f"the model is unavailable, run {step.attempt} of {1 + len(policy.delays)}: {exc}",
                         delay=delay) from None
