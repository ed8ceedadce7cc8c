"""The history index as a writer feeds it round by round (issue 39): the same rows as a rebuild from git.

A round that lands on top of what the index holds is indexed without a walk of the history
(its commits from memory); any other (a commit made with the git CLI between two writes, a
deleted index) walks from the head. Either way the rows must be what a rebuild makes.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

pytest.importorskip("dulwich")

from wikimem.context import WriteContext  # noqa: E402
from wikimem.versioned import Target, VersionedStore  # noqa: E402
from wikimem.versioned.history.historydb import DB_NAME  # noqa: E402

GIT = shutil.which("git")


def rows(root: Path) -> dict[str, list]:
    """What the index holds, without its sequence numbers (a rebuild numbers the same commits alike anyway)."""
    db = sqlite3.connect(str(root / ".git" / DB_NAME))
    try:
        return {
            "commits": db.execute("SELECT id, parents, time, actor, run, action, file, item, date, tod, owner, "
                                  "source_conv, summary, changes, idem, layers FROM commits ORDER BY seq").fetchall(),
            "touches": db.execute("SELECT c.id, t.kind, t.file, t.name, t.date, t.time, t.layer, t.channel FROM "
                                  "touches t JOIN commits c ON c.seq = t.seq ORDER BY t.seq, t.file, t.name, "
                                  "t.date, t.time").fetchall(),
            "keys": db.execute("SELECT key, commit_id FROM idem ORDER BY key").fetchall(),
            "meta": db.execute("SELECT key, value FROM meta WHERE key = 'head'").fetchall(),
        }
    finally:
        db.close()


def rebuilt(vs: VersionedStore) -> dict[str, list]:
    vs.close()
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(str(vs.root / ".git" / DB_NAME) + suffix)
        except FileNotFoundError:
            pass
    again = VersionedStore(vs.root, auto_pack=False)
    try:
        again.history(limit=1)  # (catches the new index up from git)
        again.db.close()
        return rows(vs.root)
    finally:
        again.close()


@pytest.fixture
def vs(tmp_path):
    store = VersionedStore(tmp_path / "mem", auto_pack=False)
    yield store
    store.close()


def test_rounds_are_indexed_as_a_rebuild_from_git_indexes_them(vs):
    for i in range(4):
        vs.add("prefs", f"n{i}", f"item {i}", ctx=WriteContext(run="r1", actor="A", idempotency_key=f"k{i}"))
    vs.diary_append("went to the sea", ts="2026-01-02T10:00:00Z", ctx=WriteContext(run="r2"))
    with vs.batch(WriteContext(run="r3"), message="two at once"):
        vs.store.add("prefs", "n0", "changed")
        vs.store.add("people", "mom", "a teacher")
    vs.remove("prefs", "n1")

    def write(t: int) -> None:
        for i in range(5):
            vs.add(f"t{t}", f"i{i}", f"thread {t} item {i}", ctx=WriteContext(run=f"t{t}"))

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]  # group commit: rounds of several
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    (vs.root / "wiki" / "prefs.md").write_text((vs.root / "wiki" / "prefs.md").read_text() + "\n## byhand\n\nx\n")
    vs.add("prefs", "after", "a write after a hand edit")  # (the hand edit's commit and this one: two rounds)
    vs.db.close()
    fed = rows(vs.root)
    assert len(fed["commits"]) == 1 + 4 + 1 + 1 + 1 + 20 + 2
    assert fed == rebuilt(vs)


@pytest.mark.skipif(GIT is None, reason="git CLI not installed")
def test_a_round_on_a_branch_the_index_is_behind_walks_the_history(vs):
    vs.add("f", "a", "one")
    path = vs.root / "wiki" / "f.md"
    path.write_text(path.read_text() + "\n## b\n\nby hand\n")
    subprocess.run([GIT, "-c", "user.name=Ann", "-c", "user.email=a@x", "commit", "-qam", "in git"], cwd=vs.root,
                   check=True, capture_output=True)
    vs.add("f", "c", "three")  # the index stands at "one", the round's base is the git commit
    assert [e.summary for e in vs.history().entries][:3] == ["add f/c", "in git", "add f/a"]
    vs.db.close()
    assert rows(vs.root) == rebuilt(vs)


def test_commits_since_the_last_pack_are_counted_by_the_rounds(tmp_path):
    vs = VersionedStore(tmp_path / "mem", pack_every=5)
    packs = vs.root / ".git" / "objects" / "pack"
    try:
        counted, packed = [], []
        for i in range(7):
            vs.add("f", f"n{i}", "x")
            counted.append(vs.db.since_pack())
            packed.append(len(list(packs.glob("*.pack"))))
        # (the folder's first commits count too: the fourth write reaches five and packs; as before issue 39)
        assert counted == [2, 3, 4, 0, 1, 2, 3] and packed == [0, 0, 0, 1, 1, 1, 1]
    finally:
        vs.close()


def test_loose_objects_of_a_write_are_what_git_reads(vs):
    """A round's objects go to disk from their loose bytes (one zlib call each): git and dulwich read them alike."""
    import zlib

    from dulwich.objects import Blob, ShaFile

    from wikimem.versioned.objects import loose_bytes

    blob = Blob.from_string("naïve — 海\n".encode() * 500)
    assert zlib.decompress(loose_bytes(blob)) == zlib.decompress(blob.as_legacy_object())
    cid = vs.add("f", "a", "one " * 300).commit
    commit = vs.git.commit(cid.encode())
    for sha in (cid.encode(), commit.tree):
        path = vs.root / ".git" / "objects" / sha[:2].decode() / sha[2:].decode()
        with open(path, "rb") as fh:
            assert ShaFile.from_file(fh).id == sha
    if GIT:
        fsck = subprocess.run([GIT, "fsck", "--strict"], cwd=vs.root, capture_output=True, text=True)
        assert fsck.returncode == 0 and fsck.stdout.strip() == "", fsck.stdout + fsck.stderr
        assert "one one" in subprocess.run([GIT, "show", "main:wiki/f.md"], cwd=vs.root, capture_output=True,
                                           text=True, check=True).stdout


