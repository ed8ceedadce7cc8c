"""The demo data of ``wikimem serve --demo``: a newcomer rolls back its bad memorize run.

The README's steps, clicked in a real browser against the demo owners that
:func:`wikimem.host.demo.seed_demo` writes: sign in, open ``user:xnne``, open
History, the bad run, its confirmation page, confirm. The clicks are counted
(the figure "under a minute" stands on), not timed.
"""

from __future__ import annotations

import secrets
import threading

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_env import ADMIN_TOKEN

pytestmark = pytest.mark.browser


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


def test_a_newcomer_rolls_back_the_demo_bad_run_in_a_few_clicks(demo, page, screenshots):
    url, host, seeded = demo
    clicks = 0

    def click(selector: str) -> None:
        nonlocal clicks
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
    page.screenshot(path=screenshots / "demo-confirm-rollback.png", full_page=True)
    click("#confirm")
    expect(page.locator(".flash.ok")).to_contain_text("done")
    assert clicks == 6

    owner = host.owner("user:xnne")
    assert owner.store.get("preferences", "likes-the-sea").content.startswith("喜欢海边")
    assert [e.content for e in owner.diary.day("2026-07-23")] == []
    top = owner.vstore.history(limit=1).entries[0]
    assert top.action == "rollback" and top.actor == "admin"
