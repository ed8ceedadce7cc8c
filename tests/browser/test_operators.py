"""Issue 16 items 1, 3, 4 and 5 in Chromium, at laptop and phone widths, with a screenshot of each page.

Runs across owners, editing in place (preview, a stale save, add, delete,
owner deletion), history (undo marks both ways, filters, compare, jump,
versions and blame) and the text search beside the retrieval explainer.
The bulk rollback over many owners has its own module.
"""

from __future__ import annotations

import pytest

from wikimem.context import WriteContext

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_env import open_filters
from browser_seed import BAD_RUN, BAD_WORDS, OTHER, OWNER

pytestmark = pytest.mark.browser

WIDTHS = ("laptop", "phone")


def owner_url(world, tail: str = "") -> str:
    return f"{world.url}/admin/owners/{OWNER}{tail}"


def fits(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1")


def test_find_runs_across_owners_and_count_them_per_owner(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        page.click("header.topbar >> text=Runs")
        page.fill("#r-actor", "Elaina")
        page.click("#find-runs")
        rows = page.locator("table.runs tbody tr")
        expect(page.locator(".total-owners")).to_have_text("1")
        expect(rows.filter(has_text=BAD_RUN)).to_have_count(1)
        expect(page.locator("#bulk-rollback")).to_be_visible()
        assert fits(page)
        page.screenshot(path=screenshots / f"ops-runs-{width}.png", full_page=True)
        page.select_option("#r-by", "owner")
        page.fill("#r-actor", "")
        page.click("#find-runs")
        expect(page.locator("table.owner-counts tbody tr")).to_have_count(2)
        expect(page.locator("table.owner-counts")).to_contain_text(OTHER)
        page.screenshot(path=screenshots / f"ops-runs-per-owner-{width}.png", full_page=True)


def test_edit_shows_the_diff_first_and_a_stale_save_writes_nothing(world, operator_page, screenshots):
    for width in WIDTHS:
        page, other = operator_page(width), operator_page(width)
        page.goto(owner_url(world, "/items/preferences/tea"))
        page.click("#edit-item")
        page.fill("#e-content", f"Drinks {width} green tea every morning.")
        page.click("#preview")
        before = world.owner().item("preferences", "tea").content
        expect(page.locator(".edit-preview .before")).to_have_text("before" + before)
        expect(page.locator(".edit-preview .after")).to_contain_text(f"Drinks {width} green tea every morning.")
        expect(page.locator(".edit-preview ins").first).to_contain_text(width)
        expect(page.locator(".edit-preview del").first).not_to_be_empty()
        page.screenshot(path=screenshots / f"ops-edit-preview-{width}.png", full_page=True)
        # another operator saves first
        other.goto(owner_url(world, "/edit/preferences/tea"))
        other.fill("#e-content", f"Switched to coffee ({width}).")
        other.click("#save")
        expect(other.locator(".flash.ok")).to_contain_text("Saved")
        head = world.owner().head()
        page.click("#save")
        expect(page.locator("[role=alert]")).to_contain_text("Someone changed this item")
        expect(page.locator(".edit-preview .before")).to_contain_text("coffee")
        assert world.owner().head() == head
        assert world.owner().item("preferences", "tea").content == f"Switched to coffee ({width})."
        page.screenshot(path=screenshots / f"ops-edit-conflict-{width}.png", full_page=True)
        page.click("#save")  # deliberately over theirs, now that both were shown
        expect(page.locator(".flash.ok")).to_contain_text("Saved")
        assert world.owner().item("preferences", "tea").content == f"Drinks {width} green tea every morning."
        assert world.owner().history(limit=1).entries[0].actor == "admin"


def test_add_then_delete_an_item(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        name = f"likes-{width}"
        page.goto(owner_url(world, "?file=preferences"))
        page.click("#new-item")
        expect(page.locator("#n-file")).to_have_value("preferences")
        page.fill("#n-name", name)
        page.fill("#n-content", "Likes <b>bold</b> statements.")
        page.screenshot(path=screenshots / f"ops-new-item-{width}.png", full_page=True)
        page.click("#save")
        expect(page.locator("article h1")).to_have_text(name)
        expect(page.locator(".blame")).to_contain_text("current text written by")
        assert world.owner().item("preferences", name).content == "Likes <b>bold</b> statements."
        page.click("#delete-item")
        page.screenshot(path=screenshots / f"ops-delete-item-{width}.png", full_page=True)
        page.click("#confirm")
        expect(page.locator(".flash.ok")).to_contain_text("Deleted")
        assert not world.owner().has_item("preferences", name)


def test_deleting_an_owner_needs_its_id_typed(world, operator_page, screenshots):
    for width, victim in zip(WIDTHS, ("user:gone-1", "user:gone-2")):
        world.host.ensure_owner(victim)[0].add("notes", "n", "soon gone")
        page = operator_page(width)
        page.goto(f"{world.url}/admin/owners/{victim}")
        page.click(".danger-zone summary")
        page.click("#delete-owner")
        page.fill("#confirm-id", victim[:-1])
        page.click("#confirm")
        expect(page.locator("[role=alert]")).to_contain_text("Type the owner id")
        assert world.host.exists(victim)
        page.screenshot(path=screenshots / f"ops-delete-owner-{width}.png", full_page=True)
        page.fill("#confirm-id", victim)
        page.click("#confirm")
        expect(page.locator(".flash.ok")).to_contain_text(f"Deleted owner {victim}")
        assert not world.host.exists(victim)


def test_history_marks_the_rolled_back_run_and_links_both_ways(world, operator_page, screenshots):
    page = operator_page("laptop")
    page.goto(owner_url(world, f"/runs/{BAD_RUN}/rollback"))
    page.click("#confirm")
    rollback = world.owner().head()
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, "/history"))
        open_filters(page)
        group = page.locator("section.run", has=page.locator(f"a.run-link:text-is('{BAD_RUN}')"))
        expect(group.locator(".undone").first).to_contain_text(f"rolled back by {rollback[:10]}")
        undo_row = page.locator("section.card", has=page.locator(f"a.commit-link:text-is('{rollback[:10]}')"))
        expect(undo_row.locator(".undoes")).to_contain_text(f"undoes run {BAD_RUN}")
        page.screenshot(path=screenshots / f"ops-history-marks-{width}.png", full_page=True)
        undo_row.locator("a.undone-run").click()  # undo commit → the run it undid
        expect(page.locator(".panel h1")).to_contain_text(BAD_RUN)
        page.locator(".undone a.undo-link").first.click()  # the run → the commit that undid it
        expect(page.locator("code.commit-id")).to_have_text(rollback)
        expect(page.locator(".undo-links")).to_contain_text(f"undoes run {BAD_RUN}")
        assert "Wikimem-Reverts-Run" not in page.content()  # the page reads, it does not dump trailers


def test_history_filters_compare_and_jump(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, "/history"))
        open_filters(page)
        page.fill("#f-actor", "operator")
        page.click("form.history-filters button[type=submit]")
        expect(page.locator("li.commit")).to_have_count(1)
        expect(page.locator("section.card")).to_contain_text("work/job")  # a single commit's card: its summary
        page.goto(owner_url(world, "/history?action=batch"))
        expect(page.locator("li.commit")).to_have_count(2)
        # compare: from the first commit to the newest
        page.goto(owner_url(world, "/history"))
        open_filters(page)
        commits = page.locator("li.commit")
        commits.last.locator("input[name=from]").check()
        commits.first.locator("input[name=to]").check()
        page.click("#compare-go")
        expect(page.locator(".compare-ends")).to_contain_text("from")
        expect(page.locator("section.change").filter(has_text="likes-the-sea")).to_contain_text(BAD_WORDS)
        page.screenshot(path=screenshots / f"ops-compare-{width}.png", full_page=True)
        # jump to a date before anything happened: nothing; to today: the newest page
        page.goto(owner_url(world, "/history"))
        open_filters(page)
        page.fill("#jump", "2001-01-01")
        page.click("#jump-go")
        expect(page.locator(".notice")).to_contain_text("at or before 2001-01-01")
        assert fits(page)


