"""The cross-owner run index: fed at commit time, searched by actor/run/time across owners, rebuildable.

Real repositories in a tmp data root; the ``git`` command line and a second
``Host`` over the same root (another process's view) are the witnesses.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from operators_world import BAD_ACTOR, GOOD_ACTOR, bad_deploy, owner_name

from wikimem.context import WriteContext
from wikimem.errors import InvalidValue
from wikimem.host import BadRequest, RunQuery, make_host
from wikimem.host.fleet.paging import encode_cursor


@pytest.fixture
def host(tmp_path):
    return make_host(tmp_path / "data")


def all_pages(host, query, **kwargs):
    rows, cursor = [], None
    while True:
        page = host.fleet.find_runs(query, cursor=cursor, **kwargs)
        rows += page.runs
        if page.next is None:
            return rows, page.total
        cursor = page.next


def test_a_write_is_in_the_index_when_it_returns_and_a_second_host_sees_it(host, tmp_path):
    owner, _ = host.ensure_owner("user:ann")
    done = owner.add("preferences", "tea", "oolong", ctx=WriteContext(run="run_1", actor="Elaina"))
    other = make_host(tmp_path / "data")  # another process over the same data root
    rows = other.fleet.find_runs(RunQuery.parse(actor="Elaina")).runs
    assert [(r.owner, r.run, r.commit, r.commits, r.actions) for r in rows] == [
        ("user:ann", "run_1", done.commit, 1, ["add"])]


def test_actor_and_time_window_find_the_bad_runs_of_every_owner(host):
    deploy = bad_deploy(host, 12)
    rows, total = all_pages(host, RunQuery.parse(actor=BAD_ACTOR, since="2000-01-01", until="2999-01-01"), limit=5)
    assert total == {"runs": 12, "owners": 12, "commits": 12}
    assert sorted(r.owner for r in rows) == deploy.owners  # every run once, across pages
    assert {r.run for r in rows} == {f"run_bad_{i}" for i in range(12)}
    assert all(r.changes == 2 and r.source_conv.endswith("_2") for r in rows)
    # a window that ends before the runs finds nothing; the good runs are another actor's
    assert host.fleet.find_runs(RunQuery.parse(actor=BAD_ACTOR, until="2000-01-01")).total["runs"] == 0
    assert host.fleet.find_runs(RunQuery.parse(actor=GOOD_ACTOR)).total["owners"] == 12


def test_counts_per_owner_page_through_owners(host):
    bad_deploy(host, 7, conflict=False)
    seen, cursor = [], None
    while True:
        page = host.fleet.runs_per_owner(RunQuery.parse(since="2000-01-01"), limit=3, cursor=cursor)
        seen, cursor = seen + page.owners, page.next
        if cursor is None:
            break
    assert [c.owner for c in seen] == [owner_name(i) for i in range(7)]
    assert {(c.runs, c.commits) for c in seen} == {(2, 2)}


def test_a_commit_without_a_run_is_a_run_of_its_own(host):
    owner, _ = host.ensure_owner("user:ann")
    first = owner.add("notes", "a", "one", ctx=WriteContext(actor="bot")).commit
    second = owner.add("notes", "b", "two", ctx=WriteContext(actor="bot")).commit
    rows = host.fleet.find_runs(RunQuery.parse(actor="bot")).runs
    assert [(r.run, r.commit) for r in rows] == [(None, second), (None, first)]


def test_scope_and_prefix_limit_what_a_search_sees(host):
    bad_deploy(host, 3, conflict=False)
    host.ensure_owner("team:zed")[0].add("p", "x", "y", ctx=WriteContext(actor=BAD_ACTOR))
    query = RunQuery.parse(actor=BAD_ACTOR)
    assert host.fleet.find_runs(query).total["owners"] == 4
    assert host.fleet.find_runs(query, within="team:").total["owners"] == 1
    outside = RunQuery.parse(actor=BAD_ACTOR, owner_prefix="user:")
    assert host.fleet.find_runs(outside, within="team:").total["runs"] == 0
    assert host.fleet.find_runs(RunQuery.parse(actor=BAD_ACTOR, owner_prefix="user:d0001")).total["owners"] == 1


@pytest.mark.parametrize("field, value", [("since", "yesterday"), ("until", "2026-13-01"), ("actor", "x" * 201)])
def test_bad_search_values_are_a_clear_error(field, value):
    with pytest.raises(InvalidValue):  # well-formed, refused: 422
        RunQuery.parse(**{field: value})


@pytest.mark.parametrize("key", [None, [2**63, "user:a", 1], [0, "user:a", -(2**63) - 1], [0, "user:a", 10**40],
                                 [1.5, "user:a", 1], [0, 7, 1], [0, "user:a"]])
def test_a_forged_cursor_is_a_clear_error(host, key):
    """Issue 24 item 22: a cursor holding an integer past SQLite's (>= 2**63) was a 500 (OverflowError)."""
    cursor = "bm90IGEgY3Vyc29y" if key is None else encode_cursor(*key)
    with pytest.raises(BadRequest, match="invalid cursor"):
        host.fleet.find_runs(RunQuery.parse(), cursor=cursor)


