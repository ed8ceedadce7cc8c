"""How the admin pages show times and long diary days (template filters, no Flask).

Two kinds of time appear on the pages and must not be confused:

* an **instant** (a commit time, an item's ``ts``): a point in UTC. It is
  rendered as ``<time class="instant" datetime="…Z">`` with its text in the
  operator's zone (:mod:`.zones`; UTC until the browser's zone is known) and
  the UTC value in the ``title`` (hover).
* a diary event's **wall-clock time** (``HH:MM``): the person's own local
  time, recorded as such. It is never converted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from markupsafe import Markup

__all__ = ["instant", "Clock", "clock_of", "DayPart", "day_parts", "GROUP_FROM", "DAY_PARTS"]

# A diary day with this many events or more is shown in parts of the day.
GROUP_FROM = 6

# (key, label, first hour, end hour): the parts of a day, by the event's wall-clock hour.
DAY_PARTS = (
    ("night", "Night", 0, 6),
    ("morning", "Morning", 6, 12),
    ("afternoon", "Afternoon", 12, 18),
    ("evening", "Evening", 18, 24),
)


def _parse_instant(value) -> datetime | None:
    """``value`` (a datetime or ISO-8601 text) as an aware UTC datetime, or None if it is not one."""
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value).strip())
        except ValueError:
            return None
    if moment.tzinfo is None:  # the library reads a ts without an offset as UTC
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def instant(value, label: str | None = None, zone: tzinfo | None = None) -> Markup:
    """An instant as ``<time>``: its text in ``zone`` (default UTC) to the minute with the zone's abbreviation,
    the full UTC time in the title (hover), ISO ``…Z`` in ``datetime``.

    Text that is not an ISO-8601 instant is shown as it is, escaped, and is
    left alone by the script (no ``instant`` class).
    """
    if value is None or value == "":
        return Markup("")
    moment = _parse_instant(value)
    if moment is None:
        return Markup("<time>{}</time>").format(value)
    iso = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    title = moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    if label:
        title = f"{label}: {title}"
    text = moment.strftime("%Y-%m-%d %H:%M UTC")
    if zone is not None and zone is not timezone.utc:
        try:
            local = moment.astimezone(zone)
            text = f"{local:%Y-%m-%d %H:%M} {local.tzname() or ''}".rstrip()
        except OverflowError:  # an instant at the calendar's edge has no local time in some zones
            pass
    return Markup('<time class="instant" datetime="{}" title="{}">{}</time>').format(iso, title, text)


@dataclass(frozen=True)
class Clock:
    """Which time a diary event's ``HH:MM`` is, as its page says it."""

    kind: str  # "happened" (a time told with the event), "told" (when it was told), "" (the record does not say)
    told_on: str = ""  # the day it was told, when that is not the event's day

    @property
    def label(self) -> str:
        if self.kind == "told":
            return "when it was told" + (f", on {self.told_on}" if self.told_on else "")
        return "when it happened" if self.kind == "happened" else ""


def clock_of(entry, tz: tzinfo | str | None = None) -> Clock:
    """Whether ``entry``'s ``HH:MM`` is when it happened or when it was told.

    An event filed without a time of its own gets the local time it was
    recorded (its ``ts`` in the owner's zone ``tz``, the diary's own rule):
    when the two agree the ``HH:MM`` is the time it was told, and on another
    day than the event's, it was told on that day. A time that differs was
    told with the event. Without a ``ts`` the record does not say.
    """
    moment = _parse_instant(getattr(entry, "ts", None))
    if moment is None:
        return Clock("")
    try:
        zone = ZoneInfo(tz) if isinstance(tz, str) else tz
        local = moment.astimezone(zone)
    except (ZoneInfoNotFoundError, ValueError, OverflowError):
        return Clock("")
    if local.strftime("%H:%M") != getattr(entry, "time", None):
        return Clock("happened")
    day = local.date().isoformat()
    return Clock("told", "" if day == getattr(entry, "date", None) else day)


@dataclass
class DayPart:
    """The events of one part of a diary day, in the day's order."""

    key: str
    label: str
    start: int
    end: int
    entries: list = field(default_factory=list)

    @property
    def span(self) -> str:
        return f"{self.start:02d}:00–{self.end:02d}:00"


def _hour(entry) -> int:
    """The ``HH`` of an event's ``HH:MM`` (0 … 23)."""
    try:
        return min(max(int(str(getattr(entry, "time", ""))[:2]), 0), 23)
    except ValueError:
        return 0


def day_parts(entries: list) -> list[DayPart]:
    """The non-empty parts of the day (night, morning, afternoon, evening) holding ``entries``.

    Entries keep their order; an entry lands in the part of its ``HH`` hour.
    """
    parts = [DayPart(key, label, start, end) for key, label, start, end in DAY_PARTS]
    for entry in entries:
        hour = _hour(entry)
        next(p for p in parts if p.start <= hour < p.end).entries.append(entry)
    return [p for p in parts if p.entries]
