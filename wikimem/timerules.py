"""The rules of :func:`~wikimem.timeparse.parse_time_range`: regular expressions in priority order,
each with its resolver (text → a range of dates, a set of days, or None), and the calendar arithmetic
they share. What they understand is listed in :mod:`wikimem.timeparse`'s docstring.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

__all__ = ["RULES", "TRIGGER", "Range", "DaySet", "Found", "no_day", "cn_number", "bounds"]

_CN_NUM = "零〇一二两三四五六七八九十百"
_NUM = rf"(\d{{1,4}}|[{_CN_NUM}]{{1,4}})"
_CN_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4,
             "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
            "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}
_WEEK_OFFSET = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_EN_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_EN_NUM_RE = r"(\d{1,4}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_WEEK_WORD = r"(?:个)?(?:周|星期|礼拜)"
_EN_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
              "october", "november", "december")
# Full names or three-letter abbreviations (and sept), any case; May only capitalised, since
# "may" is also a verb ("you may 2x the dose").
_EN_MONTH_RE = ("((?i:" + "|".join([m for m in _EN_MONTHS if m != "may"]
                                   + [m[:3] for m in _EN_MONTHS if m != "may"] + ["sept"])
                + ")|May|MAY)")
# Weekday names in full, any case; of the abbreviations only the two that are
# not English words (sat, sun, wed, mon are, or are slang).
_EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_EN_WEEKDAY = {**{name: i for i, name in enumerate(_EN_WEEKDAYS)}, "tues": 1, "thurs": 3}
_WD = "(" + "|".join(_EN_WEEKDAY) + ")"
_WD_NC = "(?:" + "|".join(_EN_WEEKDAY) + ")"
_PART_OF_DAY = r"(?:morning|afternoon|evening|night)"
# Words before a weekday that make it no one day: a habit (every Monday), an
# unknown one (a Monday, one Monday), one named by another event (the Monday
# after, that Monday), a deadline (by Friday) or a holiday that moves (Good
# Friday, Black Friday...), or a name (Ruby Tuesday).
_WD_NOT_ONE_DAY_BEFORE = ("every|each|any|some|one|a|an|the|that|by|until|till|til|black|good|cyber|super|"
                          "ash|holy|maundy|easter|palm|whit|low|shrove|fat|blue|manic|bloody|ruby")
# Words after a (bare) weekday that make it part of another noun: Sunday best,
# Sunday school, Monday blues, Sunday papers...; the habit of Monday mornings;
# the Wednesday before last (which one is not said).
_WD_NOT_ONE_DAY_AFTER = (r"best|school|schools|paper|papers|roast|roasts|driver|drivers|blues|scaries|service|"
                         r"services|mass|league|leagues|special|specials|mornings|afternoons|evenings|nights|"
                         r"before\s+last")
# A generic statement about such days: "monday morning meetings are boring".
_WD_GENERIC = (rf"{_WD_NC}(?:\s+{_PART_OF_DAY})?\s+[a-z]+s\s+"
               r"(?:are|suck|always|never|usually|tend|seem|feel|drag|get)")
# A sentence that speaks of the future: a bare weekday in it is not a past day
# ("see you Monday", "we'll go to the beach on Saturday").
_FUTURE = re.compile(r"(?<![A-Za-z])(?:will|won'?t|shall|gonna|going\s+to|plan(?:s|ned|ning)?|let'?s|"
                     r"see\s+you|hope\s+to|want\s+to|wanna|looking\s+forward|can'?t\s+wait)(?![A-Za-z])"
                     r"|['’]ll(?![A-Za-z])", re.I)
_SENTENCE_END = re.compile(r"[.!?;\n。！？；]")
# Units that make "March 5" a march of five of them ("we march 5 miles").
_NOT_A_DAY_AFTER = (r"(?!\s*(?:miles?|km|kilomet(?:er|re)s?|met(?:er|re)s?|blocks?|laps?|times|hours?|minutes?|mins?|"
                    r"people|men|soldiers|steps|abreast|x)(?![A-Za-z]))")
# Words that may follow "on the 3rd" for it to be a day of the month (not the
# 3rd floor, the 2nd try...).
_DAY_OF_MONTH_NEXT = (r"(?=\s*(?:$|[^\w\s]|(?:we|i|you|he|she|they|it|my|our|your|his|her|their|at|in|and|or|"
                      r"when|was|were|did|is|then|too|after|before|for|with|to|there|so|but|morning|afternoon|"
                      r"evening|night)(?![A-Za-z])))")
# A count after 几/数/多/好 is vague (几十天前 "some tens of days ago").
_COUNT = rf"(?<![几数多好\d{_CN_NUM}]){_NUM}"
# Characters before 上/下 that make another word (马上 "soon", 晚上 "evening",
# 一下 "a moment", 以下 "below"): 马上周末 is not "last weekend".
_SHIFT = r"(?<![马晚早天身路楼桌线网台班场地面门一以底乡手私])(上上|上|这|本|下下|下)"
# After 上周三 a measure word makes the digit a count (上周三次 "three times last week"), and
# after 上周一 a character that makes 一 part of a word (上周一直 "all last week").
_NOT_WEEKDAY = r"(?![次个天回趟遍位件本场顿]|(?<=一)[直起样般些下点共边块定致切向度阵整])"
# Characters after 周 that make it another word (周围 surroundings, 周期 cycle...).
_NOT_WEEK = "围边全到期年岁刊报转长"
# A Chinese sentence about the future: a bare weekday or 周末 in it is not a past day (周一要开会, 周末见).
_CN_FUTURE = re.compile(r"要|打算|准备|计划|将|会去|会来|下次|到时")
# Characters before a bare weekday or 周末 that make it no one day: 每周一 (every Monday), 一周三次
# (three times a week), 两个周末 (two weekends), 几个星期天; 上/下/这/本 + weekday are claimed before,
# so one left over belongs to another word (马上周末 "soon the weekend", 晚上).
_BARE_WEEK_BEFORE = rf"(?<![每个几上下这本{_CN_NUM}\d])"
_CN_WEEKDAY = r"(?:周|星期|礼拜)([一二三四五六日天1-7])"
# 最近三天, 近一周, 过去两天, 这两天: a span of N days (weeks) that ends today; 将近三天 is a duration,
# 附近 "nearby"; 这一天 / 这一周 name a day of a story, not one counted back from today.
_SPAN_CN = (rf"(?<![附接靠将亲])(最近|近|过去(?:的)?|这)\s*{_NUM}\s*(?:个)?(天|日|周|星期|礼拜)"
            r"(?![前后之])")

Range = tuple[date, date]


@dataclass(frozen=True)
class DaySet:
    """A window of separate days (sorted, two or more): "last Friday" asked on a Sunday may be either of two."""

    days: tuple[date, ...]


Found = Range | DaySet  # what a resolver finds


def bounds(found: Found) -> Range:
    """The first and last day of what a resolver found."""
    if isinstance(found, DaySet):
        return found.days[0], found.days[-1]
    return found


def _either(*days: date) -> Found:
    """One day, or the set of several distinct ones."""
    distinct = tuple(sorted(set(days)))
    return _day(distinct[0]) if len(distinct) == 1 else DaySet(distinct)


def cn_number(text: str) -> int | None:
    """An integer from digits or Chinese numerals (三, 十五, 二十三, 一百零八); None if not one."""
    if text.isdigit():
        return int(text)
    if any(c not in _CN_NUM for c in text):
        return None
    total, current = 0, None
    for c in text:
        if c == "百":
            total += (current if current is not None else 1) * 100
            current = None
        elif c == "十":
            total += (current if current is not None else 1) * 10
            current = None
        elif c in "零〇" and current is None and total:
            continue  # a place holder: 一百零八
        else:
            if current is not None:  # two digits in a row: 二三 is not a number here
                return None
            current = _CN_DIGIT[c]
    return total + (current or 0)


def _en_number(word: str) -> int:
    return int(word) if word.isdigit() else _EN_NUM[word.lower()]


def _day(d: date) -> Range:
    return d, d


def _week(d: date) -> Range:
    monday = d - timedelta(days=d.weekday())
    return monday, monday + timedelta(days=6)


def _month(year: int, month: int, delta: int = 0) -> Range:
    index = year * 12 + (month - 1) + delta
    y, m = divmod(index, 12)
    first = date(y, m + 1, 1)
    nxt = date(y + (m + 1) // 12, (m + 1) % 12 + 1, 1)
    return first, nxt - timedelta(days=1)


def _ymd(y: int | None, m: int | None, d: int | None) -> Range | None:
    if y is None or m is None or d is None:
        return None
    try:
        return _day(date(y, m, d))
    except ValueError:  # 2月30日, 2025-02-29: no such day
        return None


def _relative_days(today: date, n: int | None, sign: int) -> Range | None:
    if n is None or n > 3660:
        return None
    return _day(today + timedelta(days=sign * n))


def no_day(m: re.Match, today: date) -> None:
    """The resolver of text that names no one day: it claims its words, it opens no window."""
    return None


def _weekday_of_week(today: date, offset: int, weekday: int) -> date:
    """The ``weekday`` (0 = Monday) of the calendar week ``offset`` weeks from today's."""
    return _week(today)[0] + timedelta(days=7 * offset + weekday)


