"""Channels in the admin UI (issue 34 point 4): channel and present on every diary entry, a person's Diary and
History filtered by channel (with the layer switch), and "who could have heard this?" of an entry by the rules of
a room; hostile content escaped; bad input refused with the app's statuses."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from apiworld import ADMIN

from webapp import create_app
from wikimem.context import WriteContext
from wikimem.host import make_host

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the world of rooms
from channel_world import ANN, BOB, KAI_NOTE, SHARED_ENTRIES, XSS, seed_rooms  # noqa: E402
from test_admin_characters import assert_escaped, client_as  # noqa: E402  (signing in, as the layer pages' tests do)
from test_admin_characters import page as text_of  # noqa: E402

BASE = f"/admin/owners/{ANN}"


@pytest.fixture
def world(tmp_path):
    """Ann's folder of rooms written by another process of the host; the app over the same data root; its host."""
    root = tmp_path / "data"
    writer = make_host(root)
    seed_rooms(writer)
    app = create_app({"TESTING": True, "DATA_ROOT": str(root), "ADMIN_TOKEN": ADMIN})
    return app, writer


@pytest.fixture
def client(world):
    return client_as(world[0])


def entries_of(text: str) -> list[str]:
    """The diary entries a page shows: each article's text."""
    return re.findall(r'<article class="item diary-entry">(.*?)</article>', text, re.S)


def calendar_days(text: str) -> list[str]:
    return re.findall(r'<td class="has[^"]*"><a href="[^"]*" title="(\d{4}-\d{2}-\d{2})', text)


def options(text: str) -> list[str]:
    select = re.search(r'<select id="f-channel" name="channel">(.*?)</select>', text, re.S)
    assert select, "no channel select"
    return re.findall(r'<option value="([^"]*)"', select.group(1))


def link_text(client, href: str) -> str:
    """The page a link of a page leads to (its query in the href)."""
    r = client.get(href.replace("&amp;", "&"))
    assert r.status_code == 200, r.get_data(as_text=True)[:2000]
    return r.get_data(as_text=True)


def verdicts(text: str) -> dict[str, tuple[str, str]]:
    """The table of who may recall: recaller → (alone, with someone else present), each "yes" or "no"."""
    rows = re.findall(r'<tr data-recaller="([^"]+)">(.*?)</tr>', text, re.S)
    return {who: tuple(re.findall(r'data-verdict="(yes|no)"', row)) for who, row in rows}


@pytest.mark.parametrize("day", sorted(SHARED_ENTRIES))
def test_every_diary_entry_shows_where_it_was_said_and_who_was_there(client, day):
    _, channel, present, _ = SHARED_ENTRIES[day]
    [entry] = entries_of(text_of(client, f"{BASE}/diary", day=day))
    if channel is None:
        assert "room-channel" not in entry and "room-present" not in entry
    else:
        assert f'<code class="channel-id">{channel}</code>' in entry
        assert re.findall(r'<code class="present-id">([^<]+)</code>', entry) == present
        assert ("direct chat" in entry) == (channel == "dm")
    assert "who could have heard this?" in entry


def test_the_diary_filtered_by_channel_shows_only_what_was_said_there(client):
    text = text_of(client, f"{BASE}/diary", channel="g1")
    assert calendar_days(text) == ["2026-03-02"]  # the calendar: the days with a G1 entry only
    [entry] = entries_of(text)  # its latest day opened
    assert "Quiz night in G1" in entry
    assert options(text) == ["", "dm", "g1", "g2"]  # every channel, then those Ann's shared diary knows
    assert re.search(r'<option value="g1" selected>', text)
    # the calendar's links keep the channel
    assert all("channel=g1" in link for link in re.findall(r'<td class="has[^"]*"><a href="([^"]*)"', text))
    quiet = text_of(client, f"{BASE}/diary", channel="g2", day="2026-03-02")  # a day without G2 entries
    assert entries_of(quiet) == [] and "No events in g2 on this day." in quiet
    unknown = text_of(client, f"{BASE}/diary", channel="nowhere")  # an id, just not one Ann was in
    assert calendar_days(unknown) == [] and "No diary entries said in nowhere" in unknown
    assert len(calendar_days(text_of(client, f"{BASE}/diary", month="2026-03"))) == 4  # without: every day


