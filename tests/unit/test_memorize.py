"""memorize: one LLM call, fail-open parsing, entries appended to the diary."""

from __future__ import annotations

import contextlib
import json

import pytest
from fakes import FakeOpenAI, ScriptedLLM

from wikimem import DIARY_PROMPT, MemoryStore, memorize
from wikimem.llm.chat import ChatClient, LLMError
from wikimem.llm.memorizer import DIARY_RULES, parse_diary_reply, render_prompt
from wikimem.store.writer import Mutation


class CountingHook:
    """A mutation hook that records each committed unit (what the git layer turns into a commit)."""

    def __init__(self):
        self.units: list[tuple[list[Mutation], dict]] = []

    def locked(self):
        return contextlib.nullcontext()

    def writing(self, unit, paths):
        pass

    def committed(self, unit):
        self.units.append((unit.mutations, unit.info.to_dict()))


def entries(*texts) -> str:
    return json.dumps([{"content": t} for t in texts], ensure_ascii=False)


def test_memorize_appends_each_entry_and_returns_them(store):
    llm = ScriptedLLM(entries("他说换了工作，去了一家做机器人的公司，语气很兴奋。", "睡前他提到有点担心新工作压力大。"))
    written = memorize(store.diary, "user: 我换工作啦！", llm=llm, owner="user:xnne",
                       source_conv="conv_1", date="2026-07-21", time="14:30")
    assert [e.content for e in written] == ["他说换了工作，去了一家做机器人的公司，语气很兴奋。",
                                            "睡前他提到有点担心新工作压力大。"]
    assert all((e.date, e.time, e.owner, e.source_conv) == ("2026-07-21", "14:30", "user:xnne", "conv_1")
               for e in written)
    assert store.diary.day("2026-07-21") == written
    assert [j["action"] for j in store.journal.entries()] == ["diary", "diary"]


def test_one_chat_call_with_the_prompt_and_the_turn(store):
    llm = ScriptedLLM("[]")
    memorize(store.diary, "user: hello\nassistant: hi", llm=llm, character="Elaina")
    assert len(llm.calls) == 1
    (system, user), = [llm.calls[0]]
    assert system == {"role": "system", "content": DIARY_PROMPT.replace("{character}", "Elaina")}
    assert user == {"role": "user", "content": "user: hello\nassistant: hi"}
    assert "Elaina" in system["content"] and "{character}" not in system["content"]


def test_default_character_is_the_assistant(store):
    llm = ScriptedLLM("[]")
    memorize(store.diary, "t", llm=llm)
    assert "You are the assistant." in llm.calls[0][0]["content"]


def test_reference_prompt_says_what_the_seed_asks():
    p = DIARY_PROMPT
    assert "{character}" in p
    assert "[]" in p and "[[file:item]]" in p and '{"content": "..."}' in p
    assert "2 to 4 sentences" in p and "language" in p and "One event per entry" in p
    assert p.isascii()  # English instructions; the entries follow the conversation


@pytest.mark.parametrize("prompt", [
    'Answer like {"content": "x"} for {character}; keep {other} and {0} and {{ and }}',
    "no placeholder at all, {",
    "{character}{character}",
])
def test_custom_prompt_with_literal_braces_never_crashes(store, prompt):
    llm = ScriptedLLM("[]")
    memorize(store.diary, "t", llm=llm, character="Elaina", prompt=prompt)
    assert llm.calls[0][0]["content"] == prompt.replace("{character}", "Elaina")


def test_character_is_inserted_literally():
    assert render_prompt("I am {character}.", "{character} {0}") == "I am {character} {0}."


