"""Issue 24, operator items 2–9, clicked through in Chromium at laptop and phone widths, a screenshot of each.

Times follow the browser's zone, or one the operator picks (filters too);
the bulk rollback button says what changes and what is skipped; a rolled-back
run offers the undo of its rollback; an edit keeps provenance; a reviewer
sees forms read-only with the reason; compare keeps its form; history cards
open their changes in place; messages are in words; the diary says which
time an HH:MM is. The Flask-client tests of the same rules are in
``tests/integration/test_admin_everyday.py``.
"""

from __future__ import annotations

import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_env import open_filters
from browser_seed import BAD_RUN, BAD_WORDS, OWNER  # noqa: E402

from webapp.session import account_line  # noqa: E402
from wikimem.context import WriteContext  # noqa: E402

pytestmark = pytest.mark.browser

WIDTHS = ("laptop", "phone")
REVIEWER = ("rita", "correct horse battery staple")


def owner_url(world, tail: str = "") -> str:
    return f"{world.url}/admin/owners/{OWNER}{tail}"


def fits(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1")


def utc_of(time_el) -> datetime:
    return datetime.strptime(time_el.get_attribute("datetime"), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


# -- item 1: what a commit was ----------------------------------------------------------------------------

def test_the_action_filter_finds_memorize_commits(world, operator_page, screenshots):
    import json

    from fakes import FakeOpenAI

    from wikimem.llm import ChatClient

    owner = world.owner()
    with FakeOpenAI() as fake:
        owner.llm = ChatClient(fake.url, "fake-chat")
        fake.replies.append(json.dumps([{"content": "Watched the sunset at the sea."}]))
        owner.memorize("user: we watched the sunset", ctx=WriteContext(run="run_sunset", actor="Elaina"))
        fake.replies.append(json.dumps([{"content": "Ate noodles."}, {"content": "Plans a trip."}]))
        owner.memorize("user: noodles, then plans", ctx=WriteContext(run="run_noodles", actor="Elaina"))
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, "/history"))
        open_filters(page)
        page.select_option("#f-action", "memorize")
        page.click("form.history-filters button[type=submit]")
        expect(page.locator("section.card")).to_have_count(2)
        expect(page.locator("a.run-link")).to_have_text(["run_noodles", "run_sunset"])
        expect(page.locator("li.commit")).to_contain_text(["memorize", "memorize"])
        expect(page.locator("#action-note")).to_contain_text("older one carries")
        page.screenshot(path=screenshots / f"everyday-action-memorize-{width}.png", full_page=True)
        page.click("header.topbar >> text=Runs")
        page.fill("#r-action", "memorize")
        page.click("#find-runs")
        expect(page.locator(".total-runs")).to_have_text("2")
        assert fits(page)


# -- item 2: one zone per operator ----------------------------------------------------------------------

def test_times_follow_the_browsers_zone_and_a_zone_the_operator_picks(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width, timezone_id="Asia/Tokyo")
        page.goto(owner_url(world, "/history"))
        open_filters(page)
        expect(page.locator("#zone-link .zone-name")).to_have_text("Asia/Tokyo")
        expect(page.locator("label[for=f-since]")).to_have_text("From (day, Asia/Tokyo)")
        first = page.locator("time.instant").first
        local = utc_of(first).astimezone(ZoneInfo("Asia/Tokyo"))
        expect(first).to_have_text(local.strftime("%Y-%m-%d %H:%M JST"))
        assert first.get_attribute("title").endswith(utc_of(first).strftime("%Y-%m-%d %H:%M:%S UTC"))
        page.screenshot(path=screenshots / f"everyday-history-tokyo-{width}.png", full_page=True)
        # Switch to another zone: remembered for the next pages, display and filter labels alike.
        page.click("#zone-link")
        expect(page.locator("input[name=pick][value=browser]")).to_be_checked()
        page.check("#pick-other")
        page.fill("#zone-name", "America/New_York")
        page.screenshot(path=screenshots / f"everyday-zone-form-{width}.png", full_page=True)
        page.click("#zone-save")
        page.wait_for_url(re.compile(r"/history$"))
        expect(page.locator("#zone-link .zone-name")).to_have_text("America/New_York")
        expect(page.locator("label[for=f-until]")).to_have_text("To (day, America/New_York)")
        first = page.locator("time.instant").first
        local = utc_of(first).astimezone(ZoneInfo("America/New_York"))
        expect(first).to_have_text(local.strftime("%Y-%m-%d %H:%M ") + local.tzname())
        page.goto(owner_url(world, "/items/preferences/likes-the-sea"))
        expect(page.locator("#zone-link .zone-name")).to_have_text("America/New_York")
        assert fits(page)


