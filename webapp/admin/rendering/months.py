"""The diary as a calendar: month grids marking the days that have events, and the days still to come.

A day after today (the person's today) that has events holds plans filed ahead: it is *planned*,
and the calendar opens on the latest day not after today.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date as _date

from wikimem.errors import InvalidName
from wikimem.naming import validate_date

__all__ = ["CalendarDay", "MonthView", "month_view", "parse_month", "calendar_params"]


@dataclass(frozen=True)
class CalendarDay:
    date: str          # YYYY-MM-DD
    day: int
    in_month: bool
    has_entries: bool
    planned: bool = False  # after today: what is there was planned, not lived yet


@dataclass(frozen=True)
class MonthView:
    month: str                       # YYYY-MM shown
    label: str                       # e.g. "July 2026"
    weeks: list[list[CalendarDay]]   # Monday first
    prev: str | None                 # nearest earlier month with entries
    next: str | None                 # nearest later month with entries
    months: list[tuple[str, int]]    # every month with entries, and its day count
    latest: str | None               # the day to open: the last of this month with entries, not after today
    today: str = ""                  # YYYY-MM-DD


def parse_month(value: str) -> str:
    """Validate ``YYYY-MM`` (the calendar's query parameter)."""
    try:
        year, month = value.split("-")
        if len(year) != 4 or len(month) != 2:
            raise ValueError
        _date(int(year), int(month), 1)
    except ValueError:
        raise InvalidName(f"invalid month {value!r}: expected YYYY-MM") from None
    return value


def month_view(dates: list[str], month: str | None = None, today: str | None = None) -> MonthView:
    """The grid of ``month`` (default: the month of the latest day with entries not after ``today``).

    ``dates`` are the diary's dates, ascending, as ``Diary.dates()`` returns them; ``today`` is the
    person's today (default: this machine's). Days after it are marked planned.
    """
    today = today or _date.today().isoformat()
    counts: dict[str, int] = {}
    for d in dates:
        counts[d[:7]] = counts.get(d[:7], 0) + 1
    lived = [d for d in dates if d <= today]
    if month is None:
        month = (lived or dates or [today])[-1 if lived else 0][:7]
    parse_month(month)
    year, mon = int(month[:4]), int(month[5:7])
    present = set(dates)
    weeks = [
        [CalendarDay(d.isoformat(), d.day, d.month == mon, d.isoformat() in present, d.isoformat() > today)
         for d in week]
        for week in calendar.Calendar(firstweekday=0).monthdatescalendar(year, mon)
    ]
    keys = sorted(counts)
    earlier = [k for k in keys if k < month]
    later = [k for k in keys if k > month]
    label = f"{calendar.month_name[mon]} {year}"
    in_month = [d for d in dates if d.startswith(month)]
    opened = [d for d in in_month if d <= today] or in_month[:1]
    return MonthView(month, label, weeks, earlier[-1] if earlier else None,
                     later[0] if later else None, [(k, counts[k]) for k in keys],
                     opened[-1] if opened else None, today)


def calendar_params(args) -> tuple[str | None, str | None]:
    """``(month, day)`` from the diary page's query; a day implies its month."""
    day = args.get("day") or None
    month = args.get("month") or None
    if day is not None:
        validate_date(day)
        month = month or day[:7]
    if month is not None:
        parse_month(month)
    return month, day
