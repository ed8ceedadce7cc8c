"""parse_time_range in English (issue 23 item 2): each phrase and its window for a pinned today.

Weeks run Monday to Sunday. 2026-07-20..26 is the week of WED; the week before
is 07-13..19, the week after 07-27..08-02.
"""

from __future__ import annotations

import pytest

from wikimem import parse_time_range
from wikimem.llm import event_date
from wikimem.timeparse import event_day, scan_time

MON, WED, FRI, SUN = "2026-07-20", "2026-07-22", "2026-07-24", "2026-07-26"
NEW_YEAR = "2027-01-01"  # a Friday
LEAP = "2024-03-01"  # a Friday, the day after Feb 29
LEAP_DAY = "2028-02-29"  # a Tuesday


def day(d: str) -> tuple[str, str]:
    return (d, d)


TABLE = [
    # a weekday on its own, or with "on": the most recent one, today if today is one
    ("on Monday", WED, day("2026-07-20")),
    ("Wednesday", WED, day("2026-07-22")),
    ("what did we do Thursday?", WED, day("2026-07-16")),
    ("On Sunday we hiked", WED, day("2026-07-19")),
    ("Saturday night was fun", WED, day("2026-07-18")),
    ("Monday's meeting ran late", WED, day("2026-07-20")),
    ("on tues", WED, day("2026-07-21")),
    ("我们 Monday 去了海边", WED, day("2026-07-20")),  # a CJK neighbour is a boundary
    ("Sunday", SUN, day("2026-07-26")),
    # last + weekday: last calendar week's (上周三) ...
    ("last Wednesday", WED, day("2026-07-15")),
    ("We went to the beach last Wednesday.", WED, day("2026-07-15")),
    ("LAST WEDNESDAY", WED, day("2026-07-15")),
    ("last Thursday", WED, day("2026-07-16")),
    ("last Friday", WED, day("2026-07-17")),
    ("last Sunday", WED, day("2026-07-19")),
    ("last thurs", WED, day("2026-07-16")),
    ("last Tuesday", WED, day("2026-07-14")),  # this week's Tuesday is yesterday: that would be "yesterday"
    ("last Sunday", MON, day("2026-07-19")),
    ("last Sunday", SUN, day("2026-07-19")),
    ("last Saturday", SUN, day("2026-07-18")),
    ("last Thursday", FRI, day("2026-07-16")),
    # ... and this week's too once that is two days back or more: English means either
    ("last Monday", WED, ("2026-07-13", "2026-07-20")),
    ("last Wednesday", FRI, ("2026-07-15", "2026-07-22")),
    ("last Friday", SUN, ("2026-07-17", "2026-07-24")),
    # next + weekday mirrors it
    ("next Tuesday", WED, day("2026-07-28")),
    ("next Thursday", WED, day("2026-07-30")),  # tomorrow would be "tomorrow"
    ("next Friday", WED, ("2026-07-24", "2026-07-31")),
    ("next Monday", FRI, day("2026-07-27")),
    # this + weekday: this calendar week's (这周五), or, once past, up to the coming one
    ("this Friday", WED, day("2026-07-24")),
    ("this Wednesday", WED, day("2026-07-22")),
    ("this Monday", WED, ("2026-07-20", "2026-07-27")),
    ("this Sunday", MON, day("2026-07-26")),
    # this past / this coming: the nearest before / after today
    ("this past Tuesday", WED, day("2026-07-21")),
    ("this past Wednesday", WED, day("2026-07-15")),
    ("this coming Tuesday", WED, day("2026-07-28")),
    ("this coming Thursday", WED, day("2026-07-23")),
    # a weekday with its week
    ("Wednesday last week", WED, day("2026-07-15")),
    ("Friday of next week", WED, day("2026-07-31")),
    ("last week's Monday", WED, day("2026-07-13")),
    ("this week on Tuesday", WED, day("2026-07-21")),
    ("the Friday of last week", WED, day("2026-07-17")),
    # weekends (上周末 / 这周末)
    ("last weekend", WED, ("2026-07-18", "2026-07-19")),
    ("last weekend", MON, ("2026-07-18", "2026-07-19")),
    ("last weekend", SUN, ("2026-07-18", "2026-07-19")),
    ("this past weekend", WED, ("2026-07-18", "2026-07-19")),
    ("what did we do over the past weekend?", WED, ("2026-07-18", "2026-07-19")),
    ("this weekend", WED, ("2026-07-25", "2026-07-26")),
    ("this weekend", SUN, ("2026-07-25", "2026-07-26")),
    ("next weekend", WED, ("2026-07-25", "2026-08-02")),  # this one is still three days away: either
    ("next weekend", SUN, ("2026-08-01", "2026-08-02")),
    # parts of the day: today; last night is yesterday's date, as 昨晚
    ("this morning", WED, day("2026-07-22")),
    ("This afternoon's walk", WED, day("2026-07-22")),
    ("this evening", WED, day("2026-07-22")),
    ("tonight", WED, day("2026-07-22")),
    ("last night", WED, day("2026-07-21")),
    ("what did I eat late last night?", WED, day("2026-07-21")),
    ("last evening", WED, day("2026-07-21")),
    ("yesterday morning", WED, day("2026-07-21")),
    # N weeks / months ago: the calendar week / month (N周前, N个月前)
    ("2 weeks ago", WED, ("2026-07-06", "2026-07-12")),
    ("three weeks ago", WED, ("2026-06-29", "2026-07-05")),
    ("a week ago", WED, ("2026-07-13", "2026-07-19")),
    ("Ten Weeks Ago", WED, ("2026-05-11", "2026-05-17")),
    ("a month ago", WED, ("2026-06-01", "2026-06-30")),
    ("two months ago", WED, ("2026-05-01", "2026-05-31")),
    ("last month", WED, ("2026-06-01", "2026-06-30")),
    ("this month", WED, ("2026-07-01", "2026-07-31")),
    # month-name dates: a future one without a year is the most recent past one
    ("May 1", WED, day("2026-05-01")),
    ("May 1st", WED, day("2026-05-01")),
    ("1 May 2022", WED, day("2022-05-01")),
    ("on May 3rd, 2025", WED, day("2025-05-03")),
    ("the 3rd of March", WED, day("2026-03-03")),
    ("Aug 1", WED, day("2025-08-01")),
    ("December 25th", WED, day("2025-12-25")),
    ("July 22", WED, day("2026-07-22")),
    # on the Nth: this month's, or the most recent past one
    ("on the 3rd", WED, day("2026-07-03")),
    ("we met on the 3rd, remember?", WED, day("2026-07-03")),
    ("on the 22nd", WED, day("2026-07-22")),
    ("on the 23rd", WED, day("2026-06-23")),
    ("on the 31st", WED, day("2026-05-31")),  # June has no 31st
    ("on the 3rd of last month", WED, day("2026-06-03")),
    ("on the 25th of this month", WED, day("2026-07-25")),  # said so: even ahead
    # an explicit date beats a relative word elsewhere in the text
    ("yesterday, on the 3rd", WED, day("2026-07-03")),
    ("last Wednesday, July 1", WED, day("2026-07-01")),
    ("Sunday 5 May", WED, day("2026-05-05")),
    # several relative expressions: the window spanning them
    ("yesterday and last Wednesday", WED, ("2026-07-15", "2026-07-21")),
    ("last night or this morning", WED, ("2026-07-21", "2026-07-22")),
    # a year's edge
    ("last Wednesday", NEW_YEAR, ("2026-12-23", "2026-12-30")),
    ("Thursday", NEW_YEAR, day("2026-12-31")),
    ("last night", NEW_YEAR, day("2026-12-31")),
    ("Dec 31", NEW_YEAR, day("2026-12-31")),
    ("on the 31st", NEW_YEAR, day("2026-12-31")),
    ("on the 2nd", NEW_YEAR, day("2026-12-02")),
    ("last month", NEW_YEAR, ("2026-12-01", "2026-12-31")),
    ("a week ago", NEW_YEAR, ("2026-12-21", "2026-12-27")),
    ("this weekend", NEW_YEAR, ("2027-01-02", "2027-01-03")),
    ("next weekend", NEW_YEAR, ("2027-01-09", "2027-01-10")),
    # Feb 29 of a leap year
    ("yesterday", LEAP, day("2024-02-29")),
    ("Thursday", LEAP, day("2024-02-29")),
    ("last Thursday", LEAP, day("2024-02-22")),
    ("on the 29th", LEAP, day("2024-02-29")),
    ("on the 30th", LEAP, day("2024-01-30")),  # February has none
    ("Feb 29", LEAP, day("2024-02-29")),
    ("last month", LEAP, ("2024-02-01", "2024-02-29")),
    ("last weekend", LEAP, ("2024-02-24", "2024-02-25")),
    ("on the 29th", "2025-03-05", day("2025-01-29")),  # no Feb 29 in 2025
    ("Feb 29", "2025-03-05", day("2024-02-29")),
    ("on the 29th", LEAP_DAY, day("2028-02-29")),
    ("this month", LEAP_DAY, ("2028-02-01", "2028-02-29")),
    ("last Tuesday", LEAP_DAY, day("2028-02-22")),
    ("this morning", LEAP_DAY, day("2028-02-29")),
]