def test_the_index_is_rebuilt_from_the_owners_histories(host, tmp_path):
    bad_deploy(host, 5)
    query = RunQuery.parse(since="2000-01-01")
    before = [r.to_dict() for r in all_pages(host, query, limit=100)[0]]
    for path in (tmp_path / "data" / "index").iterdir():
        path.unlink()
    fresh = make_host(tmp_path / "data")
    assert fresh.run_index.search(query).total["runs"] == 0  # the file itself starts empty
    counts = fresh.fleet.refresh_run_index()
    assert counts["owners"] == 5 and counts["commits"] == 5 * 2 + 1
    assert [r.to_dict() for r in all_pages(fresh, query, limit=100)[0]] == before
    assert fresh.fleet.refresh_run_index()["commits"] == 0  # nothing new
    assert [r.to_dict() for r in all_pages(fresh, query, limit=100)[0]] == before


def test_an_index_younger_than_the_owners_is_incomplete_until_a_read_or_a_sweep_catches_it_up(host, tmp_path):
    bad_deploy(host, 2, conflict=False)
    assert host.fleet.find_runs(RunQuery.parse()).complete
    for path in (tmp_path / "data" / "index").iterdir():
        path.unlink()
    upgraded = make_host(tmp_path / "data")  # a host upgraded over existing owners
    assert not upgraded.run_index.complete() and upgraded.run_index.search(RunQuery.parse()).total["runs"] == 0
    page = upgraded.fleet.find_runs(RunQuery.parse())  # the read indexes the owners beyond the index first
    assert page.total == {"owners": 2, "runs": 4, "commits": 4}
    assert not page.complete  # ...but only a sweep of every owner makes the index say it is whole
    assert upgraded.fleet.sweep_run_index()
    assert upgraded.fleet.find_runs(RunQuery.parse()).complete


def test_a_read_beyond_its_time_budget_says_incomplete(host, monkeypatch):
    from wikimem.host.fleet import operations

    bad_deploy(host, 3, conflict=False)
    for owner_id in host.owner_ids():
        host.run_index.forget(owner_id)  # as if three commits had reached the host without a listener
    monkeypatch.setattr(operations, "INLINE_CATCH_UP", 0.0)
    page = host.fleet.find_runs(RunQuery.parse(), limit=5)
    assert not page.complete
    host.fleet.sweep_run_index()
    page = host.fleet.find_runs(RunQuery.parse())
    assert page.complete and page.total["owners"] == 3


