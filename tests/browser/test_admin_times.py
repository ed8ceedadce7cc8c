"""Times on the admin pages: instants in the reader's zone with UTC on hover, the diary's own clock, long days.

Two kinds of time must not be confused: an *instant* (a commit time, a
``ts``) is UTC in the HTML and local in the browser; a diary event's
``HH:MM`` is the person's own clock and is never converted.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from wikimem.context import WriteContext

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_seed import OWNER

pytestmark = pytest.mark.browser

WIDTHS = ("laptop", "phone")
ZONE = "America/New_York"  # a zone with summer time: July and December instants differ by an hour
SUMMER_TS = "2026-07-04T16:00:00Z"
LONG_DAY = "2026-07-25"
# 40 events over a day: (HH:MM, text); hours spread over night, morning, afternoon and evening.
HOURS = (1, 2, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23)
LONG_EVENTS = [(f"{HOURS[i % len(HOURS)]:02d}:{(7 * i) % 60:02d}", f"event {i:02d} of a long day") for i in range(40)]


def owner_url(world, tail: str = "") -> str:
    return f"{world.url}/admin/owners/{OWNER}{tail}"


def utc_of(time_el) -> datetime:
    value = time_el.get_attribute("datetime")
    assert value.endswith("Z"), value
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def add_summer_item(world) -> None:
    world.owner().vstore.add("events", "fourth-of-july", "Watched fireworks.", owner=OWNER,
                             ts=SUMMER_TS, ctx=WriteContext(source_conv="conv_j", actor="Elaina"))


def test_instants_are_utc_without_javascript(world, operator_page):
    add_summer_item(world)
    page = operator_page("laptop", java_script_enabled=False)
    page.goto(owner_url(world, "/items/events/fourth-of-july"))
    recorded = page.locator(".recorded time.instant")
    expect(recorded).to_have_attribute("datetime", SUMMER_TS)
    expect(recorded).to_have_text("2026-07-04 16:00 UTC")
    assert "2026-07-04 16:00:00 UTC" in recorded.get_attribute("title")
    page.goto(owner_url(world, "/history"))
    for el in page.locator("time.instant").all():
        expect(el).to_have_text(utc_of(el).strftime("%Y-%m-%d %H:%M UTC"))
    # The server sends exactly this: no script is needed to read the page right.
    html = page.request.get(owner_url(world, "/items/events/fourth-of-july")).text()
    assert f'datetime="{SUMMER_TS}"' in html and "2026-07-04 16:00 UTC</time>" in html


def test_instants_show_in_the_browsers_zone_with_utc_on_hover(world, operator_page, screenshots):
    add_summer_item(world)
    zone = ZoneInfo(ZONE)
    for width in WIDTHS:
        page = operator_page(width, timezone_id=ZONE)
        page.goto(owner_url(world, "/items/events/fourth-of-july"))
        recorded = page.locator(".recorded time.instant")
        expect(recorded).to_have_text("2026-07-04 12:00 EDT")  # 16:00 UTC, summer time in New York
        expect(recorded).to_have_attribute("title", re.compile(r"2026-07-04 16:00:00 UTC$"))
        page.screenshot(path=screenshots / f"item-local-time-{width}.png", full_page=True)
        for tail in ("/history", ""):
            page.goto(owner_url(world, tail))
            instants = page.locator("time.instant").all()
            assert instants
            for el in instants:
                utc = utc_of(el)
                local = utc.astimezone(zone)
                expect(el).to_have_text(local.strftime("%Y-%m-%d %H:%M ") + local.tzname())
                assert el.get_attribute("title").endswith(utc.strftime("%Y-%m-%d %H:%M:%S UTC"))
        page.goto(world.url + "/admin/")
        page.screenshot(path=screenshots / f"owners-local-time-{width}.png", full_page=True)


def test_diary_says_which_time_is_the_events_and_which_was_recorded(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width, timezone_id="Asia/Tokyo")
        page.goto(owner_url(world, "/diary?day=2026-07-20"))
        events = page.locator("section[aria-label=events] article.diary-entry")
        expect(events).to_have_count(2)
        first = events.first
        # The event's own clock heads it, untouched by the reader's zone.
        wall = first.locator(".event-time time")
        expect(wall).to_have_text("18:30")
        expect(wall).to_have_attribute("datetime", "2026-07-20T18:30")
        assert "instant" not in (wall.get_attribute("class") or "")
        assert "person's own clock" in wall.get_attribute("title")
        # The recorded ts is labelled as such, local, with UTC on hover.
        recorded = first.locator(".recorded")
        expect(recorded).to_contain_text("recorded")
        expect(recorded.locator("time.instant")).to_have_attribute("title", re.compile(r"^recorded \(ts\).* UTC$"))
        expect(recorded.locator("time.instant")).to_contain_text("JST")  # the reader's zone, named
        assert not re.search(r"\bts\b", first.locator(".meta").inner_text()), "a bare 'ts' label is back"
        legend = page.locator("section[aria-label=events] .legend")
        expect(legend).to_contain_text("HH:MM on the person's own clock")
        expect(legend).to_contain_text("recorded is when it was written down")
        page.screenshot(path=screenshots / f"diary-times-{width}.png", full_page=True)


def test_a_long_day_comes_in_parts_of_the_day(world, operator_page, screenshots):
    vs = world.owner().vstore
    with vs.batch(WriteContext(run="run_long_day", actor="Elaina", source_conv="conv_long"),
                  message="memorize a long day"):
        for hhmm, text in LONG_EVENTS:
            vs.diary.append(text, date=LONG_DAY, time=hhmm, owner=OWNER, source_conv="conv_long")
    expected = {"night": 0, "morning": 0, "afternoon": 0, "evening": 0}
    for hhmm, _ in LONG_EVENTS:
        hour = int(hhmm[:2])
        expected["night" if hour < 6 else "morning" if hour < 12 else "afternoon" if hour < 18 else "evening"] += 1
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, f"/diary?day={LONG_DAY}"))
        expect(page.locator("section[aria-label=events] h2 .badge")).to_have_text("40 events")
        parts = page.locator("details.daypart")
        expect(parts).to_have_count(4)
        nav = page.locator("nav.dayparts-nav a")
        assert nav.all_inner_texts() == [f"{k.capitalize()} {n}" for k, n in expected.items()]
        for key, count in expected.items():
            part = page.locator(f"details#part-{key}")
            expect(part.locator("article.diary-entry")).to_have_count(count)
            times = part.locator(".event-time time").all_inner_texts()
            assert times == sorted(times), f"{key} is out of order"
        # Every event is there once, in the day's order.
        shown = page.locator("details.daypart .event-time time").all_inner_texts()
        assert shown == sorted(hhmm for hhmm, _ in LONG_EVENTS)
        page.screenshot(path=screenshots / f"diary-long-day-{width}.png", full_page=True)
        # The parts navigate: a jump lands on the evening, and a part folds away.
        page.click("nav.dayparts-nav a[href='#part-evening']")
        expect(page).to_have_url(re.compile(r"#part-evening$"))
        expect(page.locator("details#part-evening summary")).to_be_in_viewport()
        page.click("details#part-morning > summary")
        expect(page.locator("details#part-morning article.diary-entry").first).to_be_hidden()
        expect(page.locator("details#part-evening article.diary-entry").first).to_be_visible()


def test_a_short_day_stays_one_list(world, operator_page):
    page = operator_page("laptop")
    page.goto(owner_url(world, "/diary?day=2026-07-20"))
    expect(page.locator("section[aria-label=events] article.diary-entry")).to_have_count(2)
    expect(page.locator("details.daypart")).to_have_count(0)
    expect(page.locator("nav.dayparts-nav")).to_have_count(0)
