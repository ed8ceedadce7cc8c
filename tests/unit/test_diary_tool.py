"""The diary tool: a function schema, and a strict handler whose errors the agent reads."""

from __future__ import annotations

import json

import pytest

from wikimem import DIARY_TOOL_DESCRIPTION, MemoryStore, diary_tool, handle_diary_tool


@pytest.fixture
def diary(tmp_path):
    return MemoryStore(tmp_path / "mem").diary


def test_schema_is_an_openai_function_with_content_only():
    tool = diary_tool()
    assert tool["type"] == "function"
    fn = tool["function"]
    assert fn["name"] == "append_diary"
    assert fn["description"] == DIARY_TOOL_DESCRIPTION
    params = fn["parameters"]
    assert params["type"] == "object"
    assert list(params["properties"]) == ["content"]
    assert params["properties"]["content"]["type"] == "string"
    assert params["required"] == ["content"]
    assert params["additionalProperties"] is False
    json.dumps(tool)  # serialisable as is, for any client library


def test_schema_is_a_fresh_dict_each_time():
    a = diary_tool()
    a["function"]["parameters"]["properties"].clear()
    assert "content" in diary_tool()["function"]["parameters"]["properties"]


def test_description_tells_the_agent_the_clock_is_not_its_job():
    assert "date and time are recorded for you" in DIARY_TOOL_DESCRIPTION
    assert "[[file:item]]" in DIARY_TOOL_DESCRIPTION


@pytest.mark.parametrize("args", [
    '{"content": "她说周末想去海边。"}',
    b'{"content": "\xe5\xa5\xb9\xe8\xaf\xb4\xe5\x91\xa8\xe6\x9c\xab'
    b'\xe6\x83\xb3\xe5\x8e\xbb\xe6\xb5\xb7\xe8\xbe\xb9\xe3\x80\x82"}',
    {"content": "她说周末想去海边。"},
    {"content": "  她说周末想去海边。\n"},
])
def test_valid_call_appends_with_host_kwargs(diary, args):
    entry = handle_diary_tool(diary, args, date="2026-07-21", time="20:15",
                              owner="user:xnne", source_conv="conv_9")
    assert (entry.date, entry.time, entry.content) == ("2026-07-21", "20:15", "她说周末想去海边。")
    assert (entry.owner, entry.source_conv) == ("user:xnne", "conv_9")
    assert diary.day("2026-07-21") == [entry]


BAD = [
    ("", "not valid JSON"),
    ("{content: 'x'}", "not valid JSON"),
    ('{"content": "unterminated', "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    ("null", "must be a JSON object"),
    ('"just a string"', "must be a JSON object"),
    ('["a"]', "must be a JSON object"),
    ("42", "must be a JSON object"),
    (None, "must be a JSON object"),
    (["content", "x"], "must be a JSON object"),
    ("{}", "content argument is missing"),
    ('{"text": "x"}', "unexpected argument"),
    ('{"content": "x", "date": "2026-07-21"}', "unexpected argument(s) date"),
    ({"content": "x", "time": "09:00", "owner": "me"}, "unexpected argument(s) owner, time"),
    ('{"content": null}', "not null"),
    ('{"content": 42}', "not a number"),
    ('{"content": true}', "not a boolean"),
    ('{"content": ["a", "b"]}', "not an array"),
    ('{"content": {"text": "a"}}', "not an object"),
    ('{"content": ""}', "content is empty"),
    ('{"content": "   \\n\\t "}', "content is empty"),
    ('{"content": "bad \\ud800 surrogate"}', "invalid character"),
]


@pytest.mark.parametrize("args,message", BAD)
def test_bad_call_raises_a_message_for_the_agent_and_writes_nothing(diary, args, message):
    with pytest.raises(ValueError) as info:
        handle_diary_tool(diary, args, date="2026-07-21", time="20:15")
    text = str(info.value)
    assert message in text
    assert text.startswith("append_diary was not called")  # the agent learns nothing landed
    assert diary.dates() == []
    assert diary.journal.entries() == []


def test_json_errors_suggest_the_right_shape(diary):
    with pytest.raises(ValueError, match=r'\{"content": "\.\.\."\}'):
        handle_diary_tool(diary, "{oops")


def test_bad_host_kwargs_are_the_diary_s_value_error(diary):
    with pytest.raises(ValueError, match="invalid date"):
        handle_diary_tool(diary, {"content": "x"}, date="21/07/2026")
    assert diary.dates() == []


def test_handler_makes_no_llm_call_and_is_repeatable(diary):
    a = handle_diary_tool(diary, '{"content": "one"}', date="2026-07-21", time="10:00")
    b = handle_diary_tool(diary, '{"content": "one"}', date="2026-07-21", time="10:00")
    assert diary.day("2026-07-21") == [a, b]  # events, not state: both kept


def test_the_tool_files_an_event_on_the_day_its_content_names(store):
    entry = handle_diary_tool(store.diary, {"content": "上周三他去了海边。"}, ts="2026-07-23T10:00:00+08:00",
                              tz="Asia/Shanghai", owner="user:xnne")
    assert (entry.date, entry.time, entry.ts) == ("2026-07-15", "10:00", "2026-07-23T02:00:00+00:00")
    assert store.diary.day("2026-07-15") == [entry]


def test_the_tool_keeps_plans_and_weeks_on_the_day_told(store):
    for text in ("他说明天要去海边。", "他上周一直在加班。", "他换了工作。"):
        entry = handle_diary_tool(store.diary, {"content": text}, ts="2026-07-23T10:00:00+08:00",
                                  tz="Asia/Shanghai")
        assert entry.date == "2026-07-23"


def test_the_tool_description_says_entries_are_filed_by_their_day():
    assert "filed under that day" in DIARY_TOOL_DESCRIPTION
