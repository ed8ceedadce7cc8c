"""How long the host keeps what it must not keep for ever (docs/guides/backup.md has the table).

One frozen :class:`Retention`, made by :mod:`wikimem.host.config` from its
``WIKIMEM_*_DAYS`` variables and given to the host, which enforces each:

- ``idempotency``: an ``Idempotency-Key`` replays its write this long; past
  it a retry is a new request, and the stored results (which hold the item
  written) are purged from the history index at its housekeeping;
- ``jobs``: a finished job — its parameters, the turns it was given, its
  results — is deleted this long after it finished;
- ``receipts``: an erasure's or a forget's receipt, in the erasure register;
- ``discarded``: a discarded staged run's commits stay reachable
  (``refs/wikimem/discarded/<run>``, a wrong click undone) this long.

Session records (a logout's) last as long as a session can
(``WIKIMEM_SESSION_HOURS``, the web layer's); a finished memorize job drops
its raw turn sooner (``WIKIMEM_JOBS_TURN_KEEP``, where the job queue has it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Retention", "DAY"]

DAY = 24 * 3600.0


@dataclass(frozen=True)
class Retention:
    """Seconds each kind of record is kept (see the module docstring)."""

    idempotency: float = 30 * DAY
    jobs: float = 7 * DAY
    receipts: float = 365 * DAY
    discarded: float = 14 * DAY

    def __post_init__(self) -> None:
        for name in ("idempotency", "jobs", "receipts", "discarded"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ValueError(f"retention of {name} must be a positive number of seconds, got {value!r}")
