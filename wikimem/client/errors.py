"""The errors of :mod:`wikimem.client`: :class:`ClientError` and one subclass per status,
each also the library's own exception where there is one (``NotFound``, ``Conflict``, …),
and :func:`error_for`, which picks the one an error answer means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wikimem.errors import (
    Conflict,
    InvalidName,
    InvalidValue,
    NotFound,
    NotPermitted,
    PreconditionFailed,
    StoreBusy,
    TooLarge,
    WikimemError,
)

from .transport import Headers

__all__ = [
    "ClientError", "TransportError", "BadRequestError", "InvalidNameError", "UnauthorizedError", "ForbiddenError",
    "NotFoundError", "ConflictError", "PreconditionFailedError", "TooLargeError", "InvalidValueError",
    "RateLimitedError", "ServerError", "BusyError", "error_for",
]


class ClientError(WikimemError):
    """The host answered with an error (or, as :class:`TransportError`, did not answer)."""

    def __init__(self, status: int, code: str, message: str, *, body: Mapping[str, Any] | None = None,
                 headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.body = dict(body or {})
        self.headers = Headers(headers or {})

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status!r}, {self.code!r}, {self.message!r})"


class TransportError(ClientError):
    """No answer: connection refused or reset, or a timeout, after every retry."""

    def __init__(self, message: str, cause: BaseException | None = None):
        super().__init__(0, "transport_error", message)
        self.cause = cause


class BadRequestError(ClientError, ValueError):
    """400: a request the host refused as malformed (not JSON, a missing or unknown field, a wrong type, …)."""


class UnauthorizedError(ClientError):
    """401: no token or an unknown token."""


class ForbiddenError(ClientError, NotPermitted):
    """403: the token lacks the scope, may not reach this owner, or (bound to a character) another character's
    layer; also the library's :class:`~wikimem.errors.NotPermitted` (a ``PermissionError``)."""


class NotFoundError(ClientError, NotFound):
    """404: unknown owner, item, commit or run."""


class ConflictError(ClientError, Conflict):
    """409: a revert or rollback blocked by later changes; ``conflicts`` lists them item by item."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.conflicts = list(self.body.get("conflicts") or [])


class PreconditionFailedError(ClientError, PreconditionFailed):
    """412: ``If-Match`` no longer holds, or the item of an ``If-None-Match: *`` write exists;
    ``current`` is the current etag or commit, ``item`` the item there (a dict) when the host sent it."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.current = self.body.get("current")
        self.item = self.body.get("item")


class TooLargeError(ClientError, TooLarge):
    """413: the request body, or a value in it, is larger than the host accepts."""


class InvalidValueError(ClientError, InvalidValue):
    """422: a well-formed request with a value the library refuses (a range, a time zone, a choice, …)."""


class InvalidNameError(InvalidValueError, InvalidName):
    """422 ``invalid_name``: a file, item, owner, date, time or provenance value the library refuses to write.

    Hosts before the 400/422 rule answered these with 400 ``invalid_name``: that maps here too.
    """


class RateLimitedError(ClientError):
    """429 after every retry."""


class ServerError(ClientError):
    """5xx."""


class BusyError(ServerError, StoreBusy):
    """503: the owner's write lock could not be taken in time (after every retry)."""


_BY_STATUS: dict[int, type[ClientError]] = {
    400: BadRequestError, 401: UnauthorizedError, 403: ForbiddenError, 404: NotFoundError,
    409: ConflictError, 412: PreconditionFailedError, 413: TooLargeError, 422: InvalidValueError,
    429: RateLimitedError, 503: BusyError,
}


def error_for(status: int, body: Any, headers: Mapping[str, str] | None = None,
              reason: str = "") -> ClientError:
    """The exception of an error answer (``body`` the decoded JSON, or None)."""
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        code, message, extra = str(err.get("code") or "error"), str(err.get("message") or reason), err
    else:  # not an error of ours: a proxy's HTML page, an empty body, or an answer such as /readyz's 503
        code, message, extra = "http_error", reason or f"HTTP {status}", body if isinstance(body, dict) else {}
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ClientError)
    if code == InvalidName.code and status in (400, 422):
        cls = InvalidNameError
    return cls(status, code, message, body=extra, headers=headers)