ACCEPTED = [
    ('[{"content": "a"}]', ["a"]),
    ('```json\n[{"content": "a"}, {"content": "b"}]\n```', ["a", "b"]),
    ('```\n[{"content": "a"}]\n```', ["a"]),
    ('```JSON [{"content": "a"}]```', ["a"]),
    ('Here is what I kept:\n```json\n[{"content": "a"}]\n```\nHope that helps.', ["a"]),
    ('Sure! [{"content": "a"}] That is all.', ["a"]),
    ('{"content": "just one"}', ["just one"]),
    ('```json\n{"content": "one, fenced"}\n```', ["one, fenced"]),
    ('{"entries": [{"content": "wrapped"}]}', ["wrapped"]),
    ('<think>the user said [[x]] {hmm}</think>\n[{"content": "a"}]', ["a"]),
    ('[{"content": "a", "time": "14:30", "mood": "happy"}]', ["a"]),      # extra keys ignored
    ('[{"content": "  padded  "}]', ["padded"]),
    ('[{"content": "a"}, {"content": ""}, {"content": 7}, {"content": "b"}, 3, null]', ["a", "b"]),
    ('[{"content": "same"}, {"content": "same"}]', ["same"]),
    ('["a bare string entry"]', ["a bare string entry"]),
    ('[{"content": "去了海边。[[daily_life:beach-trip-plan]]"}]', ["去了海边。[[daily_life:beach-trip-plan]]"]),
    ('[{"content": "multi\\nline"}]', ["multi\nline"]),
    ('[{"content": "bad \\ud800 surrogate"}, {"content": "good"}]', ["good"]),
]


@pytest.mark.parametrize("reply,expected", ACCEPTED)
def test_parse_accepts(reply, expected):
    assert parse_diary_reply(reply) == expected


REJECTED = [
    "",
    "   \n",
    "Nothing worth remembering in this turn.",
    "他今天心情不错。",                       # prose in the conversation language
    "I noted [[work:current-job]] as relevant.",  # a link is not JSON
    "[]",
    "```json\n[]\n```",
    '[{"content": ',                          # truncated
    '[{"content": "a",}]',                    # trailing comma
    "[{'content': 'single quotes'}]",
    "null",
    "42",
    "true",
    '"[{\\"content\\": \\"double encoded\\"}]"',
    "[1, 2, 3]",
    '[{"text": "wrong key"}]',
    '[{"content": ""}, {"content": "   "}]',
    '[{"content": null}]',
    '[{"content": ["a", "b"]}]',
    '[{"content": {"text": "nested"}}]',
    '[[{"content": "nested array"}]]',
    '{"foo": 1}',
    '{"entries": [{"content": "a"}], "other": []}',  # ambiguous wrapper
    '{"content": 5}',
    "<think>[{\"content\": \"only in thoughts\"}]</think> nothing to keep",
]


@pytest.mark.parametrize("reply", REJECTED)
def test_malformed_reply_writes_nothing_and_returns_empty(store, reply):
    assert memorize(store.diary, "t", llm=ScriptedLLM(reply), date="2026-07-21") == []
    assert store.diary.dates() == []
    assert store.journal.entries() == []


@pytest.mark.parametrize("reply", [None, 42, ["not", "a", "string"], {"content": "dict"}])
def test_a_reply_that_is_not_a_string_is_nothing(store, reply):
    assert memorize(store.diary, "t", llm=ScriptedLLM(reply)) == []
    assert store.diary.dates() == []


def test_llm_failure_propagates_and_writes_nothing(store):
    with pytest.raises(LLMError):
        memorize(store.diary, "t", llm=ScriptedLLM(LLMError("down")))
    assert store.diary.dates() == []


@pytest.mark.parametrize("kwargs", [
    {"date": "2026-13-01"}, {"time": "25:00"}, {"ts": "yesterday"}, {"tz": "Mars/Olympus"},
    {"colour": "red"}, {"owner": "bad-->owner"}, {"source_conv": "two\nlines"}, {"owner": 5},
])
def test_bad_append_arguments_fail_before_the_llm_is_called(store, kwargs):
    llm = ScriptedLLM(entries("a"))
    with pytest.raises(ValueError):
        memorize(store.diary, "t", llm=llm, **kwargs)
    assert llm.calls == []
    assert store.diary.dates() == []


