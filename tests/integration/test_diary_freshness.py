"""The host's diary index is looked at like its wiki (issue 39): on a write, on a new file, and within the time bound.

A retrieve with ``diary="all"`` used to list every day file of the diary on
every call; the host now lists it only when HEAD or the diary folder's stamp
moved, or every ``FULL_CHECK_SECONDS`` (``wikimem/host/freshness.py``). Real
folders, a real second host on the same data root (another worker).
"""

from __future__ import annotations

import time

import pytest

import wikimem.recall.diary_index as diary_index
from wikimem.host import make_host
from wikimem.host.freshness import FULL_CHECK_SECONDS


@pytest.fixture
def owner(tmp_path):
    host = make_host(tmp_path)
    owner, _ = host.ensure_owner("user:a")
    owner.diary_append("We tasted green tea by the river.", date="2026-07-21", time="08:00")
    assert texts(owner, "green tea") == ["We tasted green tea by the river."]
    return owner


def texts(owner, query: str) -> list[str]:
    result = owner.retrieve(query, diary="all", limit=5)
    assert result.diary_index != "building"
    return [e.item.content for e in result.items if e.kind == "diary"]


def test_an_unchanged_diary_is_not_listed_again(owner, monkeypatch):
    listed = []
    real = diary_index.folder_signature
    monkeypatch.setattr(diary_index, "folder_signature", lambda *a: listed.append(a) or real(*a))
    for _ in range(5):
        assert texts(owner, "green tea") == ["We tasted green tea by the river."]
    assert listed == []  # (before: one listing of every day file a retrieve)
    owner.diary_append("A long walk along the river.", date="2026-07-22", time="09:00")
    assert texts(owner, "walk") == ["A long walk along the river."]  # a write moves HEAD: looked at once
    assert len(listed) == 1


def test_another_workers_write_and_a_new_file_by_hand_are_seen_at_once(owner, tmp_path):
    other = make_host(tmp_path).owner("user:a")  # another process's view of the same folder
    other.diary_append("Bought a kite at the market.", date="2026-07-23", time="10:00")
    assert texts(owner, "kite") == ["Bought a kite at the market."]
    (owner.root / "diary" / "2026-07-24.md").write_text("## 11:00\nPainted the lighthouse blue.\n", encoding="utf-8")
    assert texts(owner, "lighthouse") == ["Painted the lighthouse blue."]


def test_an_edit_in_place_is_seen_within_the_bound(owner):
    day = owner.root / "diary" / "2026-07-21.md"
    with open(day, "r+", encoding="utf-8") as f:  # (in place: the folder's own stamp does not move)
        text = f.read()
        f.seek(0)
        f.write(text.replace("green tea", "black tea"))
    time.sleep(FULL_CHECK_SECONDS + 0.1)
    assert texts(owner, "black tea") == ["We tasted black tea by the river."]
