"""Issue 33 point 7 in Chromium: an operator sees a person whole, at laptop (1280) and phone (390) widths.

The operator registers Kai, Mira and Elaina on the Characters page; a bot writes into each one's layer of
``user:ann`` and memorizes a turn as Kai over the JSON API, the chat model being a stand-in server on 127.0.0.1
(:class:`fakes.FakeOpenAI`). Then, in the browser: the person's overview, the layer switch, recall as each
character (Kai's secret is recalled as Kai, never as Mira), Kai's proposal approved on the Staged pages (and Mira
recalls the fact), Kai's run rolled back from its layer's history, and Kai's page with the bulk rollback of its
runs. Hostile markup is written into every layer: no dialog may open. A screenshot of each step goes to
``tests/screenshots/`` (``characters-*``).
"""

from __future__ import annotations

import json
import secrets
import sys
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_env import ADMIN_TOKEN, CHROMIUM_ARGS  # noqa: E402,F401

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the stand-in chat server, the layered world
from fakes import FakeOpenAI  # noqa: E402
from layered_world import (  # noqa: E402
    CHARACTERS,
    HOSTILE,
    MEMORIZE_REPLY,
    MEMORIZED_DIARY,
    MEMORIZED_FACT,
    PERSON,
    SECRETS,
)

pytestmark = pytest.mark.browser