def test_a_history_day_filter_is_the_operators_day(world, operator_page, screenshots):
    newest = world.owner().history(limit=1).entries[0]
    moment = datetime.fromisoformat(newest.time.replace("Z", "+00:00"))
    # A zone whose calendar day around that commit is never its UTC day.
    zone = "Etc/GMT+12" if moment.hour < 12 else "Etc/GMT-12"
    day = moment.astimezone(ZoneInfo(zone)).date().isoformat()
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(world.url + "/admin/timezone")
        page.check("#pick-other")
        page.fill("#zone-name", zone)
        page.click("#zone-save")
        page.goto(owner_url(world, "/history"))
        open_filters(page)
        page.fill("#f-since", day)
        page.fill("#f-until", day)
        page.click("form.history-filters button[type=submit]")
        expect(page.locator("li.commit").first).to_be_visible()
        expect(page.locator("#f-since")).to_have_value(day)
        expect(page.locator("label[for=f-since]")).to_contain_text(zone)
        page.screenshot(path=screenshots / f"everyday-history-filter-zone-{width}.png", full_page=True)


# -- item 3: the bulk rollback button -------------------------------------------------------------------

def test_the_bulk_button_counts_the_owners_that_change_and_those_skipped(world, operator_page, screenshots):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
    from operators_world import BAD_ACTOR, bad_deploy

    bad_deploy(world.host, 5)  # one of the five had its bad fact corrected since: a conflict
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(world.url + f"/admin/bulk/rollback?actor={BAD_ACTOR}")
        button = page.locator("#confirm")
        expect(button).to_have_text("Roll back 4 owners, skip 1 with conflicts")
        expect(page.locator("#bulk-outcome")).to_have_text(
            "4 owners will change; 1 with conflicts will be skipped unless you force.")
        page.screenshot(path=screenshots / f"everyday-bulk-button-{width}.png", full_page=True)
        page.check("#force")
        expect(button).to_have_text("Roll back 5 owners, forcing 1")
        page.uncheck("#force")
        expect(button).to_have_text("Roll back 4 owners, skip 1 with conflicts")
        assert fits(page)


# -- item 4: a run rolled back already ------------------------------------------------------------------

def test_a_rolled_back_run_offers_the_undo_of_its_rollback(world, operator_page, screenshots):
    page = operator_page("laptop")
    page.goto(owner_url(world, f"/runs/{BAD_RUN}"))
    page.click("#rollback")
    page.click("#confirm")
    expect(page.locator(".flash.ok")).to_contain_text("done as commit")
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, f"/runs/{BAD_RUN}"))
        expect(page.locator("#run-state")).to_contain_text("rolled back")
        expect(page.get_by_text("Roll back again")).to_have_count(0)
        expect(page.locator("#rollback")).to_have_count(0)
        expect(page.locator("#undo-rollback")).to_have_text("Undo the rollback…")
        page.screenshot(path=screenshots / f"everyday-run-rolled-back-{width}.png", full_page=True)
        # The old rollback URL says the same, and offers no force.
        page.goto(owner_url(world, f"/runs/{BAD_RUN}/rollback"))
        expect(page.locator("#run-state")).to_contain_text("rolled back already")
        expect(page.locator("input[name=force]")).to_have_count(0)
        assert fits(page)
    page.goto(owner_url(world, f"/runs/{BAD_RUN}"))
    page.click("#undo-rollback")
    expect(page.locator("main h1:not(.owner-id)")).to_contain_text("Revert commit")
    page.click("#confirm")
    expect(page.locator(".flash.ok")).to_contain_text("done as commit")
    assert BAD_WORDS in world.owner().item("preferences", "likes-the-sea").content
    page.goto(owner_url(world, f"/runs/{BAD_RUN}"))
    expect(page.locator("#rollback")).to_have_text("Roll back this run…")


