"""Runs on probation (issue 28): staged writes on their own branch, read with include_staged, approved item by
item with conflicts kept, discarded with a marker, the policy, and the API around them.

Real repositories under ``tmp_path``; the ``git`` command line is the witness of what the folders hold.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from apiworld import ADMIN, OWNER, auth

from wikimem.context import WriteContext
from wikimem.errors import InvalidName, NotFound
from wikimem.host import Host, RunQuery, make_host
from wikimem.host.probation import StagingPolicy

DATE = "2026-07-21"
V7 = WriteContext(run="run_v7_1", actor="memorize-v7")


class TurnLLM:
    """A chat endpoint stand-in: one diary entry retelling the user's turn."""

    def chat(self, messages):
        turn = messages[-1]["content"].split(":", 1)[-1].strip()
        return json.dumps([{"content": f"They talked about {turn}."}])


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def host(tmp_path) -> Host:
    made = make_host(tmp_path / "data", llm=TurnLLM(), staging=StagingPolicy.parse(actors="memorize-v7"))
    owner = made.create_owner("user:ann")
    owner.add("preferences", "tea", "Drinks green tea.")
    owner.diary_append("Walked by the sea.", date=DATE, time="09:00")
    yield made
    made.start_jobs().stop()


def texts(result) -> list[tuple[str, bool | None]]:
    return [(hit.item.content, hit.staged) for hit in result.items]


def test_a_staged_memorize_leaves_main_unchanged_and_is_seen_only_with_include_staged(host):
    owner = host.owner("user:ann")
    head, files = owner.head(), git(owner.root, "ls-files", "-s")
    done = owner.memorize("user: the lighthouse trip", ctx=V7, ts=f"{DATE}T10:00:00Z")
    assert done.run == "run_v7_1" and done.commit
    assert owner.head() == head and git(owner.root, "status", "--porcelain") == ""
    assert git(owner.root, "ls-files", "-s") == files
    assert git(owner.root, "rev-parse", "refs/heads/staged/run_v7_1").strip() == done.commit
    assert git(owner.root, "rev-parse", "main").strip() == head
    assert owner.retrieve("lighthouse", diary="all").items == []
    with_staged = owner.retrieve("lighthouse", diary="all", include_staged=True)
    assert texts(with_staged) == [("They talked about the lighthouse trip.", True)]
    # The approved memory is still there, marked as such.
    assert ("Walked by the sea.", False) in texts(owner.retrieve("sea", diary="all", include_staged=True))
    log = git(owner.root, "log", "-1", "--format=%B", "staged/run_v7_1")
    assert "Wikimem-Run: run_v7_1" in log and "Wikimem-Actor: memorize-v7" in log and f"Wikimem-Base: {head}" in log
    assert git(owner.root, "fsck").strip() == ""


def test_approving_puts_the_same_items_on_main_with_the_approver_in_the_trailer(host):
    owner = host.owner("user:ann")
    owner.memorize("user: the lighthouse trip", ctx=V7, ts=f"{DATE}T10:00:00Z")
    owner.add("people", "mia", "A friend who surfs.", ctx=V7)
    staged = {(c.kind, c.file, c.name, c.date, c.time, c.after) for c in owner.staged_review("run_v7_1").staged}
    done = owner.approve_staged("run_v7_1", ctx=WriteContext(actor="alice"))
    assert done.value["skipped"] == 0
    approved = {(c["kind"], c["file"], c["name"], c["date"], c["time"], c["after"]) for c in done.value["changes"]}
    assert approved == staged and len(staged) == 2
    assert [e.content for e in owner.diary_day(DATE)] == ["Walked by the sea.",
                                                          "They talked about the lighthouse trip."]
    assert owner.item("people", "mia").content == "A friend who surfs."
    message = git(owner.root, "log", "-1", "--format=%B", "main")
    for trailer in ("Wikimem-Action: approve", "Wikimem-Run: run_v7_1", "Wikimem-Actor: memorize-v7",
                    "Wikimem-Approved-By: alice"):
        assert trailer in message
    assert "refs/heads/staged/" not in git(owner.root, "for-each-ref")
    assert owner.staged_runs() == []
    # The run index sees the approval as the run's commit; the staged-run index as approved by alice.
    rows = host.probation.owners_of("run_v7_1")
    assert [(r["state"], r["settled_by"]) for r in rows] == [("approved", "alice")]
    # An approved run is rolled back like any other.
    owner.undo("rollback", "run_v7_1")
    assert not owner.has_item("people", "mia") and len(owner.diary_day(DATE)) == 1


