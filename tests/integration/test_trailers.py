"""Commit messages cannot be forged through their values: lines end at \\n only, journal lines are ASCII."""

from __future__ import annotations

import subprocess

from wikimem.store import UnitInfo
from wikimem.versioned import VersionedStore
from wikimem.versioned.messages import build_message, parse_trailers


def test_a_line_separator_inside_a_value_is_not_a_new_trailer():
    message = ("add f/a\n\nWikimem-Action: add\nWikimem-Actor: mallory\u2028Wikimem-Run: victim\x85"
               "Wikimem-Idempotency-Key: stolen\u2029Wikimem-Run: victim2\n")
    _, trailers, _ = parse_trailers(message)
    assert "Run" not in trailers and "Idempotency-Key" not in trailers
    assert trailers["Actor"].startswith("mallory")


def test_values_that_slipped_past_validation_are_escaped_in_the_message():
    record = {"ts": "2026-07-21T00:00:00+00:00", "action": "add", "file": "f", "item": "a\u2028Wikimem-Run: x"}
    message = build_message([record], UnitInfo(actor="eve\x1b[31m", run="r\x00", source_conv="c\u2029d"))
    for bad in ("\x00", "\x1b", "\u2028", "\u2029", "\x85"):
        assert bad not in message
    _, trailers, journal = parse_trailers(message)
    assert trailers["Run"] == "r\\u0000" and journal == [record]


def test_a_hand_made_file_name_with_control_characters_is_escaped_in_its_commit(tmp_path):
    vs = VersionedStore(tmp_path / "o")
    (vs.root / "wiki").mkdir()
    (vs.root / "wiki" / "odd\x1b[31m.md").write_text("# odd\n\n## a\n\nx\n")
    vs.add("f", "a", "x")
    log = subprocess.run(["git", "-C", str(vs.root), "log", "--format=%B"], capture_output=True, text=True).stdout
    assert "\x1b" not in log and "odd\\u001b[31m" in log
