"""The library's exceptions.

Each carries a meaning that the layers above map to a response in one place
(the web app's error handler, the CLI's exit codes). Subclassing the builtin
exceptions keeps the seed's contract: invalid names are ``ValueError``.
"""

from __future__ import annotations

__all__ = [
    "WikimemError",
    "InvalidValue",
    "InvalidName",
    "NotFound",
    "Erased",
    "Conflict",
    "PreconditionFailed",
    "StoreBusy",
    "RemoteError",
    "RemoteUnavailable",
    "RemoteMoved",
    "RemoteRejected",
    "RemoteMissing",
    "TooLarge",
    "QuotaExceeded",
    "DamagedFolder",
    "RemoteRefused",
    "NotPermitted",
    "BadRequest",
    "ToolCallError",
    "LLMNotConfigured",
    "QueueFull",
    "BadImport",
]


class WikimemError(Exception):
    """Base class of every error the library raises on purpose."""

    code = "error"


class InvalidValue(WikimemError, ValueError):
    """A value of the right type that its rules refuse: out of range, unknown, too long, not a date.

    The web app answers 422 (well-formed but refused), where a request whose
    shape is wrong (not JSON, a missing or unknown field, a wrong type) is 400.
    """

    code = "invalid_value"


class InvalidName(InvalidValue):
    """A file, item, owner, date, time or provenance value that may not be written."""

    code = "invalid_name"


class NotFound(WikimemError, LookupError):
    """An owner, item, commit or run that does not exist."""

    code = "not_found"


class Erased(NotFound):
    """An owner erased everywhere: its remote holds the erasure's tombstone, or the erasure register names it
    (a host holding a copy drops it)."""

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
    """An ``If-Match`` / ``If-None-Match`` style precondition that does not hold.

    ``current`` is the current etag or head commit (None: no such item), ``item`` the current item
    (as a dict) when the precondition was an item's.
    """

    code = "precondition_failed"

    def __init__(self, message: str, current: str | None = None, item: dict | None = None):
        super().__init__(message)
        self.current = current
        self.item = item


class NotPermitted(WikimemError, PermissionError):
    """A caller that may not do this here: a character's token reaching another character's layer, or writing the
    shared layer directly when its policy says it only proposes (403)."""

    code = "forbidden"


class IdempotencyKeyReused(InvalidValue):
    """An ``Idempotency-Key`` already used for a different kind of request."""

    code = "idempotency_key_reused"


class StoreBusy(WikimemError):
    """The store's write lock could not be taken in time."""

    code = "busy"


# -- replication to a git remote (raised by wikimem.versioned.replication.remote) -------------------

class RemoteError(WikimemError):
    """Base of the replication errors; ``url`` is the remote (credentials removed)."""

    code = "remote_error"

    def __init__(self, message: str, url: str = ""):
        super().__init__(message)
        self.url = url


class RemoteUnavailable(RemoteError):
    """The remote could not be reached or failed mid-way: retry later (nothing was changed there)."""

    code = "remote_unavailable"
    retry_after = 5  # seconds


class RemoteMoved(RemoteError):
    """The remote ``main`` is not the commit a push started from (another host wrote): catch up, try again.

    ``head`` is the remote's current ``main`` (None if it has none), ``expected``
    the commit the push was based on.
    """

    code = "remote_moved"
    retry_after = 1

    def __init__(self, message: str, url: str = "", head: str | None = None, expected: str | None = None):
        super().__init__(message, url)
        self.head = head
        self.expected = expected


class RemoteRejected(RemoteError):
    """The server refused the operation (credentials, a hook, a broken object): retrying will not help."""

    code = "remote_rejected"


class RemoteMissing(RemoteError):
    """The remote repository does not exist (and this scheme cannot create it)."""

    code = "remote_missing"


class RemoteRefused(RemoteError):
    """The remote's ``main`` holds something this host will not apply: a malformed object, a symbolic link, a
    submodule, a name that is not a memory path. Nothing moved here; ``commit`` is the refused commit."""

    code = "remote_refused"

    def __init__(self, message: str, url: str = "", commit: str | None = None):
        super().__init__(message, url)
        self.commit = commit


class TooLarge(InvalidValue):
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


class DamagedFolder(WikimemError):
    """An owner folder the host will not use as it is: a file that is a symbolic link, a FIFO, a device or
    over its size limit, a path leaving the folder, a broken branch, history index or ``settings.json``.

    Nothing was read from it or written to it; only this owner is affected. ``wikimem repair --owner``
    puts it right (see docs/guides/repair.md).
    """

    code = "folder_damaged"


# -- what a host refuses (a request, a tool call, a job) ----------------------------------------------------

class BadRequest(WikimemError, ValueError):
    """A request whose shape is wrong: a missing or unknown field, a wrong type."""

    code = "bad_request"


class ToolCallError(WikimemError, ValueError):
    """A diary tool call that was refused; the message is meant for the agent."""

    code = "bad_tool_call"


class LLMNotConfigured(WikimemError):
    """Memorize was asked for, but the host has no chat endpoint configured."""

    code = "llm_not_configured"


class QueueFull(QuotaExceeded):
    """A job refused: its tenant (or owner) has as many open jobs as it may, or the jobs database is full.

    HTTP 429 with ``Retry-After`` (``retry_after`` seconds).
    """

    code = "queue_full"

    def __init__(self, message: str, retry_after: int = 5):
        super().__init__(message, retry_after=retry_after)


class BadImport(InvalidValue):
    """A file to import that this host will not read: not a card or chat of a supported format, damaged, or
    refused by its rules (422). ``line`` is the chat line at fault (1-based), when there is one."""

    code = "bad_import"

    def __init__(self, message: str, line: int | None = None):
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line
