"""An operator finds a bad memorize run in a real browser and rolls it back.

Sign in → find the owner → search (explain breakdown) → history → the run
and its per-item diff → the confirmation page → one POST → the memory and
the history changed (checked in the browser, through the library, and with
the ``git`` command line as an independent witness).
"""

from __future__ import annotations

import re
import subprocess

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_seed import BAD_RUN, BAD_WORDS, OTHER, OWNER, SEA, STALE_RUN

pytestmark = pytest.mark.browser


def owner_url(world, tail: str = "") -> str:
    return f"{world.url}/admin/owners/{OWNER}{tail}"


def git_log(path) -> list[str]:
    out = subprocess.run(["git", "-C", str(path), "log", "--format=%s"], check=True,
                         capture_output=True, text=True).stdout
    return out.splitlines()


def test_admin_pages_need_sign_in_and_a_valid_token(world, page, screenshots):
    page.goto(owner_url(world, "/history"))
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.fill("input[name=token]", "not-the-token")
    page.click("#token-submit")
    expect(page.locator("[role=alert]")).to_contain_text("not valid")
    page.screenshot(path=screenshots / "login.png", full_page=True)
    from browser_env import ADMIN_TOKEN

    page.fill("input[name=token]", ADMIN_TOKEN)
    page.click("#token-submit")
    # Back where the operator was going, signed in.
    expect(page).to_have_url(owner_url(world, "/history"))
    expect(page.locator(".who")).to_contain_text("admin")
    page.click("text=Sign out")
    expect(page).to_have_url(re.compile(r"/login"))
    page.goto(world.url + "/admin/")
    expect(page).to_have_url(re.compile(r"/login"))


def test_operator_account_signs_in_and_sees_only_its_owners(world, page):
    from browser_env import OPERATOR

    name, password, _prefix = OPERATOR
    page.goto(world.url + "/login")
    page.fill("#username", name)
    page.fill("#password", "wrong password")
    page.click("#account-submit")
    expect(page.locator("[role=alert]")).to_contain_text("Wrong name or password")
    page.fill("#username", name)
    page.fill("#password", password)
    page.click("#account-submit")
    expect(page).to_have_url(world.url + "/admin/")
    expect(page.locator(".who")).to_contain_text(name)
    expect(page.locator("table.owners tbody tr")).to_have_count(1)
    expect(page.locator("table.owners")).to_contain_text(OWNER)
    # An owner outside the account's prefix does not exist, as far as it can tell.
    response = page.goto(f"{world.url}/admin/owners/{OTHER}")
    assert response.status == 404


