"""The query of a chat transcript: the user's turns, optionally the last N."""

from __future__ import annotations

import pytest

from wikimem.llm.transcript import message_text, query_from_messages

CHAT = [
    {"role": "system", "content": "You are Elaina."},
    {"role": "user", "content": "I adopted a puppy!"},
    {"role": "assistant", "content": "How lovely! What is its name?"},
    {"role": "user", "content": [{"type": "text", "text": "Biscuit."},
                                 {"type": "image_url", "image_url": {"url": "x"}}]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
    {"role": "user", "content": "   "},
    {"role": "user", "content": "Where should we walk him?"},
]


def test_the_users_turns_oldest_first():
    assert query_from_messages(CHAT) == "I adopted a puppy!\nBiscuit.\nWhere should we walk him?"


def test_the_last_n_user_turns():
    assert query_from_messages(CHAT, last=2) == "Biscuit.\nWhere should we walk him?"
    assert query_from_messages(CHAT, last=10) == query_from_messages(CHAT)


def test_other_roles_on_request():
    assert query_from_messages(CHAT, roles=("assistant",)) == "How lovely! What is its name?"


def test_no_user_turn_is_an_empty_query():
    assert query_from_messages([{"role": "system", "content": "hi"}]) == ""
    assert query_from_messages([]) == ""


@pytest.mark.parametrize("messages", [
    "hello", {"role": "user"}, [3], [{"content": "no role"}], [{"role": "user", "content": 5}],
    [{"role": "user", "content": [{"type": "text", "text": 3}]}], [{"role": "user", "content": ["x"]}],
])
def test_bad_transcripts_are_clear_errors(messages):
    with pytest.raises(ValueError):
        query_from_messages(messages)


@pytest.mark.parametrize("last", [0, -1, True, "2"])
def test_bad_last(last):
    with pytest.raises(ValueError):
        query_from_messages(CHAT, last=last)


def test_message_text_of_parts():
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert message_text({"role": "user", "content": parts}) == "a\nb"
