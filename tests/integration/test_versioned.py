"""Versioned stores against real dulwich repositories, with the git CLI as an independent witness."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("dulwich")

from wikimem import MemoryIndex, MemoryStore  # noqa: E402
from wikimem.context import WriteContext
from wikimem.errors import Conflict, NotFound, PreconditionFailed  # noqa: E402
from wikimem.format.codec import item_etag  # noqa: E402
from wikimem.versioned import VersionedStore  # noqa: E402
from wikimem.versioned.history.historydb import DB_NAME  # noqa: E402

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git CLI not installed")


def git(root: Path, *args: str) -> str:
    return subprocess.run([GIT, *args], cwd=root, check=True, capture_output=True, text=True).stdout


def count_commits(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "main").strip())


@pytest.fixture
def vs(tmp_path):
    store = VersionedStore(tmp_path / "mem")
    yield store
    store.close()


# -- commits ------------------------------------------------------------------

@needs_git
def test_opening_initialises_a_clean_repository_on_main(vs):
    root = vs.root
    assert git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    ignore = (root / ".gitignore").read_text()
    for pattern in ("journal.jsonl", "vectors*", "diary-vectors/"):
        assert pattern in ignore
    assert count_commits(root) == 1
    assert git(root, "status", "--porcelain") == ""


@needs_git
def test_every_write_is_one_commit_with_trailers_and_the_actor_as_author(vs):
    root = vs.root
    done = vs.add("preferences", "likes-the-sea", "She loves the sea.", owner="u1",
                  ctx=WriteContext(source_conv="c7", run="run_42", actor="Elaina"))
    assert done.commit == vs.head() and not done.replayed
    vs.diary_append("walked on the beach", ts="2026-07-21T06:30:00Z", ctx=WriteContext(actor="Elaina", run="run_42"))
    assert count_commits(root) == 3
    body = git(root, "log", "-1", "--format=%an%n%B", "HEAD~1")
    lines = body.splitlines()
    assert lines[0] == "Elaina"
    assert lines[1] == "add preferences/likes-the-sea"
    for trailer in ("Wikimem-Action: add", "Wikimem-File: preferences", "Wikimem-Item: likes-the-sea",
                    "Wikimem-Owner: u1", "Wikimem-Source-Conv: c7", "Wikimem-Run: run_42", "Wikimem-Actor: Elaina"):
        assert trailer in lines
    journal = [line for line in lines if line.startswith("Wikimem-Journal: ")]
    assert json.loads(journal[0].split(": ", 1)[1])["item"] == "likes-the-sea"
    diary_msg = git(root, "log", "-1", "--format=%s%n%b", "HEAD")
    assert diary_msg.startswith("diary 2026-07-21 06:30")
    assert "Wikimem-Date: 2026-07-21" in diary_msg and "Wikimem-Time: 06:30" in diary_msg
    # the journal is still written, but not versioned; git status is clean
    assert len((root / "journal.jsonl").read_text().splitlines()) == 2
    assert git(root, "status", "--porcelain") == ""
    assert "journal.jsonl" not in git(root, "ls-files")
    assert git(root, "show", "HEAD~1:wiki/preferences.md").count("She loves the sea.") == 1


@needs_git
def test_a_batch_is_one_commit_and_an_empty_or_failed_batch_none(vs):
    head = vs.head()
    with vs.batch(WriteContext(run="run_1", actor="Elaina"), message="memorize 2 entries") as b:
        vs.store.add("people", "mom", "a teacher")
        vs.diary.append("first", ts="2026-07-21T06:30:00Z")
        vs.diary.append("second", ts="2026-07-21T06:31:00Z")
    assert b.commit == vs.head() != head
    assert count_commits(vs.root) == 2
    assert git(vs.root, "log", "-1", "--format=%s").strip() == "memorize 2 entries"
    with vs.batch(WriteContext(run="run_2")) as empty:
        pass
    assert empty.commit is None and count_commits(vs.root) == 2
    before = (vs.root / "wiki" / "people.md").read_bytes()
    with pytest.raises(RuntimeError):
        with vs.batch(WriteContext(run="run_3")):
            vs.store.add("people", "mom", "changed")
            vs.store.add("people", "dad", "new")
            raise RuntimeError("the worker died")
    assert (vs.root / "wiki" / "people.md").read_bytes() == before
    assert count_commits(vs.root) == 2
    assert git(vs.root, "status", "--porcelain") == ""


def test_invalid_input_writes_no_commit(vs):
    head = vs.head()
    for bad in (lambda: vs.add("../etc", "x", "y"), lambda: vs.add("ok", "x", 3),
                lambda: vs.diary_append(""), lambda: vs.diary_append("x", ts="yesterday")):
        with pytest.raises(ValueError):
            bad()
    assert vs.head() == head


def test_writes_through_the_plain_store_api_also_commit(vs):
    vs.store.add("f", "a", "1")
    vs.diary.append("event", ts="2026-01-01T00:00:00Z")
    assert [e.action for e in vs.history().entries] == ["diary", "add", "init"]


# -- preconditions and retries --------------------------------------------------

def test_if_match_guards_an_item_and_idempotency_key_replays(vs):
    first = vs.add("f", "a", "one")
    tag = item_etag(first.value)
    with pytest.raises(PreconditionFailed) as exc:
        vs.add("f", "a", "two", ctx=WriteContext(if_match="0" * 20))
    assert exc.value.current == tag
    assert vs.store.get("f", "a").content == "one"
    second = vs.add("f", "a", "two", ctx=WriteContext(if_match=tag))
    assert second.value.content == "two"
    head = vs.head()
    r1 = vs.diary_append("once", ctx=WriteContext(idempotency_key="k-1"), ts="2026-01-01T10:00:00Z")
    r2 = vs.diary_append("once", ctx=WriteContext(idempotency_key="k-1"), ts="2026-01-01T10:00:00Z")
    assert r2.replayed and r2.commit == r1.commit and r2.value == r1.value
    assert len(vs.diary.day("2026-01-01")) == 1
    assert vs.history(limit=5).entries[1].id == head
    with pytest.raises(PreconditionFailed):
        with vs.batch(WriteContext(if_match=head)):
            vs.store.add("f", "b", "x")
    with vs.batch(WriteContext(if_match=vs.head())) as b:
        vs.store.add("f", "b", "x")
    assert b.commit == vs.head()


def test_idempotency_survives_a_deleted_history_index(vs):
    r1 = vs.add("f", "a", "one", ctx=WriteContext(idempotency_key="key-9"))
    vs.close()
    os.unlink(vs.root / ".git" / DB_NAME)
    again = VersionedStore(vs.root)
    r2 = again.add("f", "a", "one", ctx=WriteContext(idempotency_key="key-9"))
    assert r2.replayed and r2.commit == r1.commit
    assert r2.value.content == "one"
    again.close()


# -- history --------------------------------------------------------------------

def test_history_by_file_item_and_run_with_paging(vs):
    vs.add("prefs", "sea", "likes the sea", ctx=WriteContext(run="r1", actor="A"))
    vs.add("prefs", "tea", "likes tea", ctx=WriteContext(run="r1", actor="A"))
    vs.add("people", "mom", "teacher", ctx=WriteContext(run="r2", actor="B"))
    vs.add("prefs", "sea", "hates the sea", ctx=WriteContext(run="r2", actor="B"))
    vs.remove("prefs", "tea", ctx=WriteContext(run="r3", actor="C"))
    sea = vs.history(file="prefs", item="sea")
    assert [e.summary for e in sea.entries] == ["update prefs/sea", "add prefs/sea"]
    assert [e.actor for e in sea.entries] == ["B", "A"]
    assert [e.summary for e in vs.history(file="prefs", item="tea").entries] == ["remove prefs/tea", "add prefs/tea"]
    assert len(vs.history(file="prefs").entries) == 4
    assert {e.run for e in vs.history(run="r2").entries} == {"r2"} and len(vs.history(run="r2").entries) == 2
    page1 = vs.history(limit=2)
    page2 = vs.history(limit=2, cursor=page1.next)
    page3 = vs.history(limit=2, cursor=page2.next)
    ids = [e.id for p in (page1, page2, page3) for e in p.entries]
    assert len(ids) == 6 == len(set(ids)) and page3.next is None
    entry = page1.entries[0]
    assert entry.action == "remove" and entry.file == "prefs" and entry.item == "tea" and entry.run == "r3"
    assert entry.time.endswith("Z")
    runs = vs.runs()
    assert [r["run"] for r in runs] == ["r3", "r2", "r1"] and runs[1]["commits"] == 2


def test_item_history_counts_only_commits_that_changed_that_block(vs):
    vs.add("prefs", "sea", "likes the sea")
    for i in range(5):
        vs.add("prefs", f"other{i}", "noise")
    with vs.batch(message="two at once"):
        vs.store.add("prefs", "sea", "loves the sea")
        vs.store.add("prefs", "other0", "still noise")
    assert [e.summary for e in vs.history(file="prefs", item="sea").entries] == ["two at once", "add prefs/sea"]


def test_history_index_is_rebuilt_when_missing_and_follows_git_cli_commits(vs):
    for i in range(3):
        vs.add("f", f"n{i}", str(i), ctx=WriteContext(run="r"))
    before = [e.to_dict() for e in vs.history().entries]
    vs.close()
    os.unlink(vs.root / ".git" / DB_NAME)
    again = VersionedStore(vs.root)
    assert [e.to_dict() for e in again.history().entries] == before
    if GIT:
        (vs.root / "wiki" / "f.md").write_text((vs.root / "wiki" / "f.md").read_text() + "\n## n9\n\nby hand\n")
        git(vs.root, "-c", "user.name=Ann", "-c", "user.email=a@x", "commit", "-qam", "hand edit in git")
        top = again.history().entries[0]
        assert top.summary == "hand edit in git" and top.actor == "Ann" and top.action == "external-edit"
        assert [e.summary for e in again.history(file="f", item="n9").entries] == ["hand edit in git"]
        assert again.store.get("f", "n9").content == "by hand"
    again.close()


def test_resolve_points(vs):
    a = vs.add("f", "a", "1").commit
    assert vs.resolve("HEAD") == a == vs.resolve(a) == vs.resolve(a[:8]) == vs.resolve(a.upper())
    assert vs.resolve("2999-01-01T00:00:00Z") == a
    b = vs.add("f", "b", "2").commit
    assert vs.resolve("HEAD~") == a == vs.resolve("HEAD~1") and vs.resolve("head") == b
    with pytest.raises(NotFound):
        vs.resolve("HEAD~99")
    with pytest.raises(NotFound):
        vs.resolve("1999-01-01T00:00:00Z")
    with pytest.raises(NotFound):
        vs.resolve("deadbeef")
    with pytest.raises(ValueError):
        vs.resolve("not a point")


# -- diffs ------------------------------------------------------------------------

def test_per_item_diff_of_a_commit_and_between_commits(vs):
    c0 = vs.add("prefs", "sea", "likes the sea").commit
    vs.add("prefs", "tea", "likes tea")
    with vs.batch(message="mixed") as b:
        vs.store.add("prefs", "sea", "hates the sea")
        vs.store.remove("prefs", "tea")
        vs.store.add("prefs", "rain", "likes rain")
        vs.diary.append("a sad day", ts="2026-07-21T09:00:00Z")
    diff = vs.show_commit(b.commit)
    by = {(c.kind, c.status, c.name or c.time): c for c in diff.changes}
    assert by[("wiki", "changed", "sea")].before == "likes the sea"
    assert by[("wiki", "changed", "sea")].after == "hates the sea"
    assert by[("wiki", "removed", "tea")].before == "likes tea"
    assert by[("wiki", "added", "rain")].after == "likes rain"
    assert by[("diary", "added", "09:00")].after == "a sad day"
    assert len(diff.changes) == 4 and diff.entry.summary == "mixed"
    assert "-likes the sea" in diff.patch and "+hates the sea" in diff.patch
    span = vs.diff(c0, "HEAD")
    assert {(c.status, c.name or c.time) for c in span.changes} == {("changed", "sea"), ("added", "rain"),
                                                                     ("added", "09:00")}


# -- revert, rollback, restore ------------------------------------------------------

def test_revert_puts_items_back_and_detects_conflicts_item_by_item(vs):
    vs.add("prefs", "sea", "likes the sea")
    vs.add("prefs", "tea", "likes tea")
    with vs.batch(WriteContext(run="bad"), message="bad run") as b:
        vs.store.add("prefs", "sea", "hates the sea")
        vs.store.add("prefs", "tea", "hates tea")
    vs.add("prefs", "tea", "fixed by hand later")
    head = vs.head()
    plan = vs.undo.preview_revert(b.commit)
    assert [(c["name"], c["reason"]) for c in plan.conflicts] == [("tea", "changed again later")]
    with pytest.raises(Conflict) as exc:
        vs.undo.revert(b.commit)
    assert exc.value.conflicts[0]["name"] == "tea"
    assert vs.head() == head and vs.store.get("prefs", "sea").content == "hates the sea"
    done = vs.undo.revert(b.commit, force=True, ctx=WriteContext(actor="op"))
    assert vs.store.get("prefs", "sea").content == "likes the sea"
    assert vs.store.get("prefs", "tea").content == "likes tea"
    top = vs.history().entries[0]
    assert top.id == done.commit and top.action == "revert" and top.actor == "op"


def test_revert_of_a_diary_append_removes_exactly_that_entry(vs):
    vs.diary_append("same words", ts="2026-07-21T09:00:00Z")
    bad = vs.diary_append("same words", ts="2026-07-21T09:00:30Z").commit
    vs.diary_append("later", ts="2026-07-21T10:00:00Z")
    vs.undo.revert(bad)
    day = vs.diary.day("2026-07-21")
    assert [(e.time, e.content, e.ts) for e in day] == [("09:00", "same words", "2026-07-21T09:00:00+00:00"),
                                                        ("10:00", "later", "2026-07-21T10:00:00+00:00")]
    # reverting the revert brings it back
    vs.undo.revert("HEAD")
    assert len(vs.diary.day("2026-07-21")) == 3


def test_rollback_of_a_run_is_one_commit_and_keeps_everything_else(vs):
    vs.add("prefs", "sea", "likes the sea", ctx=WriteContext(run="good"))
    for i, text in enumerate(("hates the sea", "really hates the sea")):
        vs.add("prefs", "sea", text, ctx=WriteContext(run="bad", actor="Bot"))
        vs.diary_append(f"bad entry {i}", ts=f"2026-07-21T0{i}:00:00Z", ctx=WriteContext(run="bad", actor="Bot"))
    vs.add("people", "mom", "teacher", ctx=WriteContext(run="other"))
    n = count_commits(vs.root) if GIT else None
    plan = vs.undo.preview_rollback("bad")
    assert plan.conflicts == [] and {c.kind for c in plan.changes} == {"wiki", "diary"}
    done = vs.undo.rollback("bad", ctx=WriteContext(actor="operator"))
    assert vs.store.get("prefs", "sea").content == "likes the sea"
    assert vs.diary.day("2026-07-21") == []
    assert vs.store.get("people", "mom").content == "teacher"
    if GIT:
        assert count_commits(vs.root) == n + 1
    assert vs.history().entries[0].id == done.commit and "roll back run bad" in vs.history().entries[0].summary
    with pytest.raises(NotFound):
        vs.undo.rollback("no-such-run")


def test_rollback_conflicts_with_later_changes_from_other_runs(vs):
    vs.add("prefs", "sea", "likes the sea", ctx=WriteContext(run="good"))
    vs.add("prefs", "sea", "hates the sea", ctx=WriteContext(run="bad"))
    vs.add("prefs", "sea", "operator fixed it", ctx=WriteContext(run="fix"))
    with pytest.raises(Conflict):
        vs.undo.rollback("bad")
    assert vs.store.get("prefs", "sea").content == "operator fixed it"


def test_undo_by_kind_goes_through_the_one_table(vs):
    from wikimem.host import UNDO_TARGETS
    from wikimem.versioned import UNDO_KINDS

    assert UNDO_TARGETS == {kind: entry.target for kind, entry in UNDO_KINDS.items()}
    vs.add("prefs", "sea", "likes the sea")
    bad = vs.add("prefs", "sea", "hates the sea", ctx=WriteContext(run="bad")).commit
    assert [c.after for c in vs.undo.preview("revert", bad).changes] == ["likes the sea"]
    assert vs.undo.preview("rollback", "bad") == vs.undo.preview_rollback("bad")
    done = vs.undo.apply("restore", "HEAD~1", force=True, ctx=WriteContext(actor="op"))
    assert vs.store.get("prefs", "sea").content == "likes the sea" and vs.history().entries[0].id == done.commit
    with pytest.raises(ValueError, match="unknown undo operation 'squash'"):
        vs.undo.preview("squash", "HEAD")


def test_restore_to_a_commit_and_to_a_time(vs):
    c1 = vs.add("prefs", "sea", "likes the sea").commit
    vs.diary_append("x", ts="2026-07-21T09:00:00Z")
    vs.add("prefs", "sea", "hates the sea")
    vs.add("people", "mom", "teacher")
    n_before = len(vs.history(limit=100).entries)
    done = vs.undo.restore(c1)
    assert vs.store.items() == vs.snapshot(c1).items()
    assert vs.diary.dates() == [] and vs.store.files() == ["prefs"]
    assert len(vs.history(limit=100).entries) == n_before + 1  # history is never rewritten
    assert vs.history().entries[0].id == done.commit
    # a time point: the last commit at or before it
    when = vs.history().entries[0].time
    assert vs.resolve(when) == done.commit


# -- as of, hand edits ------------------------------------------------------------------

def test_as_of_retrieval_reads_the_object_store_not_the_work_tree(vs):
    c1 = vs.add("prefs", "sea", "she loves the sea and swimming").commit
    vs.add("prefs", "sea", "she is afraid of water now")
    files_before = sorted(p.name for p in (vs.root / "wiki").iterdir())
    past = MemoryIndex(vs.snapshot(c1)).retrieve("swimming sea")
    assert [i.item.content for i in past.items] == ["she loves the sea and swimming"]
    now = MemoryIndex(vs.store).retrieve("swimming sea")
    assert all("swimming" not in i.item.content for i in now.items)
    assert sorted(p.name for p in (vs.root / "wiki").iterdir()) == files_before
    assert vs.store.get("prefs", "sea").content == "she is afraid of water now"


def test_hand_edits_are_committed_as_external_edit_before_the_next_write(vs):
    vs.add("prefs", "sea", "likes the sea")
    index = MemoryIndex(vs.store)
    index.retrieve("sea")
    path = vs.root / "wiki" / "prefs.md"
    path.write_text(path.read_text().replace("likes the sea", "adores the ocean"), encoding="utf-8")
    (vs.root / "wiki" / "notes.md").write_text("# notes\n\n## idea\n\nwritten in an editor\n", encoding="utf-8")
    assert vs.external_changes() == ["wiki/notes.md", "wiki/prefs.md"]
    vs.add("people", "mom", "teacher", ctx=WriteContext(actor="api"))
    entries = vs.history(limit=3).entries
    assert [e.action for e in entries[:2]] == ["add", "external-edit"]
    assert entries[0].changes == 1  # the API write's commit carries only its own change
    assert vs.external_changes() == []
    index.rebuild()
    assert index.retrieve("ocean").items[0].item.name == "sea"
    if GIT:
        assert git(vs.root, "status", "--porcelain") == ""


def test_a_plain_store_on_the_same_folder_is_excluded_by_the_same_lock(vs):
    plain = MemoryStore(vs.root)
    plain.add("f", "a", "written without git")
    assert vs.external_changes() == ["wiki/f.md"]
    assert vs.sync_external(actor="cli") is not None
    assert vs.history().entries[0].actor == "cli"


# -- housekeeping ------------------------------------------------------------------------

def loose_objects(root: Path) -> int:
    objects = root / ".git" / "objects"
    return sum(len(os.listdir(d)) for d in objects.iterdir() if len(d.name) == 2)


@needs_git
def test_packing_on_demand_and_automatically(tmp_path):
    vs = VersionedStore(tmp_path / "m", pack_every=25)
    peak, i = 0, 0
    for i in range(25):
        vs.add("f", f"n{i % 5}", f"text {i}")
        peak = max(peak, loose_objects(vs.root))
        if loose_objects(vs.root) == 0:
            break
    assert peak > 50 and loose_objects(vs.root) == 0 and i < 25  # packed automatically within 25 commits
    vs.add("f", "y", "after packing")
    assert vs.store.get("f", f"n{i % 5}").content == f"text {i}"
    assert vs.show_commit("HEAD").changes[0].name == "y"
    vs.pack()
    assert loose_objects(vs.root) == 0
    assert vs.verify() == []
    subprocess.run([GIT, "fsck", "--strict"], cwd=vs.root, check=True, capture_output=True)
    assert len(vs.history(limit=100).entries) == i + 3
    vs.close()


def test_stale_git_lock_files_do_not_block_writes(vs):
    vs.add("f", "a", "1")
    for rel in ("refs/heads/main.lock", "index.lock"):
        (vs.root / ".git" / rel).write_text("left by a killed writer")
    (vs.root / ".wikimem.lock").write_text("stale")
    assert vs.add("f", "b", "2").commit == vs.head()
    assert vs.verify() == []
    # a killed writer can also leave the lock of a loose object it was writing
    from dulwich.objects import Blob

    blob = Blob.from_string(b"an object a killed writer was writing\n")
    folder = vs.root / ".git" / "objects" / blob.id[:2].decode()
    folder.mkdir(exist_ok=True)
    (folder / (blob.id[2:].decode() + ".lock")).write_bytes(b"")
    vs.git._add(blob)
    assert vs.git.blob(blob.id) == blob.data


def test_a_failing_commit_listener_does_not_undo_the_commit(tmp_path):
    vs = VersionedStore(tmp_path / "o")
    heard = []
    vs.on_commit.append(heard.append)
    vs.on_commit.append(lambda cid: 1 / 0)
    done = vs.add("f", "a", "x")
    assert heard == [done.commit] == [vs.head()]
    assert vs.store.get("f", "a").content == "x" and vs.external_changes() == []


def test_temp_files_of_killed_writers_are_swept_by_the_next_process_that_writes(tmp_path):
    """Debris is swept by each process's first write (and by every recovery of a killed round, see
    tests/faults/test_crash_points.py), not by a scan of every folder on every write."""
    vs = VersionedStore(tmp_path / "o")
    vs.add("f", "a", "x")
    debris = [vs.root / "wiki" / ".f.md.dead0001.wikimem-tmp", vs.root / ".git" / ".wikimem-intent.json.x.wikimem-tmp"]
    for path in debris:
        path.write_bytes(b"half a file")
    vs.close()
    vs = VersionedStore(tmp_path / "o")  # the next process
    vs.add("f", "b", "y")
    assert not any(p.exists() for p in debris)
    assert [c.action for c in vs.history(limit=5).entries][:2] == ["add", "add"]  # no external-edit for debris
