"""The diary as a calendar: month grids marking the days that have events."""

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


@dataclass(frozen=True)
class MonthView:
    month: str                       # YYYY-MM shown
    label: str                       # e.g. "July 2026"
    weeks: list[list[CalendarDay]]   # Monday first
    prev: str | None                 # nearest earlier month with entries
    next: str | None                 # nearest later month with entries
    months: list[tuple[str, int]]    # every month with entries, and its day count
    latest: str | None               # the last day of this month that has entries


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


def month_view(dates: list[str], month: str | None = None) -> MonthView:
    """The grid of ``month`` (default: the latest month with entries, else this month).

    ``dates`` are the diary's dates, ascending, as ``Diary.dates()`` returns them.
    """
    counts: dict[str, int] = {}
    for d in dates:
        counts[d[:7]] = counts.get(d[:7], 0) + 1
    if month is None:
        month = dates[-1][:7] if dates else _date.today().strftime("%Y-%m")
    parse_month(month)
    year, mon = int(month[:4]), int(month[5:7])
    present = set(dates)
    weeks = [
        [CalendarDay(d.isoformat(), d.day, d.month == mon, d.isoformat() in present) for d in week]
        for week in calendar.Calendar(firstweekday=0).monthdatescalendar(year, mon)
    ]
    keys = sorted(counts)
    earlier = [k for k in keys if k < month]
    later = [k for k in keys if k > month]
    label = f"{calendar.month_name[mon]} {year}"
    in_month = [d for d in dates if d.startswith(month)]
    return MonthView(month, label, weeks, earlier[-1] if earlier else None,
                     later[0] if later else None, [(k, counts[k]) for k in keys],
                     in_month[-1] if in_month else None)


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
