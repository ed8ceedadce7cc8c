"""How the admin pages show times and long diary days (template filters, no Flask).

Two kinds of time appear on the pages and must not be confused:

* an **instant** (a commit time, an item's ``ts``): a point in UTC. It is
  rendered as ``<time class="instant" datetime="…Z">`` with UTC text, so the
  page reads correctly without JavaScript; ``static/admin.js`` then shows it
  in the browser's time zone and the ``title`` keeps the UTC value (hover).
* a diary event's **wall-clock time** (``HH:MM``): the person's own local
  time, recorded as such. It is never converted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from markupsafe import Markup

__all__ = ["instant", "DayPart", "day_parts", "GROUP_FROM", "DAY_PARTS"]

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


def instant(value, label: str | None = None) -> Markup:
    """A UTC instant as ``<time>``: UTC text (minutes), full UTC in the title, ISO ``…Z`` in datetime.

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
    return Markup('<time class="instant" datetime="{}" title="{}">{}</time>').format(iso, title, text)


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
