"""What a newcomer meets in the first hour (issue 36), in a real browser at laptop (1280) and phone (390) widths.

- the documentation site's landing page, built by mkdocs and served from the built folder;
- Jobs in the admin top bar;
- the owners list sorted by last change, its paging labels saying which way it goes;
- the Diary tab opening on the latest day not after today, later days marked planned;
- History's filters folded into one line on a phone, so the history is on the first screen.

Screenshots go to tests/screenshots/ (first-hour-*.png).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
import time
from datetime import date, timedelta
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_env import ADMIN_TOKEN  # noqa: E402
from browser_seed import OWNER  # noqa: E402

from wikimem.context import WriteContext  # noqa: E402

pytestmark = pytest.mark.browser
REPO = Path(__file__).resolve().parents[2]
WIDTHS = {"laptop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def signed_in(browser, world, width: str):
    context = browser.new_context(viewport=WIDTHS[width], is_mobile=width == "phone")
    page = context.new_page()
    page.goto(world.url + "/login")
    page.fill("input[name=token]", ADMIN_TOKEN)
    page.click("#token-submit")
    page.wait_for_url(world.url + "/admin/")
    return context, page


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install -e .[dev])")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(out))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join()


@pytest.mark.parametrize("width", ["laptop", "phone"])
def test_the_docs_landing_page(browser, site, screenshots, width):
    context = browser.new_context(viewport=WIDTHS[width], is_mobile=width == "phone")
    page = context.new_page()
    page.goto(site + "/")
    expect(page.locator("article h1")).to_contain_text("wikimem host")
    picture = page.locator("article img").first
    expect(picture).to_be_visible()
    assert picture.evaluate("img => img.complete && img.naturalWidth") > 0
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]["width"]  # nothing overflows
    page.screenshot(path=screenshots / f"first-hour-docs-landing-{width}.png")
    page.click("article a:has-text('Tutorial: your first hour')")
    expect(page.locator("article h1")).to_contain_text("Tutorial: your first hour")
    context.close()


@pytest.mark.parametrize("width", ["laptop", "phone"])
def test_jobs_is_in_the_top_bar(browser, world, screenshots, width):
    context, page = signed_in(browser, world, width)
    page.click("header.topbar >> text=Jobs")
    page.wait_for_url(world.url + "/admin/jobs")
    expect(page.locator("h1")).to_contain_text("Background jobs")
    page.screenshot(path=screenshots / f"first-hour-jobs-{width}.png")
    context.close()


def test_owners_sort_by_last_change_and_page_honestly(browser, world, screenshots):
    for i in range(50):  # more than a page
        owner, _ = world.host.ensure_owner(f"user:pad{i:02d}")
        owner.vstore.add("notes", "n", "A note.", ctx=WriteContext(actor="Elaina"))
    time.sleep(1.1)  # (commit times are in seconds)
    world.owner(OWNER).vstore.add("notes", "latest", "Written last.", ctx=WriteContext(actor="Elaina"))
    for width in ("laptop", "phone"):
        context, page = signed_in(browser, world, width)
        pager = page.locator("nav.pager")
        expect(pager.locator("a.more")).to_have_text("next »")  # by id: no "older" on an alphabetical list
        page.click("#owners-sort >> text=by last change")
        expect(page.locator("#owners-sort b")).to_have_text("by last change")
        expect(page.locator("a.owner-link").first).to_have_text(OWNER)  # the last changed first
        expect(pager.locator("a.more")).to_have_text("older »")
        page.screenshot(path=screenshots / f"first-hour-owners-by-change-{width}.png")
        page.click("nav.pager >> text=older »")
        expect(page.locator("a.owner-link")).to_have_count(2)  # 52 owners, 50 a page
        expect(pager.locator("a.first")).to_have_text("« newest")
        context.close()


def test_the_diary_opens_on_today_at_the_latest_and_marks_planned_days(browser, world, screenshots):
    today = date.today()
    planned = (today + timedelta(days=3)).isoformat()
    lived = (today - timedelta(days=1)).isoformat()
    vs = world.owner(OWNER).vstore
    vs.diary_append("Went to the seaside.", date=lived, time="10:00", owner=OWNER, ctx=WriteContext(actor="Elaina"))
    vs.diary_append("Will fly to Qingdao.", date=planned, time="09:00", owner=OWNER, ctx=WriteContext(actor="Elaina"))
    for width in ("laptop", "phone"):
        context, page = signed_in(browser, world, width)
        page.goto(f"{world.url}/admin/owners/{OWNER}/diary")
        expect(page.locator("section[aria-label=events] h2")).to_contain_text(lived)  # not the planned day
        page.goto(f"{world.url}/admin/owners/{OWNER}/diary?day={planned}")
        expect(page.locator("section[aria-label=events] h2 .badge.planned")).to_have_text("planned")
        expect(page.locator(f"td.planned a[title^='{planned}']")).to_be_visible()
        expect(page.locator("#planned-legend")).to_be_visible()
        page.screenshot(path=screenshots / f"first-hour-diary-planned-{width}.png", full_page=True)
        context.close()


def test_history_filters_fold_on_a_phone(browser, world, screenshots):
    url = f"{world.url}/admin/owners/{OWNER}/history"
    context, page = signed_in(browser, world, "phone")
    page.goto(url)
    fold = page.locator("details.filters-fold")
    expect(fold).not_to_have_attribute("open", "")
    expect(page.locator("#f-file")).to_be_hidden()
    first_card = page.locator("section.run").first
    assert first_card.bounding_box()["y"] < WIDTHS["phone"]["height"]  # the history starts on the first screen
    page.screenshot(path=screenshots / "first-hour-history-phone.png")
    page.click("details.filters-fold > summary")
    expect(page.locator("#f-file")).to_be_visible()
    page.goto(url + "?actor=Elaina")  # a filter set: they stay open, and say so
    expect(fold).to_have_attribute("open", "")
    expect(fold.locator("summary .badge")).to_have_text("1 set")
    context.close()
    context, page = signed_in(browser, world, "laptop")
    page.goto(url)
    expect(page.locator("#f-file")).to_be_visible()  # a wider screen keeps them open, without a fold line
    expect(page.locator("details.filters-fold > summary")).to_be_hidden()
    page.screenshot(path=screenshots / "first-hour-history-laptop.png")
    context.close()
