"""Forgetting and erasing in a real browser, on a laptop and a phone (issue 27).

The operator forgets a wiki item and a diary entry with their history, then
erases an owner everywhere: each from its page, through a confirmation that
must be typed, to the job's page and its receipt. Screenshots of every
step go to ``tests/screenshots/``. Afterwards the data root holds no byte
of what was forgotten or erased (git objects decompressed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from traces import traces  # noqa: E402

from wikimem.host import encode_owner_id  # noqa: E402

pytestmark = pytest.mark.browser

TEA = "Drinks oolong tea every morning."


def _receipt(page) -> None:
    """Wait for the job page (it refreshes itself) to show the finished job and its receipt."""
    expect(page.locator("#job-state")).to_have_text("done", timeout=30_000)
    expect(page.locator("#receipt")).to_be_visible()


@pytest.mark.parametrize("width", ["laptop", "phone"])
def test_an_operator_forgets_an_item_and_a_diary_entry_with_their_history(world, operator_page, screenshots, width):
    owner = world.seeded.owner
    page = operator_page(width)
    page.goto(f"{world.url}/admin/owners/{owner}/items/preferences/tea")
    page.click("#forget-item")
    expect(page.locator(".forget h1")).to_contain_text("Forget")
    page.screenshot(path=screenshots / f"forget-confirm-{width}.png", full_page=True)
    page.fill("#confirm-name", "coffee")  # not its name: refused, nothing forgotten
    page.click("#confirm-forget")
    expect(page.locator(".error")).to_contain_text("name exactly")
    page.fill("#confirm-name", "tea")
    page.click("#confirm-forget")
    _receipt(page)
    expect(page.locator("table.receipt-places")).to_contain_text("rewritten without it")
    page.screenshot(path=screenshots / f"forget-receipt-{width}.png", full_page=True)
    assert world.owner().store.get("preferences", "tea") is None
    assert traces([world.root], [TEA]) == []

    page.goto(f"{world.url}/admin/owners/{owner}/diary?day=2026-07-20")
    page.locator("a.forget-entry").first.click()
    expect(page.locator(".forget h1")).to_contain_text("2026-07-20 18:30")
    page.fill("#confirm-time", "18:30")
    page.screenshot(path=screenshots / f"forget-entry-confirm-{width}.png", full_page=True)
    page.click("#confirm-forget")
    _receipt(page)
    page.goto(f"{world.url}/admin/owners/{owner}/diary?day=2026-07-20")
    expect(page.locator("article.diary-entry")).to_have_count(1)
    assert traces([world.root], ["Talked about the sea at sunset"]) == []
    page.goto(f"{world.url}/admin/owners/{owner}/history")
    expect(page.locator("body")).to_contain_text("forget: a wiki item in preferences")


@pytest.mark.parametrize("width", ["laptop", "phone"])
def test_an_operator_erases_an_owner_everywhere(world, operator_page, screenshots, width):
    owner = world.seeded.owner
    page = operator_page(width)
    page.goto(f"{world.url}/admin/owners/{owner}")
    page.click("details.danger-zone summary")
    page.click("#erase-owner")
    expect(page.locator(".erase-owner h1")).to_contain_text("everywhere")
    page.fill("#confirm-id", "user:someone-else")
    page.click("#confirm-erase")
    expect(page.locator(".error")).to_contain_text("owner id exactly")
    page.fill("#confirm-id", owner)
    page.screenshot(path=screenshots / f"erase-confirm-{width}.png", full_page=True)
    page.click("#confirm-erase")
    _receipt(page)
    expect(page.locator("#remains")).to_contain_text("Nothing is left to do")
    expect(page.locator(".erasure-job")).not_to_contain_text(owner)
    page.screenshot(path=screenshots / f"erase-receipt-{width}.png", full_page=True)
    page.goto(f"{world.url}/admin/")
    expect(page.locator("body")).not_to_contain_text(owner)
    assert page.goto(f"{world.url}/admin/owners/{owner}").status == 404
    assert traces([world.root], [owner, encode_owner_id(owner), TEA]) == []