# -- item 5: an edit keeps provenance -------------------------------------------------------------------

def test_an_edit_keeps_the_items_source_and_recorded_time(world, operator_page, screenshots):
    before = world.owner().item("preferences", "likes-the-sea")
    assert before.source_conv
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, "/items/preferences/likes-the-sea"))
        page.click("#edit-item")
        expect(page.locator("form.editor .meta")).to_contain_text(f"source {before.source_conv}")
        page.fill("#e-content", f"Loves the sea ({width}).")
        page.click("#save")
        expect(page.locator(".flash.ok")).to_contain_text("Saved")
        expect(page.locator("article .meta").first).to_contain_text(f"source {before.source_conv}")
        page.screenshot(path=screenshots / f"everyday-edit-kept-provenance-{width}.png", full_page=True)
    after = world.owner().item("preferences", "likes-the-sea")
    assert (after.content, after.source_conv, after.ts) == ("Loves the sea (phone).", before.source_conv, before.ts)
    assert world.owner().history(limit=1).entries[0].actor == "admin"


# -- item 6: read-only for a reviewer -------------------------------------------------------------------

def sign_in_reviewer(browser, world, width: str):
    from browser_env import LAPTOP, PHONE

    accounts = world.root.parent / "operators.jsonl"
    if REVIEWER[0] not in accounts.read_text(encoding="utf-8"):
        with accounts.open("a", encoding="utf-8") as fh:
            fh.write(account_line(*REVIEWER, "", "reviewer") + "\n")
    context = browser.new_context(viewport=LAPTOP if width == "laptop" else PHONE, is_mobile=width == "phone")
    page = context.new_page()
    page.goto(world.url + "/login")
    page.fill("#username", REVIEWER[0])
    page.fill("#password", REVIEWER[1])
    page.click("#account-submit")
    page.wait_for_url(world.url + "/admin/")
    return context, page


def test_a_reviewer_sees_the_editor_read_only_with_the_reason(world, browser, screenshots):
    for width in WIDTHS:
        context, page = sign_in_reviewer(browser, world, width)
        try:
            page.goto(owner_url(world, "/edit/preferences/tea"))
            expect(page.locator("#read-only")).to_contain_text("needs the operator role")
            expect(page.locator("#read-only")).to_contain_text("rita, a reviewer")
            expect(page.locator("#e-content")).not_to_be_editable()
            expect(page.locator("#save")).to_be_disabled()
            expect(page.locator("#preview")).to_be_disabled()
            page.screenshot(path=screenshots / f"everyday-reviewer-edit-{width}.png", full_page=True)
            page.goto(owner_url(world, f"/runs/{BAD_RUN}/rollback"))
            expect(page.locator("#read-only")).to_be_visible()
            expect(page.locator("#confirm")).to_be_disabled()
            assert fits(page)
        finally:
            context.close()


# -- item 7: errors keep the input; history cards ----------------------------------------------------------

