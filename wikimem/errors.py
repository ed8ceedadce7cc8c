"""The library's exceptions.

Each carries a meaning that the layers above map to a response in one place
(the web app's error handler, the CLI's exit codes). Subclassing the builtin
exceptions keeps the seed's contract: invalid names are ``ValueError``.
"""

from __future__ import annotations

__all__ = [
    "WikimemError",
    "InvalidName",
    "NotFound",
    "Conflict",
    "PreconditionFailed",
    "StoreBusy",
    "TooLarge",
    "QuotaExceeded",
]


class WikimemError(Exception):
    """Base class of every error the library raises on purpose."""

    code = "error"


class InvalidName(WikimemError, ValueError):
    """A file, item, owner, date or time name that may not be written."""

    code = "invalid_name"


class NotFound(WikimemError, LookupError):
    """An owner, item, commit or run that does not exist."""

    code = "not_found"


class Conflict(WikimemError):
    """A revert/rollback that would overwrite later changes.

    ``conflicts`` lists one dict per item that blocks the operation.
    """

    code = "conflict"

    def __init__(self, message: str, conflicts: list | None = None):
        super().__init__(message)
        self.conflicts = list(conflicts or [])


class PreconditionFailed(WikimemError):
    """An ``If-Match`` style precondition that no longer holds."""

    code = "precondition_failed"

    def __init__(self, message: str, current: str | None = None):
        super().__init__(message)
        self.current = current


class IdempotencyKeyReused(WikimemError, ValueError):
    """An ``Idempotency-Key`` already used for a different kind of request."""

    code = "idempotency_key_reused"


class StoreBusy(WikimemError):
    """The store's write lock could not be taken in time."""

    code = "busy"


class TooLarge(WikimemError, ValueError):
    """A value over one of the size limits of :mod:`wikimem.limits`."""

    code = "too_large"


class QuotaExceeded(WikimemError):
    """A configured quota (owners per token prefix, owners created per minute) is used up.

    ``retry_after`` (seconds) is set when waiting helps (a rate), None when it does not (a count).
    """

    code = "quota_exceeded"

    def __init__(self, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after

