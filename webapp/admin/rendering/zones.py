"""The operator's time zone: the one zone the admin pages show instants in and read time filters in.

Which zone
    The operator's choice, kept in the ``wikimem_tz`` cookie: ``browser``
    (the default) or an IANA zone name (``UTC`` included). Following the
    browser means the zone ``static/admin.js`` found and left in the
    ``wikimem_browser_tz`` cookie; until it has (the first page a browser
    sees, or no JavaScript) the zone is UTC, and the page says so.

Filters
    A date or a time without an offset typed into a filter (history from/to,
    jump to, runs from/to, compare, as of) means that moment in the
    operator's zone: :func:`in_zone` gives the library an explicit instant.
    A time with an offset or ``Z`` is taken as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from urllib.parse import unquote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from flask import g, has_request_context, request

__all__ = ["Zone", "ZONE_COOKIE", "BROWSER_COOKIE", "BROWSER", "zone_names", "check_zone", "operator_zone",
           "current_zone", "in_zone", "zoned", "COOKIE_AGE"]

ZONE_COOKIE = "wikimem_tz"
BROWSER_COOKIE = "wikimem_browser_tz"
BROWSER = "browser"
COOKIE_AGE = 400 * 24 * 3600  # about the longest a browser keeps a cookie
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
# A wall-clock time without an offset: a date, then T or a space, then HH:MM[:SS[.fff]].
_NAIVE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?")


@lru_cache(maxsize=1)
def zone_names() -> tuple[str, ...]:
    """Every IANA zone name this machine knows, sorted (what the zone form offers)."""
    return tuple(sorted(n for n in available_timezones() if "/" in n or n == "UTC"))


@lru_cache(maxsize=256)
def _tz(name: str) -> tzinfo:
    return timezone.utc if name == "UTC" else ZoneInfo(name)


def check_zone(name: str | None) -> str | None:
    """``name`` if it is a zone this machine knows, else None (a cookie is untrusted input)."""
    if not name or len(name) > 64 or not re.fullmatch(r"[A-Za-z0-9_+\-/]+", name) or ".." in name:
        return None
    try:
        _tz(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None
    return name


@dataclass(frozen=True)
class Zone:
    """The zone of one operator's pages: its name, and whether it follows the browser."""

    name: str = "UTC"
    choice: str = BROWSER  # "browser", or the zone the operator picked

    @property
    def tzinfo(self) -> tzinfo:
        return _tz(self.name)

    @property
    def follows_browser(self) -> bool:
        return self.choice == BROWSER


def operator_zone(cookies) -> Zone:
    """The zone ``cookies`` (a request's) say this operator reads times in."""
    choice = check_zone(cookies.get(ZONE_COOKIE)) or BROWSER
    if choice != BROWSER:
        return Zone(choice, choice)
    return Zone(check_zone(unquote(cookies.get(BROWSER_COOKIE) or "")) or "UTC", BROWSER)  # "Asia%2FTokyo" too


def current_zone() -> Zone:
    """The zone of this request's pages (UTC outside a request)."""
    if not has_request_context():
        return Zone()
    zone = g.get("wikimem_zone")
    if zone is None:
        zone = g.wikimem_zone = operator_zone(request.cookies)
    return zone


def in_zone(value: str | None, zone: Zone, *, end: bool = False) -> str | None:
    """A date or an offset-less time typed in ``zone``, as an ISO instant with its offset.

    A bare date is the start of that day in the zone, or with ``end`` its
    last second (so ``until=2026-07-21`` takes in the whole local day).
    Anything else (a time with an offset, a commit id, ``HEAD~2``, blank) is
    returned as it is, for the library to read or refuse.
    """
    if value is None:
        return None
    text = value.strip()
    try:
        if _DAY.fullmatch(text):
            day = datetime.fromisoformat(text)
            if end:
                return (_local(day + timedelta(days=1), zone) - timedelta(seconds=1)).isoformat()
            return _local(day, zone).isoformat()
        if _NAIVE.fullmatch(text):
            return _local(datetime.fromisoformat(text.replace(" ", "T")), zone).isoformat()
    except (ValueError, OverflowError):
        pass  # not a real day or time: the library says what is wrong with it
    return value


def _local(wall: datetime, zone: Zone) -> datetime:
    """A wall-clock time in ``zone`` as an aware time (one that does not exist moves past the gap)."""
    aware = wall.replace(tzinfo=zone.tzinfo)
    return aware.astimezone(timezone.utc).astimezone(zone.tzinfo)


def zoned(values: dict[str, str], zone: Zone, *, ends: tuple[str, ...] = ("until",),
          keys: tuple[str, ...] = ("since", "until")) -> dict[str, str]:
    """``values`` with the time filters among ``keys`` read in ``zone`` (those in ``ends`` up to the day's end)."""
    return {k: (in_zone(v, zone, end=k in ends) or v) if k in keys else v for k, v in values.items()}