def _en_shifted_weekday(today: date, shift: str, weekday: int) -> Found:
    """last / next / this / this past / this coming + a weekday.

    "this past" and "this coming" are the nearest one before / after today.
    "last Friday" is last calendar week's Friday (上周五), and, when this
    week's Friday is already two or more days behind (asked on a Sunday),
    this week's too: English uses it for both, so the window is those two
    days (a :class:`DaySet`, not the week between them) rather than a guess
    (the day before today would have been "yesterday"). "next" mirrors it;
    "this Monday" asked on a Wednesday is this week's Monday or the coming one.
    """
    this_week = _weekday_of_week(today, 0, weekday)
    if shift == "this past":
        return _day(today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1))
    if shift == "this coming":
        return _day(today + timedelta(days=(weekday - today.weekday() - 1) % 7 + 1))
    if shift == "last":
        before = _weekday_of_week(today, -1, weekday)
        return _either(before, this_week) if this_week <= today - timedelta(days=2) else _day(before)
    if shift == "next":
        after = _weekday_of_week(today, 1, weekday)
        return _either(this_week, after) if this_week >= today + timedelta(days=2) else _day(after)
    return _day(this_week) if this_week >= today else _either(this_week, this_week + timedelta(days=7))


def _sentence(m: re.Match) -> str:
    """The sentence of the text that holds the match."""
    text = m.string
    start = max((b.end() for b in _SENTENCE_END.finditer(text, 0, m.start())), default=0)
    after = _SENTENCE_END.search(text, m.end())
    return text[start:after.start() if after else len(text)]