@pytest.mark.parametrize("kwargs", [{"turn": None}, {"character": 3}, {"prompt": b"bytes"}])
def test_bad_arguments_raise_value_error(store, kwargs):
    args = {"turn": "t", **kwargs}
    turn = args.pop("turn")
    with pytest.raises(ValueError):
        memorize(store.diary, turn, llm=ScriptedLLM("[]"), **args)


def test_ts_and_tz_reach_every_append(store):
    written = memorize(store.diary, "t", llm=ScriptedLLM(entries("a", "b")),
                       ts="2026-07-21T06:30:00Z", tz="Asia/Shanghai")
    assert [(e.date, e.time, e.ts) for e in written] == [("2026-07-21", "14:30", "2026-07-21T06:30:00+00:00")] * 2


def test_inside_a_batch_one_run_is_one_unit(tmp_path):
    hook = CountingHook()
    store = MemoryStore(tmp_path / "mem", hook=hook)
    with store.batch(run="run_42", actor="Elaina"):
        written = memorize(store.diary, "t", llm=ScriptedLLM(entries("a", "b", "c")),
                           date="2026-07-21", time="09:00")
    assert len(written) == 3
    assert len(hook.units) == 1
    mutations, info = hook.units[0]
    assert [m.record["action"] for m in mutations] == ["diary"] * 3
    assert info == {"run": "run_42", "actor": "Elaina"}


def test_rules_are_shared_by_prompt_and_tool_description():
    from wikimem import DIARY_TOOL_DESCRIPTION

    for rule in DIARY_RULES:
        assert rule in DIARY_PROMPT and rule in DIARY_TOOL_DESCRIPTION


def test_memorize_over_real_http_with_the_chat_client(store):
    with FakeOpenAI() as fake:
        fake.replies.append("```json\n" + entries("她说周末想去海边。") + "\n```")
        client = ChatClient(fake.url, "fake-chat", api_key="k")
        written = memorize(store.diary, "user: 周末去海边吧", llm=client, character="Elaina",
                           date="2026-07-21", time="20:00")
        assert [e.content for e in written] == ["她说周末想去海边。"]
        assert fake.chat_calls == 1
        sent = fake.requests[0]
        assert sent.body["model"] == "fake-chat"
        assert sent.body["messages"][0]["content"].startswith("You are Elaina.")
        assert sent.headers["Authorization"] == "Bearer k"


def test_memorize_over_http_when_the_endpoint_fails(store):
    with FakeOpenAI() as fake:
        fake.fail_status = 503
        with pytest.raises(LLMError, match="503"):
            memorize(store.diary, "t", llm=ChatClient(fake.url, "m"))
    assert store.diary.dates() == []


# -- events on their own day (issue 15 item 3) -----------------------------------

TOLD = "2026-07-23T10:00:00+08:00"  # a Thursday in Shanghai; 上周三 = 2026-07-15
SHANGHAI = "Asia/Shanghai"


def test_memorize_files_an_event_on_the_day_the_turn_names(store, monkeypatch):
    from datetime import date

    import wikimem.timeparse as timeparse
    from wikimem import MemoryIndex

    llm = ScriptedLLM(entries("上周三我去了海边，看到了日落。"))
    (entry,) = memorize(store.diary, "user: 上周三我去了海边", llm=llm, ts=TOLD, tz=SHANGHAI)
    assert (entry.date, entry.time) == ("2026-07-15", "10:00")  # the day it happened, the clock it was told
    assert entry.ts == "2026-07-23T02:00:00+00:00"  # provenance: the instant it was told
    assert store.diary.day("2026-07-15") == [entry] and store.diary.day("2026-07-23") == []

    # Asked later that Thursday: retrieval's own time gating finds the entry.
    monkeypatch.setattr(timeparse, "local_today", lambda tz=None: date(2026, 7, 23))
    # Pinned bigrams: "去哪了" shares a term with the entry only as jieba words, so ask "去了哪里".
    result = MemoryIndex(store, use_jieba=False).retrieve("上周三去了哪里", tz=SHANGHAI)
    assert result.time_range == ("2026-07-15", "2026-07-15")
    assert [(i.item.file, i.item.content) for i in result.items] == [("2026-07-15", entry.content)]


