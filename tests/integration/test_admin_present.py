"""The admin pages' time and diary-day presentation (:mod:`webapp.admin.rendering.present`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest
from markupsafe import Markup

from webapp.admin.rendering.present import day_parts, instant


@pytest.mark.parametrize("value", ["2026-07-20T10:30:05Z", "2026-07-20T10:30:05+00:00",
                                   "2026-07-20T18:30:05+08:00", "2026-07-20T10:30:05",
                                   datetime(2026, 7, 20, 10, 30, 5, tzinfo=timezone.utc)])
def test_an_instant_is_utc_text_with_an_iso_datetime_and_utc_title(value):
    html = instant(value)
    assert isinstance(html, Markup)
    assert html == ('<time class="instant" datetime="2026-07-20T10:30:05Z" '
                    'title="2026-07-20 10:30:05 UTC">2026-07-20 10:30 UTC</time>')


def test_an_offset_is_converted_across_midnight():
    assert 'datetime="2026-07-19T21:00:00Z"' in instant("2026-07-20T06:00:00+09:00")
    assert 'datetime="2026-07-20T01:00:00Z"' in instant(datetime(2026, 7, 19, 20, tzinfo=timezone(timedelta(hours=-5))))


def test_the_label_goes_into_the_title_escaped():
    html = instant("2026-07-20T10:30:05Z", 'recorded "ts" <x>')
    assert 'title="recorded &#34;ts&#34; &lt;x&gt;: 2026-07-20 10:30:05 UTC"' in html


@pytest.mark.parametrize("value", ["yesterday", "<script>x</script>", "2026-13-01T00:00:00Z"])
def test_text_that_is_no_instant_is_shown_escaped_and_left_alone(value):
    html = instant(value)
    assert "instant" not in html and "datetime=" not in html
    assert "<script>" not in html
    assert html == Markup("<time>{}</time>").format(value)


@pytest.mark.parametrize("value", [None, ""])
def test_no_value_renders_nothing(value):
    assert instant(value) == ""


@dataclass
class Event:
    time: str


def test_day_parts_cut_at_06_12_18_and_keep_order():
    times = ["00:00", "05:59", "06:00", "11:59", "12:00", "17:59", "18:00", "23:59", "05:00"]
    parts = day_parts([Event(t) for t in times])
    assert [(p.key, [e.time for e in p.entries]) for p in parts] == [
        ("night", ["00:00", "05:59", "05:00"]),
        ("morning", ["06:00", "11:59"]),
        ("afternoon", ["12:00", "17:59"]),
        ("evening", ["18:00", "23:59"]),
    ]
    assert [p.span for p in parts] == ["00:00–06:00", "06:00–12:00", "12:00–18:00", "18:00–24:00"]


def test_empty_parts_are_left_out():
    parts = day_parts([Event("19:00"), Event("08:15")])
    assert [(p.key, p.label, len(p.entries)) for p in parts] == [("morning", "Morning", 1), ("evening", "Evening", 1)]
    assert day_parts([]) == []