def _recent_weekday(today: date, weekday: int) -> Range:
    """The most recent ``weekday`` (0 = Monday): today if today is one."""
    return _day(today - timedelta(days=(today.weekday() - weekday) % 7))


def _recent_weekend(today: date) -> Range:
    """The most recent weekend: this week's on a Saturday or Sunday (the one under way), else last week's."""
    return _weekend(today, 0 if today.weekday() >= 5 else -1)


def _en_recent_weekday(m: re.Match, today: date) -> Range | None:
    """A weekday on its own ("on Monday", "Wednesday"): the most recent one, today if it is that day.

    None in a sentence about the future ("see you Monday", "we'll go on
    Saturday"), where the most recent one would be the wrong one.
    """
    if _FUTURE.search(_sentence(m)):
        return None
    return _recent_weekday(today, _EN_WEEKDAY[m[1].lower()])


def _en_recent_weekend(m: re.Match, today: date) -> Range | None:
    """"the weekend", "over the weekend": the most recent weekend; None in a sentence about the future."""
    return None if _FUTURE.search(_sentence(m)) else _recent_weekend(today)


def _cn_recent_weekday(m: re.Match, today: date) -> Range | None:
    """周一, 星期天, 礼拜三 on their own: the most recent such day, today if it is that day (as English
    "on Monday"); None in a sentence about the future (周一要开会, 周五见)."""
    if _CN_FUTURE.search(_sentence(m)) or m.string.startswith("见", m.end()):
        return None
    return _recent_weekday(today, _WEEKDAY[m[1]])


