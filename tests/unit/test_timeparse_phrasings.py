"""The phrasings of issue 35, each in both directions (parsed / refused), pinned with today=.

Bare weekdays (周一, 星期天, 礼拜三; "on Monday") are the most recent such day,
today when today is one; 周末 / 这个周末 / "the weekend" / "over the weekend" the
most recent weekend (the one under way on a Saturday or Sunday); 最近N天 / 近N天 /
过去N天 / 这N天 / "the last N days" the N days that end today; "last Friday" asked
once this week's Friday is two days behind is a set of two days, not the week
between them.
"""

from __future__ import annotations

import pytest

from wikimem import parse_time_range
from wikimem.timeparse import TimeWindow, event_day, parse_time_window, scan_time

MON, WED, FRI, SAT, SUN = "2026-07-20", "2026-07-22", "2026-07-24", "2026-07-25", "2026-07-26"


def day(d: str) -> tuple[str, str]:
    return (d, d)


PARSED = [
    # bare Chinese weekdays: the most recent one, today if today is one
    ("周一做了什么", WED, day("2026-07-20")),
    ("周三去哪了", WED, day("2026-07-22")),  # today is a Wednesday: today
    ("周四干嘛了", WED, day("2026-07-16")),  # Thursday is tomorrow: last week's
    ("周日", WED, day("2026-07-19")),
    ("周天吃了什么", WED, day("2026-07-19")),
    ("星期一", WED, day("2026-07-20")),
    ("星期天我们去了哪里", WED, day("2026-07-19")),
    ("星期日", SUN, day("2026-07-26")),
    ("礼拜一", WED, day("2026-07-20")),
    ("礼拜天", MON, day("2026-07-19")),
    ("礼拜六去爬山了吗", SAT, day("2026-07-25")),
    ("星期五晚上吃的什么", FRI, day("2026-07-24")),
    # English bare weekdays (as before): the most recent one
    ("on Monday", WED, day("2026-07-20")),
    ("what did we do Wednesday?", WED, day("2026-07-22")),
    ("Thursday", WED, day("2026-07-16")),
    # the weekend: the most recent one
    ("周末干嘛了", WED, ("2026-07-18", "2026-07-19")),
    ("这个周末干嘛了", WED, ("2026-07-18", "2026-07-19")),
    ("这周末去哪了", WED, ("2026-07-18", "2026-07-19")),
    ("周末", SAT, ("2026-07-25", "2026-07-26")),  # the one under way
    ("周末", SUN, ("2026-07-25", "2026-07-26")),
    ("周末", MON, ("2026-07-18", "2026-07-19")),
    ("上周末", SUN, ("2026-07-18", "2026-07-19")),  # (unchanged: last calendar week's)
    ("what did you do over the weekend?", WED, ("2026-07-18", "2026-07-19")),
    ("the weekend", WED, ("2026-07-18", "2026-07-19")),
    ("how was the weekend", SUN, ("2026-07-25", "2026-07-26")),
    ("anything fun on the weekend?", MON, ("2026-07-18", "2026-07-19")),
    ("at the weekend we hiked", WED, ("2026-07-18", "2026-07-19")),
    # the N days that end today (digits or Chinese numerals)
    ("最近三天", WED, ("2026-07-20", "2026-07-22")),
    ("最近3天做了什么", WED, ("2026-07-20", "2026-07-22")),
    ("近一周", WED, ("2026-07-16", "2026-07-22")),
    ("近两周", WED, ("2026-07-09", "2026-07-22")),
    ("过去两天", WED, ("2026-07-21", "2026-07-22")),
    ("过去的十天", WED, ("2026-07-13", "2026-07-22")),
    ("这两天怎么样", WED, ("2026-07-21", "2026-07-22")),
    ("这三天里吃了什么", WED, ("2026-07-20", "2026-07-22")),
    ("最近一天", WED, day("2026-07-22")),
    ("最近七天", "2024-03-02", ("2024-02-25", "2024-03-02")),  # across a leap day
    ("the last 3 days", WED, ("2026-07-20", "2026-07-22")),
    ("what happened in the past two days?", WED, ("2026-07-21", "2026-07-22")),
    ("over the last seven days", WED, ("2026-07-16", "2026-07-22")),
    ("the past 2 weeks", WED, ("2026-07-09", "2026-07-22")),
    ("The Last Three Days", WED, ("2026-07-20", "2026-07-22")),
]