def test_hand_edits_are_seen_after_every_kind_of_write(vs):
    """The folder is compared with the head's memory files, which a round derives from its base's (issue 39): a
    write of any kind, in any layer, leaves nothing that looks like a hand edit, and a real one is still seen."""
    kai = Target(vs, "kai")
    writes = [
        lambda: vs.add("prefs", "tea", "green tea"),
        lambda: vs.add("prefs", "sea", "the sea"),
        lambda: vs.add("people", "mom", "a teacher"),
        lambda: vs.diary_append("went out", ts="2026-01-02T10:00:00Z"),
        lambda: kai.add("prefs", "tea", "oolong, Kai heard"),
        lambda: kai.diary_append("by the sea", date="2026-07-21", time="09:00"),
        lambda: vs.remove("prefs", "tea"),
        lambda: vs.remove("prefs", "sea"),  # (the file goes with its last item)
        lambda: kai.remove("prefs", "tea"),
        lambda: vs.add("prefs", "tea", "back again"),
    ]
    for n, write in enumerate(writes, 1):
        write()
        assert vs.external_changes() == [], n
    commits = len(vs.history(limit=100).entries)
    path = vs.root / "wiki" / "people.md"
    path.write_text(path.read_text().replace("a teacher", "a retired teacher"))
    assert vs.external_changes() == ["wiki/people.md"]
    vs.add("prefs", "more", "x")  # commits the hand edit first, then the write
    entries = vs.history(limit=100).entries
    assert len(entries) == commits + 2 and entries[1].action == "external-edit"
    assert vs.external_changes() == []
    assert "a retired teacher" in (vs.root / "wiki" / "people.md").read_text()  # (the edit kept)


def test_the_git_index_a_write_leaves_is_what_dulwich_writes_and_git_reads(vs):
    """``.git/index`` is rewritten from the entries' bytes kept between writes (issue 39): byte for byte what
    dulwich's own writer makes of the same entries, and ``git status`` is clean."""
    import io

    from dulwich.index import Index, IndexChecksumWriter, write_index_dict

    for i in range(12):
        vs.add(f"f{i % 4}", f"n{i}", "x" * (i + 1))
    vs.diary_append("went out", ts="2026-01-02T10:00:00Z")
    vs.remove("f1", "n1")
    vs.remove("f1", "n5")
    vs.remove("f1", "n9")  # (f1 goes)
    path = vs.root / ".git" / "index"
    index = Index(str(path))
    paths = set(index.paths())
    assert b"wiki/f1.md" not in paths and {b"wiki/f0.md", b"wiki/f3.md", b"diary/2026-01-02.md"} <= paths
    buf = io.BytesIO()
    writer = IndexChecksumWriter(buf)
    write_index_dict(writer, dict(index.items()))
    writer.write_checksum()
    assert path.read_bytes() == buf.getvalue()
    if GIT:
        assert subprocess.run([GIT, "status", "--porcelain"], cwd=vs.root, capture_output=True, text=True,
                              check=True).stdout == ""