def test_the_channel_filter_works_with_the_layer_switch(client):
    text = text_of(client, f"{BASE}/diary", channel="g1", character="kai")
    [entry] = entries_of(text)
    assert "I lost the quiz to Bob." in entry and "Quiz night" not in entry  # Kai's layer, not the shared one
    assert options(text) == ["", "g1"]  # the channels of Kai's layer
    assert calendar_days(text) == [KAI_NOTE[0]]
    switch = re.search(r'<nav class="layer-switch".*?</nav>', text, re.S).group(0)
    shared = re.search(r'href="([^"]*)" data-layer="shared"', switch).group(1)
    assert "channel=g1" in shared and "character" not in shared  # switching layer keeps the channel
    assert "Quiz night in G1" in "".join(entries_of(link_text(client, shared)))
    kai_dm = text_of(client, f"{BASE}/diary", channel="dm", character="kai")  # Kai's layer has no direct chat
    assert entries_of(kai_dm) == [] and options(kai_dm) == ["", "g1", "dm"]  # the current one stays selectable


def test_history_filters_by_channel_and_the_commit_shows_who_was_there(client):
    text = text_of(client, f"{BASE}/history", channel="dm")
    commits = re.findall(r'class="mono commit-link" href="[^"]*/commits/([0-9a-f]+)"', text)
    assert len(commits) == 1 and "diary 2026-03-01 09:00" in text and "2026-03-02" not in text
    assert options(text) == ["", "dm", "g1", "g2"]  # the shared layer's
    commit = text_of(client, f"{BASE}/commits/{commits[0]}")
    assert '<code class="channel-id">dm</code>' in commit
    assert re.findall(r'<code class="present-id">([^<]+)</code>', commit) == [ANN, "char:kai"]
    every = text_of(client, f"{BASE}/history", channel="g1", character="*")  # every layer: Ann's and Kai's G1
    assert len(re.findall(r'class="mono commit-link"', every)) == 2
    kai = text_of(client, f"{BASE}/history", channel="g1", character="kai")
    assert len(re.findall(r'class="mono commit-link"', kai)) == 1 and options(kai) == ["", "g1"]
    assert len(re.findall(r'class="mono commit-link"', text_of(client, f"{BASE}/history", channel="g2",
                                                              character="kai"))) == 0


def test_who_could_have_heard_a_direct_chat(world, client):
    text = text_of(client, f"{BASE}/diary/2026-03-01/0/heard")
    assert re.search(r'id="heard-channel"><code>dm</code>', text)
    assert re.findall(r'class="person-link" href="[^"]*"><code>([^<]+)</code>', text) == [ANN]
    assert re.findall(r'class="character-link" href="[^"]*"><code>([^<]+)</code>', text) == ["kai"]
    assert 'id="dm-kept"' in text and 'id="dm-allowed"' not in text
    assert verdicts(text) == {"-": ("yes", "no"), "kai": ("yes", "no"), "*": ("no", "no")}
    assert "said in a direct chat; someone else is in the room" in text
    assert "the recalling character was not present" in text  # any other character: Mira, say
    world[1].owner(ANN).put_settings({"dm_with_others": True}, ctx=WriteContext(actor="ann"))
    allowed = text_of(client, f"{BASE}/diary/2026-03-01/0/heard")
    assert 'id="dm-allowed"' in allowed and 'id="dm-kept"' not in allowed
    assert verdicts(allowed) == {"-": ("yes", "yes"), "kai": ("yes", "yes"), "*": ("no", "no")}


def test_who_could_have_heard_a_group_event(client):
    text = text_of(client, f"{BASE}/diary/2026-03-02/0/heard")
    assert re.findall(r'class="person-link" href="[^"]*"><code>([^<]+)</code>', text) == [ANN, BOB]
    assert 'id="dm-kept"' not in text and 'id="dm-allowed"' not in text
    # Kai was there (and has a layer here); Mira and anyone else were not
    assert verdicts(text) == {"-": ("yes", "yes"), "kai": ("yes", "yes"), "*": ("no", "no")}
    g2 = text_of(client, f"{BASE}/diary/2026-03-03/0/heard")
    assert verdicts(g2) == {"-": ("yes", "yes"), "kai": ("no", "no"), "mira": ("yes", "yes"), "*": ("no", "no")}


