"""The jobs page in a real browser, on a laptop and a phone: reached from the Runs page, progress, cancel.

Two jobs of a kind no runner handles (they stay queued) and a finished bulk
rollback; the operator cancels one queued job from the page.
"""

from __future__ import annotations

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", ["laptop", "phone"])
def test_the_jobs_page_shows_progress_and_cancels_a_queued_job(world, operator_page, screenshots, width):
    owner = world.seeded.owner
    jobs = world.host.jobs
    waiting = [jobs.submit("idle-kind", [{"n": n}], params={"owner": owner})[0].id for n in range(2)]
    half, _ = jobs.submit("idle-kind", [{"n": 0}, {"n": 1}], params={"owner": owner})
    with jobs.db.write() as tx:  # one of its two steps done: the others stay queued
        tx.execute("UPDATE steps SET state = 'done', result = '{}', finished = 1 WHERE job = ? AND n = 0", (half.id,))
        tx.execute("UPDATE jobs SET state = 'running', done = 1 WHERE id = ?", (half.id,))
    page = operator_page(width)
    page.goto(world.url + "/admin/runs")
    page.click("#jobs-link")
    expect(page.locator("h1")).to_have_text("Background jobs")
    row = page.locator(f"tr[data-job='{half.id}']")
    expect(row).to_contain_text("running")
    expect(row.locator("progress")).to_have_attribute("value", "1")
    page.screenshot(path=screenshots / f"jobs-{width}.png", full_page=True)
    page.locator(f"tr[data-job='{waiting[1]}'] button.cancel-job").click()
    expect(page.locator(f"tr[data-job='{waiting[1]}']")).to_contain_text("cancelled")
    assert jobs.get(waiting[1]).state == "cancelled" and jobs.get(waiting[0]).state in ("queued", "running")
    page.select_option("#j-state", "cancelled")
    page.click("#find-jobs")
    expect(page.locator("tr.job-row")).to_have_count(1)
