"""The HTTP client of the host's JSON API for bot workers (standard library only); see :mod:`.api`."""

from __future__ import annotations

from .api import Client
from .errors import (
    BadRequestError,
    BusyError,
    ClientError,
    ConflictError,
    ForbiddenError,
    InvalidNameError,
    InvalidValueError,
    NotFoundError,
    PreconditionFailedError,
    RateLimitedError,
    ServerError,
    TooLargeError,
    TransportError,
    UnauthorizedError,
)
from .results import Fetched, Memorized, Page, Written
from .transport import Headers

__all__ = [
    "Client",
    "Written",
    "Fetched",
    "Page",
    "Memorized",
    "ClientError",
    "TransportError",
    "BadRequestError",
    "InvalidNameError",
    "UnauthorizedError",
    "ForbiddenError",
    "NotFoundError",
    "ConflictError",
    "PreconditionFailedError",
    "TooLargeError",
    "InvalidValueError",
    "RateLimitedError",
    "ServerError",
    "BusyError",
    "Headers",
]