@pytest.mark.parametrize("text, today, expected", PARSED)
def test_parsed(text, today, expected):
    assert parse_time_range(text, today=today) == expected
    window = parse_time_window(text, today=today)
    assert window == TimeWindow(*expected)  # one day or a span: every day between, no set


REFUSED = [
    # vague: no defensible boundary (the seed's list stays refused)
    "最近", "最近怎么样", "前几天", "以前", "recently", "the other day", "最近几天", "这几天", "过去几天",
    "the last few days", "the past several days", "近几周",
    # a habit, a count, a range, another word
    "每周一", "每个周末", "每周末都去", "一周三次", "两周一次", "周一到周五", "星期一至星期五", "两个周末",
    "几个星期天", "马上周末了", "那个周二发生了什么", "周围", "周末愉快", "周末快乐",
    "weekends are fun", "every weekend", "a weekend away",
    "the weekend before last", "the weekend of the wedding", "the last weekend of July",
    # a sentence about the future
    "周一要开会", "周五见", "周末见", "周末打算去爬山", "星期天准备做什么", "see you at the weekend",
    "we'll go over the weekend", "I plan to rest on the weekend",
    # a span that is a duration or part of a story, not counted back from today
    "将近三天", "这一天", "the last 3 days of the trip", "the first two weeks of June", "the next 3 days",
    "0 天", "最近零天",
]


@pytest.mark.parametrize("text", REFUSED)
def test_refused(text):
    assert parse_time_range(text, today=WED) is None
    assert parse_time_window(text, today=WED) is None


@pytest.mark.parametrize("text, today, days", [
    ("last Wednesday", FRI, ("2026-07-15", "2026-07-22")),
    ("last Friday", SUN, ("2026-07-17", "2026-07-24")),
    ("where did we go last Monday?", "2026-07-23", ("2026-07-13", "2026-07-20")),
    ("next Friday", MON, ("2026-07-24", "2026-07-31")),
    ("this Monday", WED, ("2026-07-20", "2026-07-27")),
    ("next weekend", WED, ("2026-07-25", "2026-07-26", "2026-08-01", "2026-08-02")),
])
def test_two_candidate_days_are_a_set_not_the_span(text, today, days):
    window = parse_time_window(text, today=today)
    assert window is not None and window.days == days
    assert window.range == (days[0], days[-1])  # parse_time_range keeps its pair (the seed's contract)
    assert parse_time_range(text, today=today) == (days[0], days[-1])
    assert event_day(text, today=today) == ""  # two days: no one day to file an event under


@pytest.mark.parametrize("text, today", [
    ("last Wednesday", WED),  # this week's is today: only last week's
    ("last Wednesday", "2026-07-23"),  # this week's is yesterday ("yesterday" would be said): last week's
    ("last Friday", FRI),
])
def test_one_candidate_day_is_a_day(text, today):
    window = parse_time_window(text, today=today)
    assert window is not None and window.days is None and window.start == window.end


def test_several_expressions_still_span_each_other():
    # a set survives only as the one expression of a text; with another one the window spans both
    assert parse_time_window("yesterday and last Friday", today=SUN) == TimeWindow("2026-07-17", "2026-07-25")


@pytest.mark.parametrize("text, left", [
    ("周一做了什么", "做了什么"),
    ("周末干嘛了", "干嘛了"),
    ("最近三天吃了什么", "吃了什么"),
    ("what did you do over the weekend?", "what did you do  ?"),
    ("what did I eat in the last 3 days", "what did I eat in "),
])
def test_the_phrasing_leaves_the_text_to_search(text, left):
    found = scan_time(text, today=WED)
    assert found is not None and found.strip(text) == left


def test_a_bare_weekday_files_an_event_on_that_day():
    assert event_day("周一我们去了海边。", today=WED) == "2026-07-20"
    assert event_day("周末去爬山了。", today=WED) == ""  # two days
    assert event_day("最近三天都在加班。", today=WED) == ""