def _cn_weekend(m: re.Match, today: date) -> Range | None:
    """周末, 这个周末: the most recent weekend; 上周末 / 下周末 the calendar week's; None for the future."""
    shift = m[1]
    if shift in (None, "这", "本"):
        if _CN_FUTURE.search(_sentence(m)) or m.string.startswith("见", m.end()):
            return None
        return _recent_weekend(today)
    return _weekend(today, _WEEK_OFFSET[shift])


def _span(today: date, n: int | None, unit: str) -> Range | None:
    """The ``n`` days (or weeks: 7·n days) that end today; None for 0 or an absurd count."""
    days = None if n is None else n * (7 if unit[0] in "w周星礼" else 1)
    if days is None or not 1 <= days <= 3660:
        return None
    return today - timedelta(days=days - 1), today


def _cn_span(m: re.Match, today: date) -> Range | None:
    n = cn_number(m[2])
    if m[1] == "这" and n == 1:  # 这一天, 这一周: a day of the story being told
        return None
    return _span(today, n, m[3])


_RELATIVE_DAY = {
    "大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "昨晚": -1, "昨夜": -1, "昨儿": -1,
    "今天": 0, "今日": 0, "今晚": 0, "今早": 0, "今儿": 0,
    "明天": 1, "明日": 1, "明晚": 1, "明早": 1, "明儿": 1, "后天": 2, "大后天": 3,
}
_YEAR_WORD = {"前年": -2, "去年": -1, "今年": 0, "明年": 1}
_EN_DAY = {"today": 0, "yesterday": -1, "tomorrow": 1, "tonight": 0}
_EN_SHIFT = {"last": -1, "this": 0, "next": 1}


def _en(pattern: str) -> str:
    """English words only on word boundaries (a CJK neighbour counts as a boundary)."""
    return rf"(?<![A-Za-z0-9]){pattern}(?![A-Za-z0-9])"