def test_who_could_have_heard_an_entry_of_a_characters_layer_and_one_that_says_nothing(client):
    kai = text_of(client, f"{BASE}/diary/{KAI_NOTE[0]}/0/heard", character="kai")
    assert verdicts(kai) == {"kai": ("yes", "yes")}  # no other character reads Kai's layer: no other row
    assert "Kai&#39;s own layer" in kai or "Kai's own layer" in kai
    plain = text_of(client, f"{BASE}/diary/2026-03-04/0/heard")
    assert 'id="no-room"' in plain and 'id="who-was-there"' not in plain
    assert verdicts(plain) == {"-": ("yes", "yes"), "kai": ("yes", "yes"), "*": ("yes", "yes")}


def test_the_diary_links_each_entry_to_who_could_have_heard_it(client):
    text = text_of(client, f"{BASE}/diary", day=KAI_NOTE[0], character="kai")
    link = re.search(r'class="who-heard" href="([^"]*)"', text).group(1)
    assert link == f"{BASE}/diary/{KAI_NOTE[0]}/0/heard?character=kai"
    assert verdicts(link_text(client, link)) == {"kai": ("yes", "yes")}


@pytest.mark.parametrize("url, query, status", [
    (f"{BASE}/diary", {"channel": "<b>g1</b>"}, 422),  # a channel that is not an id
    (f"{BASE}/history", {"channel": "<b>g1</b>"}, 422),
    (f"{BASE}/diary/2026-03-01/1/heard", {}, 404),  # no second entry that day
    (f"{BASE}/diary/2026-03-09/0/heard", {}, 404),  # no entry that day
    (f"{BASE}/diary/2026-02-30/0/heard", {}, 422),  # no such day
    (f"{BASE}/diary/2026-03-01/0/heard", {"character": "elaina"}, 404),  # no such layer here
    ("/admin/owners/user:nobody/diary/2026-03-01/0/heard", {}, 404),
])
def test_bad_input_is_refused_and_shown_escaped(client, url, query, status):
    text = text_of(client, url, status, **query)
    if "channel" in query:
        assert_escaped(text, query["channel"])


@pytest.mark.parametrize("url, query", [(f"{BASE}/diary", {"day": "2026-03-01"}),
                                        (f"{BASE}/diary", {"channel": "g1", "character": "kai"}),
                                        (f"{BASE}/diary/2026-03-01/0/heard", {}),
                                        (f"{BASE}/diary/{KAI_NOTE[0]}/0/heard", {"character": "kai"})])
def test_hostile_entries_are_shown_as_text(client, url, query):
    assert_escaped(text_of(client, url, **query), XSS)


def test_a_day_whose_entry_was_moved_to_another_channel_by_hand_leaves_that_channels_calendar(world, client):
    ann = world[1].owner(ANN)
    path = ann.root / "diary" / "2026-03-03.md"
    path.write_text(path.read_text().replace("channel=g2", "channel=g9"))  # an operator's hand edit
    ann.diary_append("Later.", date="2026-03-05", time="10:00", ctx=WriteContext(actor="bot"))  # commits it first
    assert calendar_days(text_of(client, f"{BASE}/diary", channel="g2")) == []  # its history still names the day
    text = text_of(client, f"{BASE}/diary", channel="g9")
    assert calendar_days(text) == ["2026-03-03"] and "g9" in options(text)
    assert "Ann showed Mira her sketches" in "".join(entries_of(text))


def test_a_recalled_diary_entry_shows_its_room_on_the_recall_page(client):
    text = text_of(client, f"{BASE}/search", q="quiz night", start="2026-03-02", end="2026-03-02")
    [hit] = [a for a in re.findall(r'<article class="item retrieved.*?</article>', text, re.S) if "Quiz night" in a]
    assert '<code class="channel-id">g1</code>' in hit
    assert re.findall(r'<code class="present-id">([^<]+)</code>', hit) == [ANN, BOB, "char:kai"]