def test_find_owner_by_prefix(world, signed_in, screenshots):
    page = signed_in
    rows = page.locator("table.owners tbody tr")
    expect(rows).to_have_count(2)
    page.screenshot(path=screenshots / "owners.png", full_page=True)
    page.fill("#prefix", "user:x")
    page.click("form[role=search] button[type=submit]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(OWNER)
    expect(page.locator("table.owners")).not_to_contain_text(OTHER)
    page.click(f"a.owner-link:has-text('{OWNER}')")
    expect(page).to_have_url(owner_url(world))
    expect(page.locator("h1.owner-id")).to_have_text(OWNER)


def test_search_shows_the_explain_breakdown_now_and_as_of(world, signed_in, screenshots):
    page = signed_in
    before_bad = world.owner().vstore.history(run=BAD_RUN).entries[-1].parents[0]
    page.goto(owner_url(world, "/search"))
    page.fill("#q", "sea")
    page.select_option("#diary", "window")  # the wiki alone (the host's default also ranks every diary day)
    page.click("form[role=search] button[type=submit]")
    results = page.locator("section[aria-label=results] article.retrieved")
    expect(results).to_have_count(1)
    expect(results.first).to_contain_text(BAD_WORDS)
    expect(results.first.locator(".score").first).to_contain_text("score")
    expect(results.first.locator(".explain")).to_contain_text("matched sea")
    expect(page.locator(".time-gate")).to_contain_text("no time gate")
    # As of the commit before the bad run: the old content, and the link it expanded.
    page.fill("#as_of", before_bad)
    page.click("form[role=search] button[type=submit]")
    expect(results).to_have_count(2)
    expect(results.nth(0)).to_contain_text("喜欢海边")
    expect(results.nth(1).locator(".badge.link")).to_have_text("link")
    expect(results.nth(1)).to_contain_text("linked from likes-the-sea")
    expect(page.locator(".explain-summary")).to_contain_text(f"as of {before_bad}")
    page.screenshot(path=screenshots / "search-as-of.png", full_page=True)
    # A budget cut and a time gate with its source.
    page.goto(owner_url(world, "/search?q=sea+beach+tea&budget=12&diary=window"))
    expect(page.locator("section[aria-label=dropped] article")).to_have_count(2)
    expect(page.locator("section[aria-label='unresolved links']")).to_contain_text("[[people:sister]]")
    page.goto(owner_url(world, "/search?q=海边&start=2026-07-20&end=2026-07-20"))
    expect(page.locator(".time-gate")).to_contain_text("2026-07-20 … 2026-07-20")
    expect(page.locator(".time-gate")).to_contain_text("source explicit")
    expect(results.first).to_contain_text("今天去了海边散步")
    page.screenshot(path=screenshots / "search-time-gate.png", full_page=True)


def test_roll_back_a_bad_run_end_to_end(world, signed_in, screenshots):
    page = signed_in
    path = world.path()
    commits_before = len(git_log(path))
    page.click(f"a.owner-link:has-text('{OWNER}')")
    # The first file: a dangling link is flagged, not linked.
    expect(page.locator(".wikilink.dangling")).to_have_text("[[people:sister]]")
    page.click("ul.filelist >> text=preferences")
    expect(page.locator("article.item", has_text="likes-the-sea")).to_contain_text(BAD_WORDS)
    page.screenshot(path=screenshots / "owner.png", full_page=True)

    # History, grouped by run: the bad run with its actor, conversation and change count.
    page.click("nav.tabs >> text=History")
    group = page.locator("section.run", has=page.locator(f"a.run-link:text-is('{BAD_RUN}')"))
    expect(group).to_contain_text("Elaina")
    expect(group).to_contain_text("conv_3")
    expect(group).to_contain_text("2 changes")
    page.screenshot(path=screenshots / "history.png", full_page=True)

    # The run and its per-item diff, removed and added words highlighted.
    group.locator("a.run-link").click()
    expect(page).to_have_url(owner_url(world, f"/runs/{BAD_RUN}"))
    changed = page.locator("section.change-changed")
    expect(changed).to_contain_text("preferences / likes-the-sea")
    expect(changed.locator(".before del").first).to_contain_text("喜欢海边")
    expect(changed.locator(".after ins", has_text="hates").first).to_be_visible()
    expect(changed.locator(".after")).to_contain_text(BAD_WORDS)
    expect(page.locator("section.change-added")).to_contain_text("diary 2026-07-21 10:00")
    page.screenshot(path=screenshots / "run.png", full_page=True)

    # The confirmation page previews exactly the two changes, and no conflict.
    page.click("#rollback")
    expect(page).to_have_url(owner_url(world, f"/runs/{BAD_RUN}/rollback"))
    planned = page.locator("section[aria-label='planned changes']")
    expect(planned.locator("section.change")).to_have_count(2)
    expect(planned.locator("section.change-changed .after")).to_contain_text("喜欢海边")
    expect(planned.locator("section.change-removed")).to_contain_text("diary 2026-07-21 10:00")
    expect(page.locator("section.conflicts")).to_have_count(0)
    assert len(git_log(path)) == commits_before, "the preview wrote nothing"
    page.screenshot(path=screenshots / "confirm-rollback.png", full_page=True)

    page.click("#confirm")
    expect(page.locator(".flash.ok")).to_contain_text("Roll back run: done")
    expect(page.locator(".panel h1")).to_contain_text(f"roll back run {BAD_RUN}")
    expect(page.locator(".panel .meta").first).to_contain_text("by admin")
    page.screenshot(path=screenshots / "commit.png", full_page=True)

    # The memory changed: in the browser ...
    page.click("nav.tabs >> text=Wiki")
    page.click("ul.filelist >> text=preferences")
    restored = page.locator("article.item", has_text="likes-the-sea")
    expect(restored).to_contain_text("喜欢海边")
    expect(page.locator("section[aria-label=items]")).not_to_contain_text(BAD_WORDS)
    # The restored content's wiki-link navigates to its target.
    restored.locator("a.wikilink").click()
    expect(page).to_have_url(owner_url(world, "/items/daily_life/beach-trip-plan"))
    page.goto(owner_url(world, "/diary?day=2026-07-21"))
    expect(page.locator("section[aria-label=events]")).not_to_contain_text(BAD_WORDS)
    # ... through the library, from another Host over the same data ...
    owner = world.owner()
    assert owner.store.get("preferences", "likes-the-sea").content == SEA
    assert "2026-07-21" not in owner.diary.dates()
    assert all(BAD_WORDS not in e.content for e in owner.diary.day("2026-07-20"))
    # ... and the history gained exactly one commit, by the operator, on top.
    top = owner.vstore.history(limit=1).entries[0]
    assert (top.actor, top.action) == ("admin", "rollback")
    log = git_log(path)
    assert len(log) == commits_before + 1 and log[0] == f"roll back run {BAD_RUN}"
    subprocess.run(["git", "-C", str(path), "fsck", "--strict"], check=True, capture_output=True)
    page.goto(owner_url(world, "/history"))
    expect(page.locator("section.run").first).to_contain_text(f"roll back run {BAD_RUN}")


def test_rollback_conflict_is_shown_and_nothing_is_written_unless_forced(world, signed_in, screenshots):
    page = signed_in
    head = world.owner().vstore.head()
    page.goto(owner_url(world, f"/runs/{STALE_RUN}/rollback"))
    conflicts = page.locator("section.conflicts section.conflict")
    expect(conflicts).to_have_count(1)
    expect(conflicts.first).to_contain_text("work / job")
    expect(conflicts.first).to_contain_text("changed again later")
    # What forcing would do: the item as it is now, and that it goes away (the run created it).
    expect(conflicts.first.locator(".before")).to_contain_text("Works as a teacher now.")
    expect(conflicts.first.locator(".after")).to_contain_text("(removed)")
    page.screenshot(path=screenshots / "confirm-conflict.png", full_page=True)
    page.click("#confirm")  # without "force"
    expect(page.locator("[role=alert]")).to_contain_text("changed after run")
    assert world.owner().vstore.head() == head
    assert world.owner().store.get("work", "job").content == "Works as a teacher now."
    page.check("input[name=force]")
    page.click("#confirm")
    expect(page.locator(".flash.ok")).to_contain_text("done")
    assert world.owner().vstore.head() != head
    assert world.owner().store.get("work", "job") is None  # the run created it; undone


def test_revert_one_commit_and_restore_to_a_point(world, signed_in):
    page = signed_in
    vs = world.owner().vstore
    tea = vs.history(file="preferences", item="tea").entries[0].id
    page.goto(owner_url(world, "/history?file=preferences&item=tea"))
    page.locator("section.card", has_text="add preferences/tea").locator("text=revert").click()
    expect(page.locator("section[aria-label='planned changes'] section.change-removed")).to_contain_text(
        "preferences / tea")
    page.click("#confirm")
    expect(page.locator(".flash.ok")).to_contain_text("Revert commit: done")
    assert world.owner().store.get("preferences", "tea") is None
    # Restore to the first item's commit: only that item is left, the diary is empty.
    first = world.seeded.first_commit
    page.goto(owner_url(world, f"/commits/{first}"))
    page.click("text=Restore to here…")
    expect(page.locator("section[aria-label='planned changes'] section.change-removed").first).to_be_visible()
    page.click("#confirm")
    expect(page.locator(".flash.ok")).to_contain_text("Restore memory: done")
    owner = world.owner()
    assert [(i.file, i.name) for f in owner.store.files() for i in owner.store.items(f)] == [
        ("preferences", "likes-the-sea")]
    assert owner.diary.dates() == []
    assert tea in [e.id for e in owner.vstore.history(limit=50).entries], "history is never rewritten"


def test_a_form_post_without_the_csrf_token_is_refused(world, signed_in):
    page = signed_in
    head = world.owner().vstore.head()
    response = page.request.post(owner_url(world, f"/runs/{BAD_RUN}/rollback"), form={}, max_redirects=0)
    assert response.status == 400
    assert world.owner().vstore.head() == head