# (pattern, resolver) in priority order: a later rule never claims text an
# earlier one matched. Resolvers return None for impossible dates.
_Rule = tuple[re.Pattern, Callable[[re.Match, date], Found | None]]
# Explicit dates: when one of them resolves, relative words elsewhere in the text are ignored.
_EXPLICIT: list[_Rule] = [
    (re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)"),
     lambda m, t: _ymd(int(m[1]), int(m[2]), int(m[3]))),
    (re.compile(r"(?<!\d)(\d{4})/(\d{1,2})/(\d{1,2})(?!\d)"),
     lambda m, t: _ymd(int(m[1]), int(m[2]), int(m[3]))),
    (re.compile(rf"(?<!\d)(\d{{4}})\s*年\s*{_NUM}\s*月\s*{_NUM}\s*[日号]"),
     lambda m, t: _ymd(int(m[1]), cn_number(m[2]), cn_number(m[3]))),
    (re.compile(rf"(?<![以之从提目当眼面生])(前年|去年|今年|明年)\s*{_NUM}\s*月\s*{_NUM}\s*[日号]"),
     lambda m, t: _ymd(t.year + _YEAR_WORD[m[1]], cn_number(m[2]), cn_number(m[3]))),
    (re.compile(rf"(?<![\d年]){_NUM}\s*月\s*{_NUM}\s*[日号]"),
     lambda m, t: _recent_month_day(t, cn_number(m[1]), cn_number(m[2]))),
    (re.compile(_en(rf"{_EN_MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?") + _NOT_A_DAY_AFTER),
     lambda m, t: _en_date(t, m[1], m[2], m[3])),
    (re.compile(_en(rf"(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_EN_MONTH_RE}\.?(?:,?\s+(\d{{4}}))?")),
     lambda m, t: _en_date(t, m[2], m[1], m[3])),
    # on the 3rd (of this / last month): without a month, the most recent 3rd.
    (re.compile(_en(r"on\s+the\s+(\d{1,2})(?:st|nd|rd|th)(?:\s+of\s+(this|last)\s+month)?") + _DAY_OF_MONTH_NEXT,
                re.I),
     lambda m, t: _day_of_month(t, int(m[1]), m[2] and m[2].lower())),
]
_RELATIVE: list[_Rule] = [
    # English weekdays, weekends and parts of the day. Wednesday last week,
    # last week's Wednesday: that calendar week's day, as 上周三.
    (re.compile(_en(rf"{_WD}\s+(?:of\s+)?(last|this|next)\s+week(?!\s*end)"), re.I),
     lambda m, t: _day(_weekday_of_week(t, _EN_SHIFT[m[2].lower()], _EN_WEEKDAY[m[1].lower()]))),
    (re.compile(_en(rf"(last|this|next)\s+week(?:'s)?\s+(?:on\s+)?{_WD}"), re.I),
     lambda m, t: _day(_weekday_of_week(t, _EN_SHIFT[m[1].lower()], _EN_WEEKDAY[m[2].lower()]))),
    (re.compile(_en(r"(?:this|the)\s+past\s+weekend"), re.I), lambda m, t: _weekend(t, -1)),
    # the last 3 days, the past two weeks: the span that ends today (not "the last 3 days of the trip").
    (re.compile(_en(rf"the\s+(?:last|past|first|next)\s+{_EN_NUM_RE}\s+(?:days?|weeks?|months?)\s+of"), re.I),
     no_day),
    (re.compile(_en(rf"the\s+(?:last|past)\s+{_EN_NUM_RE}\s+(days?|weeks?)"), re.I),
     lambda m, t: _span(t, _en_number(m[1]), m[2].lower())),
    # the weekend, over the weekend: the most recent one (not the weekend before last / of the wedding).
    (re.compile(_en(r"the\s+weekend\s+(?:before|after|of)"), re.I), no_day),
    # Then the uses that name no one day (claimed, so that no later rule reads
    # a day into them, but left in the text to search): the last week / the
    # next Monday / the last evening of the trip (a rolling span, or a day named
    # by another event), every Monday, Good Friday, Monday to Friday, Sunday
    # best, "monday morning meetings are boring", two or three days ago.
    (re.compile(_en(rf"the\s+(?:very\s+)?(?:last|past|next)\s+(?:{_PART_OF_DAY}|weekend|week|month|{_WD_NC})"),
                re.I), no_day),
    (re.compile(_en(rf"(?:{_WD_NOT_ONE_DAY_BEFORE})\s+{_WD_NC}"), re.I), no_day),
    (re.compile(_en(rf"{_WD_NC}\s*(?:-|–|to|through|thru|till|until|til)\s*{_WD_NC}"), re.I), no_day),
    (re.compile(_en(rf"{_WD_NC}\s+(?:{_WD_NOT_ONE_DAY_AFTER})"), re.I), no_day),
    (re.compile(_en(_WD_GENERIC), re.I), no_day),
    (re.compile(_en(rf"{_EN_NUM_RE}\s*(?:or|to|-|–)\s*{_EN_NUM_RE}\s+(?:days?|weeks?|months?)\s+ago"), re.I),
     no_day),
    (re.compile(_en(rf"(?:over|more\s+than|at\s+least|upwards\s+of)\s+{_EN_NUM_RE}\s+(?:days?|weeks?|months?)"
                    r"\s+ago"), re.I), no_day),
    (re.compile(_en(rf"(last|next|this\s+past|this\s+coming|this)\s+{_WD}"), re.I),
     lambda m, t: _en_shifted_weekday(t, " ".join(m[1].lower().split()), _EN_WEEKDAY[m[2].lower()])),
    (re.compile(_en(r"last\s+weekend"), re.I), lambda m, t: _weekend(t, -1)),
    (re.compile(_en(r"this\s+weekend"), re.I), lambda m, t: _weekend(t, 0)),
    (re.compile(_en(r"next\s+weekend"), re.I), lambda m, t: _next_weekend(t)),
    (re.compile(_en(r"(?:(?:over|on|at|during)\s+)?the\s+weekend"), re.I), _en_recent_weekend),
    (re.compile(_en(rf"(?:on\s+)?{_WD}"), re.I), _en_recent_weekday),
    (re.compile(_en(rf"this\s+{_PART_OF_DAY}"), re.I), lambda m, t: _day(t)),
    (re.compile(_en(r"last\s+(?:night|evening)"), re.I), lambda m, t: _day(t - timedelta(days=1))),
    (re.compile(_en(rf"{_EN_NUM_RE}\s+months?\s+ago"), re.I), lambda m, t: _months_ago(t, _en_number(m[1]))),
    (re.compile(_en(r"the\s+day\s+before\s+yesterday"), re.I), lambda m, t: _day(t - timedelta(days=2))),
    (re.compile(_en(r"the\s+day\s+after\s+tomorrow"), re.I), lambda m, t: _day(t + timedelta(days=2))),
    (re.compile(_en(rf"{_EN_NUM_RE}\s+days?\s+ago"), re.I),
     lambda m, t: _relative_days(t, _en_number(m[1]), -1)),
    (re.compile(_en(rf"{_EN_NUM_RE}\s+weeks?\s+ago"), re.I),
     lambda m, t: _weeks_ago(t, _en_number(m[1]))),
    (re.compile(_en(r"(last|this|next)\s+week"), re.I),
     lambda m, t: _week(t + timedelta(days=7 * {"last": -1, "this": 0, "next": 1}[m[1].lower()]))),
    (re.compile(_en(r"(last|this|next)\s+month"), re.I),
     lambda m, t: _month(t.year, t.month, {"last": -1, "this": 0, "next": 1}[m[1].lower()])),
    (re.compile(_en(r"(today|yesterday|tomorrow|tonight)"), re.I),
     lambda m, t: _day(t + timedelta(days=_EN_DAY[m[1].lower()]))),
    (re.compile(_SPAN_CN), _cn_span),
    (re.compile(rf"{_COUNT}\s*(?:天|日)(?:之|以)?前"), lambda m, t: _relative_days(t, cn_number(m[1]), -1)),
    (re.compile(rf"{_COUNT}\s*天(?:之|以)?后"), lambda m, t: _relative_days(t, cn_number(m[1]), 1)),
    (re.compile(rf"{_SHIFT}{_WEEK_WORD}末|{_BARE_WEEK_BEFORE}()周末(?![愉快乐])"), _cn_weekend),
    (re.compile(rf"{_SHIFT}{_WEEK_WORD}([一二三四五六日天1-7]){_NOT_WEEKDAY}"),
     lambda m, t: _day(_week(t)[0] + timedelta(days=7 * _WEEK_OFFSET[m[1]] + _WEEKDAY[m[2]]))),
    # 周一到周五: a range of weekdays names no one day; 周一, 星期天, 礼拜三 alone: the most recent one.
    (re.compile(rf"{_CN_WEEKDAY}\s*(?:到|至|~|-|—)\s*{_CN_WEEKDAY}"), no_day),
    (re.compile(rf"{_BARE_WEEK_BEFORE}{_CN_WEEKDAY}{_NOT_WEEKDAY}"), _cn_recent_weekday),
    (re.compile(rf"{_SHIFT}{_WEEK_WORD}(?![{_NOT_WEEK}])"),
     lambda m, t: _week(t + timedelta(days=7 * _WEEK_OFFSET[m[1]]))),
    (re.compile(rf"{_COUNT}\s*{_WEEK_WORD}(?:之|以)?前"),
     lambda m, t: _weeks_ago(t, cn_number(m[1]))),
    (re.compile(rf"{_COUNT}\s*个月(?:之|以)?前"),
     lambda m, t: _months_ago(t, cn_number(m[1]))),
    # 上个月 / 这个月 / 本月; a bare 上月 / 下月 only where it cannot be the
    # tail of another word (晚上月亮 "the moon tonight", 马上月底 "soon, at month end").
    (re.compile(r"(上上|上|这|本|下下|下)个月(?!份)|(本)月(?!份)"
                r"|(?:^|(?<=[\s\W我你他她它们在是和就也都从到]))(上|下)月(?![份亮球光色])"),
     lambda m, t: _month(t.year, t.month, _WEEK_OFFSET[m[1] or m[2] or m[3]])),
    (re.compile(r"(?<![以之从提目当眼面生])前年|去年|今年|明年"),
     lambda m, t: (date(t.year + _YEAR_WORD[m[0]], 1, 1), date(t.year + _YEAR_WORD[m[0]], 12, 31))),
    # Relative days last: 大前天 before 前天; characters before them that make
    # another word (以前天气 "the weather before", 然后天黑 "then it got dark",
    # 聪明天才 "a clever genius", 如今天气 "the weather nowadays") rule them out.
    (re.compile(r"大前天|大后天|(?<![以之从提目当眼面生])前天|(?<![然之以最先背随过落])后天"
                r"|(?<![如])今(?:天|日|晚|早|儿)|(?<![聪光黎文])明(?:天|日|晚|早|儿)|昨(?:天|日|晚|夜|儿)"),
     lambda m, t: _day(t + timedelta(days=_RELATIVE_DAY[m[0]]))),
]
RULES: list[tuple[_Rule, bool]] = [(r, True) for r in _EXPLICIT] + [(r, False) for r in _RELATIVE]


