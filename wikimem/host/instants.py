"""Times an operator types into a filter: a date or an ISO-8601 instant, read as UTC seconds."""

from __future__ import annotations

from datetime import timedelta

from wikimem.errors import InvalidValue
from wikimem.format import read_instant

__all__ = ["parse_instant"]


def parse_instant(text: str | None, what: str, *, end_of_day: bool = False) -> int | None:
    """``text`` (``YYYY-MM-DD`` or an ISO-8601 time; no offset means UTC) as epoch seconds, or None if blank.

    A bare date is the start of that UTC day, or its last second with
    ``end_of_day`` (so ``until=2026-07-21`` includes the whole day).
    """
    if text is None or not str(text).strip():
        return None
    raw = str(text).strip()
    if len(raw) > 64:
        raise InvalidValue(f"{what} is longer than 64 characters")
    moment = read_instant(raw, f"{what} {raw!r}", "a date (YYYY-MM-DD) or an ISO-8601 time")
    if end_of_day and len(raw) == 10:
        moment += timedelta(days=1, seconds=-1)
    return int(moment.timestamp())
