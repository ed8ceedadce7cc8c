"""The paths operators take every day, without a wrong answer or a guess (issue 24, items 2–9), through the real
app and the Flask test client. The browser tests click the same pages at laptop and phone widths.

Times are in one zone per operator (cookie), display and filters alike; the
bulk rollback button says what changes and what is skipped; a rolled-back
run offers the undo of its rollback; an edit keeps provenance; a reviewer
sees forms read-only with the reason; errors keep what was typed; history
cards say things once and open their changes in place; messages speak the
operator's language; the diary says which time an HH:MM is.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from html import unescape
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from apiworld import app_with_accounts

from webapp.hosting import get_host
from wikimem.context import WriteContext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from operators_world import BAD_ACTOR  # noqa: E402

ADMIN = "admin-everyday-token-0123456789"
ACCOUNTS = {"rita": "reviewer", "olga": "operator", "adam": "admin"}
PASSWORD = "correct horse battery staple"
OWNER = "user:xnne"
BASE = f"/admin/owners/{OWNER}"
SEA_TS = "2026-07-18T09:00:00Z"


@pytest.fixture
def app(tmp_path):
    app = app_with_accounts(tmp_path, ADMIN, ACCOUNTS, PASSWORD)
    with app.app_context():
        owner, _ = get_host().ensure_owner(OWNER)
        owner.add("preferences", "likes-the-sea", "Likes the sea.", ts=SEA_TS,
                  ctx=WriteContext(actor="Elaina", source_conv="conv_101"))
        owner.apply_ops([{"op": "add", "file": "preferences", "name": "tea", "content": "Drinks oolong tea."},
                         {"op": "diary", "content": "Walked by the sea.", "date": "2026-07-20", "time": "18:30"}],
                        message="memorize 2 changes", ctx=WriteContext(run="run_good", actor="Elaina",
                                                                       source_conv="conv_2"))
    return app


def owner(app):
    with app.app_context():
        return get_host().owner(OWNER)


def csrf(html: str) -> str:
    return re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html).group(1)


def client_as(app, who: str | None = None, **cookies):
    client = app.test_client()
    for name, value in cookies.items():
        client.set_cookie(name, value)
    token = csrf(client.get("/login").get_data(as_text=True))
    form = {"token": ADMIN} if who is None else {"username": who, "password": PASSWORD}
    assert client.post("/login", data={"csrf_token": token, **form}).status_code == 302
    return client


def text(response) -> str:
    return response.get_data(as_text=True)


def git(app, *args) -> str:
    return subprocess.run(["git", "-C", str(owner(app).root), *args], capture_output=True, text=True,
                          check=True).stdout


def instants(html: str) -> list[tuple[str, str, str]]:
    """``(datetime, title, text)`` of every instant on a page."""
    return [(d, unescape(t), unescape(x)) for d, t, x in
            re.findall(r'<time class="instant" datetime="([^"]+)" title="([^"]*)">([^<]*)</time>', html)]


# -- item 2: one zone per operator ------------------------------------------------------------------

def test_without_a_known_zone_times_and_filters_say_utc(app):
    html = text(client_as(app).get(f"{BASE}/items/preferences/likes-the-sea"))
    assert ("2026-07-18T09:00:00Z", "recorded (ts): when this was written down: 2026-07-18 09:00:00 UTC",
            "2026-07-18 09:00 UTC") in instants(html)
    assert 'data-tz="UTC"' in html and 'data-tz-choice="browser"' in html
    history = text(client_as(app).get(f"{BASE}/history"))
    assert 'From (day, <span class="zone-name">UTC</span>)' in history


def test_times_show_in_the_browsers_zone_with_utc_on_hover(app):
    client = client_as(app, wikimem_browser_tz="Asia/Tokyo")
    html = text(client.get(f"{BASE}/items/preferences/likes-the-sea"))
    assert ("2026-07-18T09:00:00Z", "recorded (ts): when this was written down: 2026-07-18 09:00:00 UTC",
            "2026-07-18 18:00 JST") in instants(html)
    assert 'data-tz="Asia/Tokyo"' in html and "times in <b class=\"zone-name\">Asia/Tokyo</b>" in html
    for iso, title, shown in instants(text(client.get(f"{BASE}/history"))):
        moment = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        assert shown == moment.astimezone(ZoneInfo("Asia/Tokyo")).strftime("%Y-%m-%d %H:%M JST")
        assert title.endswith(moment.strftime("%Y-%m-%d %H:%M:%S UTC"))


def test_a_chosen_zone_overrides_the_browser_and_is_remembered(app):
    client = client_as(app, wikimem_browser_tz="Asia/Tokyo")
    form = text(client.get("/admin/timezone?next=/admin/"))
    assert 'value="browser" checked' in form and "Asia/Tokyo" in form
    done = client.post("/admin/timezone", data={"csrf_token": csrf(form), "next": f"{BASE}/history",
                                                "pick": "other", "zone": "America/New_York"})
    assert done.status_code == 302 and done.headers["Location"].endswith(f"{BASE}/history")
    cookie = done.headers["Set-Cookie"]
    assert "wikimem_tz=America/New_York" in cookie and "HttpOnly" in cookie and "Max-Age=" in cookie
    html = text(client.get(f"{BASE}/items/preferences/likes-the-sea"))
    assert "2026-07-18 05:00 EDT" in [shown for _, _, shown in instants(html)]
    assert 'data-tz-choice="America/New_York"' in html
    back = client.post("/admin/timezone", data={"csrf_token": csrf(form), "pick": "UTC"})
    assert back.status_code == 302
    assert "2026-07-18 09:00 UTC" in text(client.get(f"{BASE}/items/preferences/likes-the-sea"))


def test_an_unknown_zone_is_refused_and_kept_in_the_form(app):
    client = client_as(app)
    form = text(client.get("/admin/timezone"))
    r = client.post("/admin/timezone", data={"csrf_token": csrf(form), "pick": "other", "zone": "Mars/Olympus"})
    assert r.status_code == 422 and "Set-Cookie" not in r.headers
    html = text(r)
    assert "Unknown time zone" in html and 'value="Mars/Olympus"' in html


@pytest.mark.parametrize("cookie", ["../../etc/passwd", "Not/AZone", "x" * 300, "Asia/Tokyo\x00"])
def test_a_zone_cookie_the_machine_does_not_know_is_ignored(app, cookie):
    html = text(client_as(app, wikimem_tz=cookie).get(f"{BASE}/items/preferences/likes-the-sea"))
    assert 'data-tz="UTC"' in html and "2026-07-18 09:00 UTC" in html


def test_history_day_filters_are_read_in_the_operators_zone(app):
    commit_time = datetime.fromisoformat(owner(app).history(limit=1).entries[0].time.replace("Z", "+00:00"))
    # A zone whose day around that commit is never its UTC day: the same filter read in UTC finds nothing.
    zone = "Etc/GMT+12" if commit_time.hour < 12 else "Etc/GMT-12"
    local_day = commit_time.astimezone(ZoneInfo(zone)).date().isoformat()
    assert local_day != commit_time.date().isoformat()
    client = client_as(app, wikimem_tz=zone)
    html = text(client.get(f"{BASE}/history?since={local_day}&until={local_day}"))
    assert html.count('<li class="commit') >= 2, "the local day's commits are not found"
    assert f'value="{local_day}"' in html  # the filter shows the day as it was typed
    utc_reading = text(client_as(app).get(f"{BASE}/history?since={local_day}&until={local_day}"))
    assert '<li class="commit' not in utc_reading


def test_the_runs_search_reads_a_time_without_offset_in_the_operators_zone(app):
    zone = ZoneInfo("Etc/GMT-14")
    now = datetime.now(timezone.utc).astimezone(zone)
    since, until = (now - timedelta(minutes=30)).strftime("%Y-%m-%d %H:%M"), (now + timedelta(minutes=30)).strftime(
        "%Y-%m-%d %H:%M")
    found = text(client_as(app, wikimem_tz="Etc/GMT-14").get("/admin/runs", query_string={
        "actor": "Elaina", "since": since, "until": until}))
    assert re.search(r'class="total-runs">[1-9]', found)
    assert 'To (<span class="zone-name">Etc/GMT-14</span>)' in found
    in_utc = text(client_as(app, wikimem_tz="UTC").get("/admin/runs", query_string={
        "actor": "Elaina", "since": since, "until": until}))
    assert 'class="total-runs">0<' in in_utc  # 14 hours ahead of now, in UTC


# -- item 3: the bulk rollback button ----------------------------------------------------------------

def test_the_bulk_button_says_what_will_change_and_what_will_be_skipped(app):
    from operators_world import bad_deploy

    with app.app_context():
        bad_deploy(get_host(), 5)  # the first owner's bad fact was corrected since: a conflict
    html = text(client_as(app).get("/admin/bulk/rollback", query_string={"actor": BAD_ACTOR}))
    button = re.search(r'<button type="submit" class="danger" id="confirm"([^>]*)>([^<]*)</button>', html)
    assert button.group(2) == "Roll back 4 owners, skip 1 with conflicts"
    assert 'data-label-forced="Roll back 5 owners, forcing 1"' in button.group(1)
    outcome = re.sub(r"<[^>]+>", "", re.search(r'<p class="bulk-outcome"[^>]*>(.*?)</p>', html).group(1))
    assert outcome == "4 owners will change; 1 with conflicts will be skipped unless you force."
    assert "Force: also roll back the 1 owner with conflicts (5 in all)" in html


# -- item 4: a run rolled back already ---------------------------------------------------------------

def test_a_rolled_back_run_shows_as_such_and_offers_the_undo_of_its_rollback(app):
    client = client_as(app, "olga")
    done = owner(app).undo("rollback", "run_good", ctx=WriteContext(actor="olga"))
    head = owner(app).head()
    run_page = text(client.get(f"{BASE}/runs/run_good"))
    assert "Roll back again" not in run_page and "Roll back this run" not in run_page
    assert 'id="run-state"' in run_page and "rolled back" in run_page
    assert f'id="undo-rollback" href="{BASE}/commits/{done.commit}/revert"' in run_page
    confirm = client.get(f"{BASE}/runs/run_good/rollback")
    html = text(confirm)
    assert confirm.status_code == 200 and "rolled back already" in html
    assert 'name="force"' not in html and 'id="confirm"' not in html  # no forcing over later edits
    assert f'href="{BASE}/commits/{done.commit}/revert"' in html
    refused = client.post(f"{BASE}/runs/run_good/rollback", data={"csrf_token": csrf(html), "force": "on"})
    assert refused.status_code == 409 and owner(app).head() == head
    history = text(client.get(f"{BASE}/history"))
    assert "roll back this run" not in history
    assert f'class="undo-rollback" href="{BASE}/commits/{done.commit}/revert"' in history
    commit_page = text(client.get(f"{BASE}/commits/{owner(app).history(run='run_good').entries[0].id}"))
    assert "Undo the rollback of run run_good" in commit_page and ">Roll back run…<" not in commit_page


def test_the_undo_of_a_rollback_brings_the_run_back_and_it_can_be_rolled_back_again(app):
    client = client_as(app, "olga")
    done = owner(app).undo("rollback", "run_good", ctx=WriteContext(actor="olga"))
    page = text(client.get(f"{BASE}/commits/{done.commit}/revert"))
    assert client.post(f"{BASE}/commits/{done.commit}/revert", data={"csrf_token": csrf(page)}).status_code == 302
    assert owner(app).item("preferences", "tea").content == "Drinks oolong tea."
    run_page = text(client.get(f"{BASE}/runs/run_good"))
    assert "Roll back this run" in run_page and 'id="run-state"' not in run_page


# -- item 5: an edit keeps provenance ------------------------------------------------------------------

def test_an_edit_keeps_the_items_provenance_and_records_the_operator(app):
    client = client_as(app, "olga")
    before = owner(app).item("preferences", "likes-the-sea")
    assert (before.source_conv, before.ts[:19]) == ("conv_101", SEA_TS[:19])
    page = text(client.get(f"{BASE}/edit/preferences/likes-the-sea"))
    assert "source <code>conv_101</code>" in page
    etag = re.search(r'name="etag" value="([^"]*)"', page).group(1)
    saved = client.post(f"{BASE}/edit/preferences/likes-the-sea",
                        data={"csrf_token": csrf(page), "etag": etag, "op": "save", "content": "Loves the sea."})
    assert saved.status_code == 302
    item = owner(app).item("preferences", "likes-the-sea")
    assert (item.content, item.source_conv, item.ts, item.owner) == ("Loves the sea.", "conv_101",
                                                                      before.ts, OWNER)
    assert git(app, "log", "-1", "--format=%an|%s").strip() == "olga|update preferences/likes-the-sea"
    message = git(app, "log", "-1", "--format=%B")
    assert "Wikimem-Actor: olga" in message
    shown = text(client.get(f"{BASE}/items/preferences/likes-the-sea"))
    assert "source <code>conv_101</code>" in shown


def test_an_edit_to_empty_text_is_refused_in_words_and_writes_nothing(app):
    client = client_as(app, "olga")
    page = text(client.get(f"{BASE}/edit/preferences/tea"))
    head = owner(app).head()
    r = client.post(f"{BASE}/edit/preferences/tea", data={"csrf_token": csrf(page), "op": "save", "content": "  ",
                                                          "etag": re.search(r'name="etag" value="([^"]*)"',
                                                                            page).group(1)})
    assert r.status_code == 422 and "an item needs some text" in text(r) and "DELETE" not in text(r)
    assert owner(app).head() == head


# -- item 6: read-only for a reviewer -----------------------------------------------------------------

@pytest.mark.parametrize(("path", "role"), [
    ("/edit/preferences/tea", "operator"),
    ("/new-item", "operator"),
    ("/delete/preferences/tea", "operator"),
    ("/runs/run_good/rollback", "operator"),
    ("/delete-owner", "admin"),
])
def test_a_reviewer_sees_a_changing_form_read_only_with_the_reason(app, path, role):
    html = text(client_as(app, "rita").get(BASE + path))
    assert 'id="read-only"' in html and f"needs the <b>{role}</b> role" in html and "a <b>reviewer</b>" in html
    assert re.search(r'<fieldset class="plain" disabled\s*>', html)
    writable = text(client_as(app).get(BASE + path))  # the admin token: everything
    assert 'id="read-only"' not in writable and not re.search(r'<fieldset class="plain" disabled', writable)


def test_a_reviewer_still_cannot_post_an_edit(app):
    client = client_as(app, "rita")
    page = text(client.get(f"{BASE}/edit/preferences/tea"))
    assert 'readonly' in page
    r = client.post(f"{BASE}/edit/preferences/tea", data={"csrf_token": csrf(page), "op": "save", "content": "x"})
    assert r.status_code == 403 and owner(app).item("preferences", "tea").content == "Drinks oolong tea."


# -- item 7: errors keep the input; history cards say things once -----------------------------------------

def test_compare_with_a_bad_point_keeps_the_form_and_says_why(app):
    r = client_as(app).get(f"{BASE}/diff", query_string={"from": "nope123", "to": "HEAD~1"})
    html = text(r)
    assert r.status_code in (404, 422)
    assert 'id="d-from" name="from" value="nope123"' in html and 'name="to" value="HEAD~1"' in html
    assert 'id="compare-error"' in html and "nope123" in html


def test_history_with_a_bad_filter_keeps_the_form_and_says_why(app):
    r = client_as(app).get(f"{BASE}/history", query_string={"since": "yesterday-ish", "actor": "Elaina"})
    html = text(r)
    assert r.status_code == 422 and 'id="history-error"' in html  # a refused value: 422
    assert 'name="since" value="yesterday-ish"' in html and 'name="actor" value="Elaina"' in html


def test_a_search_error_keeps_every_field_as_typed(app):
    r = client_as(app).get(f"{BASE}/search", query_string={
        "submitted": "1", "q": "sea", "limit": "7", "budget": "50", "start": "2026-07-20", "diary": "all",
        "as_of": "HEAD", "links": "on"})
    html = text(r)
    assert r.status_code == 400 and "needs both a start and an end" in html
    for name, value in (("q", "sea"), ("limit", "7"), ("budget", "50"), ("start", "2026-07-20"), ("as_of", "HEAD")):
        assert re.search(rf'name="{name}" value="{value}"', html), name
    assert '<option value="all" selected>' in html and 'name="links" checked>' in html


def cards(html: str) -> list[str]:
    return re.findall(r'<section class="panel run card.*?</section>', html, re.S)


def test_history_cards_show_each_summary_and_time_once(app):
    html = text(client_as(app).get(f"{BASE}/history"))
    found = cards(html)
    assert len(found) == 3  # the run, the item's add, the owner's init
    for card in found:
        summaries = re.findall(r'<span class="summary">([^<]*)</span>', card)
        # a single commit's summary heads its card, a run's commits each have theirs: once each
        assert len(summaries) == len(set(summaries)) == card.count('<li class="commit'), card
        assert len(instants(card)) == 1, card
    run_card = next(c for c in found if "run_good" in c)
    assert run_card.count("memorize 2 changes") == 1


def test_history_cards_open_their_changes_in_place(app):
    client = client_as(app)
    found = cards(text(client.get(f"{BASE}/history")))
    run_card = next(c for c in found if "run_good" in c)
    src = re.search(r'<details class="card-changes" data-src="([^"]+)">', run_card).group(1)
    assert src == f"{BASE}/runs/run_good"
    assert "2 changes: show what this run changed" in run_card
    assert f'<a href="{src}">the run page</a>' in run_card  # without JavaScript, a link to the same changes
    changes = text(client.get(src))
    inside = changes[changes.index('<div id="changes">'):]
    assert "Drinks oolong tea." in inside and "Walked by the sea." in inside
    single = next(c for c in found if "likes-the-sea" in c)
    commit_src = re.search(r'data-src="([^"]+)"', single).group(1)
    assert "/commits/" in commit_src and '<div id="changes">' in text(client.get(commit_src))


# -- item 8: messages in the operator's words ----------------------------------------------------------

def new_item(app, **fields):
    """Olga's new-item form sent with ``fields`` (file, name, content): the response and its page."""
    client = client_as(app, "olga")
    page = text(client.get(f"{BASE}/new-item"))
    r = client.post(f"{BASE}/new-item", data={"csrf_token": csrf(page), **fields})
    return r, text(r)