# Every rule needs one of these; a text without any is answered at once.
TRIGGER = re.compile(r"[\d天日周月年前后昨今明期拜]|day|tomorrow|tues|thurs|tonight|ago|week|month|morning|afternoon"
                      r"|evening|night", re.I)  # (every weekday name, today, yesterday end in "day")
# (English month-days need a digit, which the trigger already has.)


def _en_date(today: date, month: str, day: str, year: str | None) -> Range | None:
    """An English month-day, with its year or the most recent one."""
    name = month.lower()
    number = next(n for n, full in enumerate(_EN_MONTHS, 1) if full.startswith(name[:3]))
    if year is not None:
        return _ymd(int(year), number, int(day))
    return _recent_month_day(today, number, int(day))


def _recent_month_day(today: date, month: int | None, day: int | None) -> Range | None:
    """The most recent month-day on or before ``today`` (2月29日 goes back to the last leap year)."""
    if month is None or day is None or not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    for year in range(today.year, today.year - 9, -1):
        try:
            found = date(year, month, day)
        except ValueError:  # 2月29日 in a common year, 4月31日 never
            continue
        if found <= today:
            return _day(found)
    return None


def _weekend(today: date, offset: int) -> Range:
    monday = _week(today)[0] + timedelta(days=7 * offset)
    return monday + timedelta(days=5), monday + timedelta(days=6)


def _next_weekend(today: date) -> Found:
    """Next calendar week's weekend, and this week's too while it is two or more days away (as "next Friday")."""
    after = _weekend(today, 1)
    this = _weekend(today, 0)
    return DaySet((*this, *after)) if this[0] >= today + timedelta(days=2) else after


def _day_of_month(today: date, day: int, which: str | None) -> Range | None:
    """"on the 3rd": this or last month's 3rd when said, else the most recent 3rd on or before today."""
    if which is not None:
        first = _month(today.year, today.month, 0 if which == "this" else -1)[0]
        return _ymd(first.year, first.month, day)
    for back in range(13):  # the 31st may skip months; no day is more than a year back
        first = _month(today.year, today.month, -back)[0]
        found = _ymd(first.year, first.month, day)
        if found is not None and found[0] <= today:
            return found
    return None


def _weeks_ago(today: date, n: int | None) -> Range | None:
    if n is None or n > 520:
        return None
    return _week(today - timedelta(days=7 * n))


def _months_ago(today: date, n: int | None) -> Range | None:
    if n is None or n > 120:
        return None
    return _month(today.year, today.month, -n)


