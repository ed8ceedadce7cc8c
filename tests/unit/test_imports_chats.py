"""SillyTavern chat files read into turns (wikimem/host/imports/chats.py): what becomes memory, when, and what
is refused with its line number."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest
from cardfiles import chat_file, chat_lines, message

from wikimem.errors import BadImport, TooLarge
from wikimem.host.imports import chats as chats_module
from wikimem.host.imports import read_chat
from wikimem.host.imports.chatimport import transcript_items
from wikimem.host.imports.chats import parse_send_date

BERLIN = ZoneInfo("Europe/Berlin")


def test_a_chat_of_several_days_becomes_turns_without_swipes_or_system_messages():
    chat = read_chat(chat_file(), BERLIN)
    assert (chat.user_name, chat.character_name) == ("Ann", "Kai")
    assert (chat.system, chat.swipes) == (2, 3)  # a hidden message and a narrator's; 2 + 1 unchosen swipes
    texts = [t.text() for t in chat.turns]
    assert texts == ["Kai: Hi! The usual?",
                     "Ann: I switched to oat milk, and I got a cat named Mia.\nKai: Oat milk it is. Mia is a lovely "
                     "name!",
                     "Ann: Today I start my new job at the library.\nKai: Good luck at the library!",
                     "Ann: Mia knocked my tea over this morning.\nAnn: Twice!\nKai: Poor tea. Naughty Mia!"]
    everything = "\n".join(texts)
    for left_out in ("Oat milk, noted.", "Sure.", "Break a leg!", "[Chat summary", "café closes"):
        assert left_out not in everything
    assert chat.days(BERLIN) == ["2024-05-12", "2024-05-13", "2024-05-15"]
    # "May 12, 2024 7:31pm" is Berlin's evening: 17:31 UTC
    assert chat.turns[1].when == datetime(2024, 5, 12, 17, 31, tzinfo=timezone.utc)
    assert [t.line for t in chat.turns] == [2, 3, 6, 9]


@pytest.mark.parametrize("value, expected", [
    ("June 19, 2023 2:20pm", datetime(2023, 6, 19, 12, 20, tzinfo=timezone.utc)),
    ("June 19, 2023 12:05am", datetime(2023, 6, 18, 22, 5, tzinfo=timezone.utc)),
    ("Jun 19, 2023 2:20 PM", datetime(2023, 6, 19, 12, 20, tzinfo=timezone.utc)),
    ("June 19, 2023 @14h 20m", datetime(2023, 6, 19, 12, 20, tzinfo=timezone.utc)),
    ("June 19, 2023 @14h 20m 10s 123ms", datetime(2023, 6, 19, 12, 20, 10, tzinfo=timezone.utc)),
    ("2023-06-19 @14h 20m 10s 123ms", datetime(2023, 6, 19, 12, 20, 10, tzinfo=timezone.utc)),
    ("2023-06-19@14h20m10s", datetime(2023, 6, 19, 12, 20, 10, tzinfo=timezone.utc)),
    ("2023-06-19T14:20:00.000Z", datetime(2023, 6, 19, 14, 20, tzinfo=timezone.utc)),
    ("2023-06-19T14:20:00+02:00", datetime(2023, 6, 19, 12, 20, tzinfo=timezone.utc)),
    ("2023-06-19T14:20:00", datetime(2023, 6, 19, 12, 20, tzinfo=timezone.utc)),  # no offset: the person's zone
    (1687184400000, datetime(2023, 6, 19, 14, 20, tzinfo=timezone.utc)),
    ("1687184400000", datetime(2023, 6, 19, 14, 20, tzinfo=timezone.utc)),
    (1687184400, datetime(2023, 6, 19, 14, 20, tzinfo=timezone.utc)),
    (None, None),
    ("", None),
])
def test_send_dates_in_every_form_sillytavern_wrote(value, expected):
    assert parse_send_date(value, BERLIN) == expected


@pytest.mark.parametrize("value", ["yesterday", "June 31, 2023 2:20pm", "June 19, 2023 13:20pm", True, [1], "x" * 90,
                                   "Smarch 19, 2023 2:20pm", 10**30])
def test_what_is_not_a_send_date_is_said(value):
    with pytest.raises(ValueError):
        parse_send_date(value, BERLIN)


def _lines(*rows) -> bytes:
    return b"\n".join(r if isinstance(r, bytes) else json.dumps(r).encode() for r in rows)


HEADER = {"user_name": "Ann", "character_name": "Kai"}
OK = message("Ann", True, "hi", "2024-05-12T10:00:00Z")


@pytest.mark.parametrize("raw, line, said", [
    (_lines(HEADER, OK, b"{not json"), 3, "not JSON"),
    (_lines(HEADER, OK, b"[1, 2]"), 3, "one JSON object per line"),
    (_lines(HEADER, OK, {"name": "Ann", "is_user": True}), 3, "needs mes"),
    (_lines(HEADER, OK, {"mes": "x", "is_user": "yes"}), 3, "needs mes"),
    (_lines(HEADER, OK, {"mes": "x", "is_user": False, "name": ["Kai"]}), 3, "name must be a text"),
    (_lines(HEADER, {**OK, "send_date": "someday"}), 2, "not a date this host reads"),
    (_lines(HEADER, OK, b"\xff\xfe"), 3, "not UTF-8"),
    (_lines(HEADER, OK, b'{"mes": "\\ud800", "is_user": true}'), 3, "lone surrogate"),
])
def test_a_line_that_is_not_a_message_fails_the_file_with_its_number(raw, line, said):
    with pytest.raises(BadImport, match=said) as refused:
        read_chat(raw, BERLIN)
    assert refused.value.line == line and str(refused.value).startswith(f"line {line}: ")


def test_a_file_that_is_not_jsonl_says_so():
    with pytest.raises(BadImport, match="line 1: .*not JSON"):
        read_chat(b"Ann: hi\nKai: hello\n", BERLIN)
    with pytest.raises(BadImport, match="no message"):
        read_chat(_lines(HEADER), BERLIN)
    with pytest.raises(BadImport, match="no message"):
        read_chat(b"", BERLIN)


def test_a_message_without_a_date_takes_the_one_before(tmp_path):
    chat = read_chat(_lines(HEADER, OK, {**message("Kai", False, "hello", None)}), BERLIN)
    assert chat.undated == 1 and chat.turns[0].messages[1].when == chat.turns[0].messages[0].when
    assert "no readable send_date" in chat.warnings[0]
    dated_by_header = read_chat(_lines({**HEADER, "create_date": "2024-5-12 @19h 30m 00s 000ms"},
                                       message("Ann", True, "hi", None)), BERLIN)
    assert dated_by_header.turns[0].when == datetime(2024, 5, 12, 17, 30, tzinfo=timezone.utc)


def test_a_chat_without_a_header_is_read_from_its_first_message():
    chat = read_chat(_lines(OK, message("Kai", False, "hello", "2024-05-12T10:01:00Z")), BERLIN)
    assert len(chat.turns) == 1 and chat.header == {}


def test_sizes_are_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(chats_module, "MAX_CHAT_BYTES", 100)
    with pytest.raises(TooLarge, match="at most 100"):
        read_chat(b"x" * 101, BERLIN)
    monkeypatch.setattr(chats_module, "MAX_CHAT_BYTES", 10**6)
    monkeypatch.setattr(chats_module, "MAX_CHAT_LINE_BYTES", 50)
    with pytest.raises(TooLarge, match="line 2 of the chat"):
        read_chat(_lines(b"{}", b"x" * 51), BERLIN)
    monkeypatch.setattr(chats_module, "MAX_CHAT_LINE_BYTES", 10**6)
    monkeypatch.setattr(chats_module, "MAX_CHAT_MESSAGES", 3)
    with pytest.raises(TooLarge, match="more than 3 messages"):
        read_chat(chat_file(), BERLIN)


def test_a_transcript_is_one_item_per_turn_in_a_conversation_file():
    chat = read_chat(chat_file(), BERLIN)
    items = transcript_items(chat, BERLIN)
    assert {f for f, *_ in items} == {"chat-2024-05-12"}
    assert [n for _, n, _, _ in items] == ["turn 1 (2024-05-12 19.30)", "turn 2 (2024-05-12 19.31)",
                                           "turn 3 (2024-05-13 10.05)", "turn 4 (2024-05-15 11.00)"]
    assert items[1][2] == chat.turns[1].text() and items[1][3] == "2024-05-12T17:31:00+00:00"


def test_a_very_long_turn_is_split_in_the_transcript_and_cut_for_memorize():
    long = "word " * 20_000
    chat = read_chat(_lines(HEADER, message("Ann", True, long, "2024-05-12T10:00:00Z")), BERLIN)
    assert chat.turns[0].cut() and len(chat.turns[0].text()) == 32_000
    parts = transcript_items(chat, BERLIN)
    assert [n for _, n, _, _ in parts] == ["turn 1 (2024-05-12 12.00) part 1", "turn 1 (2024-05-12 12.00) part 2",
                                           "turn 1 (2024-05-12 12.00) part 3", "turn 1 (2024-05-12 12.00) part 4"]
    assert "".join(c for _, _, c, _ in parts) == "Ann: " + long.strip()


def test_the_sample_chat_is_what_the_test_says():
    assert len(chat_lines()) == 11