@pytest.mark.parametrize("text, today, expected", TABLE)
def test_english_expressions(text, today, expected):
    assert parse_time_range(text, today=today) == expected


NO_WINDOW = [
    # vague
    "recently", "the other day", "a while ago", "some day", "someday", "a few days ago", "a couple of weeks ago",
    "several weeks ago", "a day or two ago", "two or three days ago", "2-3 weeks ago", "2 or 3 days ago",
    "over a week ago", "more than a month ago", "weekends are fun",  # (the weekend: issue 35)
    # a habit, an unknown or another event's weekday, a deadline, a range of weekdays
    "monday morning meetings are boring", "Monday mornings", "Mondays are the worst", "I hate Mondays",
    "every Monday", "on Mondays", "each Friday we swim", "any Tuesday works", "on a Tuesday", "one Sunday in spring",
    "the Monday after the trip", "that Wednesday was odd", "the Wednesday before last", "finish it by Friday",
    "Monday to Friday", "Monday through Friday", "Monday-Friday",
    # a weekday in a sentence about the future
    "see you Monday", "we'll go to the beach on Saturday", "let's meet Friday", "I will call you Tuesday",
    "we are going to visit on Sunday", "can't wait for Friday",
    # rolling spans, days named by another event
    "the last week", "in the last week", "the past month", "the last night of the trip",
    "the last evening of the trip", "the next Wednesday", "the last weekend of July",
    # holidays that move, names
    "Good Friday", "Black Friday deals", "Ash Wednesday", "Super Tuesday", "Ruby Tuesday",
    # weekday names inside other nouns
    "Sunday best", "she wore her Sunday best", "Sunday school", "the Sunday papers", "Monday blues",
    # verbs and words that are not dates
    "may I ask something", "you may 2x the dose", "we march 5 miles", "March 5 miles", "wait a second",
    "a second time", "sat on the sofa", "the sun was out", "they wed in June", "mon ami", "on the 3rd floor",
    "on the 2nd try", "the 3rd", "in the morning", "morning!", "good night", "night owl", "next time", "at last",
    # words inside words
    "tonights", "stonight", "mondayish", "wednesdays", "lastnight", "thisweekend",
]


