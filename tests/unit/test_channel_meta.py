"""Where a diary entry was said and who was there: the ``channel`` and ``present`` keys of its metadata comment."""

from __future__ import annotations

import pytest

from wikimem import MemoryStore
from wikimem.errors import InvalidName
from wikimem.format import parse_day, render_day
from wikimem.naming import MAX_PRESENT, validate_channel_id, validate_present


def test_written_entry_keeps_channel_and_present(tmp_path):
    store = MemoryStore(tmp_path)
    entry = store.diary.append("Ann told Kai about the exam", channel="dm", present=["user:ann", "char:kai"],
                               date="2026-03-01", time="10:00")
    text = (tmp_path / "diary" / "2026-03-01.md").read_text()
    assert "channel=dm | present=user:ann,char:kai" in text
    again = MemoryStore(tmp_path).diary.day("2026-03-01")
    assert again == [entry]
    assert again[0].present == ("user:ann", "char:kai")


def test_rewrite_of_the_day_keeps_every_entrys_keys(tmp_path):
    store = MemoryStore(tmp_path)
    store.diary.append("in the group", channel="g1", present="user:ann,user:bob,char:kai", date="2026-03-01",
                       time="10:00")
    store.diary.append("alone", date="2026-03-01", time="09:00")  # the day file is rewritten, sorted
    first, second = store.diary.day("2026-03-01")
    assert (first.channel, first.present) == (None, ())
    assert (second.channel, second.present) == ("g1", ("user:ann", "user:bob", "char:kai"))


def test_hand_edited_metadata_is_read_tolerantly():
    text = ("# 2026-03-01\n\n## 10:00\n\nsaid in the group\n\n"
            "<!-- wikimem: present= user:ann , ,user:bob,user:ann | channel= g1 | mood=happy -->\n")
    [entry] = parse_day(text.encode(), "2026-03-01")
    assert entry.channel == "g1"
    assert entry.present == ("user:ann", "user:bob")  # blanks and repeats dropped, the unknown key ignored
    rendered = render_day("2026-03-01", [entry]).decode()
    assert "channel=g1 | present=user:ann,user:bob" in rendered
    assert parse_day(rendered.encode(), "2026-03-01") == [entry]


def test_content_line_that_looks_like_channel_metadata_stays_content(tmp_path):
    store = MemoryStore(tmp_path)
    fake = "<!-- wikimem: channel=dm | present=user:ann -->"
    store.diary.append(fake, date="2026-03-01", time="10:00")
    [entry] = store.diary.day("2026-03-01")
    assert entry.content == fake and entry.channel is None


@pytest.mark.parametrize("bad", ["", "g 1", "-g", ".x", "g1\n", "g|1", "a" * 129, 7, None])
def test_channel_ids_are_validated_like_owner_ids(bad):
    with pytest.raises(InvalidName):
        validate_channel_id(bad)


@pytest.mark.parametrize("bad", [["user:ann", "a b"], ["char:Kai"], ["user:ann\u2028"], [3], {"user:ann": 1},
                                 ["x-->"], [f"user:{i}" for i in range(MAX_PRESENT + 1)]])
def test_present_lists_are_bounded_and_validated(bad):
    with pytest.raises(InvalidName):
        validate_present(bad)


def test_bad_room_is_refused_before_anything_is_written(tmp_path):
    store = MemoryStore(tmp_path)
    with pytest.raises(InvalidName):
        store.diary.append("x", channel="g1", present=["user:ann", "not ok"], date="2026-03-01", time="10:00")
    assert store.diary.dates() == []
    assert not (tmp_path / "journal.jsonl").exists() or "not ok" not in (tmp_path / "journal.jsonl").read_text()


def test_journal_line_names_the_room(tmp_path):
    store = MemoryStore(tmp_path)
    store.diary.append("x", channel="g1", present=["user:ann", "char:kai"], date="2026-03-01", time="10:00")
    [record] = store.journal.entries()
    assert record["channel"] == "g1" and record["present"] == ["user:ann", "char:kai"]
