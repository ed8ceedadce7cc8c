"""Stored memory content never executes; the pages read well at laptop and phone widths.

The script check runs with the Content-Security-Policy bypassed, so it tests
the escaping itself, not only the CSP behind it.
"""

from __future__ import annotations

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_env import ADMIN_TOKEN, LAPTOP, PHONE
from browser_seed import OWNER, SCRIPT

pytestmark = pytest.mark.browser

# A marker that the injected code would set, plus a check for elements it would create.
PWNED = "() => window.__pwned === undefined && document.querySelectorAll('main script, main img').length === 0"


def sign_in(page, url: str) -> None:
    page.goto(url + "/login")
    page.fill("input[name=token]", ADMIN_TOKEN)
    page.click("#token-submit")
    page.wait_for_url(url + "/admin/")


def pages_with_the_script(world) -> list[str]:
    owner = world.owner()
    notes = owner.vstore.history(file="notes").entries[0].id
    diary = owner.vstore.history(date="2026-07-19").entries[0].id
    base = f"{world.url}/admin/owners/{OWNER}"
    return [f"{base}?file=notes", f"{base}/items/notes/odd-note", f"{base}/diary?day=2026-07-19",
            f"{base}/search?q=pwned+onerror", f"{base}/search?q=pwned&start=2026-07-19&end=2026-07-19",
            f"{base}/commits/{notes}", f"{base}/commits/{diary}", f"{base}/commits/{notes}/revert",
            f"{base}/history?file=notes"]


def test_stored_script_never_executes(world, browser, screenshots):
    context = browser.new_context(viewport=LAPTOP, bypass_csp=True)
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        sign_in(page, world.url)
        for url in pages_with_the_script(world):
            page.goto(url)
            page.wait_for_load_state("load")
            assert page.evaluate(PWNED), url
            if "/history" not in url:  # history shows names, not content
                # The content is shown as the text it is.
                expect(page.locator("main").get_by_text("<script>window.__pwned = 1</script>").first).to_be_visible()
        page.goto(pages_with_the_script(world)[1])
        page.screenshot(path=screenshots / "item-with-script.png", full_page=True)
    finally:
        context.close()
    assert dialogs == []


def test_ui_pages_send_a_content_security_policy(world, signed_in):
    response = signed_in.goto(f"{world.url}/admin/owners/{OWNER}/items/notes/odd-note")
    csp = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert SCRIPT not in signed_in.content()


def overflows(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth > document.documentElement.clientWidth + 1")


@pytest.mark.parametrize("width", ["laptop", "phone"])
def test_main_pages_fit_the_width(world, browser, screenshots, width):
    viewport = {"laptop": LAPTOP, "phone": PHONE}[width]
    context = browser.new_context(viewport=viewport, is_mobile=width == "phone")
    page = context.new_page()
    base = f"{world.url}/admin/owners/{OWNER}"
    bad = world.owner().vstore.history(run=world.seeded.bad_run).entries[0].id
    pages = {
        "owners": f"{world.url}/admin/",
        "owner": f"{base}?file=preferences",
        "item": f"{base}/items/preferences/likes-the-sea",
        "diary": f"{base}/diary?day=2026-07-20",
        "search": f"{base}/search?q=sea+beach+tea&budget=12",
        "history": f"{base}/history",
        "run": f"{base}/runs/{world.seeded.bad_run}",
        "commit": f"{base}/commits/{bad}",
        "confirm": f"{base}/runs/{world.seeded.bad_run}/rollback",
    }
    try:
        sign_in(page, world.url)
        wide = []
        for name, url in pages.items():
            page.goto(url)
            expect(page.locator("main")).to_be_visible()
            page.screenshot(path=screenshots / f"{name}-{width}.png", full_page=True)
            if overflows(page):
                wide.append(name)
        assert wide == [], f"pages wider than the {width} viewport"
    finally:
        context.close()