@pytest.mark.parametrize("text", NO_WINDOW)
def test_no_window(text):
    assert parse_time_range(text, today=WED) is None


@pytest.mark.parametrize("text, left", [
    ("what did we do last Wednesday?", "what did we do ?"),
    ("where did we go on Monday", "where did we go"),
    ("Sunday best dress yesterday", "Sunday best dress"),  # words that name no day stay to search for
    ("every Monday we swam, and last night too", "every Monday we swam, and too"),
])
def test_time_words_leave_the_text_to_search(text, left):
    found = scan_time(text, today=WED)
    assert found.strip(text).split() == left.split()


# -- event_date: memorize and the diary tool file an event on its own day ------------------

THURSDAY = "2026-07-23T10:00:00+08:00"  # told on a Thursday in Shanghai
SATURDAY = "2026-07-25T10:00:00+08:00"


@pytest.mark.parametrize("content, ts, expected", [
    ("We went to the beach last Wednesday.", THURSDAY, "2026-07-15"),
    ("We went to the beach on Wednesday.", THURSDAY, "2026-07-22"),
    ("She cooked dinner last night.", THURSDAY, "2026-07-22"),
    ("They hiked this morning.", THURSDAY, "2026-07-23"),
    ("He moved on the 3rd.", THURSDAY, "2026-07-03"),
    ("He moved on May 1.", THURSDAY, "2026-05-01"),
    # not one past day: the day it was told (None)
    ("We went to the beach last Wednesday.", SATURDAY, None),  # the 15th or the 22nd
    ("She'll go to the beach on Saturday.", THURSDAY, None),  # a plan
    ("He swims every Monday.", THURSDAY, None),
    ("They are meeting next Tuesday.", THURSDAY, None),
    ("It rained two weeks ago.", THURSDAY, None),  # a week
    ("We adopted a puppy last weekend!", THURSDAY, None),  # two days
])
def test_event_date_reads_english(content, ts, expected):
    assert event_date(content, ts=ts, tz="Asia/Shanghai") == expected


def test_a_plan_in_the_entry_is_not_redated_by_the_turn():
    # the entry speaks of time ("on Saturday", the future): the turn's "yesterday" is not used instead
    assert event_day("She'll go to the beach on Saturday.", today=WED) == ""
    assert event_date("She'll go to the beach on Saturday.", ts=THURSDAY, tz="Asia/Shanghai",
                      turn="user: yesterday I decided I'll go to the beach Saturday") is None
    # words that name no day are no time expression: the turn decides
    assert event_day("She wore her Sunday best.", today=WED) is None
    assert event_date("She wore her Sunday best.", ts=THURSDAY, tz="Asia/Shanghai",
                      turn="user: I wore my Sunday best last night") == "2026-07-22"


def test_today_and_tz_pin_the_calendar():
    assert parse_time_range("last Wednesday", today="2026-07-20") == day("2026-07-15")
    # 2026-07-22T23:30Z is Thursday the 23rd in Shanghai, still Wednesday the 22nd in UTC
    told = "2026-07-22T23:30:00+00:00"
    assert event_date("We swam on Wednesday.", ts=told, tz="Asia/Shanghai") == "2026-07-22"
    assert event_date("We swam on Wednesday.", ts=told, tz="UTC") == "2026-07-22"
    assert event_date("We swam on Thursday.", ts=told, tz="Asia/Shanghai") == "2026-07-23"
    assert event_date("We swam on Thursday.", ts=told, tz="UTC") == "2026-07-16"