def test_history_pages_newer_and_older(world, operator_page):
    owner = world.owner()
    for i in range(55):  # more than a page
        owner.vstore.add("notes", f"n{i}", f"note {i}", owner=OWNER, ctx=WriteContext(actor="bot"))
    page = operator_page("laptop")
    page.goto(owner_url(world, "/history"))
    open_filters(page)
    first = page.locator("a.commit-link").first.inner_text()
    page.locator("nav.pager a.older").first.click()
    expect(page.locator("a.commit-link").first).not_to_have_text(first)
    page.locator("nav.pager a.newer").first.click()
    expect(page.locator("a.commit-link").first).to_have_text(first)


def test_item_versions_and_blame(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, "/items/preferences/likes-the-sea"))
        blame = page.locator(".blame")
        expect(blame).to_contain_text("current text written by")
        expect(blame).to_contain_text(BAD_RUN)
        page.click("text=All versions")
        versions = page.locator("section.version")
        expect(versions).to_have_count(2)
        expect(versions.first.locator("ins").last).to_contain_text(BAD_WORDS)
        expect(versions.last).to_contain_text("喜欢海边")
        page.screenshot(path=screenshots / f"ops-versions-{width}.png", full_page=True)


def test_text_search_beside_the_retrieval_explainer(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world))
        page.click("nav.tabs >> text=Search")
        page.fill("#text-q", "SEA")
        page.click("#text-go")
        results = page.locator("section.text-results")
        expect(results.locator("mark").first).to_have_text("sea", ignore_case=True)
        expect(results).to_contain_text("diary 2026-07-20")
        expect(results).to_contain_text("likes-the-sea")
        assert page.evaluate("() => window.__pwned === undefined")  # memory content stays text
        page.screenshot(path=screenshots / f"ops-text-search-{width}.png", full_page=True)
        page.click("nav.subtabs >> text=Retrieval (explain)")
        expect(page.locator("#q")).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_new_pages_fit_the_width(world, operator_page, width):
    page = operator_page(width)
    base = f"/admin/owners/{OWNER}"
    for tail in ("/admin/runs?actor=Elaina", "/admin/runs?by=owner", f"/admin/bulk/rollback?run={BAD_RUN}",
                 f"{base}/history?actor=Elaina", f"{base}/diff?from=HEAD~4",
                 f"{base}/versions/preferences/likes-the-sea", f"{base}/edit/preferences/likes-the-sea",
                 f"{base}/new-item", f"{base}/delete-owner",
                 f"{base}/find?q=sea", "/admin/timezone"):
        page.goto(world.url + tail)
        assert fits(page), tail
