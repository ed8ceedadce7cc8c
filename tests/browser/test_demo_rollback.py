"""The demo data of ``wikimem serve --demo``: a newcomer rolls back its bad memorize run.

The steps of the README's tour and of the tutorial (step 2), clicked in a real browser
against the demo owners that :func:`wikimem.host.demo.seed_demo` writes: sign in, open
``user:xnne``, open History, the bad run, its confirmation page, confirm. The buttons the
steps name in bold are the ones clicked. The clicks are counted (the figure "under a
minute" stands on), not timed.

The picture of the README and the docs' landing page (``docs/img/rollback.png``) is this
test's screenshot of the confirmation page at 1280 pixels: ``make doc-images`` writes it
again (``UPDATE_DOC_IMAGES=1``).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import threading
from pathlib import Path

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_env import ADMIN_TOKEN

pytestmark = pytest.mark.browser
REPO = Path(__file__).resolve().parents[2]
DOC_IMAGE = REPO / "docs" / "img" / "rollback.png"


def bold_steps() -> list[str]:
    """The buttons and tabs the README's tour and the tutorial's step 2 tell the reader to click."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    tour = readme[readme.index("### 1. Roll back the demo's bad run"):readme.index("### 2.")]
    tutorial = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
    step = tutorial[tutorial.index("## 2. Undo a bad run"):tutorial.index("## 3.")]
    return re.findall(r"\*\*(.+?)\*\*", tour) + re.findall(r"\*\*(.+?)\*\*", step)


@pytest.fixture()
def demo(tmp_path, monkeypatch):
    from werkzeug.serving import make_server

    from webapp import create_app
    from wikimem.host import make_host
    from wikimem.host.demo import seed_demo

    root = tmp_path / "data"
    seeded = seed_demo(make_host(root))
    monkeypatch.setenv("WIKIMEM_DATA", str(root))
    monkeypatch.setenv("WIKIMEM_ADMIN_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("WIKIMEM_SECRET_KEY", secrets.token_hex(32))
    server = make_server("127.0.0.1", 0, create_app(), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", make_host(root), seeded
    finally:
        server.shutdown()
        thread.join()


def test_a_newcomer_rolls_back_the_demo_bad_run_in_a_few_clicks(demo, browser, screenshots):
    url, host, seeded = demo
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    clicks = 0
    labels: list[str] = []

    def click(selector: str) -> None:
        nonlocal clicks
        labels.append(" ".join(page.locator(selector).inner_text().split()))
        page.click(selector)
        clicks += 1

    page.goto(url + "/")
    page.fill("input[name=token]", ADMIN_TOKEN)
    click("#token-submit")
    click("a.owner-link:has-text('user:xnne')")
    click("nav.tabs >> text=History")
    group = page.locator("section.run", has=page.locator(f"a.run-link:text-is('{seeded.bad_run}')"))
    expect(group).to_contain_text("Elaina")
    click(f"a.run-link:text-is('{seeded.bad_run}')")
    expect(page.locator("section.change-changed .after")).to_contain_text("其实讨厌海边")
    click("#rollback")
    planned = page.locator("section[aria-label='planned changes']")
    expect(planned.locator("section.change")).to_have_count(2)
    expect(page.locator("section.conflicts")).to_have_count(0)
    page.screenshot(path=screenshots / "demo-confirm-rollback.png")
    if os.environ.get("UPDATE_DOC_IMAGES"):
        shutil.copyfile(screenshots / "demo-confirm-rollback.png", DOC_IMAGE)
    click("#confirm")
    expect(page.locator(".flash.ok")).to_contain_text("done")
    context.close()
    assert clicks == 6
    assert set(bold_steps()) <= set(labels), (bold_steps(), labels)  # the steps name what is there

    owner = host.owner("user:xnne")
    assert owner.store.get("preferences", "likes-the-sea").content.startswith("喜欢海边")
    assert [e.content for e in owner.diary.day("2026-07-23")] == []
    top = owner.vstore.history(limit=1).entries[0]
    assert top.action == "rollback" and top.actor == "admin"
