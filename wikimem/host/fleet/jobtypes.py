"""The values of the durable jobs (:mod:`wikimem.host.fleet.jobs`): a job, a step, a query and its page,
the limits of a tenant's queue, and what a handler raises to be run again later."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, overload

from wikimem.errors import WikimemError

__all__ = ["Job", "JobQuery", "JobPage", "Step", "RetryLater", "Handler", "Limits", "error_of", "iso",
           "JOBS_FILE", "MEMORIZE", "IMPORT_CHAT", "TURN_FIELDS", "JOB_STATES", "UNFINISHED", "JOB_ID_RE", "MAX_STEPS",
           "MAX_KEY",
           "DEFAULT_RETENTION", "DEFAULT_PER_TENANT", "DEFAULT_PER_OWNER", "DEFAULT_MAX_BYTES", "DEFAULT_TURN_KEEP"]

log = logging.getLogger("wikimem.host.fleet.jobs")

JOBS_FILE = "jobs.sqlite3"
MEMORIZE = "memorize"  # the kind of a memorize job (memorizejob.py); the store drops its turns after a while
IMPORT_CHAT = "import-chat"  # a chat memorized turn by turn as one run (wikimem/host/imports/); its turns dropped too
TURN_FIELDS = {MEMORIZE: "turn", IMPORT_CHAT: "turns"}  # the step field holding what a person said, per kind
JOB_STATES = ("queued", "running", "done", "failed", "cancelled")
UNFINISHED = ("queued", "running")  # a process that looks at such a job helps run it
JOB_ID_RE = re.compile(r"job_\d{8}T\d{6}Z_[0-9a-f]{12}")
MAX_STEPS = 100_000
MAX_KEY = 512
DEFAULT_RETENTION = 7 * 24 * 3600.0
DEFAULT_PER_TENANT = 100  # open jobs one owner prefix (a token's) may have (WIKIMEM_JOBS_PER_PREFIX)
DEFAULT_PER_OWNER = 20  # open jobs of one owner (WIKIMEM_JOBS_PER_OWNER)
DEFAULT_MAX_BYTES = 256 * 1024 * 1024  # the jobs database's size budget (WIKIMEM_JOBS_MAX_MB)
DEFAULT_TURN_KEEP = 600.0  # seconds a finished memorize job keeps its raw turn (WIKIMEM_JOBS_TURN_KEEP)


@overload
def iso(t: float) -> str: ...
@overload
def iso(t: None) -> None: ...
def iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")



# -- values ----------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """A job as stored: its state, progress and each step's outcome."""

    id: str
    kind: str
    state: str
    done: int  # finished steps (done or failed)
    failed: int
    total: int
    results: list[dict[str, Any]]  # per step: {"step", "state", "result"?, "error"?}
    params: dict[str, Any]
    created: str
    updated: str
    finished: str | None = None
    tenant: str = ""  # the owner prefix of who submitted it (fair share and caps)
    scope: str = ""  # its owner, or the owner prefix of a job over many owners

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "state": self.state, "done": self.done, "failed": self.failed,
                "total": self.total, "results": self.results, "params": self.params, "created": self.created,
                "updated": self.updated, "finished": self.finished}

    def summary(self) -> dict[str, Any]:
        """The job without its per-step results (what a list shows)."""
        out = self.to_dict()
        del out["results"]
        out["owner"] = self.params.get("owner") if self.kind != "bulk-rollback" else None
        out["scope"] = self.scope
        return out


@dataclass(frozen=True)
class JobQuery:
    """Which jobs a list shows: by kind, state, owner prefix (of the job's owner or scope), created since."""

    kind: str | None = None
    state: str | None = None
    owner_prefix: str = ""
    since: float | None = None

    @classmethod
    def parse(cls, *, kind=None, state=None, owner_prefix=None, since=None) -> JobQuery:
        """A query from request values (strings; ``since`` a date or ISO-8601); a bad one raises ``ValueError``."""
        from wikimem.errors import BadRequest
        from wikimem.host.instants import parse_instant

        for value, what in ((kind, "kind"), (state, "state"), (owner_prefix, "owner_prefix"), (since, "since")):
            if value is not None and not isinstance(value, str):
                raise BadRequest(f"{what} must be a string")
            if value is not None and len(value) > 128:
                raise ValueError(f"{what} is longer than 128 characters")  # well-formed, refused: 422
        if state not in (None, "", *JOB_STATES):
            raise ValueError(f"state must be one of {', '.join(JOB_STATES)}, got {state!r}")
        when = parse_instant(since or None, "since")
        return cls(kind or None, state or None, owner_prefix or "", None if when is None else float(when))

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("kind", self.kind), ("state", self.state), ("owner_prefix", self.owner_prefix),
                                  ("since", iso(self.since))) if v}


@dataclass
class JobPage:
    """A page of jobs (newest first) and the cursor of the next one."""

    jobs: list[Job] = field(default_factory=list)
    next: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"jobs": [j.summary() for j in self.jobs], "next": self.next}


@dataclass(frozen=True)
class Step:
    """One step handed to a handler."""

    job: str
    n: int
    kind: str
    params: dict[str, Any]
    job_params: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1  # 2 and more: an earlier run was cut short (its process died, or RetryLater)

    @property
    def key(self) -> str:
        """The step's idempotency key: the same on every run of this step, unique across steps."""
        return f"{self.job}/{self.n}"


class RetryLater(Exception):
    """Raised by a handler: put the step back, to be run again after ``delay`` seconds."""

    def __init__(self, message: str = "retry later", delay: float = 1.0):
        super().__init__(message)
        self.delay = delay


Handler = Callable[[Step], Any]


def error_of(exc: BaseException) -> dict[str, str]:
    if isinstance(exc, (WikimemError, ValueError)):
        return {"code": getattr(exc, "code", None) or "invalid_value", "message": str(exc)}
    log.error("job step failed unexpectedly", exc_info=exc)
    return {"code": "internal", "message": "internal error"}


@dataclass(frozen=True)
class Limits:
    """How much one tenant may queue, and how big the jobs database may grow (0: no limit)."""

    per_tenant: int = DEFAULT_PER_TENANT  # open (queued or running) jobs per owner prefix of the submitter
    per_owner: int = DEFAULT_PER_OWNER  # open jobs of one owner
    max_bytes: int = DEFAULT_MAX_BYTES  # the database's size budget
    turn_keep: float = DEFAULT_TURN_KEEP  # seconds a finished memorize job keeps the raw turn it was given
    retry_after: int = 5  # seconds a refused submitter is told to wait