def test_compare_with_a_bad_point_keeps_the_form(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, "/diff"))
        page.fill("#d-from", "not-a-point")
        page.fill("#d-to", "HEAD~1")
        page.click("#compare-go")
        expect(page.locator("#compare-error")).to_contain_text("not-a-point")
        expect(page.locator("#d-from")).to_have_value("not-a-point")
        expect(page.locator("#d-to")).to_have_value("HEAD~1")
        page.screenshot(path=screenshots / f"everyday-compare-error-{width}.png", full_page=True)


def test_history_cards_say_things_once_and_open_their_changes_in_place(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, "/history"))
        open_filters(page)
        card = page.locator("section.card").filter(has=page.locator(f"a.run-link:text-is('{BAD_RUN}')"))
        expect(card).to_have_count(1)
        expect(card.locator("time.instant")).to_have_count(1)
        expect(card.locator(".summary")).to_have_count(1)
        single = page.locator("section.card.single").first
        expect(single.locator("time.instant")).to_have_count(1)
        expect(single.locator(".summary")).to_have_count(1)
        changes = card.locator("details.card-changes")
        expect(changes.locator("section.change")).to_have_count(0)
        changes.locator("summary").click()
        expect(changes.locator("section.change").filter(has_text="likes-the-sea")).to_contain_text(BAD_WORDS)
        expect(changes.locator("section.change")).to_have_count(2)
        expect(page).to_have_url(owner_url(world, "/history"))  # in place
        assert fits(page)
        card.scroll_into_view_if_needed()
        page.screenshot(path=screenshots / f"everyday-history-card-open-{width}.png", full_page=True)


# -- item 8: messages in words --------------------------------------------------------------------------

def test_add_item_explains_a_bad_name_and_links_an_existing_item_to_its_editor(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, "/new-item"))
        page.fill("#n-file", "Bad File")
        page.fill("#n-name", "x")
        page.fill("#n-content", "y")
        page.click("#save")
        error = page.locator("#new-item-error")
        expect(error).to_contain_text("lowercase letters")
        assert "[a-z" not in error.inner_text() and "RecallFile" not in error.inner_text()
        expect(page.locator("#n-file")).to_have_value("Bad File")
        page.screenshot(path=screenshots / f"everyday-add-bad-name-{width}.png", full_page=True)
        page.fill("#n-file", "preferences")
        page.fill("#n-name", "tea")
        page.click("#save")
        expect(page.locator("#new-item-error")).to_contain_text("already exists")
        page.screenshot(path=screenshots / f"everyday-add-exists-{width}.png", full_page=True)
        page.click("#edit-existing")
        expect(page.locator("form.editor h1")).to_have_text("Edit tea")


# -- item 9: which time a diary HH:MM is ------------------------------------------------------------------

def test_the_diary_says_which_time_each_hhmm_is(world, operator_page, screenshots):
    owner = world.owner()
    owner.put_settings({"tz": "Asia/Tokyo"}, ctx=WriteContext(actor="test"))
    filed = owner.diary_append("Went hiking; told later, without a time.", date="2026-07-19",
                               ctx=WriteContext(actor="Elaina")).value
    told_on = datetime.fromisoformat(filed.ts).astimezone(ZoneInfo("Asia/Tokyo")).date().isoformat()
    for width in WIDTHS:
        page = operator_page(width, timezone_id="Asia/Tokyo")
        page.goto(owner_url(world, "/diary?day=2026-07-19"))
        events = page.locator("article.diary-entry")
        told = events.filter(has_text="Went hiking")
        expect(told.locator(".clock-kind")).to_have_text(f"{filed.time} when it was told, on {told_on}")
        expect(told.locator(".event-time time")).to_have_text(filed.time)
        happened = events.filter(has_text="window.__pwned")  # the seed's 21:00 entry, given with its time
        expect(happened.locator(".clock-kind")).to_have_text("21:00 when it happened")
        expect(page.locator(".legend")).to_contain_text("when it was told")
        assert page.evaluate("window.__pwned") is None
        page.screenshot(path=screenshots / f"everyday-diary-clock-{width}.png", full_page=True)
