"""What an operator reads of one owner's history: filters, paging both ways, jumps, undo marks both ways,
item versions and blame, plain text search, an add that must not overwrite.

Real repositories; ``git log`` is the witness of what undo commits say.
"""

from __future__ import annotations

import subprocess

import pytest

from wikimem.context import WriteContext
from wikimem.errors import InvalidValue, PreconditionFailed
from wikimem.host import make_host
from wikimem.host.demo import BAD_RUN, bad_run_hint, seed_demo


@pytest.fixture
def owner(tmp_path):
    return make_host(tmp_path / "data").ensure_owner("user:ann")[0]


def write(owner, name, content, **ctx):
    return owner.add("notes", name, content, ctx=WriteContext(**ctx)).commit


def test_filters_by_actor_and_action_and_pages_newer_and_older(owner):
    ids = [write(owner, f"n{i}", f"text {i}", actor="Elaina" if i % 2 else "Lumi") for i in range(7)]
    owner.remove("notes", "n0", ctx=WriteContext(actor="Lumi"))
    lumi = owner.review.search_history(actor="Lumi", limit=2)
    assert [e.actor for e in lumi.entries] == ["Lumi", "Lumi"] and lumi.prev is None
    older = owner.review.search_history(actor="Lumi", limit=2, cursor=lumi.next)
    assert older.prev is not None
    newer = owner.review.search_history(actor="Lumi", limit=2, after=older.prev)
    assert [e.id for e in newer.entries] == [e.id for e in lumi.entries]  # back where we were
    assert [e.action for e in owner.review.search_history(action="remove").entries] == ["remove"]
    everything = owner.review.search_history(actor="Elaina", limit=50).entries
    assert [e.id for e in everything] == [ids[5], ids[3], ids[1]]


def test_a_time_window_and_a_jump_to_a_date(owner):
    write(owner, "a", "one", actor="bot")
    assert owner.review.search_history(until="2000-01-01").entries == []
    assert len(owner.review.search_history(since="2000-01-01").entries) == 2  # with the first commit
    jumped = owner.review.search_history(at="2000-01-01")
    assert jumped.entries == [] and jumped.next is None
    today = owner.history(limit=1).entries[0].time[:10]
    assert owner.review.search_history(at=today, limit=1).entries[0].summary == "add notes/a"
    with pytest.raises(InvalidValue):  # a value refused (422), not a malformed request
        owner.review.search_history(since="last tuesday")


def test_undo_commits_name_what_they_undid_and_marks_link_both_ways(owner):
    write(owner, "a", "good", actor="bot")
    bad = write(owner, "a", "bad", actor="bot", run="run_bad")
    rollback = owner.undo("rollback", "run_bad", ctx=WriteContext(actor="alice")).commit
    message = subprocess.run(["git", "-C", str(owner.root), "log", "-1", "--format=%B"], capture_output=True,
                             text=True, check=True).stdout
    assert f"Wikimem-Reverts: {bad}\n" in message and "Wikimem-Reverts-Run: run_bad\n" in message
    assert "- changed notes/a\n" in message
    page = owner.review.search_history(limit=10)
    marks = owner.review.history_marks(page.entries)
    assert marks.reverted_by == {bad: [rollback]}
    assert marks.run_rolled_back_by == {"run_bad": [rollback]}
    assert marks.undoes[rollback].reverts == (bad,) and marks.undoes[rollback].runs == ("run_bad",)
    # undoing the undo: the run stands again, the rollback is marked reverted
    again = owner.undo("revert", rollback, ctx=WriteContext(actor="alice")).commit
    assert owner.item("notes", "a").content == "bad"
    assert owner.review.run_rolled_back_by("run_bad") == []
    assert owner.review.history_marks(owner.review.search_history(limit=10).entries).reverted_by[rollback] == [again]


def test_old_rollback_commits_with_short_ids_still_mark(owner):
    write(owner, "a", "good", actor="bot")
    bad = write(owner, "a", "bad", actor="bot", run="run_old")
    with owner.vstore.batch(WriteContext(actor="alice"), action="rollback", message="roll back run run_old",
                            reverts=bad[:12]):  # what a rollback wrote before full ids
        owner.store.add("notes", "a", "good", owner=owner.id)
    entries = owner.review.search_history(limit=5).entries
    assert owner.review.undone_by(entries) == {bad: [owner.head()]}


