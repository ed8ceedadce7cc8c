"""Issue 34 point 4 in Chromium: an operator filters a person's diary by channel and sees who was present, at laptop
(1280) and phone (390) widths.

A bot registers Kai and Mira and writes Ann's diary over the JSON API (:mod:`channel_world`: a direct chat with
Kai, a group G1 with Bob and Kai, a group G2 with Mira, an entry that says nothing of a room, and Kai's own note of
G1 in Kai's layer). Then, in the browser: the Diary filtered to G1 (the calendar, the entry and who was present),
the layer switch keeping the channel, the direct chat's "who could have heard this?" (kept out of rooms with
others; Kai may recall it alone with Ann, no other character ever), and History filtered by channel down to the
commit that shows who was there. Hostile markup is in every entry: no dialog may open. A screenshot of each step
goes to ``tests/screenshots/`` (``channels-*``).
"""

from __future__ import annotations

import secrets
import sys
import threading
from pathlib import Path

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_env import ADMIN_TOKEN, open_filters  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the world of rooms
from channel_world import ANN, BOB, KAI_NOTE, ROOM_CHARACTERS, SHARED_ENTRIES, XSS  # noqa: E402
from test_characters_operator import WIDTHS, Served, fits, signed_in  # noqa: E402  (as issue 33's test does)

pytestmark = pytest.mark.browser


@pytest.fixture()
def served(tmp_path, monkeypatch):
    """The real app over an empty data root, on 127.0.0.1."""
    from werkzeug.serving import make_server

    from webapp import create_app

    for key, value in {"WIKIMEM_DATA": str(tmp_path / "data"), "WIKIMEM_ADMIN_TOKEN": ADMIN_TOKEN,
                       "WIKIMEM_SECRET_KEY": secrets.token_hex(32)}.items():
        monkeypatch.setenv(key, value)
    server = make_server("127.0.0.1", 0, create_app(), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{server.server_port}", chat=None)  # no chat model: nothing is memorized
    finally:
        server.shutdown()
        thread.join()


def bot_writes(served: Served) -> None:
    """What the bot does over the API: the characters, then Ann's diary, each entry with its room."""
    for character, name in ROOM_CHARACTERS.items():
        served.api("PUT", f"/characters/{character}", {"name": name, "shared_writes": "staged"})
    for person in (ANN, BOB):
        served.api("PUT", f"/owners/{person}", None)
    for day, (time, channel, present, content) in SHARED_ENTRIES.items():
        room = {"channel": channel, "present": present} if channel else {}
        served.api("POST", f"/owners/{ANN}/diary", {"content": content, "date": day, "time": time, **room})
    day, time, channel, present, content = KAI_NOTE
    served.api("POST", f"/owners/{ANN}/diary", {"content": content, "date": day, "time": time, "channel": channel,
                                                "present": present, "character": "kai"})


def filter_diary(page, served: Served, shots, width: str) -> None:
    page.goto(f"{served.url}/admin/owners/{ANN}/diary")
    page.select_option("#f-channel", "g1")
    page.click("#channel-go")
    expect(page.locator("#channel-note")).to_contain_text("only what was said in g1")
    events = page.locator("section[aria-label=events]")
    expect(events).to_contain_text("Quiz night in G1 with Bob.")
    expect(events).to_contain_text(XSS)  # the hostile markup, as text
    expect(events).not_to_contain_text("BLUEFIN")  # the direct chat is not in G1
    expect(page.locator("table.calendar td.has")).to_have_count(1)
    entry = events.locator("article.diary-entry")
    expect(entry.locator(".channel-id")).to_have_text("g1")
    expect(entry.locator(".present-id")).to_have_text([ANN, BOB, "char:kai"])
    assert fits(page)
    page.screenshot(path=shots / f"channels-diary-g1-{width}.png", full_page=True)
    page.locator("nav.layer-switch a", has_text="Kai").first.click()  # the channel stays with the layer switch
    expect(page.locator("nav.layer-switch a.active")).to_have_text("Kai")
    expect(page.locator("#f-channel")).to_have_value("g1")
    expect(events).to_contain_text("I lost the quiz to Bob.")
    expect(events).not_to_contain_text("Quiz night")
    page.screenshot(path=shots / f"channels-diary-g1-kai-{width}.png", full_page=True)


def who_heard_the_direct_chat(page, served: Served, shots, width: str) -> None:
    page.goto(f"{served.url}/admin/owners/{ANN}/diary")
    page.select_option("#f-channel", "dm")
    page.click("#channel-go")
    events = page.locator("section[aria-label=events]")
    expect(events).to_contain_text("BLUEFIN")
    expect(events.locator(".badge.dm")).to_have_text("direct chat")
    events.locator("a.who-heard").first.click()
    expect(page.locator("#heard-channel")).to_contain_text("dm")
    expect(page.locator("#heard-persons")).to_have_text(f"{ANN} (this person)")
    expect(page.locator("#heard-characters")).to_have_text("kai")
    expect(page.locator("#dm-kept")).to_be_visible()
    kai = page.locator("#recallers tr[data-recaller=kai] [data-verdict]")
    expect(kai).to_have_text(["yes", "no"])  # alone with Ann: yes; someone else there: no
    expect(page.locator("#recallers tr[data-recaller='*'] [data-verdict]")).to_have_text(["no", "no"])
    assert fits(page)
    page.screenshot(path=shots / f"channels-heard-dm-{width}.png", full_page=True)
    page.click("#back-to-day")
    expect(page.locator("section[aria-label=events] h2")).to_contain_text("2026-03-01")


def history_by_channel(page, served: Served, shots, width: str) -> None:
    page.goto(f"{served.url}/admin/owners/{ANN}/history?character=*")
    open_filters(page)
    page.select_option("#f-channel", "g1")
    page.locator("form.history-filters button[type=submit]").click()
    expect(page.locator("#channel-note")).to_contain_text("g1")
    expect(page.locator("a.commit-link")).to_have_count(2)  # Ann's G1 evening and Kai's note of it
    assert fits(page)
    page.screenshot(path=shots / f"channels-history-g1-{width}.png", full_page=True)
    page.locator("a.commit-link").first.click()
    change = page.locator("#changes .change").first
    expect(change.locator(".channel-id")).to_have_text("g1")
    expect(change.locator(".present-id")).to_have_text([ANN, BOB, "char:kai"])
    page.screenshot(path=shots / f"channels-commit-{width}.png", full_page=True)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_an_operator_filters_a_diary_by_channel_and_sees_who_was_present(browser, served, screenshots, width):
    bot_writes(served)
    context, page, dialogs = signed_in(browser, served, width)
    try:
        filter_diary(page, served, screenshots, width)
        who_heard_the_direct_chat(page, served, screenshots, width)
        history_by_channel(page, served, screenshots, width)
        assert dialogs == []  # no hostile markup ran
    finally:
        context.close()
