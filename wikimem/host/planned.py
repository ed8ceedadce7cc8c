"""A diary date after today is a plan: filed only when the caller says so (``planned: true``).

A bot that sends a wrong ``date`` (a year typo, a month and day swapped) would otherwise file a memory on a day
that has not happened, which the Diary tab then opened on and a time question never reached. Every diary write
of an owner asks :func:`check_planned` (the API's diary append, the MCP diary tool, a batch's diary op); the
plain library and memorize (dated by the turn) are left as they are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from wikimem.errors import InvalidValue
from wikimem.format import normalize_ts
from wikimem.naming import validate_date
from wikimem.store import resolve_tz

__all__ = ["check_planned"]


def check_planned(date: str | None, ts: str | None, tz: Any, planned: bool) -> None:
    """Refuse (:class:`InvalidValue`, 422) an entry whose day — ``date``, else ``ts``'s day in ``tz`` — is after
    today in ``tz``, unless ``planned``. A malformed value is left for the diary's own error."""
    if planned or (date is None and ts is None):
        return
    try:
        zone = resolve_tz(tz)
        day = validate_date(date) if date is not None else \
            datetime.fromisoformat(normalize_ts(ts)).astimezone(zone).date().isoformat()
    except (ValueError, OverflowError):
        return
    today = datetime.now(zone).date().isoformat()
    if day > today:
        raise InvalidValue(f"the diary day {day} is after today ({today} in {getattr(zone, 'key', zone)}): a plan "
                           "is filed ahead only when asked for — send planned: true (the Diary shows it as planned)")
