"""Diary: append-only events, one file per day."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from wikimem import Diary, DiaryItem, MemoryStore


@pytest.fixture
def diary(tmp_path):
    return MemoryStore(tmp_path / "mem").diary


def test_append_writes_the_seed_format(diary):
    diary.append("他说换了工作。[[work:current-job]]", ts="2026-07-21T06:30:00+00:00",
                 tz="Asia/Shanghai", owner="user:xnne", source_conv="conv_20260721")
    text = (diary.root / "diary" / "2026-07-21.md").read_text(encoding="utf-8")
    assert text == (
        "# 2026-07-21\n\n## 14:30\n\n他说换了工作。[[work:current-job]]\n\n"
        "<!-- wikimem: owner=user:xnne | source=conv_20260721 | ts=2026-07-21T06:30:00+00:00 -->\n"
    )


def test_date_and_time_default_from_ts_in_tz(diary):
    e = diary.append("late", ts="2026-07-21T17:30:00Z", tz="Asia/Shanghai")
    assert (e.date, e.time) == ("2026-07-22", "01:30")
    e = diary.append("utc", ts="2026-07-21T17:30:00Z", tz=timezone.utc)
    assert (e.date, e.time) == ("2026-07-21", "17:30")
    e = diary.append("west", ts="2026-07-21T03:00:00Z", tz=timezone(timedelta(hours=-5)))
    assert (e.date, e.time) == ("2026-07-20", "22:00")


def test_default_tz_is_system_local(diary):
    e = diary.append("x", ts="2026-07-21T06:30:00Z")
    local = datetime(2026, 7, 21, 6, 30, tzinfo=timezone.utc).astimezone()
    assert (e.date, e.time) == (local.date().isoformat(), local.strftime("%H:%M"))


def test_ts_normalised_to_utc_seconds_and_defaults_to_now(diary):
    e = diary.append("x", ts="2026-07-21T14:30:15.123456+08:00")
    assert e.ts == "2026-07-21T06:30:15+00:00"
    before = datetime.now(timezone.utc).replace(microsecond=0)
    e = diary.append("now")
    assert before <= datetime.fromisoformat(e.ts) <= datetime.now(timezone.utc)


def test_explicit_date_and_time_win(diary):
    e = diary.append("x", ts="2026-07-21T06:30:00Z", date="2026-01-02", time="08:05")
    assert (e.date, e.time, e.ts) == ("2026-01-02", "08:05", "2026-07-21T06:30:00+00:00")
    assert diary.day("2026-01-02") == [e]


def test_sorted_by_time_stable_and_same_minute_all_kept(diary):
    for content, t in [("c", "22:10"), ("a", "09:00"), ("b1", "14:30"), ("b2", "14:30"), ("a0", "09:00")]:
        diary.append(content, date="2026-07-21", time=t)
    day = diary.day("2026-07-21")
    assert [(e.time, e.content) for e in day] == [
        ("09:00", "a"), ("09:00", "a0"), ("14:30", "b1"), ("14:30", "b2"), ("22:10", "c")]


def test_window_is_closed_swaps_reversed_bounds_and_is_in_time_order(diary):
    for d in ["2026-07-19", "2026-07-20", "2026-07-21", "2026-07-23"]:
        diary.append(f"on {d}", date=d, time="12:00")
    got = [e.date for e in diary.window("2026-07-20", "2026-07-23")]
    assert got == ["2026-07-20", "2026-07-21", "2026-07-23"]
    assert diary.window("2026-07-23", "2026-07-20") == diary.window("2026-07-20", "2026-07-23")
    assert diary.window("2026-08-01", "2026-08-05") == []


def test_wide_window_uses_the_listing(diary):
    diary.append("old", date="1990-01-01", time="00:00")
    diary.append("new", date="2030-12-31", time="23:59")
    assert [e.content for e in diary.window("1900-01-01", "2100-01-01")] == ["old", "new"]


def test_dates_lists_valid_day_files_only(diary):
    diary.append("x", date="2026-07-21", time="10:00")
    diary.append("y", date="2025-01-01", time="10:00")
    (diary.root / "diary" / "notes.md").write_text("# notes\n")
    (diary.root / "diary" / "2026-02-30.md").write_text("# bad\n")
    assert diary.dates() == ["2025-01-01", "2026-07-21"]


def test_journal_line_per_append(diary):
    diary.append("x", date="2026-07-21", time="10:00", owner="u", source_conv="c")
    (line,) = diary.journal.entries()
    assert line["action"] == "diary" and line["date"] == "2026-07-21" and line["time"] == "10:00"
    assert line["owner"] == "u" and line["source_conv"] == "c" and "ts" in line


@pytest.mark.parametrize(
    "kwargs",
    [dict(content=""), dict(content="   \n"), dict(ts="not a time"), dict(ts="2026-02-30T00:00:00Z"),
     dict(date="2026-02-30"), dict(date="2026/07/21"), dict(date="20260721"), dict(time="24:00"),
     dict(time="9:30"), dict(time="12:60"), dict(time="12:30:00"), dict(tz="Mars/Olympus")],
)
def test_invalid_input_is_a_value_error_and_writes_nothing(diary, kwargs):
    kwargs.setdefault("content", "something")
    content = kwargs.pop("content")
    with pytest.raises(ValueError):
        diary.append(content, **kwargs)
    assert not diary.root.exists()


def test_day_rejects_invalid_dates(diary):
    with pytest.raises(ValueError):
        diary.day("../../etc/passwd")


def test_hand_edited_day_is_tolerated(diary):
    path = diary.root / "diary" / "2026-07-21.md"
    path.parent.mkdir(parents=True)
    path.write_text("# 2026-07-21\n\n随便写的前言\n\n## 22:10\n\n睡前。\n\n## 下午\n\n手写的。\n\n## 08:00\n\n早上。\n")
    assert [(e.time, e.owner) for e in diary.day("2026-07-21")] == [("22:10", None), ("下午", None), ("08:00", None)]
    diary.append("中午。", date="2026-07-21", time="12:00")
    # the write sorts by HH:MM; the odd heading stays with the entry it followed
    assert [e.time for e in diary.day("2026-07-21")] == ["08:00", "12:00", "22:10", "下午"]


def test_standalone_diary_has_its_own_journal(tmp_path):
    d = Diary(tmp_path / "solo")
    e = d.append("x", ts="2026-07-21T06:30:00Z", tz="UTC")
    assert isinstance(e, DiaryItem) and e.links == []
    assert (tmp_path / "solo" / "journal.jsonl").exists()


def test_diary_has_no_rewrite_api(diary):
    assert not any(hasattr(diary, name) for name in ("remove", "update", "delete", "edit"))
