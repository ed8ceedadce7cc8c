"""Probable duplicate memorize requests (issue 35): :func:`check_duplicate`, called once by ``Owner.memorize``.

The same turn memorized twice within :data:`DUPLICATE_WINDOW` seconds
without an ``Idempotency-Key`` — a bot that resubmits after a timeout, a
job queued twice — would ask the model twice and write the events twice.
The second request is refused instead: :class:`ProbableDuplicate` (a
:class:`~wikimem.errors.Conflict`, HTTP 409, code ``probable_duplicate``)
names the earlier run; nothing is asked of the model, nothing is written.

"The same turn": the same owner, turn text, character, prompt and source
conversation. The earlier request counts while it may still be running
(for :data:`IN_FLIGHT` seconds after it started) or once it wrote a commit
(on ``main`` or its staged branch); one that failed or kept nothing does not
block a retry after that. A request with an ``Idempotency-Key`` is never
checked (a retry with the same key replays the first result; another key
means another request); the step key a memorize job gives itself does not
count as one. Records are digests (no text) in the owner's ``.git/``
(:data:`RECORDS_FILE`), shared by every process of the host.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from wikimem.context import WriteContext, digest
from wikimem.errors import Conflict
from wikimem.fsio import atomic_write
from wikimem.locking import FileLock

__all__ = ["check_duplicate", "forget_turn", "ProbableDuplicate", "DUPLICATE_WINDOW", "IN_FLIGHT", "RECORDS_FILE"]

DUPLICATE_WINDOW = 120.0  # seconds: the same turn again within this is a probable duplicate
IN_FLIGHT = 60.0  # seconds an earlier request that wrote nothing (yet) may still be running
RECORDS_FILE = "wikimem-recent-turns.json"
_MAX_RECORDS = 512
_STEP_KEY = re.compile(r"job_\d{8}T\d{6}Z_[0-9a-f]{12}/\d+")  # a memorize job's own step key


class ProbableDuplicate(Conflict):
    """The same turn was memorized moments ago (without an Idempotency-Key): refused, nothing written."""

    code = "probable_duplicate"

    def __init__(self, message: str, run: str):
        super().__init__(message, [{"run": run}])  # the earlier run, for the client (``conflicts`` of the 409)
        self.run = run


def _key(owner: Any, turn: Any, ctx: WriteContext, character: Any, prompt: Any) -> str | None:
    """The turn's digest, or None when the request is not checked (it carries a key of its own)."""
    if ctx.idempotency_key is not None and not _STEP_KEY.fullmatch(ctx.idempotency_key):
        return None
    return digest("memorize", owner.id, turn, character, prompt, ctx.source_conv)


def check_duplicate(owner: Any, turn: Any, ctx: WriteContext, character: Any = None, prompt: Any = None) -> None:
    """Raise :class:`ProbableDuplicate` when this turn was memorized moments ago as another run; else remember it.

    ``owner`` is the :class:`~wikimem.host.Owner` (its id, folder and history); ``ctx`` the memorize's
    context, its run id set.
    """
    key = _key(owner, turn, ctx, character, prompt)
    if key is None:
        return
    now = time.time()
    with _records(owner) as records:
        earlier = records.get(key)
        if earlier is not None and earlier["run"] != ctx.run and now - earlier["at"] < DUPLICATE_WINDOW \
                and (now - earlier["at"] < IN_FLIGHT or _wrote(owner, earlier["run"])):
            raise ProbableDuplicate(
                f"probable duplicate: the same turn was memorized {now - earlier['at']:.0f} s ago as run "
                f"{earlier['run']!r}; nothing was asked or written. Send an Idempotency-Key to retry a request "
                f"safely (the same key replays its result), or wait {DUPLICATE_WINDOW:.0f} s", earlier["run"])
        records[key] = {"at": now, "run": ctx.run}


def forget_turn(owner: Any, turn: Any, ctx: WriteContext, character: Any = None, prompt: Any = None) -> None:
    """Drop this turn's record (its memorize failed for good: a new request for it is no duplicate)."""
    key = _key(owner, turn, ctx, character, prompt)
    if key is None:
        return
    with _records(owner) as records:
        if records.get(key, {}).get("run") == ctx.run:
            del records[key]


def _wrote(owner: Any, run: str | None) -> bool:
    """Whether a run left a commit on ``main`` or is staged."""
    if not run:
        return False
    if owner.history(run=run, limit=1).entries:
        return True
    return any(getattr(r, "run", None) == run for r in owner.staged_runs())


@contextmanager
def _records(owner: Any) -> Iterator[dict[str, dict]]:
    """The owner's recent turns, ``{digest: {"at", "run"}}``, read and (when changed) rewritten under a lock."""
    path = owner.root / ".git" / RECORDS_FILE
    with FileLock(path.with_suffix(".lock"), timeout=10.0).hold():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # none yet, or torn: nothing remembered
            loaded = {}
        records: dict[str, dict] = loaded if isinstance(loaded, dict) else {}
        before = dict(records)
        yield records
        if records != before:
            horizon = time.time() - DUPLICATE_WINDOW
            kept = sorted(((k, v) for k, v in records.items() if v.get("at", 0) >= horizon),
                          key=lambda kv: kv[1]["at"])[-_MAX_RECORDS:]
            atomic_write(path, json.dumps(dict(kept)).encode(), durable=False)
