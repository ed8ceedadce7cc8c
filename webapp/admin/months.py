"""The diary as a calendar: month grids marking the days that have events."""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date as _date

from wikimem.errors import InvalidName

__all__ = ["CalendarDay", "MonthView", "month_view", "parse_month"]


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
    return MonthView(month, label, weeks, earlier[-1] if earlier else None,
                     later[0] if later else None, [(k, counts[k]) for k in keys])