def test_a_conflicting_later_edit_is_reported_and_kept(host):
    owner = host.owner("user:ann")
    owner.add("preferences", "tea", "Drinks black tea now.", ctx=V7)
    owner.add("preferences", "coffee", "Never drinks coffee.", ctx=V7)
    owner.add("preferences", "tea", "Drinks oolong tea every morning.", ctx=WriteContext(actor="operator"))
    review = owner.staged_review("run_v7_1")
    assert [(c["name"], c["current"], c["wanted"]) for c in review.conflicts] == [
        ("tea", "Drinks oolong tea every morning.", "Drinks black tea now.")]
    done = owner.approve_staged("run_v7_1", ctx=WriteContext(actor="alice"))
    assert done.value["skipped"] == 1 and [c["name"] for c in done.value["conflicts"]] == ["tea"]
    assert owner.item("preferences", "tea").content == "Drinks oolong tea every morning."  # kept
    assert owner.item("preferences", "coffee").content == "Never drinks coffee."  # the rest approved
    assert "Wikimem-Skipped: preferences/tea" in git(owner.root, "log", "-1", "--format=%B")


def test_force_takes_the_staged_version_over_a_later_edit(host):
    owner = host.owner("user:ann")
    owner.add("preferences", "tea", "Drinks black tea now.", ctx=V7)
    owner.add("preferences", "tea", "Drinks oolong tea.", ctx=WriteContext(actor="operator"))
    done = owner.approve_staged("run_v7_1", force=True, ctx=WriteContext(actor="alice"))
    assert done.value["forced"] == 1 and owner.item("preferences", "tea").content == "Drinks black tea now."


def test_edit_then_approve_changes_what_is_approved_in_the_same_commit(host):
    owner = host.owner("user:ann")
    owner.memorize("user: the lighthouse trip", ctx=V7, ts=f"{DATE}T10:00:00Z")
    owner.add("people", "mia", "A friend who surfs.", ctx=V7)
    head = owner.head()
    owner.approve_staged("run_v7_1", ctx=WriteContext(actor="alice"), edits=[
        {"file": "people", "name": "mia", "content": "A friend who surfs and sails."},
        {"date": DATE, "time": "10:00", "content": "They planned a lighthouse trip."}])
    assert git(owner.root, "rev-list", "--count", f"{head}..main").strip() == "1"
    assert owner.item("people", "mia").content == "A friend who surfs and sails."
    assert owner.diary_day(DATE)[-1].content == "They planned a lighthouse trip."
    assert "Wikimem-Edited: people/mia" in git(owner.root, "log", "-1", "--format=%B")


def test_discarding_removes_the_branch_and_marks_the_run_discarded(host):
    owner = host.owner("user:ann")
    owner.memorize("user: the lighthouse trip", ctx=V7, ts=f"{DATE}T10:00:00Z")
    head = owner.head()
    done = owner.discard_staged("run_v7_1", ctx=WriteContext(actor="bob"))
    assert "refs/heads/staged/" not in git(owner.root, "for-each-ref")
    assert git(owner.root, "diff", "--stat", head, "main").strip() == ""  # no memory file changed
    message = git(owner.root, "log", "-1", "--format=%B", "main")
    assert "Wikimem-Action: discard" in message and "Wikimem-Run: run_v7_1" in message
    assert "- added diary" in message  # what it had changed, by name
    assert done.value["discarded"] == 1
    assert [e.content for e in owner.diary_day(DATE)] == ["Walked by the sea."]
    assert [(r["state"], r["settled_by"]) for r in host.probation.owners_of("run_v7_1")] == [("discarded", "bob")]
    assert host.run_index.search(RunQuery(run="run_v7_1")).runs[0].actions == ["discard"]
    with pytest.raises(NotFound):
        owner.approve_staged("run_v7_1")


