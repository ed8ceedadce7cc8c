"""Runs on probation in a real browser: a new memorize prompt's runs are staged across owners, an operator reads
the Staged page, samples a few owners' diffs, approves the run on most owners as one job and discards it on one
owner — at laptop and at phone width, with screenshots. The memory is then checked through the library and with
the ``git`` command line."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

pytestmark = pytest.mark.browser

RUN = "run_prompt_v7"
NEW_PROMPT = ("You keep {character}'s diary. Return a JSON array of entries, each one event the user told, "
              "in one or two sentences.")
OWNERS = [f"user:probe{i}" for i in range(6)]
LEFT_OUT = OWNERS[-1]


class NewPromptLLM:
    """The new prompt's model, as a stand-in: one entry retelling the user's turn."""

    def chat(self, messages):
        turn = messages[-1]["content"].split(":", 1)[-1].strip()
        return json.dumps([{"content": f"They told about {turn}, eyes shining."}])


def stage_runs(root) -> None:
    from wikimem.context import WriteContext
    from wikimem.host import make_host
    from wikimem.host.probation import StagingPolicy

    writer = make_host(root, llm=NewPromptLLM(), staging=StagingPolicy.parse(actors="memorize-v7"))
    for i, owner_id in enumerate(OWNERS):
        owner = writer.create_owner(owner_id)
        owner.add("preferences", "sea", "Likes the sea.")
        owner.memorize(f"user: the lighthouse trip number {i}", prompt=NEW_PROMPT,
                       ctx=WriteContext(run=RUN, actor="memorize-v7"), ts="2026-07-21T10:00:00Z")


@pytest.mark.parametrize("width", ["laptop", "phone"])
def test_a_new_prompts_runs_are_staged_sampled_approved_on_most_and_discarded_on_one(world, operator_page,
                                                                                    screenshots, width):
    stage_runs(world.root)
    heads = {o: world.host.owner(o).head() for o in OWNERS}
    page = operator_page(width)
    page.click("#staged-link")
    expect(page.locator("#waiting-runs")).to_have_text("1")
    expect(page.locator(".run-link")).to_contain_text(RUN)
    page.screenshot(path=screenshots / f"staged-list-{width}.png", full_page=True)
    page.click(".run-link")
    expect(page.locator("#staged-owners")).to_have_text(str(len(OWNERS)))
    expect(page.locator(".staged-sample")).to_have_count(3)  # a few owners' diffs, word by word
    expect(page.locator(".staged-sample").first).to_contain_text("lighthouse")
    page.screenshot(path=screenshots / f"staged-run-{width}.png", full_page=True)
    # Sample one more owner's diff on its own page.
    page.locator(".owner-diff").nth(3).click()
    expect(page.locator("h1")).to_contain_text(OWNERS[3])
    expect(page.locator(".change-added")).to_contain_text("number 3")
    page.screenshot(path=screenshots / f"staged-owner-{width}.png", full_page=True)
    page.go_back()
    # Approve on every owner but one, as one job.
    page.check(f"input[name=except][value='{LEFT_OUT}']")
    page.click("#approve-all")
    expect(page).to_have_url(re.compile(r"/admin/staged/jobs/job_"))
    expect(page.locator("#job-state")).to_have_text("done", timeout=30_000)
    expect(page.locator("#job-done")).to_have_text(str(len(OWNERS) - 1))
    expect(page.locator(".result-done")).to_have_count(len(OWNERS) - 1)
    page.screenshot(path=screenshots / f"staged-job-{width}.png", full_page=True)
    # The one left out: discarded on its own page.
    page.click("#back-to-run")
    expect(page.locator("#staged-owners")).to_have_text("1")
    page.locator(".owner-diff").first.click()
    expect(page.locator("h1")).to_contain_text(LEFT_OUT)
    page.click("#discard")  # asks first: what goes, and how long it is kept to be restored
    expect(page.locator("h1")).to_contain_text("Discard staged run")
    expect(page.locator("section[aria-label='what is discarded'] .change")).not_to_have_count(0)
    page.screenshot(path=screenshots / f"staged-discard-confirm-{width}.png", full_page=True)
    page.click("#confirm")
    expect(page.locator("#restore-discarded")).to_be_visible()
    page.goto(f"{world.url}/admin/staged/{RUN}")
    expect(page.locator(".settled-approved")).to_have_count(len(OWNERS) - 1)
    expect(page.locator(".settled-discarded")).to_have_count(1)
    page.screenshot(path=screenshots / f"staged-settled-{width}.png", full_page=True)
    page.goto(f"{world.url}/admin/staged")
    expect(page.locator("#waiting-runs")).to_have_text("0")

    for owner_id in OWNERS:
        owner = world.host.owner(owner_id)
        entries = [e.content for e in owner.diary_day("2026-07-21")]
        log = subprocess.run(["git", "-C", str(world.path(owner_id)), "log", "-1", "--format=%B", "main"],
                             capture_output=True, text=True, check=True).stdout
        assert subprocess.run(["git", "-C", str(world.path(owner_id)), "for-each-ref", "refs/heads/staged/"],
                              capture_output=True, text=True, check=True).stdout == ""
        if owner_id == LEFT_OUT:
            assert entries == [] and "Wikimem-Action: discard" in log
            assert subprocess.run(["git", "-C", str(world.path(owner_id)), "diff", "--stat", heads[owner_id], "main"],
                                  capture_output=True, text=True, check=True).stdout == ""
        else:
            assert len(entries) == 1 and "lighthouse trip number" in entries[0]
            assert "Wikimem-Action: approve" in log and "Wikimem-Approved-By: admin" in log
