"""Bulk rollback: a search frozen into one step per owner, previewed, then undone one commit per owner.

Library level (the job runner and the API have their own tests): the
preview writes nothing, conflicts are skipped unless forced, every commit
carries the job id as its run and names what it undid, a retried step
writes nothing twice, and the whole action is undone by a bulk rollback of
the job's run id. ``git`` is the independent witness.
"""

from __future__ import annotations

import subprocess

import pytest
from operators_world import BAD_ACTOR, bad_deploy

from wikimem.host import BadRequest, RunQuery, make_host
from wikimem.host.fleet.bulk import Part

BAD = RunQuery.parse(actor=BAD_ACTOR, since="2000-01-01")


@pytest.fixture
def host(tmp_path):
    return make_host(tmp_path / "data")


def heads(host, owners):
    return {o: host.owner(o).head() for o in owners}


def git(path, *args) -> str:
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True).stdout


def test_preview_shows_each_owners_changes_and_conflicts_and_writes_nothing(host):
    deploy = bad_deploy(host, 6)
    before = heads(host, deploy.owners)
    preview = host.fleet.preview_bulk_rollback(BAD)
    assert preview.total == {"owners": 6, "runs": 6, "changes": 5 * 2, "changes_if_forced": 6 * 2, "conflicts": 1,
                             "owners_with_conflicts": 1, "owners_to_change": 5, "owners_with_nothing_to_do": 0}
    by_owner = {p.part.owner: p for p in preview.plans}
    conflicted = by_owner[deploy.conflicted]
    assert [(c["name"], c["current"], c["wanted"]) for c in conflicted.conflicts] == [
        ("tea", "Drinks green tea now.", "Drinks oolong tea every morning.")]
    plain = by_owner[deploy.owners[1]]
    assert sorted((c.kind, c.status, c.after) for c in plain.changes) == [
        ("diary", "removed", None), ("wiki", "changed", "Drinks oolong tea every morning.")]
    assert heads(host, deploy.owners) == before


def test_bulk_rollback_skips_conflicts_and_makes_one_commit_per_owner(host):
    deploy = bad_deploy(host, 6)
    results = host.fleet.bulk_rollback_now(BAD, job="job_a1", actor="alice")
    status = {r["owner"]: r["status"] for r in results}
    assert status.pop(deploy.conflicted) == "conflict" and set(status.values()) == {"done"}
    for owner_id in deploy.owners[1:]:
        owner = host.owner(owner_id)
        assert owner.item("preferences", "tea").content == "Drinks oolong tea every morning."
        assert owner.diary_day("2026-07-21") == []
        message = git(owner.root, "log", "-1", "--format=%B")
        bad = owner.history(limit=3).entries[1]
        assert "Wikimem-Run: job_a1" in message and "Wikimem-Actor: alice" in message
        assert f"Wikimem-Reverts: {bad.id}" in message  # the full id of the undone commit
        assert f"Wikimem-Reverts-Run: {bad.run}" in message
        assert "- changed preferences/tea" in message and "- removed diary 2026-07-21 14:30" in message
        assert git(owner.root, "log", "--format=%s").count("\n") == 4  # init, good, bad, rollback
    untouched = host.owner(deploy.conflicted)
    assert untouched.item("preferences", "tea").content == "Drinks green tea now."
    assert [e.content for e in untouched.diary_day("2026-07-21")] == ["Said they hate tea."]


def test_a_forced_bulk_rollback_overwrites_the_conflicts(host):
    deploy = bad_deploy(host, 2)
    results = host.fleet.bulk_rollback_now(BAD, job="job_f1", force=True)
    assert {r["status"] for r in results} == {"done"}
    assert host.owner(deploy.conflicted).item("preferences", "tea").content == "Drinks oolong tea every morning."


def test_a_retried_step_writes_nothing_twice(host):
    deploy = bad_deploy(host, 2, conflict=False)
    part = host.fleet.bulk_parts(BAD)[0]
    first = host.fleet.bulk_rollback_part(part, job="job_r1")
    head = host.owner(part.owner).head()
    again = host.fleet.bulk_rollback_part(part, job="job_r1")  # the job runner retries after a crash
    assert again["commit"] == first["commit"] and again["replayed"] is True
    assert host.owner(part.owner).head() == head
    assert deploy.owners[0] == part.owner


def test_marks_follow_the_rollback_and_the_search_leaves_rolled_back_runs_out(host):
    deploy = bad_deploy(host, 3, conflict=False)
    host.fleet.bulk_rollback_now(BAD, job="job_m1")
    rows = host.fleet.find_runs(BAD).runs
    assert len(rows) == 3 and all(r.rolled_back_by for r in rows)
    assert {host.owner(r.owner).head() for r in rows} == {r.rolled_back_by for r in rows}
    assert host.fleet.bulk_parts(BAD) == []  # nothing left to roll back
    assert host.fleet.preview_bulk_rollback(BAD).total["owners"] == 0
    owner = host.owner(deploy.owners[0])
    assert owner.review.run_rolled_back_by("run_bad_0") == [owner.head()]


def test_the_bulk_action_is_undone_as_a_whole(host):
    deploy = bad_deploy(host, 4, conflict=False)
    host.fleet.bulk_rollback_now(BAD, job="job_u1")
    undo = RunQuery.parse(run="job_u1")
    assert host.fleet.preview_bulk_rollback(undo).total["owners"] == 4
    results = host.fleet.bulk_rollback_now(undo, job="job_u2")
    assert {r["status"] for r in results} == {"done"}
    for owner_id in deploy.owners:
        owner = host.owner(owner_id)
        assert owner.item("preferences", "tea").content == "Hates tea."  # the bad run stands again
        assert owner.review.run_rolled_back_by(f"run_bad_{int(owner_id[-4:])}") == []
    rows = {r.run: r for r in host.fleet.find_runs(RunQuery.parse(owner_prefix=deploy.owners[0])).runs}
    assert rows["run_bad_0"].rolled_back_by is None
    assert rows["job_u1"].rolled_back_by == rows["job_u2"].commit
    # and the bad deploy can be rolled back again
    assert host.fleet.preview_bulk_rollback(BAD).total["changes"] == 4 * 2


def test_a_bulk_rollback_needs_a_selective_search(host):
    bad_deploy(host, 1)
    with pytest.raises(BadRequest):
        host.fleet.preview_bulk_rollback(RunQuery.parse(owner_prefix="user:"))


def test_a_deleted_owner_is_reported_not_fatal(host):
    deploy = bad_deploy(host, 2, conflict=False)
    parts = host.fleet.bulk_parts(BAD)
    host.delete_owner(deploy.owners[0])
    results = [host.fleet.bulk_rollback_part(p, job="job_d1") for p in parts]
    assert [r["status"] for r in results] == ["missing", "done"]


def test_part_round_trips_through_json():
    part = Part("user:a", ["run_1"], ["a" * 40])
    assert Part.from_dict(part.to_dict()) == part
