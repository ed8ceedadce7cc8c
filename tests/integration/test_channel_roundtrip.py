"""A diary entry's ``channel`` and ``present`` survive everything a host does to its day file (issue 34, "Done when":
the metadata round trip): a hand edit committed by the host, another append the same day, a forget of another
entry, a revert and a rollback of later writes, replication to a second host and its catch-up, a git bundle of
the history taken elsewhere, and the plain library reading the files the host wrote. Real dulwich repositories, a
real ``file://`` remote; ``git`` is the witness.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wikimem import MemoryStore
from wikimem.context import WriteContext
from wikimem.host import load_config
from wikimem.host.config import build_host
from wikimem.versioned import VersionedStore

PERSON = "user:ann"
DAY = "2026-03-01"
G1 = ("g1", ("user:ann", "user:bob", "char:kai"))
DM = ("dm", ("user:ann", "char:kai"))
G2 = ("g2", ("user:ann", "char:mira"))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _rooms(entries) -> list[tuple]:
    return [(e.time, e.content, e.channel, e.present) for e in entries]


def _said(owner, content: str, time: str, room: tuple | None = None, **ctx):
    channel, present = room or (None, None)
    return owner.diary_append(content, date=DAY, time=time, channel=channel, present=present,
                              ctx=WriteContext(**ctx) if ctx else None)


@pytest.fixture
def host(tmp_path):
    return build_host(load_config({"DATA_ROOT": str(tmp_path / "data")}))


@pytest.fixture
def owner(host):
    owner = host.create_owner(PERSON)
    _said(owner, "Bob told a joke about exams.", "10:00", G1, run="run_1")
    _said(owner, "Ann told Kai she is tired of exams.", "11:00", DM, run="run_2")
    _said(owner, "Read alone.", "12:00", run="run_3")
    return owner


EXPECTED = [("10:00", "Bob told a joke about exams.", *G1), ("11:00", "Ann told Kai she is tired of exams.", *DM),
            ("12:00", "Read alone.", None, ())]


def test_a_hand_edit_keeps_the_room_and_the_host_commits_it(host, owner):
    path = owner.root / "diary" / f"{DAY}.md"
    text = path.read_text()
    assert "<!-- wikimem: owner=user:ann | ts=" in text and "channel=g1 | present=user:ann,user:bob,char:kai" in text
    # An operator fixes a word and adds an entry by hand, metadata comment and all (keys in another order).
    text = text.replace("a joke about exams", "a bad joke about exams")
    text += ("\n## 13:00\n\nMira sang in the second group.\n\n"
             "<!-- wikimem: present=user:ann,char:mira | channel=g2 -->\n")
    path.write_text(text)
    later = _said(owner, "Kai said good night.", "23:00", DM)  # the host's next write commits the hand edit first
    entries = owner.diary_day(DAY)
    assert _rooms(entries) == [("10:00", "Bob told a bad joke about exams.", *G1), *EXPECTED[1:],
                               ("13:00", "Mira sang in the second group.", *G2),
                               ("23:00", "Kai said good night.", *DM)]
    log = owner.review.search_history(limit=10).entries
    assert [e.action for e in log[:2]] == ["diary", "external-edit"] and log[0].id == later.commit
    # The history finds the hand edit by the channel of the entries it touched.
    assert [e.id for e in owner.review.search_history(channel="g2").entries] == [log[1].id]
    assert log[1].id in {e.id for e in owner.review.search_history(channel="g1").entries}
    assert _git(owner.root, "status", "--porcelain") == ""
    assert _rooms(MemoryStore(owner.root).diary.day(DAY)) == _rooms(entries)  # the plain library reads it


def test_rewrites_of_the_day_keep_every_other_entrys_room(owner):
    _said(owner, "A note before the others.", "09:00", run="run_4")  # another append the same day, sorted first
    assert _rooms(owner.diary_day(DAY))[1:] == EXPECTED
    later = _said(owner, "Kai and Bob argued.", "14:00", G1, run="run_5")
    _said(owner, "Ann wrote to Kai late.", "15:00", DM, run="run_6")
    owner.undo("revert", later.commit, ctx=WriteContext(actor="op"))  # a revert of a later commit
    owner.undo("rollback", "run_6", ctx=WriteContext(actor="op"))  # a rollback of a later run
    assert _rooms(owner.diary_day(DAY))[1:] == EXPECTED
    owner.forget("diary", date=DAY, time_="09:00")  # a forget of another entry that day rewrites every commit
    assert _rooms(owner.diary_day(DAY)) == EXPECTED
    assert "channel=dm | present=user:ann,char:kai" in (owner.root / "diary" / f"{DAY}.md").read_text()
    assert _rooms(MemoryStore(owner.root).diary.day(DAY)) == EXPECTED
    # the rebuilt history still knows each commit's channel
    g1 = owner.review.search_history(channel="g1").entries
    assert [e.summary for e in g1][-1] == f"diary {DAY} 10:00" and len(g1) == 3  # 10:00, 14:00, its revert


def test_a_characters_layer_keeps_the_room_through_a_rewrite(host, owner):
    host.characters.put("kai", name="Kai")
    owner.diary_append("Kai heard Bob's joke.", date=DAY, time="10:00", channel="g1", present=list(G1[1]),
                       character="kai")
    owner.diary_append("Kai comforted Ann.", date=DAY, time="11:00", channel="dm", present=list(DM[1]),
                       character="kai")
    owner.diary_append("Kai forgot this.", date=DAY, time="12:00", character="kai")
    expected = [("10:00", "Kai heard Bob's joke.", *G1), ("11:00", "Kai comforted Ann.", *DM)]
    owner.forget("diary", date=DAY, time_="12:00", layer="kai")
    assert _rooms(owner.diary_day(DAY, "kai")) == expected
    assert _rooms(MemoryStore(owner.root / "characters" / "kai").diary.day(DAY)) == expected
    _said(owner, "Shared, later.", "18:00", run="run_9")
    owner.undo("rollback", "run_9", ctx=WriteContext(actor="op"))
    assert _rooms(owner.diary_day(DAY, "kai")) == expected
    assert _rooms(owner.diary_day(DAY)) == EXPECTED
    in_layer = owner.review.search_history(channel="dm", layers=("kai",)).entries
    assert [e.summary for e in in_layer] == [f"diary {DAY} 11:00 in kai"]  # the rebuilt index, each layer apart


def test_a_replica_and_a_host_catching_up_read_the_room(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    a, b = (build_host(load_config({"DATA_ROOT": str(tmp_path / name), "REMOTE": f"file://{remote}/{{owner}}.git",
                                    "REMOTE_FRESHNESS": 0.0})) for name in ("a", "b"))
    on_a = a.create_owner(PERSON)
    _said(on_a, "Bob told a joke about exams.", "10:00", G1)
    _said(on_a, "Ann told Kai she is tired of exams.", "11:00", DM)
    on_b = b.owner(PERSON)  # b never held the person: it clones it from the remote
    assert _rooms(on_b.diary_day(DAY)) == EXPECTED[:2]
    # b's history index is built from the diffs it cloned, never from a's journal hints
    assert [e.summary for e in on_b.review.search_history(channel="dm").entries] == [f"diary {DAY} 11:00"]
    _said(on_a, "Mira sang in the second group.", "13:00", G2)  # a moves on; b catches up on its next look
    seen = b.owner(PERSON)
    assert _rooms(seen.diary_day(DAY))[-1] == ("13:00", "Mira sang in the second group.", *G2)
    assert [e.summary for e in seen.review.search_history(channel="g2").entries] == [f"diary {DAY} 13:00"]
    _said(seen, "Kai said good night.", "23:00", DM)  # and the other way round
    assert _rooms(a.owner(PERSON).diary_day(DAY)) == _rooms(seen.diary_day(DAY))
    bare = remote / next(p.name for p in remote.iterdir())
    shown = subprocess.run(["git", "--git-dir", str(bare), "show", f"main:diary/{DAY}.md"], capture_output=True,
                           text=True, check=True).stdout
    assert "channel=g2 | present=user:ann,char:mira" in shown


def test_the_history_taken_elsewhere_as_a_bundle_keeps_the_room(host, owner, tmp_path):
    data = host.export_owner(PERSON, fmt="bundle")
    (tmp_path / "ann.bundle").write_bytes(data)
    subprocess.run(["git", "clone", "-q", str(tmp_path / "ann.bundle"), str(tmp_path / "elsewhere")], check=True)
    assert _rooms(MemoryStore(tmp_path / "elsewhere").diary.day(DAY)) == EXPECTED
    taken = VersionedStore(tmp_path / "elsewhere")  # its history index is built from scratch there
    try:
        assert [e.summary for e in taken.db.query(channel="dm").entries] == [f"diary {DAY} 11:00"]
    finally:
        taken.close()


def test_a_history_index_made_before_channels_learns_them_once_and_a_rebuild_keeps_them(tmp_path):
    import sqlite3

    vs = VersionedStore(tmp_path / "m")
    vs.add("notes", "a", "a wiki item")
    for time, (channel, present) in (("10:00", G1), ("11:00", DM)):
        vs.diary_append(f"said at {time}", date=DAY, time=time, channel=channel, present=present)
    vs.close()
    db = sqlite3.connect(tmp_path / "m" / ".git" / "wikimem-history.sqlite3")
    with db:  # the touches table as an index made before this change has it: no channel column
        db.execute("DROP INDEX touches_channel")
        db.execute("CREATE TABLE old AS SELECT seq, kind, file, name, date, time, layer FROM touches")
        db.execute("DROP TABLE touches")
        db.execute("ALTER TABLE old RENAME TO touches")
    db.close()
    vs = VersionedStore(tmp_path / "m")
    try:
        assert [e.summary for e in vs.db.query(channel="g1").entries] == [f"diary {DAY} 10:00"]
        assert len(vs.db.query().entries) == 4  # nothing else changed (the folder's first commit too)
        vs.db.rebuild()
        assert [e.summary for e in vs.db.query(channel="dm").entries] == [f"diary {DAY} 11:00"]
    finally:
        vs.close()