def test_an_owner_holds_a_bounded_number_of_staged_runs(host, monkeypatch):
    """Every staged run is applied by a retrieve with include_staged: past the cap a new run is refused (403),
    the runs already open still take writes, and settling one makes room."""
    from wikimem import limits
    from wikimem.errors import QuotaExceeded

    monkeypatch.setattr(limits, "MAX_STAGED_RUNS", 3)
    owner = host.owner("user:ann")
    for n in range(3):
        owner.add("people", f"p{n}", f"person {n}", ctx=WriteContext(run=f"run_cap_{n}", actor="memorize-v7"))
    with pytest.raises(QuotaExceeded, match="runs on probation"):
        owner.add("people", "p3", "person 3", ctx=WriteContext(run="run_cap_3", actor="memorize-v7"))
    assert "run_cap_3" not in owner.staging.tips()
    owner.add("people", "p0b", "more of run 0", ctx=WriteContext(run="run_cap_0", actor="memorize-v7"))
    owner.staging.discard("run_cap_1", ctx=WriteContext(actor="operator"))
    owner.add("people", "p3", "person 3", ctx=WriteContext(run="run_cap_3", actor="memorize-v7"))
    assert sorted(owner.staging.tips()) == ["run_cap_0", "run_cap_2", "run_cap_3"]


def test_a_staged_write_with_an_idempotency_key_replays(host):
    owner = host.owner("user:ann")
    ctx = WriteContext(run="run_k", actor="memorize-v7", idempotency_key="k-1")
    first = owner.memorize("user: the lighthouse trip", ctx=ctx, ts=f"{DATE}T10:00:00Z")
    again = owner.memorize("user: the lighthouse trip", ctx=ctx, ts=f"{DATE}T10:00:00Z")
    assert again.replayed and again.commit == first.commit
    assert [e.content for e in again.entries] == [e.content for e in first.entries]
    assert git(owner.root, "rev-list", "--count", "main..staged/run_k").strip() == "1"
    # Without a run id, the key names the run: a retry lands on the same branch.
    keyed = WriteContext(actor="someone", idempotency_key="k-2", staged=True)
    a = owner.add("people", "lu", "A neighbour.", ctx=keyed)
    b = owner.add("people", "lu", "A neighbour.", ctx=keyed)
    assert b.replayed and a.commit == b.commit


@pytest.mark.parametrize("run", ["a..b", "-x", "x.lock", "x/y", "x y", "x:y", "é", ".hidden", "HEAD", "main",
                                 "Main", "FETCH_HEAD", "head"])
def test_a_run_id_that_cannot_name_a_branch_is_refused(host, run):
    owner = host.owner("user:ann")
    with pytest.raises(InvalidName):
        owner.add("people", "mia", "x", ctx=WriteContext(run=run, staged=True))


def test_the_policy_stages_by_actor_and_leaves_others_alone(host):
    owner = host.owner("user:ann")
    head = owner.head()
    owner.add("people", "mia", "direct", ctx=WriteContext(actor="Elaina"))
    assert owner.head() != head
    head = owner.head()
    owner.add("people", "lu", "staged", ctx=WriteContext(actor="memorize-v7"))
    assert owner.head() == head and len(owner.staged_runs()) == 1
    policy = StagingPolicy.parse(actors="memorize-exp-*, v7", read_tokens="bot-*")
    assert policy.stages("memorize-exp-3") and policy.stages("v7") and not policy.stages("memorize-v8")
    assert policy.reads_staged("bot-1") and not policy.reads_staged(None)


