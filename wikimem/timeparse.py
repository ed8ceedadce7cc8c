"""parse_time_range: the regular-expression fast path of time gating.

Turns the time expressions of a query into a closed window of local dates,
``("YYYY-MM-DD", "YYYY-MM-DD")``, or None. Standard library only.

Narrow rather than wrong: only expressions with a defensible boundary are
understood (昨天, 上周三, 3天前, 7月21号, 2026-07-21, yesterday...). Vague
words (最近, 前几天, 以前) find nothing, because a wrong window silently
hides the right memory. Several expressions in one text give the window
spanning all of them (``7月1号到7月3号`` → July 1–3).

Bare weekdays (周一, 星期天, 礼拜三, "on Monday") are the most recent such day,
today when today is one, and nothing in a sentence about the future (周一要开会,
"see you Monday"); 周末, 这个周末, "the weekend", "over the weekend" the most recent
weekend (the one under way on a Saturday or Sunday); 最近N天, 近N周, 过去N天,
这N天, "the last N days", "the past N weeks" the N days (7·N) that end today.
A window may be a set of separate days (:class:`TimeWindow` ``days``): "last
Friday" asked once this week's Friday is two days behind is those two Fridays.
The rules themselves are in :mod:`wikimem.timerules`.

Conventions: weeks run Monday to Sunday; 这周 / 上周 are whole calendar weeks,
N周前 is the calendar week holding the day 7·N days ago; 上个月 / N个月前 are
calendar months; a month and day without a year (7月21号) are the most recent
one that is not in the future (12月25号 asked in July is last December's; a
year word in front of it, 去年7月21号, picks the year). An explicit date
(2026-07-01, 2026/7/1, 2026年7月1日, 7月21号) wins over a relative word
elsewhere in the same text: "2026-07-01 那天，比昨天更早" is that day only
(the relative word is still taken out of the text left to search).

English, case-insensitive, on word boundaries (a CJK neighbour is one):
today / yesterday / tomorrow, the day before yesterday, N days / weeks /
months ago (digits or a, one..twelve; "two or three days ago", "over a week
ago" are vague), last / this / next week and month, this morning /
afternoon / evening and tonight (today), last night / last evening
(yesterday, as 昨晚: a night filed under the date it began), last / this
weekend (上周末 / 这周末; "this past weekend" too), next weekend, month-name
dates (May 1, May 1st, 1 May 2022, the 3rd of March; "May" only capitalised,
since "may" is a verb; "we march 5 miles" is no date), "on the 3rd" (of this
/ last month; without it the most recent 3rd on or before today), weekdays:

- "Wednesday", "on Wednesday": the most recent Wednesday, today if today is
  one (as a month-day without a year) — but nothing in a sentence about the
  future ("see you Monday", "we'll go on Saturday"), where that would be
  the wrong Wednesday;
- "Wednesday last week", "last week's Wednesday": that calendar week's, as 上周三;
- "last Wednesday": last calendar week's (上周三); English also uses it for
  this week's Wednesday once that is two or more days back (asked on a
  Friday or a weekend), so then the window runs from one to the other
  rather than guess; "next Wednesday" mirrors it; "this Wednesday" is this
  calendar week's (这周三), or, once that is past, it up to the coming one;
- "this past Wednesday" / "this coming Wednesday": the nearest before / after today.

Words that name no one day are claimed (no later rule reads a day into
them) but stay in the text to search: every Monday, a Monday, the Monday
after, that Monday, by Friday, Monday to Friday, Good Friday,
Sunday best, "monday morning meetings are boring", the last week / the
last night of the trip (a rolling span, or a day named by another event).
Abbreviations only where they are no English word (tues, thurs; not sat,
sun, wed, mon). Vague words (recently, the other day, a while ago, some
day, a few days ago) find nothing.
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
