"""Times an operator types into a filter: a date or an ISO-8601 instant, read as UTC seconds."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import overload

from wikimem.errors import InvalidValue
from wikimem.format import OutsideCalendar, utc_instant

__all__ = ["parse_instant", "iso_instant"]


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
    try:
        moment = utc_instant(raw)
    except OutsideCalendar:
        raise InvalidValue(f"{what} {raw!r} falls outside the years 1 to 9999 once converted to UTC") from None
    except ValueError:
        raise InvalidValue(f"{what} must be a date (YYYY-MM-DD) or an ISO-8601 time, got {raw!r}") from None
    if end_of_day and len(raw) == 10:
        moment += timedelta(days=1, seconds=-1)
    return int(moment.timestamp())


@overload
def iso_instant(ts: int) -> str: ...
@overload
def iso_instant(ts: None) -> None: ...
def iso_instant(ts: int | None) -> str | None:
    """Epoch seconds as ``YYYY-MM-DDTHH:MM:SSZ``."""
    if ts is None:
        return None
    return datetime.fromtimestamp(int(ts), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