def test_item_versions_and_blame_ignore_metadata_changes(owner):
    first = write(owner, "tea", "oolong", actor="Elaina")
    write(owner, "tea", "green", actor="Elaina", run="run_2")
    green = owner.history(limit=1).entries[0].id
    owner.add("notes", "tea", "green", ctx=WriteContext(actor="Elaina", source_conv="conv_9"))  # metadata only
    versions, nxt = owner.review.item_versions("notes", "tea")
    assert [v.content for v in versions] == ["green", "green", "oolong"] and nxt is None
    assert [v.status for v in versions] == ["changed", "changed", "added"]
    assert versions[0].source_conv == "conv_9"
    assert owner.review.item_blame("notes", "tea").entry.id == green
    assert versions[-1].entry.id == first
    owner.remove("notes", "tea", ctx=WriteContext(actor="alice"))
    assert owner.review.item_versions("notes", "tea")[0][0].status == "removed"


def test_blame_walks_past_one_page_and_knows_a_hand_edit(owner):
    write(owner, "tea", "start", actor="bot")
    for i in range(3):
        owner.add("notes", "tea", "same", ctx=WriteContext(actor="bot", source_conv=f"c{i}"))
    wrote = owner.history(limit=3).entries[-1].id  # the first "same"
    assert owner.review.item_blame("notes", "tea").entry.id == wrote
    (owner.root / "wiki" / "notes.md").write_text("# notes\n\n## tea\n\nby hand\n", encoding="utf-8")
    owner.store.invalidate()
    assert owner.review.item_blame("notes", "tea") is None


def test_text_search_finds_every_word_in_wiki_and_diary(owner):
    write(owner, "tea", "Drinks Oolong tea every morning.", actor="bot")
    write(owner, "sea", "喜欢海边，尤其是傍晚的海风。", actor="bot")
    owner.diary_append("Went to the sea; had oolong after.", date="2026-07-20", time="18:00",
                       ctx=WriteContext(actor="bot"))
    found = owner.review.text_search("oolong")
    assert found.total == 2 and [h.kind for h in found.hits] == ["wiki", "diary"]
    assert found.hits[0].content[slice(*found.hits[0].spans[0])] == "Oolong"
    assert [h.name for h in owner.review.text_search("海风").hits] == ["sea"]
    assert owner.review.text_search("oolong sea").total == 1  # both words, in one entry
    assert owner.review.text_search("TEA").hits[0].name_spans == [(0, 3)]
    assert owner.review.text_search("oolong", limit=1).total == 2
    for bad in ("", "   ", "x" * 201):
        with pytest.raises(InvalidValue):  # a value refused (422), not a malformed request
            owner.review.text_search(bad)


def test_add_new_never_overwrites(owner):
    assert owner.review.add_new("notes", "a", "one", ctx=WriteContext(actor="alice")).commit
    head = owner.head()
    with pytest.raises(PreconditionFailed):
        owner.review.add_new("notes", "a", "two", ctx=WriteContext(actor="alice"))
    assert owner.head() == head and owner.item("notes", "a").content == "one"


def test_the_demo_start_message_stops_pointing_at_a_rolled_back_run(tmp_path):
    host = make_host(tmp_path / "data")
    seed_demo(host)
    assert BAD_RUN in bad_run_hint(host)
    host.owner("user:xnne").undo("rollback", BAD_RUN, ctx=WriteContext(actor="admin"))
    assert bad_run_hint(host) is None


def _steps(vstore, **filters) -> int:
    """SQLite virtual-machine steps one history page costs (a count, not a time: the plan shows in it)."""
    conn = vstore.db._db()
    steps = [0]

    def tick():
        steps[0] += 1
        return 0

    conn.set_progress_handler(tick, 1)
    try:
        page = vstore.history(**filters)
    finally:
        conn.set_progress_handler(None, 1)
    assert page.entries
    return steps[0]


def test_history_of_an_item_without_its_file_reads_an_index_not_every_commit(owner):
    for i in range(400):
        owner.add(f"f{i % 4}", f"n{i}", f"text {i}")
    owner.add("f1", "wanted", "the one")
    named = _steps(owner.vstore, item="wanted")
    with_file = _steps(owner.vstore, file="f1", item="wanted")
    assert named <= 3 * with_file + 200, (named, with_file)  # a scan of every commit's touches is ~400 times more
