"""Journal: the append-only JSONL audit log."""

from __future__ import annotations

import json

from wikimem import Journal


def test_append_fields_and_order(tmp_path):
    j = Journal(tmp_path / "journal.jsonl")
    rec = j.append("add", file="preferences", name="喜欢海", owner="user:x", source_conv="c1")
    assert list(rec) == ["ts", "action", "file", "item", "owner", "source_conv"]
    j.append("remove", file="p", name="n", detail="cleanup")
    j.append_diary(date="2026-07-21", time="14:30")
    entries = j.entries()
    assert [e["action"] for e in entries] == ["add", "remove", "diary"]
    assert entries[1]["detail"] == "cleanup" and "owner" not in entries[1]
    assert entries[2] == {"ts": entries[2]["ts"], "action": "diary", "date": "2026-07-21", "time": "14:30"}


def test_non_ascii_is_stored_as_is(tmp_path):
    j = Journal(tmp_path / "journal.jsonl")
    j.append("add", file="f", name="手冲咖啡")
    assert "手冲咖啡" in (tmp_path / "journal.jsonl").read_text(encoding="utf-8")


def test_ts_is_utc_seconds(tmp_path):
    rec = Journal(tmp_path / "j.jsonl").append("add", file="f", name="n")
    assert rec["ts"].endswith("+00:00") and len(rec["ts"]) == 25


def test_torn_last_line_is_skipped_and_next_append_starts_a_new_line(tmp_path):
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    j.append("add", file="f", name="a")
    with open(path, "ab") as fh:
        fh.write(b'{"ts": "2026-07-21T00:00:00+00:00", "act')  # crash mid-append
    assert len(j.entries()) == 1
    j.append("add", file="f", name="b")
    assert [e["item"] for e in j.entries()] == ["a", "b"]
    lines = path.read_text().splitlines()
    assert json.loads(lines[-1])["item"] == "b"


def test_missing_journal_is_empty(tmp_path):
    assert Journal(tmp_path / "none.jsonl").entries() == []