def test_auto_approval_and_expiry_queue_jobs_for_runs_old_enough(tmp_path):
    host = make_host(tmp_path / "data", staging=StagingPolicy.parse(auto_approve=60, expire=3600))
    try:
        for name in ("user:a", "user:b"):
            host.create_owner(name).add("people", "mia", "staged", ctx=WriteContext(run="run_old", staged=True))
        host.create_owner("user:c").add("people", "mia", "held", ctx=WriteContext(run="run_held", staged=True))
        host.probation.sweep(budget=None)
        host.probation.hold("run_held")
        assert host.probation.tick(now=time.time()) == {"approve": [], "expire": []}  # not old enough yet
        queued = host.probation.tick(now=time.time() + 120)
        assert queued == {"approve": ["run_old"], "expire": []}
        job = wait_job(host, "staged-approve")
        assert job.state == "done" and {r["result"]["status"] for r in job.results} == {"done"}
        assert host.owner("user:a").item("people", "mia").content == "staged"
        assert "Wikimem-Approved-By: auto-approve" in git(host.owner_path("user:a"), "log", "-1", "--format=%B")
        assert host.owner("user:c").staged_runs()[0].run == "run_held"  # held: left alone
        expiring = make_host(tmp_path / "data", staging=StagingPolicy.parse(expire=3600))
        expiring.probation.hold("run_held", False)
        assert expiring.probation.tick(now=time.time() + 7200) == {"approve": [], "expire": ["run_held"]}
        job = wait_job(expiring, "staged-discard")
        assert job.state == "done"
        assert [r["state"] for r in expiring.probation.owners_of("run_held")] == ["expired"]
        expiring.start_jobs().stop()
    finally:
        host.start_jobs().stop()


def wait_job(host: Host, kind: str, timeout: float = 60.0):
    from wikimem.host.fleet import JobQuery

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = host.jobs.list(JobQuery(kind=kind), admin=True).jobs
        if found and (job := host.jobs.get(found[0].id)).state in ("done", "failed"):
            return job
        host.start_jobs()
        time.sleep(0.05)
    raise AssertionError(f"no {kind} job finished")


def test_the_metrics_say_how_many_staged_runs_wait(host):
    host.owner("user:ann").add("people", "mia", "x", ctx=V7)
    collected = {m.name: m.samples[0].value for m in host.metrics_collector().collect() if m.samples
                 and m.name.startswith("wikimem_staged")}
    assert collected["wikimem_staged_runs_waiting"] == 1 and collected["wikimem_staged_owner_runs_waiting"] == 1


# -- the API -------------------------------------------------------------------------------------------

def test_the_api_stages_a_write_reads_it_with_include_staged_and_approves_it(world):
    c, h = world.client, auth(ADMIN)
    base = f"/api/v1/owners/{OWNER}"
    head = c.get(base, headers=h).get_json()["head"]
    r = c.post(base + "/diary", headers=h, json={"content": "Saw a lighthouse.", "date": DATE, "time": "10:00",
                                                 "run": "run_api", "staged": True})
    assert r.status_code == 201 and c.get(base, headers=h).get_json()["head"] == head
    assert c.post(base + "/retrieve", headers=h, json={"query": "lighthouse", "diary": "all"}).get_json()["items"] == []
    hits = c.post(base + "/retrieve", headers=h, json={"query": "lighthouse", "diary": "all",
                                                       "include_staged": True}).get_json()["items"]
    assert [(x["item"]["content"], x["staged"]) for x in hits] == [("Saw a lighthouse.", True)]
    listing = c.get("/api/v1/staged", headers=h).get_json()
    assert [(x["run"], x["owners"]) for x in listing["runs"]] == [("run_api", 1)] and listing["waiting"]["runs"] == 1
    review = c.get(base + "/staged/run_api", headers=h).get_json()
    assert [x["after"] for x in review["changes"]] == ["Saw a lighthouse."]
    done = c.post(base + "/staged/run_api/approve", headers=h, json={"actor": "alice"}).get_json()
    assert done["commit"] and done["result"]["skipped"] == 0
    assert c.get("/api/v1/staged", headers=h).get_json()["waiting"]["runs"] == 0
    bad = c.post(base + "/diary", headers=h, json={"content": "x", "run": "a..b", "staged": True})
    assert bad.status_code == 422
    assert c.post(base + "/staged/run_api/approve", headers=h).status_code == 404


