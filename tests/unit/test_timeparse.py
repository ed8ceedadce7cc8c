"""parse_time_range: every expression of SPEC §3, pinned with today=; narrow rather than wrong."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from wikimem import parse_time_range
from wikimem.timeparse import cn_number, scan_time

WED = "2026-07-22"  # a Wednesday


def day(d: str) -> tuple[str, str]:
    return (d, d)


TABLE = [
    # relative days
    ("今天吃了什么", WED, day("2026-07-22")),
    ("昨天吃了什么", WED, day("2026-07-21")),
    ("前天晚上吃了什么", WED, day("2026-07-20")),
    ("大前天", WED, day("2026-07-19")),
    ("明天见", WED, day("2026-07-23")),
    ("后天去", WED, day("2026-07-24")),
    ("昨晚睡得好吗", WED, day("2026-07-21")),
    # N days ago, digits and Chinese numerals
    ("3天前", WED, day("2026-07-19")),
    ("3 天前", WED, day("2026-07-19")),
    ("三天前", WED, day("2026-07-19")),
    ("两天前", WED, day("2026-07-20")),
    ("十天前", WED, day("2026-07-12")),
    ("二十一天前", WED, day("2026-07-01")),
    ("一百天前", WED, day("2026-04-13")),
    ("5 days ago", WED, day("2026-07-17")),
    ("1 day ago", WED, day("2026-07-21")),
    ("two days ago we met", WED, day("2026-07-20")),
    # weeks (Monday..Sunday)
    ("上周三", WED, day("2026-07-15")),
    ("上星期三", WED, day("2026-07-15")),
    ("这周五", WED, day("2026-07-24")),
    ("本周一", WED, day("2026-07-20")),
    ("上周日", WED, day("2026-07-19")),
    ("下周一", WED, day("2026-07-27")),
    ("上周", WED, ("2026-07-13", "2026-07-19")),
    ("这周", WED, ("2026-07-20", "2026-07-26")),
    ("上周末", WED, ("2026-07-18", "2026-07-19")),
    ("2周前", WED, ("2026-07-06", "2026-07-12")),
    ("两周前", WED, ("2026-07-06", "2026-07-12")),
    ("三个星期前", WED, ("2026-06-29", "2026-07-05")),
    # on a Sunday "this week" is the week that ends today; on a Monday 上周三 is 5 days back
    ("这周五", "2026-07-26", day("2026-07-24")),
    ("上周三", "2026-07-20", day("2026-07-15")),
    ("上周三", "2026-07-26", day("2026-07-15")),
    # months, with year and length boundaries
    ("上个月", WED, ("2026-06-01", "2026-06-30")),
    ("这个月", WED, ("2026-07-01", "2026-07-31")),
    ("上个月", "2026-01-15", ("2025-12-01", "2025-12-31")),
    ("这个月", "2024-02-10", ("2024-02-01", "2024-02-29")),
    ("这个月", "2026-02-10", ("2026-02-01", "2026-02-28")),
    ("上个月", "2024-03-31", ("2024-02-01", "2024-02-29")),
    ("3个月前", WED, ("2026-04-01", "2026-04-30")),
    # day arithmetic across month ends and leap days
    ("昨天", "2024-03-01", day("2024-02-29")),
    ("昨天", "2025-03-01", day("2025-02-28")),
    ("明天", "2025-12-31", day("2026-01-01")),
    ("三天前", "2026-03-02", day("2026-02-27")),
    # absolute dates
    ("2026-07-21 那天", WED, day("2026-07-21")),
    ("2026/7/1", WED, day("2026-07-01")),
    ("2026年7月1日", WED, day("2026-07-01")),
    ("7月21号", WED, day("2026-07-21")),
    ("7月21日去了海边", WED, day("2026-07-21")),
    ("七月二十一号", WED, day("2026-07-21")),
    ("2024-02-29", WED, day("2024-02-29")),
    ("2月29日", "2024-06-01", day("2024-02-29")),
    # English words, on word boundaries only
    ("today", WED, day("2026-07-22")),
    ("What did I eat yesterday?", WED, day("2026-07-21")),
    ("Tomorrow", WED, day("2026-07-23")),
    ("我today去了海边", WED, day("2026-07-22")),  # a CJK neighbour is a boundary
    # several expressions: the window spanning them
    ("7月1号到7月3号", WED, ("2026-07-01", "2026-07-03")),
    ("昨天和前天", WED, ("2026-07-20", "2026-07-21")),
]


# SPEC §3 (issue 17): a month-day in the future is the most recent past one; an explicit date
# beats a relative word elsewhere in the same text.
PAST_AND_EXPLICIT = [
    ("12月25号", WED, day("2025-12-25")),
    ("12月25号那天干嘛了", "2026-12-24", day("2025-12-25")),
    ("12月25号", "2026-12-25", day("2026-12-25")),  # today itself is not the future
    ("7月23号", WED, day("2025-07-23")),  # tomorrow's date: last year's
    ("7月22号", WED, day("2026-07-22")),
    ("2月29日", "2026-07-22", day("2024-02-29")),  # the last leap year
    ("2月29日", "2028-02-28", day("2024-02-29")),
    ("去年7月21号", WED, day("2025-07-21")),  # a year word picks the year
    ("今年12月25号", WED, day("2026-12-25")),  # ... even a future one, when said so
    ("2026-07-01 那天，比昨天更早", WED, day("2026-07-01")),
    ("昨天说的2026/7/1", WED, day("2026-07-01")),
    ("7月1号，也就是上周三之前", WED, day("2026-07-01")),
    ("7月1号到7月3号", WED, ("2026-07-01", "2026-07-03")),  # explicit dates still span each other
    ("yesterday, 2026年7月1日", WED, day("2026-07-01")),
    ("2026-02-30 还是昨天", WED, day("2026-07-21")),  # an impossible date resolves nothing: the word counts
    # English month-days: explicit dates too, the most recent past one without a year
    ("on July 21 we met", WED, day("2026-07-21")),
    ("Dec 25", WED, day("2025-12-25")),
    ("the 3rd of March", WED, day("2026-03-03")),
    ("21 July 2025, not yesterday", WED, day("2025-07-21")),
    ("May 3", WED, day("2026-05-03")),
    # a weekday digit that is part of another word: the week, not the day
    ("上周一直在加班", WED, ("2026-07-13", "2026-07-19")),
    ("这周一起去吧", WED, ("2026-07-20", "2026-07-26")),
    ("上周三次去健身房", WED, ("2026-07-13", "2026-07-19")),
    ("上周三晚上", WED, day("2026-07-15")),
    ("上周一一直在加班", WED, day("2026-07-13")),
]


@pytest.mark.parametrize("text", ["you may 2x the dose", "marched 12 miles", "in March 2020", "dec25"])
def test_english_month_words_need_a_clear_date(text):
    assert parse_time_range(text, today=WED) is None


@pytest.mark.parametrize("text, today, expected", PAST_AND_EXPLICIT)
def test_month_day_is_past_and_explicit_dates_win(text, today, expected):
    assert parse_time_range(text, today=today) == expected


@pytest.mark.parametrize("text, today, expected", TABLE)
def test_expressions(text, today, expected):
    assert parse_time_range(text, today=today) == expected


@pytest.mark.parametrize("text", [
    # vague: no defensible boundary
    "最近", "最近怎么样", "前几天", "以前", "之前说过", "很久以前", "几天前", "几十天前", "那天",
    # the words inside other words
    "以前天气很好", "然后天黑了", "聪明天才", "如今天气变冷", "马上周末了", "这周围很安静", "晚上月亮很圆",
    "todays special", "notoday", "yesterdays", "holidaytoday",
    # impossible dates
    "2月30日", "2025-02-29", "2026-13-01", "2025年2月29日", "13月1日",
    # nothing at all
    "", "喜欢海边", "the sea",
])
def test_no_window(text):
    assert parse_time_range(text, today=WED) is None


def test_today_accepts_date_datetime_and_string():
    assert parse_time_range("昨天", today=date(2026, 7, 22)) == day("2026-07-21")
    assert parse_time_range("昨天", today=datetime(2026, 7, 22, 23, 59)) == day("2026-07-21")
    assert parse_time_range("昨天", today="2026-07-22") == day("2026-07-21")


def test_tz_picks_the_calendar():
    # UTC+14 and UTC-12 are a day or two apart at every instant
    for zone in ("Pacific/Kiritimati", "Etc/GMT+12"):
        before = datetime.now(ZoneInfo(zone)).date()
        got = parse_time_range("今天", tz=zone)
        after = datetime.now(ZoneInfo(zone)).date()
        assert got in (day(before.isoformat()), day(after.isoformat()))
    east = date.fromisoformat(parse_time_range("today", tz="Pacific/Kiritimati")[0])
    west = date.fromisoformat(parse_time_range("today", tz="Etc/GMT+12")[0])
    assert east - west in (timedelta(days=1), timedelta(days=2))


@pytest.mark.parametrize("kwargs", [{"today": "2026-13-45"}, {"today": 20260722}, {"tz": "Mars/Olympus"}])
def test_bad_arguments_are_clear_errors(kwargs):
    with pytest.raises(ValueError):
        parse_time_range("昨天", **kwargs)


def test_non_string_text_is_an_error():
    with pytest.raises(ValueError):
        parse_time_range(None, today=WED)


def test_scan_reports_spans_and_strips_them():
    found = scan_time("前天晚上吃了什么", today=WED)
    assert found.range == day("2026-07-20")
    assert found.spans == ((0, 2),)
    assert found.strip("前天晚上吃了什么") == "晚上吃了什么"
    text = "beach yesterday and 2026-07-01"
    both = scan_time(text, today=WED)
    assert both.range == day("2026-07-01")  # the explicit date wins; both words leave the search text
    assert both.strip(text) == "beach   and "


@pytest.mark.parametrize("text, value", [
    ("3", 3), ("三", 3), ("十", 10), ("十五", 15), ("二十", 20), ("二十三", 23), ("两", 2),
    ("一百", 100), ("一百零八", 108), ("三四", None), ("几", None),
])
def test_chinese_numerals(text, value):
    assert cn_number(text) == value
