"""A group turn memorized as a durable job (``POST /api/v1/channels/<channel>/memorize`` with
``Prefer: respond-async``): submitting it, and the handler that runs it.

One step writes every person's folder. Its effects are idempotent under the
step key (each folder's commit carries it), and the model's answer is kept
in the step (:meth:`~wikimem.host.fleet.jobs.JobStore.checkpoint`) before
the first folder is written: a step cut short between two folders runs again
from the same answer, so every folder ends as if it had never stopped — the
written ones replayed, the others written, nothing twice. A model that is
unavailable is waited for as a memorize job waits (:class:`MemorizeRetry`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wikimem.errors import StoreBusy

from .jobtypes import CHANNEL_MEMORIZE, Handler, Job, RetryLater, Step
from .memorizejob import MemorizeRetry, model_retry

if TYPE_CHECKING:
    from .jobs import JobStore

__all__ = ["CHANNEL_MEMORIZE", "submit_channel_memorize", "channel_handler"]

# Step parameters that make the write context (gate.JOB_CONTEXT_FIELDS); the rest is the turn and its options.
_CONTEXT_FIELDS = ("run", "actor", "source_conv", "idempotency_key", "fingerprint", "staged")
REPLY = "reply"  # the step parameter that keeps the model's answer once it was given


def submit_channel_memorize(store: JobStore, turn: dict[str, Any], *, persons: list[str], key: str | None = None,
                            tenant: str = "", request_id: str | None = None, **options: Any) -> tuple[Job, bool]:
    """Submit a group turn (``GroupTurn.to_params()``) as a one-step job; ``(job, created)``.

    ``options`` are :meth:`Channels.memorize`'s (``prompt``, ``ts``, ``tz``) and the write context's (``run``,
    ``actor``, ``source_conv``, ``staged``, ``fingerprint``). The turn's time (default now) and the run id
    (default a new one) are fixed here. The job names its ``persons`` (who may see it: a token reaching every one
    of them) and counts against the submitter's ``tenant``; ``key`` (the request's Idempotency-Key) is scoped to the
    channel, names the job and is each folder's idempotency key. Its scope (what listings match) is the prefix the
    persons share.
    """
    from wikimem.context import new_run_id
    from wikimem.format import normalize_ts

    params = {k: v for k, v in options.items() if v is not None}
    request = {**turn, **params}
    params["ts"] = normalize_ts(params.get("ts"))
    params.setdefault("run", new_run_id())
    if key is not None:
        params["idempotency_key"] = key
    scoped = None if key is None else f"{CHANNEL_MEMORIZE}\n{turn['channel']}\n{key}"
    meta = {"channel": turn["channel"], "character": turn["character"], "persons": persons, "run": params["run"],
            **({"request_id": request_id} if request_id else {})}
    return store.submit(CHANNEL_MEMORIZE, [{**turn, **params}], params=meta, key=scoped, request=request,
                        tenant=tenant)


def channel_handler(host: Any, retry: MemorizeRetry | None = None) -> Handler:
    """Steps made by :func:`submit_channel_memorize` → ``ChannelResult.to_dict()`` (see the module's docstring)."""
    from wikimem.host.gate import job_context
    from wikimem.llm import LLMError

    def run(step: Step) -> dict[str, Any]:
        params = dict(step.params)
        ctx = job_context({k: params.pop(k, None) for k in _CONTEXT_FIELDS}, idempotency_key=step.key)
        turn = host.channels.turn(params["channel"], params["messages"], params["character"])
        try:
            return host.channels.memorize(
                turn, ctx=ctx, prompt=params.get("prompt"), ts=params.get("ts"), tz=params.get("tz"),
                reply=params.get(REPLY), remember=lambda answer: host.jobs.checkpoint(step, REPLY, answer),
            ).to_dict()
        except StoreBusy as exc:
            raise RetryLater(str(exc), delay=1.0) from None
        except LLMError as exc:
            model_retry(retry or getattr(host, "memorize_retry", None), exc, step)
            host.channels.forget(turn, ctx=ctx, prompt=params.get("prompt"))  # failed for good: no duplicate now
            raise

    return run
