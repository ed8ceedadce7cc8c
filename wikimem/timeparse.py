"""parse_time_range: the regular-expression fast path of time gating.

Design notes: docs/explanation/recall-internals.md (``wikimem/timeparse.py``).
"""


from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, tzinfo

from .timerules import RULES, TRIGGER, DaySet, Found, bounds, cn_number, no_day

__all__ = ["parse_time_range", "parse_time_window", "scan_time", "TimeScan", "TimeWindow", "TimeRange", "event_day",
           "local_today", "resolve_tz", "cn_number"]

TimeRange = tuple[str, str]  # a closed window of local dates, ("YYYY-MM-DD", "YYYY-MM-DD") (upstream's name)


@dataclass(frozen=True)
class TimeWindow:
    """A window of local dates: ``start`` .. ``end`` (``YYYY-MM-DD``, closed), and ``days`` when it is a set of
    separate days rather than every day between ("last Friday" asked on a Sunday: two Fridays), else None."""

    start: str
    end: str
    days: tuple[str, ...] | None = None

    @property
    def range(self) -> tuple[str, str]:
        """``(start, end)``: the pair :func:`parse_time_range` returns."""
        return self.start, self.end


@dataclass(frozen=True)
class TimeScan:
    """What :func:`scan_time` found: the window (``range``, and ``days`` for a set of days) and the spans of
    text it came from."""

    range: tuple[str, str]
    spans: tuple[tuple[int, int], ...]
    days: tuple[str, ...] | None = None
    cue_spans: tuple[tuple[int, int], ...] = ()  # the explicit dates that made the window

    @property
    def window(self) -> TimeWindow:
        return TimeWindow(*self.range, self.days)

    def cues(self, text: str) -> str:
        """The words of the explicit dates that made the window ("the 10th of February 2024", 2024年2月10日):
        content a stored text may share, unlike words relative to today (昨天, last Friday)."""
        return " ".join(text[start:end] for start, end in self.cue_spans)

    def strip(self, text: str, *, keep_cues: bool = False) -> str:
        """``text`` without the time expressions (what is left to search for); ``keep_cues``: but the
        explicit dates."""
        out, last = [], 0
        for start, end in self.spans:
            if keep_cues and (start, end) in self.cue_spans:
                continue
            out.append(text[last:start])
            last = end
        out.append(text[last:])
        return " ".join(p for p in out if p.strip())


def resolve_tz(tz: tzinfo | str | None) -> tzinfo | None:
    """A tzinfo from a tzinfo, an IANA name (``"Asia/Shanghai"``) or None (local)."""
    if tz is None or isinstance(tz, tzinfo):
        return tz
    if isinstance(tz, str):
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            return ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {tz!r}") from None
    raise ValueError(f"tz must be a tzinfo or a zone name, got {type(tz).__name__}")


def local_today(tz: tzinfo | str | None = None) -> date:
    """The current date in ``tz`` (default local): what "today" means when nothing pins it."""
    return datetime.now(resolve_tz(tz)).date()


def _today(tz: tzinfo | str | None, today: date | datetime | str | None) -> date:
    if today is None:
        return local_today(tz)
    if isinstance(today, datetime):
        return today.date()
    if isinstance(today, date):
        return today
    if isinstance(today, str):
        try:
            return date.fromisoformat(today.strip())
        except ValueError:
            raise ValueError(f"invalid today {today!r}: expected YYYY-MM-DD") from None
    raise ValueError(f"today must be a date or YYYY-MM-DD, got {type(today).__name__}")


def scan_time(text: str, *, tz: tzinfo | str | None = None,
              today: date | datetime | str | None = None) -> TimeScan | None:
    """The time window of ``text`` with the spans that make it; None when there is none.

    Several expressions give the window spanning all of them; one expression
    that names a set of days keeps it (``days``).
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    found, spans, cues = _scan(text, _today(tz, today))
    if not found:
        return None
    start, end = _hull(found)
    days = None
    if len(found) == 1 and isinstance(found[0], DaySet):
        days = tuple(d.isoformat() for d in found[0].days)
    return TimeScan((start.isoformat(), end.isoformat()), tuple(sorted(spans)), days, tuple(sorted(cues)))


def _hull(found: list[Found]) -> tuple[date, date]:
    return min(bounds(f)[0] for f in found), max(bounds(f)[1] for f in found)


def _scan(text: str, now: date) -> tuple[list[Found], list[tuple[int, int]], list[tuple[int, int]]]:
    """What the expressions that count name (explicit dates, else relative words), the spans of time words,
    and the spans of the explicit dates when they count.

    The spans are every claimed expression but the words that name no day
    (:func:`~wikimem.timerules.no_day`): those stay in the text to search, and an impossible
    date (2月30日) or a weekday in a sentence about the future, which open
    no window, still count as time words.
    """
    if not TRIGGER.search(text):
        return [], [], []
    cues: list[tuple[int, int]] = []
    claimed: list[tuple[int, int]] = []
    spans: list[tuple[int, int]] = []
    explicit: list[Found] = []
    relative: list[Found] = []
    for (pattern, resolve), is_explicit in RULES:
        for m in pattern.finditer(text):
            span = m.span()
            if any(span[0] < e and s < span[1] for s, e in claimed):
                continue
            try:
                found = resolve(m, now)
            except (ValueError, OverflowError):  # beyond the calendar
                found = None
            claimed.append(span)  # an impossible date still claims its text: 2月30日 is not 30日
            if resolve is not no_day:  # "Sunday best" stays a thing to search for
                spans.append(span)
            if found is not None:
                (explicit if is_explicit else relative).append(found)
                if is_explicit:
                    cues.append(span)
    if explicit:  # a date the text spells out beats a word relative to today
        return explicit, spans, cues
    return relative, spans, []


def parse_time_range(text: str, *, tz: tzinfo | str | None = None,
                     today: date | datetime | str | None = None) -> tuple[str, str] | None:
    """The closed window of local dates a text's time expressions name, or None.

    ``today`` pins "now" (a date, a datetime or ``YYYY-MM-DD``); otherwise it
    is the current date in ``tz`` (an IANA name or tzinfo; default local).
    """
    found = scan_time(text, tz=tz, today=today)
    return found.range if found is not None else None


def parse_time_window(text: str, *, tz: tzinfo | str | None = None,
                      today: date | datetime | str | None = None) -> TimeWindow | None:
    """As :func:`parse_time_range`, with the set of days when the text names separate days (``days``)."""
    found = scan_time(text, tz=tz, today=today)
    return found.window if found is not None else None


def event_day(text: str, *, today: date | datetime | str, tz: tzinfo | str | None = None) -> str | None:
    """The day a text dates an event to: ``YYYY-MM-DD``, ``""`` or None.

    ``YYYY-MM-DD`` when the text's time expressions name one day that is
    not after ``today`` (上周三, yesterday, last Wednesday, 7月21号); ``""``
    when the text speaks of time but not of one past day (上周 is a week,
    明天 the future: a plan is not an event that happened tomorrow; "see you
    Saturday", "last Wednesday" asked on a Friday, which may be either of
    two); None when it has no time expression at all.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    now = _today(tz, today)
    found, spans, _ = _scan(text, now)
    if not found:
        return "" if spans else None
    start, end = _hull(found)
    if start != end or start > now:
        return ""
    return start.isoformat()
