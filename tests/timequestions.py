"""Time questions as a companion bot's user asks them, and the memory they are asked of (issues 23, 35).

Shared by the library tests (``tests/unit/test_time_questions.py``) and the
API tests (``tests/integration/test_time_questions_api.py``): the same
diary, written relative to today in :data:`TZ`, and the same check of an
answer (:func:`check_answer`) on the JSON form of a retrieval result.
:func:`questions` adds, to :data:`QUESTIONS`, issue 35's phrasings that
name a weekday of the week gone by (周四做了什么, "what did I do on Friday?"),
made for the day the test runs.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

TZ = "Asia/Shanghai"

# Wiki facts. Two share only the frame of a question (什么 做了 去了; what do did went): they
# must never push the day's entries out. One shares a topic word (海边) with a question.
WIKI = [
    ("preferences", "food", "最喜欢吃火锅，不吃香菜。"),
    ("preferences", "likes-the-sea", "喜欢海边。Loves the sea."),
    ("notes", "chat-habits", "我们什么都聊，他做了很多计划，也去了很多地方。"),
    ("notes", "work", "What I do at work: I design robots. Did you know he went there twice?"),
    ("notes", "cat", "The cat likes tuna and sleeping in the sun."),
]


def _days_ago(today: date) -> dict[str, date]:
    monday = today - timedelta(days=today.weekday())
    return {"today": today, "yesterday": today - timedelta(days=1), "day-2": today - timedelta(days=2),
            "day-3": today - timedelta(days=3), "day-4": today - timedelta(days=4),
            "day-5": today - timedelta(days=5), "last-wednesday": monday - timedelta(days=5),
            "last-saturday": monday - timedelta(days=2)}


# (day, HH:MM, content); each content holds a marker word the questions look for.
DIARY = [
    ("today", "08:30", "早上去公园跑了五公里。Morning run in the park."),
    ("yesterday", "12:00", "中午和小林吃了拉面。Lunch: ramen with Lin."),
    ("yesterday", "20:00", "晚上一起看了电影《星际穿越》。Watched Interstellar together."),
    ("day-2", "19:30", "晚上吃了火锅，很辣。Hotpot dinner, very spicy."),
    ("day-3", "15:00", "下午去书店买了两本书。Bought two books at the bookshop."),
    ("last-wednesday", "10:00", "去了海边，捡了很多贝壳。We went to the beach and picked up shells."),
    ("last-saturday", "14:00", "去爬山了，山顶风很大。Hiked up the hill, very windy at the top."),
    ("day-4", "16:00", "下午去看了牙医。Saw the dentist in the afternoon."),
    ("day-5", "11:00", "上午去游泳了。Went swimming in the morning."),
]

# (question, markers of the entries that must be in the answer)
QUESTIONS = [
    ("昨天做了什么", ["拉面", "星际穿越"]),
    ("我昨天干嘛了来着？", ["拉面", "星际穿越"]),
    ("上周三去哪了", ["海边"]),
    ("前天晚上吃的什么", ["火锅"]),
    ("昨天发生了什么", ["拉面", "星际穿越"]),
    ("前天我们去了哪里", ["火锅"]),
    ("昨晚做什么了", ["拉面", "星际穿越"]),
    ("三天前我在干嘛", ["书店"]),
    ("大前天发生了什么事", ["书店"]),
    ("上周末去哪玩了", ["爬山"]),
    ("今天都忙了些什么", ["公园"]),
    ("昨天吃了什么", ["拉面"]),
    ("上周三我们聊了什么", ["海边"]),
    ("上周三去海边了吗", ["海边"]),
    ("what did I do yesterday?", ["ramen", "Interstellar"]),
    ("where did we go last Wednesday?", ["beach"]),
    ("what happened yesterday?", ["ramen", "Interstellar"]),
    ("what did we eat the day before yesterday?", ["Hotpot"]),
    ("what did I do 3 days ago?", ["books"]),
    ("what did we do last weekend?", ["Hiked"]),
    ("anything happen yesterday?", ["ramen", "Interstellar"]),
    ("what was I up to yesterday?", ["ramen", "Interstellar"]),
    ("what did I have for dinner last night?", ["Interstellar"]),
    ("what did I do this morning?", ["park"]),
    ("where were we two days ago?", ["Hotpot"]),
    # issue 35: the weekend, the last N days (the weekend's entries depend on the day: no markers)
    ("周末干嘛了", []),
    ("这个周末去哪玩了", []),
    ("what did you do over the weekend?", []),
    ("anything fun on the weekend?", []),
    ("最近三天做了什么", ["公园", "拉面", "火锅"]),
    ("过去两天吃了什么", ["拉面"]),
    ("这两天怎么样", ["公园"]),
    ("近一周发生了什么", ["书店", "牙医"]),
    ("what happened in the last 3 days?", ["park", "ramen", "Hotpot"]),
    ("what did I do over the past two days?", ["park", "Interstellar"]),
]

# Vague, a habit, the future: no window (narrow rather than wrong), asked beside the others.
REFUSED = ["最近做了什么", "前几天去哪了", "以前喜欢什么", "这几天怎么样", "周一要开会吗", "周末见",
           "what did I do recently?", "the other day we met", "see you at the weekend", "every Monday we swim"]

_CN_WEEKDAYS = "一二三四五六日"
_EN_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def questions(on: date) -> list[tuple[str, list[str]]]:
    """:data:`QUESTIONS`, the bare weekdays of four and five days ago (issue 35), asked ``on`` that day, and the
    :data:`REFUSED` ones (no markers: :func:`check_answers` checks they open no window)."""
    four, five = (on - timedelta(days=n) for n in (4, 5))
    return QUESTIONS + [(q, []) for q in REFUSED] + [
        (f"周{_CN_WEEKDAYS[four.weekday()]}做了什么", ["牙医"]),
        (f"星期{_CN_WEEKDAYS[five.weekday()]}干嘛了", ["游泳"]),
        (f"礼拜{_CN_WEEKDAYS[four.weekday()]}发生了什么", ["牙医"]),
        (f"what did I do on {_EN_WEEKDAYS[five.weekday()]}?", ["swimming"]),
        (f"anything happen {_EN_WEEKDAYS[four.weekday()]}?", ["dentist"]),
    ]


def today(zone: str = TZ) -> date:
    return datetime.now(ZoneInfo(zone)).date()


def diary_entries(on: date) -> list[tuple[str, str, str]]:
    """``(date, time, content)`` of every diary entry, dated from ``on`` (today)."""
    days = _days_ago(on)
    return [(days[day].isoformat(), hhmm, content) for day, hhmm, content in DIARY]


def check_answer(result: dict, question: str, markers: list[str], entries: list[tuple[str, str, str]]) -> None:
    """The answer of a time question comes from its window (the JSON of a RetrievalResult).

    Every entry of the window (of its days, for a set of days) is there — or,
    when the question has a word of its own beyond question words (去海边了吗),
    the ones that match it — the marked ones among them; no diary entry from
    outside the window; no wiki item that shares no word
    with the question ranks above an entry of the window; a question
    without topic words is answered with the window alone, newest first.
    """
    assert result["time_range"] is not None, f"{question!r} opened no window"
    start, end = result["time_range"]
    days = result.get("time_days")  # a window of separate days ("last Wednesday" asked on a Friday): those only
    window = [(d, t, c) for d, t, c in entries if start <= d <= end and (days is None or d in days)]
    hits = [e for e in result["items"] if e["source"] == "hit"]
    got = [(e["item"]["file"], e["item"]["name"], e["item"]["content"]) for e in hits]
    from wikimem.recall.stopwords import question_only

    answered = sorted(g for g, e in zip(got, hits) if e["kind"] == "diary")
    if question_only(result["query_terms"]):
        assert sorted(window) == answered, (question, got)
    else:  # a real word: the window's entries that match it
        assert set(answered) <= set(window), (question, got)
    for marker in markers:
        assert any(marker in c for _, _, c in window), f"{question!r}: the window {start}..{end} misses {marker!r}"
        assert any(marker in c for _, _, c in answered), f"{question!r}: the answer misses {marker!r}"
    diary_places = [n for n, e in enumerate(hits) if e["kind"] == "diary"]
    stray = [n for n, e in enumerate(hits) if e["kind"] == "wiki" and not e["matched_terms"]]
    assert not stray or max(diary_places) < min(stray), (question, got)
    if not result["query_terms"]:
        assert [(d, t) for d, t, _ in got] == sorted(((d, t) for d, t, _ in window), reverse=True), (question, got)


def check_answers(answers: dict[str, dict], entries: list[tuple[str, str, str]], day: date, zone: str = TZ) -> None:
    """:func:`check_answer` for every question of :data:`QUESTIONS` (``answers``: question → result JSON),
    reporting every failing question at once; skipped when the day turned over since ``day`` (the windows
    moved under the test)."""
    import pytest

    if today(zone) != day:
        pytest.skip("the day turned over during the test")
    failed = []
    for question, markers in questions(day):
        try:
            if question in REFUSED:
                assert answers[question]["time_range"] is None, f"{question!r} opened a window"
                continue
            check_answer(answers[question], question, markers, entries)
        except AssertionError as exc:
            failed.append(f"{question}: {exc}")
    assert failed == []