def test_only_admins_approve_and_a_token_sees_its_own_owners(world):
    c = world.client
    writer = auth(world.secrets["writer"])
    base = f"/api/v1/owners/{OWNER}"
    assert c.put(base + "/items/people/mia", headers=writer, json={"content": "x", "run": "r1",
                                                                   "staged": True}).status_code == 201
    assert c.post(base + "/staged/r1/approve", headers=writer).status_code == 403
    assert c.post("/api/v1/staged/r1/approve", headers=writer, json={}).status_code == 403
    scoped = auth(world.secrets["scoped"])
    assert c.get("/api/v1/staged", headers=scoped).get_json()["runs"] == []
    assert [x["run"] for x in c.get("/api/v1/staged", headers=writer).get_json()["runs"]] == ["r1"]


def test_the_cli_lists_shows_holds_and_approves_a_run_leaving_an_owner_out(tmp_path):
    import os
    import sys

    root = tmp_path / "data"
    host = make_host(root)
    for i in range(3):
        host.create_owner(f"user:c{i}").add("people", "mia", f"staged {i}",
                                           ctx=WriteContext(run="run_cli", actor="v7", staged=True))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "wikimem", "staged", "--data", str(root), *args],
                              capture_output=True, text=True, env=env)

    listed = cli()
    assert listed.returncode == 0 and "run_cli\tv7\t3 owner(s)" in listed.stdout
    assert "1 staged run(s) waiting on 3 owner(s)" in listed.stderr
    assert cli("show", "run_cli").stdout.count("\tstaged\t") == 3
    assert cli("hold", "run_cli").stdout.strip() == "run_cli: held on 3 owner(s)"
    done = cli("approve", "run_cli", "--except", "user:c2", "--actor-name", "alice")
    assert done.returncode == 0 and done.stdout.count(": done ") == 2
    assert host.owner("user:c0").item("people", "mia").content == "staged 0"
    assert [r.run for r in host.owner("user:c2").staged_runs()] == ["run_cli"]
    assert cli("discard", "run_cli").stdout.startswith("user:c2: done")
    assert cli().returncode == 1  # nothing waits any more


@pytest.mark.parametrize("edit", [{"file": "preferences", "name": "tea", "content": "Hates tea."},
                                  {"date": DATE, "time": "09:00", "content": "Stayed home."}])
def test_an_approval_may_edit_only_what_the_run_changed(host, edit):
    from wikimem.errors import InvalidValue

    owner = host.owner("user:ann")
    owner.add("people", "mia", "A friend who surfs.", ctx=V7)
    head = owner.head()
    with pytest.raises(InvalidValue, match="not among what staged run run_v7_1 changed"):
        owner.approve_staged("run_v7_1", ctx=WriteContext(actor="alice"), edits=[
            {"file": "people", "name": "mia", "content": "A friend who sails."}, edit])
    assert owner.head() == head and [r.run for r in owner.staged_runs()] == ["run_v7_1"]
    assert owner.item("preferences", "tea").content == "Drinks green tea."
    assert [e.content for e in owner.diary_day(DATE)] == ["Walked by the sea."]


def test_a_discarded_run_is_kept_and_the_command_line_stages_it_again(host, tmp_path, capsys):
    from wikimem.cli import main

    owner = host.owner("user:ann")
    owner.memorize("user: the lighthouse trip", ctx=V7, ts=f"{DATE}T10:00:00Z")
    tip = owner.staged_runs()[0].tip
    owner.discard_staged("run_v7_1", ctx=WriteContext(actor="bob"))
    assert git(owner.root, "rev-parse", "refs/wikimem/discarded/run_v7_1").strip() == tip
    assert main(["staged", "--data", str(host.root), "restore-discarded", "run_v7_1", "--owner", "user:ann"]) == 0
    assert capsys.readouterr().out.strip() == "run_v7_1-restored"
    owner = host.owner("user:ann")
    assert [(r.run, r.tip) for r in owner.staged_runs()] == [("run_v7_1-restored", tip)]
    assert "refs/wikimem/discarded" not in git(owner.root, "for-each-ref")
    with pytest.raises(NotFound):
        owner.restore_discarded("run_v7_1")  # once