def test_a_hand_edit_is_indexed_by_the_owners_next_write(host):
    owner, _ = host.ensure_owner("user:ann")
    owner.add("notes", "a", "one", ctx=WriteContext(actor="bot"))
    (owner.root / "wiki" / "notes.md").write_text("# notes\n\n## a\n\nedited by hand\n", encoding="utf-8")
    owner.add("notes", "b", "two", ctx=WriteContext(actor="bot"))  # commits the hand edit first
    actions = [r.actions for r in host.fleet.find_runs(RunQuery.parse(owner_prefix="user:ann")).runs]
    assert ["external-edit"] in actions and len(actions) == 3


def test_a_deleted_owner_leaves_the_index(host):
    bad_deploy(host, 2, conflict=False)
    host.delete_owner(owner_name(0))
    assert {r.owner for r in host.fleet.find_runs(RunQuery.parse(actor=BAD_ACTOR)).runs} == {owner_name(1)}


def test_a_broken_index_never_fails_a_write_and_a_rebuild_repairs_it(host, tmp_path):
    owner, _ = host.ensure_owner("user:ann")
    index_dir = tmp_path / "data" / "index"
    host.run_index.close()
    for path in index_dir.iterdir():
        path.unlink()
    index_dir.rmdir()
    index_dir.write_text("not a folder")  # the listener cannot open its database
    done = owner.add("notes", "a", "one", ctx=WriteContext(actor="bot"))
    assert done.commit and owner.item("notes", "a").content == "one"
    index_dir.unlink()
    assert host.fleet.refresh_run_index()["commits"] == 1
    assert host.fleet.find_runs(RunQuery.parse(actor="bot")).runs[0].commit == done.commit


def test_cli_finds_runs_and_rebuilds_the_index(host, tmp_path):
    bad_deploy(host, 3)
    data = str(tmp_path / "data")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "wikimem", *args], capture_output=True, text=True)

    found = cli("runs", "--data", data, "--actor", BAD_ACTOR, "--since", "2000-01-01")
    assert found.returncode == 0, found.stderr
    assert len(found.stdout.splitlines()) == 3 and "3 run(s) of 3 owner(s)" in found.stderr
    per_owner = cli("runs", "--data", data, "--actor", BAD_ACTOR, "--by-owner")
    assert [line.split("\t")[0] for line in per_owner.stdout.splitlines()] == [owner_name(i) for i in range(3)]
    assert cli("runs", "--data", data, "--actor", "nobody").returncode == 1
    assert cli("runs", "--data", data, "--since", "soon").returncode == 2
    rebuilt = cli("index", "rebuild", "--data", data, "--full")
    assert rebuilt.returncode == 0 and "3 owner(s)" in rebuilt.stdout


def test_pages_of_two_hosts_merge_into_the_pages_of_one(tmp_path):
    """What a cluster gatherer does: the same query and cursor to every host, pages merged in one order."""
    from wikimem.host.fleet import merge_pages

    one, east, west = make_host(tmp_path / "one"), make_host(tmp_path / "east"), make_host(tmp_path / "west")
    for i in range(9):
        for target in (one, east if i % 3 else west):
            owner, _ = target.ensure_owner(owner_name(i))
            owner.add("notes", "a", f"n{i}", ctx=WriteContext(actor=BAD_ACTOR, run=f"run_{i}"))
            owner.add("notes", "b", f"m{i}", ctx=WriteContext(actor=BAD_ACTOR))
    query = RunQuery.parse(actor=BAD_ACTOR)
    expected, _ = all_pages(one, query, limit=100)
    merged, cursor = [], None
    while True:
        page = merge_pages([h.fleet.find_runs(query, limit=4, cursor=cursor).to_dict() for h in (east, west)], 4)
        merged += page["runs"]
        assert page["total"]["owners"] == 9
        if page["next"] is None:
            break
        cursor = page["next"]
    # the same runs in the same order (the clock may differ between the two worlds: compare the keys)
    key = lambda r: (r["owner"], r["run"] or "loose")  # noqa: E731
    assert sorted(map(key, merged)) == sorted(key(r.to_dict()) for r in expected)
    assert len(merged) == len(expected) == 18