WIDTHS = {"laptop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@dataclass
class Served:
    url: str
    chat: FakeOpenAI

    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        """A bot's call to the JSON API (the admin token), over HTTP."""
        request = urllib.request.Request(self.url + "/api/v1" + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())


@pytest.fixture()
def served(tmp_path, monkeypatch):
    """The real app over an empty data root, its chat model a stand-in server answering :data:`MEMORIZE_REPLY`."""
    from werkzeug.serving import make_server

    from webapp import create_app

    chat = FakeOpenAI().start()
    chat.reply_fn = lambda _messages: MEMORIZE_REPLY
    for key, value in {"WIKIMEM_DATA": str(tmp_path / "data"), "WIKIMEM_ADMIN_TOKEN": ADMIN_TOKEN,
                       "WIKIMEM_SECRET_KEY": secrets.token_hex(32), "WIKIMEM_LLM_URL": chat.url,
                       "WIKIMEM_LLM_MODEL": "stand-in"}.items():
        monkeypatch.setenv(key, value)
    server = make_server("127.0.0.1", 0, create_app(), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{server.server_port}", chat)
    finally:
        server.shutdown()
        thread.join()
        chat.stop()


def signed_in(browser, served: Served, width: str):
    context = browser.new_context(viewport=WIDTHS[width], is_mobile=width == "phone")
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(served.url + "/login")
    page.fill("input[name=token]", ADMIN_TOKEN)
    page.click("#token-submit")
    page.wait_for_url(served.url + "/admin/")
    return context, page, dialogs


def fits(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1")


def register_characters(page, served: Served, shots, width: str) -> None:
    page.click("#characters-link")
    expect(page.locator("#no-characters")).to_be_visible()
    for character, (name, persona) in CHARACTERS.items():
        page.fill("#c-id", character)
        page.fill("#c-name", name)
        page.fill("#c-persona", persona)
        page.click("#register")
        expect(page.locator(".flash.ok")).to_contain_text(f"Registered the character {character}")
        expect(page.locator("#def-persona")).to_have_text(persona)  # the persona's markup, as text
        page.goto(served.url + "/admin/characters")
    expect(page.locator("table.characters tbody tr")).to_have_count(3)
    page.screenshot(path=shots / f"characters-registry-{width}.png", full_page=True)


def bot_writes(served: Served) -> str:
    """What the bot does over the API: a shared fact, a secret in each character's layer, a turn memorized as Kai."""
    served.api("PUT", f"/owners/{PERSON}", None)
    served.api("PUT", f"/owners/{PERSON}/items/people/ann", {"content": f"Ann lives by the sea. {HOSTILE['shared']}"})
    for character, secret in SECRETS.items():
        served.api("PUT", f"/owners/{PERSON}/items/secrets/code-word",
                   {"content": f"Ann told me the code word {secret}. {HOSTILE[character]}", "character": character})
        served.api("POST", f"/owners/{PERSON}/diary", {"content": f"A walk with Ann; she whispered {secret}.",
                                                       "date": "2026-07-20", "time": "10:00", "character": character})
    done = served.api("POST", f"/owners/{PERSON}/memorize", {"turn": "user: I started surfing lessons!",
                                                              "character": "kai"})
    assert done["proposal"] and {w["layer"] for w in done["writes"]} == {"character", "shared"}
    assert served.chat.chat_calls == 1
    return done["run"]


def switch_to(page, label: str) -> None:
    page.locator("nav.layer-switch a", has_text=label).first.click()
    expect(page.locator("nav.layer-switch a.active")).to_have_text(label)


def recall(page, served: Served, shots, width: str) -> None:
    page.goto(f"{served.url}/admin/owners/{PERSON}/search")
    page.fill("#q", "code word")
    page.select_option("#recall-as", "kai")
    page.locator("form[role=search] button[type=submit]").click()
    results = page.locator("section[aria-label=results]")
    expect(results).to_contain_text(SECRETS["kai"])
    expect(page.locator("#recalled-as")).to_contain_text("recalled as Kai")
    expect(results.locator(".badge.layer-character").first).to_have_text("kai")
    page.screenshot(path=shots / f"characters-recall-kai-{width}.png", full_page=True)
    switch_to(page, "Mira")  # one click: the same question, asked as Mira
    expect(page.locator("#q")).to_have_value("code word")
    expect(results).to_contain_text(SECRETS["mira"])
    expect(results).not_to_contain_text(SECRETS["kai"])
    page.screenshot(path=shots / f"characters-recall-mira-{width}.png", full_page=True)
    switch_to(page, "Shared only")
    expect(results).not_to_contain_text(SECRETS["kai"])
    expect(results).not_to_contain_text(SECRETS["mira"])


def approve_proposal(page, served: Served, run: str, shots, width: str) -> None:
    page.click("#staged-link")
    page.locator("a.run-link", has_text=run).click()
    expect(page.locator("#proposed-by")).to_contain_text("proposed by character kai")
    page.locator("a.owner-diff", has_text=PERSON).click()
    expect(page.locator("#proposed-by")).to_contain_text("kai")
    expect(page.locator(".change")).to_contain_text(MEMORIZED_FACT)
    page.screenshot(path=shots / f"characters-proposal-{width}.png", full_page=True)
    page.click("#approve")
    expect(page).to_have_url(f"{served.url}/admin/owners/{PERSON}/commits/" + page.url.rsplit("/", 1)[-1])
    page.goto(f"{served.url}/admin/owners/{PERSON}/search?q=surf&character=mira")
    expect(page.locator("section[aria-label=results]")).to_contain_text(MEMORIZED_FACT)  # Mira knows it now


def roll_back_run(page, served: Served, run: str, shots, width: str) -> None:
    page.goto(f"{served.url}/admin/owners/{PERSON}/history")
    switch_to(page, "Kai")
    card = page.locator("section.run", has=page.locator("a.run-link", has_text=run))
    expect(card).to_contain_text("in kai")
    page.screenshot(path=shots / f"characters-history-kai-{width}.png", full_page=True)
    card.locator("text=roll back this run").click()
    expect(page.locator("body")).to_contain_text(MEMORIZED_DIARY)  # the plan: what goes
    page.screenshot(path=shots / f"characters-rollback-confirm-{width}.png", full_page=True)
    page.locator("form button[type=submit].danger").first.click()
    expect(page.locator(".flash.ok")).to_contain_text("Roll back run: done")
    page.goto(f"{served.url}/admin/owners/{PERSON}/diary?character=kai")
    expect(page.locator("section[aria-label=events]")).not_to_contain_text(MEMORIZED_DIARY)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_an_operator_reviews_a_person_whole(browser, served, screenshots, width):
    context, page, dialogs = signed_in(browser, served, width)
    try:
        register_characters(page, served, screenshots, width)
        run = bot_writes(served)
        page.goto(f"{served.url}/admin/owners/{PERSON}")
        rows = page.locator("#person-overview tr.layer-row")
        expect(rows).to_have_count(4)  # shared, elaina, kai, mira
        expect(rows.filter(has_text="Kai")).to_contain_text("2")
        page.screenshot(path=screenshots / f"characters-person-{width}.png", full_page=True)
        switch_to(page, "Kai")
        page.locator("nav[aria-label='wiki files'] a", has_text="secrets").click()
        expect(page.locator("section[aria-label=items]")).to_contain_text(SECRETS["kai"])
        expect(page.locator("section[aria-label=items]")).to_contain_text(HOSTILE["kai"])  # shown as text
        assert fits(page)
        page.screenshot(path=screenshots / f"characters-layer-kai-{width}.png", full_page=True)
        switch_to(page, "Mira")
        expect(page.locator("section[aria-label=items]")).to_contain_text(SECRETS["mira"])
        expect(page.locator("section[aria-label=items]")).not_to_contain_text(SECRETS["kai"])
        page.locator("nav.tabs a", has_text="Diary").click()  # the layer goes with the tabs
        expect(page.locator("nav.layer-switch a.active")).to_have_text("Mira")
        page.screenshot(path=screenshots / f"characters-diary-mira-{width}.png", full_page=True)
        recall(page, served, screenshots, width)
        assert fits(page)
        approve_proposal(page, served, run, screenshots, width)
        roll_back_run(page, served, run, screenshots, width)
        page.goto(served.url + "/admin/characters/kai")
        expect(page.locator("#profile")).to_be_visible()
        page.click("#bulk-rollback-character")
        expect(page.locator("h1")).to_contain_text("Roll back")
        expect(page.locator(".selection")).to_contain_text("character")
        assert fits(page)
        page.screenshot(path=screenshots / f"characters-bulk-preview-{width}.png", full_page=True)
        assert dialogs == []  # no hostile markup ran, in any layer
    finally:
        context.close()
