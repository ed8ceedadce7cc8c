"""The wiki-link graph of an owner in a real browser, on a laptop and a phone (issue 35): which item links where,
which links dangle — the data of ``wikimem graph`` — escaped, and every item a link away."""

from __future__ import annotations

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

pytestmark = pytest.mark.browser

HOSTILE = '<img src=x onerror="window.pwned=1">'


@pytest.mark.parametrize("width", ["laptop", "phone"])
def test_the_links_tab_shows_who_links_where_and_what_dangles(world, operator_page, screenshots, width):
    owner = world.owner()
    owner.add("notes", "trip-summary", f"Summer: [[daily_life:beach-trip-plan]], [[notes:{HOSTILE}]] and "
                                       "[[preferences:likes-the-sea]].")
    page = operator_page(width)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{world.url}/admin/owners/{world.seeded.owner}")
    page.locator("nav.tabs a", has_text="Links").click()
    expect(page.locator("nav.tabs a.active")).to_have_text("Links")
    dangling = page.locator("#dangling li")
    expect(dangling).to_have_count(2)
    expect(dangling.first).to_contain_text(f"[[notes:{HOSTILE}]]")  # the text, not an element
    expect(page.locator("#dangling")).to_contain_text("[[people:sister]]")
    row = page.locator("tr", has=page.locator("td[data-label=item] a", has_text="notes:trip-summary"))
    expect(row.locator("td[data-label='links to'] a")).to_have_count(2)  # two items; the third link dangles
    expect(row.locator("td[data-label='links to'] .badge.dangling")).to_have_text(f"notes:{HOSTILE}")
    plan = page.locator("tr", has=page.locator("td[data-label=item] a", has_text="daily_life:beach-trip-plan"))
    expect(plan.locator("td[data-label='linked from']")).to_have_text("notes:trip-summary")
    expect(plan.locator("td[data-label='links to'] .badge.dangling")).to_have_text("people:sister")
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"] + 1
    page.screenshot(path=screenshots / f"links-{width}.png", full_page=True)
    plan.locator("td[data-label=item] a").click()  # an item is a click away
    expect(page.locator("h1, h2").filter(has_text="beach-trip-plan").first).to_be_visible()
    assert dialogs == [] and page.evaluate("window.pwned === undefined")