@pytest.mark.parametrize("turn, reply, expected", [
    # the entry's own words first
    ("user: 昨天好累", "上周三他去了海边。", "2026-07-15"),
    # an entry without time words takes the turn's day
    ("user: 昨天我去看了医生", "他去看了医生，有点担心。", "2026-07-22"),
    ("user: I went to the beach yesterday", "She went to the beach and loved it.", "2026-07-22"),
    ("user: 7月21号我们吵架了", "我们吵了一架。", "2026-07-21"),
    # a month-day in the future is last year's; an explicit date beats a relative word
    ("user: 12月25号我们一起过了圣诞", "我们一起过了圣诞。", "2025-12-25"),
    ("user: 2026-07-01 那天，比昨天更早", "那天他搬了家。", "2026-07-01"),
    # never in the future: a plan is filed the day it was told
    ("user: 明天要去海边", "他说明天要去海边，很期待。", "2026-07-23"),
    # only one day counts: a week, or two days, is not a date to file under
    ("user: 上周一直在加班", "他上周一直在加班。", "2026-07-23"),
    ("user: 昨天和前天都在下雨", "连着两天下雨，他很烦。", "2026-07-23"),
    # the entry speaks of a week: the turn's "yesterday" is not used instead
    ("user: 昨天说的", "他上周去了三次健身房。", "2026-07-23"),
    # no time words anywhere: the day it was told
    ("user: 我换工作了", "他换了工作。", "2026-07-23"),
])
def test_each_entry_is_dated_by_its_text_then_the_turn(store, turn, reply, expected):
    (entry,) = memorize(store.diary, turn, llm=ScriptedLLM(entries(reply)), ts=TOLD, tz=SHANGHAI)
    assert entry.date == expected
    assert entry.ts == "2026-07-23T02:00:00+00:00"


def test_entries_of_one_turn_may_land_on_different_days(store):
    llm = ScriptedLLM(entries("昨天他去了海边。", "今天他说想学冲浪。"))
    written = memorize(store.diary, "user: …", llm=llm, ts=TOLD, tz=SHANGHAI)
    assert [e.date for e in written] == ["2026-07-22", "2026-07-23"]


def test_the_timezone_decides_which_day_yesterday_is(store):
    told = "2026-07-22T17:00:00+00:00"  # 01:00 on the 23rd in Shanghai, still the 22nd in UTC
    east = memorize(store.diary, "t", llm=ScriptedLLM(entries("昨天下雨了。")), ts=told, tz=SHANGHAI)
    west = memorize(store.diary, "t", llm=ScriptedLLM(entries("昨天下雨了。")), ts=told, tz="UTC")
    assert (east[0].date, east[0].time) == ("2026-07-22", "01:00")
    assert (west[0].date, west[0].time) == ("2026-07-21", "17:00")


def test_an_explicit_date_from_the_caller_wins(store):
    llm = ScriptedLLM(entries("上周三我去了海边。"))
    (entry,) = memorize(store.diary, "t", llm=llm, ts=TOLD, tz=SHANGHAI, date="2026-07-20")
    assert entry.date == "2026-07-20"


def test_without_ts_the_day_is_counted_from_now(store):
    from datetime import datetime, timedelta, timezone

    before = datetime.now(timezone.utc)
    (entry,) = memorize(store.diary, "t", llm=ScriptedLLM(entries("昨天下雨了。")), tz="UTC")
    after = datetime.now(timezone.utc)
    assert entry.date in {(d - timedelta(days=1)).date().isoformat() for d in (before, after)}
    assert before.replace(microsecond=0) <= datetime.fromisoformat(entry.ts) <= after


def test_the_prompt_asks_to_say_when_an_event_happened():
    assert "filed under that day" in DIARY_PROMPT and "yesterday" in DIARY_PROMPT
