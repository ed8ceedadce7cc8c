"""Imports in a real browser, on a laptop (1280) and a phone (390): an operator uploads a character card, imports
a chat for one person — previews it, runs it —, then rolls it back.

The chat model is a stand-in server on 127.0.0.1 (tests/fakes.py); the card is a PNG carrying a V2 card and
the chat three days of SillyTavern's JSONL with swipes and system messages (tests/cardfiles.py).
"""

from __future__ import annotations

import pytest
from cardfiles import card_png, chat_file, stand_in_reply, v2_card
from fakes import FakeOpenAI

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

pytestmark = pytest.mark.browser

WIDTHS = {"laptop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def import_world(request, monkeypatch):
    with FakeOpenAI() as llm:
        llm.reply_fn = stand_in_reply
        monkeypatch.setenv("WIKIMEM_LLM_URL", llm.url)
        monkeypatch.setenv("WIKIMEM_LLM_MODEL", "fake-chat")
        yield request.getfixturevalue("world"), llm


def _signed_in(browser, url: str, width: str):
    from browser_env import ADMIN_TOKEN

    context = browser.new_context(viewport=WIDTHS[width], is_mobile=width == "phone")
    page = context.new_page()
    page.goto(url + "/login")
    page.fill("input[name=token]", ADMIN_TOKEN)
    page.click("#token-submit")
    page.wait_for_url(url + "/admin/")
    return context, page


@pytest.mark.parametrize("width", ["laptop", "phone"])
def test_an_operator_imports_a_card_and_a_chat_previews_runs_and_rolls_it_back(browser, import_world, screenshots,
                                                                               tmp_path, width):
    world, llm = import_world
    person = world.seeded.owner
    (tmp_path / "kai.png").write_bytes(card_png(v2_card(description="A barista. <b>bold</b>")))
    (tmp_path / "ann.jsonl").write_bytes(chat_file())
    context, page = _signed_in(browser, world.url, width)
    try:
        page.click("#imports-link")
        expect(page.locator("h1")).to_have_text("Imports")
        page.screenshot(path=screenshots / f"imports-{width}.png", full_page=True)
        # 1. the card: preview, then import
        page.set_input_files("#card-file", str(tmp_path / "kai.png"))
        page.click("#card-preview")
        expect(page.locator("#card-target")).to_contain_text("new character")
        expect(page.locator("#lore-counts")).to_have_text("5 added · 0 changed · 0 removed")
        page.screenshot(path=screenshots / f"imports-card-preview-{width}.png", full_page=True)
        page.click("#card-import")
        expect(page.locator(".flash")).to_contain_text("Card imported as kai")
        assert world.host.characters.get("kai").persona.startswith("A barista. <b>bold</b>")
        # 2. the chat for one person: preview, then run
        page.goto(world.url + "/admin/imports")
        page.fill("#chat-owner", person)
        page.select_option("#chat-character", "kai")
        page.fill("#chat-tz", "Europe/Berlin")
        page.set_input_files("#chat-file", str(tmp_path / "ann.jsonl"))
        page.click("#chat-preview")
        expect(page.locator("#chat-turns")).to_have_text("4")
        expect(page.locator("#chat-days")).to_contain_text("3 (2024-05-12 … 2024-05-15)")
        expect(page.locator("#chat-calls")).to_have_text("4")
        page.screenshot(path=screenshots / f"imports-chat-preview-{width}.png", full_page=True)
        assert llm.chat_calls == 0  # a preview asks the model nothing
        page.click("#chat-run")
        expect(page.locator("#job-state")).to_have_text("done", timeout=30_000)  # the page refreshes itself
        expect(page.locator("#job-progress")).to_have_text("4 of 4 turns")
        page.screenshot(path=screenshots / f"imports-chat-done-{width}.png", full_page=True)
        owner = world.host.owner(person)
        assert owner.diary_dates("kai") == ["2024-05-12", "2024-05-13", "2024-05-15"]
        # 3. rolled back
        page.click("#import-rollback")
        expect(page.locator("#rolled-back")).to_be_visible()
        expect(page.locator(".flash")).to_contain_text("rolled back")
        page.screenshot(path=screenshots / f"imports-rolled-back-{width}.png", full_page=True)
        assert world.host.owner(person).diary_dates("kai") == []
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}"
    finally:
        context.close()