def test_a_bad_file_name_is_explained_without_a_regex(app):
    r, html = new_item(app, file="Bad File", name="x", content="y")
    assert r.status_code == 422  # a refused name
    assert "[a-z" not in html and "RecallFile" not in html and "*" not in re.sub(r"<[^>]+>", "", html.split(
        'id="new-item-error"')[1].split("</div>")[0])
    assert "lowercase letters" in html
    assert 'value="Bad File"' in html and 'value="x"' in html  # what was typed stays


def test_an_item_that_exists_already_links_to_its_edit_page(app):
    r, html = new_item(app, file="preferences", name="tea", content="Another tea.")
    assert r.status_code == 412
    assert f'id="edit-existing" href="{BASE}/edit/preferences/tea"' in html
    assert owner(app).item("preferences", "tea").content == "Drinks oolong tea."


# -- item 9: which time a diary HH:MM is ---------------------------------------------------------------

def test_the_diary_says_per_entry_whether_its_time_is_when_it_happened_or_when_it_was_told(app):
    me = owner(app)
    me.put_settings({"tz": "UTC"}, ctx=WriteContext(actor="test"))
    filed = me.diary_append("Went hiking (told later, no time given).", date="2026-07-19",
                            ctx=WriteContext(actor="Elaina")).value
    me.diary_append("Dinner at the harbour.", date="2026-07-19", time="19:45", ctx=WriteContext(actor="Elaina"))
    told_on = filed.ts[:10]
    html = text(client_as(app).get(f"{BASE}/diary?day=2026-07-19"))
    entries = re.findall(r'<article class="item diary-entry">.*?</article>', html, re.S)
    by_text = {("hiking" in e): e for e in entries}
    told, happened = by_text[True], by_text[False]
    assert (f'<div class="clock-kind told"><span class="clock-time">{filed.time}</span> '
            f'when it was told, on {told_on}</div>') in told
    assert f">{filed.time}</time>" in told
    assert '<div class="clock-kind happened"><span class="clock-time">19:45</span> when it happened</div>' in happened
    assert ">19:45</time>" in happened
    assert "when it happened</i> if it was told with a time" in html  # the legend no longer claims one meaning
