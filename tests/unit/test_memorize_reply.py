"""The memorize reply (SPEC §11): diary entries and facts read fail-open, bad elements dropped and counted;
``extract`` is one chat call with the project's prompt."""

from __future__ import annotations

import json

import pytest
from fakes import FakeOpenAI, ScriptedLLM
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikimem.limits import MAX_CONTENT_CHARS
from wikimem.llm import (
    CHANNEL_PROMPT,
    CHARACTER_PROMPT,
    DIARY_RULES,
    FACT_RULES,
    MAX_REPLY_ELEMENTS,
    ChatClient,
    Fact,
    LLMError,
    Note,
    Reply,
    extract,
    parse_diary_reply,
    parse_reply,
    render_character_prompt,
)

FULL = {"diary": [{"content": "We walked to the harbour; she laughed at the gulls."},
                  {"content": "她说昨天吵架了。", "date": "2026-07-20", "time": "21:15"}],
        "facts": [{"file": "preferences", "name": "tea", "content": "Drinks oolong, never with sugar."}]}


def test_the_full_shape():
    reply = parse_reply(json.dumps(FULL, ensure_ascii=False))
    assert reply == Reply(
        diary=[Note("We walked to the harbour; she laughed at the gulls."),
               Note("她说昨天吵架了。", date="2026-07-20", time="21:15")],
        facts=[Fact("preferences", "tea", "Drinks oolong, never with sugar.")],
        dropped=[])
    assert reply.dropped_count == 0


@pytest.mark.parametrize("wrap", [
    "{}",
    "```\n{}\n```",
    "```json\n{}\n```",
    "```JSON {}```",
    "Here is what I kept:\n```json\n{}\n```\nThat is all.",
    "Sure! {} Done.",
    "<think>maybe {{\"diary\": [{{\"content\": \"no\"}}]}}</think>\n{}",
])
def test_fences_and_prose_around_the_object(wrap):
    text = wrap.replace("{}", json.dumps(FULL, ensure_ascii=False), 1) if wrap != "{}" else json.dumps(FULL)
    reply = parse_reply(text)
    assert [n.content for n in reply.diary] == [e["content"] for e in FULL["diary"]]
    assert [(f.file, f.name) for f in reply.facts] == [("preferences", "tea")]


@pytest.mark.parametrize("text, diary, facts", [
    ('{"diary": [], "facts": []}', 0, 0),
    ('{"diary": []}', 0, 0),
    ('{"facts": []}', 0, 0),
    ('{"diary": [{"content": "a"}]}', 1, 0),                                   # facts absent
    ('{"facts": [{"file": "work", "name": "job", "content": "Nurse."}]}', 0, 1),  # diary absent
    ('{"diary": null, "facts": [{"file": "work", "name": "job", "content": "Nurse."}]}', 0, 1),
    ('{"diary": {"content": "one object, not a list"}}', 1, 0),
    ('{"diary": [{"content": "a"}], "facts": [], "mood": "fine"}', 1, 0),      # other keys ignored
])
def test_either_list_may_be_empty_or_absent(text, diary, facts):
    reply = parse_reply(text)
    assert (len(reply.diary), len(reply.facts), reply.dropped) == (diary, facts, [])


@pytest.mark.parametrize("text, expected", [
    ('[{"content": "a"}, {"content": "b"}]', ["a", "b"]),
    ('["a bare string entry"]', ["a bare string entry"]),
    ('{"content": "just one"}', ["just one"]),
    ('```json\n{"content": "one, fenced"}\n```', ["one, fenced"]),
    ('{"entries": [{"content": "wrapped"}]}', ["wrapped"]),
    ('[{"content": "a", "date": "2026-07-01"}]', ["a"]),
])
def test_the_seeds_shapes_are_diary_entries(text, expected):
    reply = parse_reply(text)
    assert [n.content for n in reply.diary] == expected and reply.facts == []
    assert parse_diary_reply(text) == expected  # the seed's parser reads the same JSON the same way


@pytest.mark.parametrize("text", [
    None, 42, "", "   ", "Nothing worth remembering in this turn.", "他今天心情不错。",
    "I noted [[work:current-job]] as relevant.", "[]", "```json\n[]\n```", '{"diary": ',
    '{"diary": [{"content": "a",}]}', "{'diary': [{'content': 'single quotes'}]}", "null", "42", "true",
    '"{\\"diary\\": []}"', '{"foo": 1}', '{"entries": [], "other": []}',
    '<think>{"diary": [{"content": "only in thoughts"}]}</think> nothing to keep',
    "[" * 100_000, "{\"diary\": " + "[" * 100_000,  # deeper than the JSON decoder goes
])
def test_anything_else_is_nothing(text):
    assert parse_reply(text) == Reply([], [], [])
    assert parse_diary_reply(text) == []  # the seed's parser too (it raised RecursionError on deep nesting)


def test_a_fact_with_a_bad_file_name_is_dropped_and_reported():
    reply = parse_reply(json.dumps({"facts": [
        {"file": "Bad File", "name": "tea", "content": "Oolong."},
        {"file": "preferences", "name": "coffee", "content": "Never after noon."},
    ]}))
    assert reply.facts == [Fact("preferences", "coffee", "Never after noon.")]
    (dropped,) = reply.dropped
    assert dropped["kind"] == "fact" and dropped["index"] == 0
    assert dropped["reason"].startswith("file name 'Bad File' is not a RecallFile name")
    assert reply.dropped_count == 1


BAD_FACTS = [
    ({"file": "../etc", "name": "x", "content": "c"}, "RecallFile name"),
    ({"file": 7, "name": "x", "content": "c"}, "RecallFile name"),
    ({"name": "x", "content": "c"}, "RecallFile name"),
    ({"file": "work", "name": "a:b", "content": "c"}, "may not contain ':'"),
    ({"file": "work", "name": "   ", "content": "c"}, "item name is empty"),
    ({"file": "work", "name": None, "content": "c"}, "item name must be a string"),
    ({"file": "work", "name": "x" * 201, "content": "c"}, "longer than 200"),
    ({"file": "work", "name": "x\u202e", "content": "c"}, "bidi"),
    ({"file": "work", "name": "x", "content": ""}, "'content' is missing"),
    ({"file": "work", "name": "x"}, "'content' is missing"),
    ({"file": "work", "name": "x", "content": 5}, "'content' is missing"),
    ({"file": "work", "name": "x", "content": "x" * (MAX_CONTENT_CHARS + 1)}, "at most 32,000"),
    ("a fact as a string", "a fact must be an object"),
    (["work", "x", "c"], "not an array"),
    ({"file": "work", "name": "x", "content": "c", "person": "two\nlines"}, "person may not contain"),
]


@pytest.mark.parametrize("fact, reason", BAD_FACTS)
def test_each_malformed_fact_is_skipped_with_its_reason(fact, reason):
    good = {"file": "work", "name": "job", "content": "Nurse at St Mary's."}
    reply = parse_reply(json.dumps({"facts": [good, fact]}))
    assert reply.facts == [Fact("work", "job", "Nurse at St Mary's.")]
    assert [(d["kind"], d["index"]) for d in reply.dropped] == [("fact", 1)]
    assert reason in reply.dropped[0]["reason"]


BAD_NOTES = [
    ({"content": "a", "date": "yesterday"}, "invalid date 'yesterday'"),
    ({"content": "a", "date": "2026-02-30"}, "no such day"),
    ({"content": "a", "time": "25:00"}, "invalid time '25:00'"),
    ({"content": "a", "time": 1430}, "invalid time"),
    ({"content": ""}, "'content' is missing"),
    ({"content": "bad \ud800 surrogate"}, "'content' is missing"),
    ({"text": "wrong key"}, "'content' is missing"),
    ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "at most 32,000"),
    (None, "not null"),
    (3, "not a number"),
]


@pytest.mark.parametrize("note, reason", BAD_NOTES)
def test_each_malformed_diary_entry_is_skipped_with_its_reason(note, reason):
    reply = parse_reply(json.dumps({"diary": [note, {"content": "kept"}]}))
    assert reply.diary == [Note("kept")]
    assert [(d["kind"], d["index"]) for d in reply.dropped] == [("diary", 0)]
    assert reason in reply.dropped[0]["reason"]


def test_a_list_that_is_not_a_list_is_reported():
    reply = parse_reply('{"diary": "we talked", "facts": 3}')
    assert reply.diary == [] and reply.facts == []
    assert reply.dropped == [{"kind": "diary", "reason": "'diary' is not a list"},
                             {"kind": "fact", "reason": "'facts' is not a list"}]


def test_content_is_trimmed_and_the_largest_allowed_is_kept():
    big = "x" * MAX_CONTENT_CHARS
    reply = parse_reply(json.dumps({"diary": [{"content": f"  {big}  "}],
                                    "facts": [{"file": "work", "name": "  long   name ", "content": big}]}))
    assert reply.diary == [Note(big)] and reply.facts == [Fact("work", "long name", big)]


def test_repeats_are_kept_once_and_counted():
    reply = parse_reply(json.dumps({
        "diary": [{"content": "same"}, {"content": "same"}],
        "facts": [{"file": "work", "name": "job", "content": "Nurse."},
                  {"file": "work", "name": "job", "content": "Doctor."}]}))
    assert reply.diary == [Note("same")] and reply.facts == [Fact("work", "job", "Nurse.")]
    assert [(d["kind"], d["index"]) for d in reply.dropped] == [("diary", 1), ("fact", 1)]
    assert "repeats the fact work:job" in reply.dropped[1]["reason"]


def test_a_reply_holds_a_bounded_number_of_elements():
    notes = [{"content": f"entry {i}"} for i in range(MAX_REPLY_ELEMENTS - 10)]
    facts = [{"file": "work", "name": f"f{i}", "content": "c"} for i in range(30)]
    reply = parse_reply(json.dumps({"diary": notes, "facts": facts}))
    assert len(reply.diary) + len(reply.facts) == MAX_REPLY_ELEMENTS
    assert reply.dropped == [{"kind": "fact", "count": 20,
                              "reason": f"one reply holds at most {MAX_REPLY_ELEMENTS} elements"}]
    assert reply.dropped_count == 20


# -- persons (a channel turn) ----------------------------------------------------------


def test_without_persons_a_named_person_is_kept():
    reply = parse_reply(json.dumps({"diary": [{"content": "a", "person": "user:ann"}],
                                    "facts": [{"file": "work", "name": "job", "content": "c", "person": "user:bob"}]}))
    assert reply.diary == [Note("a", person="user:ann")]
    assert reply.facts == [Fact("work", "job", "c", person="user:bob")]


def test_a_channel_turn_keeps_only_elements_naming_a_person_of_the_turn():
    reply = parse_reply(json.dumps({
        "diary": [{"content": "ann's", "person": "user:ann"}, {"content": "nobody's"},
                  {"content": "carl's", "person": "user:carl"}],
        "facts": [{"file": "work", "name": "job", "content": "Nurse.", "person": "user:bob"},
                  {"file": "work", "name": "job", "content": "Pilot.", "person": "user:ann"}]}),
        persons=["user:ann", "user:bob"])
    assert reply.diary == [Note("ann's", person="user:ann")]
    assert reply.facts == [Fact("work", "job", "Nurse.", person="user:bob"),
                           Fact("work", "job", "Pilot.", person="user:ann")]  # one item, two persons
    assert [(d["kind"], d["index"]) for d in reply.dropped] == [("diary", 1), ("diary", 2)]
    assert "names no person" in reply.dropped[0]["reason"]
    assert "names person 'user:carl'; a person of this turn is one of user:ann, user:bob" == reply.dropped[1]["reason"]


def test_with_one_person_an_element_naming_nobody_is_theirs():
    reply = parse_reply('[{"content": "a"}]', persons=["user:ann"])
    assert reply.diary == [Note("a", person="user:ann")]


# -- never raises -------------------------------------------------------------------------

_pieces = st.sampled_from(['{"diary": [', '{"facts": [', "]}", "{", "}", "[", "]", '"content": ', '"file": ',
                           '"name": ', '"person": ', '"date": ', '"time": ', '"a"', '"2026-07-21"', '"25:00"',
                           "null", "1", ",", ":", "```json\n", "```", "<think>", "</think>", "\\ud800", '"\\ud800"',
                           " ", "\n", "海"])
_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                       lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.sampled_from(["diary", "facts", "content", "file", "name", "date", "time",
                                                          "person", "x"]), inner, max_size=4),
                       max_leaves=20)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300) | st.lists(_pieces, max_size=60).map("".join) | _values.map(json.dumps))
def test_parse_reply_never_raises(text):
    reply = parse_reply(text)
    for note in reply.diary:
        assert isinstance(note.content, str) and note.content.strip() == note.content and note.content
    for fact in reply.facts:
        assert fact.file and fact.name and fact.content
    assert all(d["kind"] in ("diary", "fact") and d["reason"] for d in reply.dropped)
    parse_diary_reply(text)


# -- the prompt and extract ----------------------------------------------------------------


def test_the_prompt_says_what_the_contract_asks():
    for prompt in (CHARACTER_PROMPT, CHANNEL_PROMPT):
        assert prompt.isascii()  # English instructions; the entries follow the conversation's language
        for placeholder in ("{character}", "{persona}", "{person}", "{today}"):
            assert placeholder in prompt
        assert '{"diary": [], "facts": []}' in prompt and "[[file:name]]" in prompt
        assert all(rule in prompt for rule in DIARY_RULES + FACT_RULES)
        assert "2 to 4 sentences" in prompt and "preferences" in prompt and "language" in prompt
    assert '"person": "..."' in CHANNEL_PROMPT and '"person"' not in CHARACTER_PROMPT


def test_rendering_replaces_the_placeholders_literally():
    text = render_character_prompt("{character}|{persona}|{person}|{today}|{other}|{", character="{today} Kai",
                                   persona=" A barista. ", person="user:ann", today="2026-07-21")
    assert text == "{today} Kai|A barista.|user:ann|2026-07-21|{other}|{"


def test_an_empty_persona_leaves_no_empty_paragraph():
    text = render_character_prompt(CHARACTER_PROMPT, character="Kai", today="2026-07-21")
    assert text.startswith("You are Kai.\n\nYou keep a memory of the person") and "\n\n\n" not in text


def test_extract_is_one_call_with_the_prompt_and_the_turn():
    llm = ScriptedLLM("```json\n" + json.dumps(FULL) + "\n```")
    reply = extract(llm, "user: I only drink oolong", character="Kai", persona="A barista who remembers orders.",
                    person="user:ann", today="2026-07-21")
    assert len(reply.diary) == 2 and reply.facts == [Fact("preferences", "tea", "Drinks oolong, never with sugar.")]
    (system, user), = llm.calls
    assert system == {"role": "system", "content": render_character_prompt(
        CHARACTER_PROMPT, character="Kai", persona="A barista who remembers orders.", person="user:ann",
        today="2026-07-21")}
    assert "You are Kai." in system["content"] and "(user:ann)" in system["content"]
    assert "Today is 2026-07-21." in system["content"]
    assert user == {"role": "user", "content": "user: I only drink oolong"}


def test_extract_for_a_channel_turn():
    llm = ScriptedLLM(json.dumps({"diary": [{"content": "Bob sang.", "person": "user:bob"},
                                            {"content": "Nobody's.", "person": "user:zed"}]}))
    reply = extract(llm, "bob: ♪", character="Kai", persons=["user:ann", "user:bob"], today="2026-07-21")
    assert reply.diary == [Note("Bob sang.", person="user:bob")] and reply.dropped_count == 1
    system = llm.calls[0][0]["content"]
    assert "group chat with several persons (user:ann, user:bob)" in system


def test_extract_with_a_custom_prompt():
    llm = ScriptedLLM("[]")
    extract(llm, "t", character="Mira", prompt='Be {character}; answer {"diary": []}', today="2026-07-21")
    assert llm.calls[0][0]["content"] == 'Be Mira; answer {"diary": []}'


@pytest.mark.parametrize("kwargs", [
    {"turn": None}, {"character": 3}, {"persona": 5}, {"prompt": b"bytes"}, {"today": "21/07/2026"},
    {"persons": "user:ann"}, {"persons": [1]},
])
def test_bad_arguments_fail_before_the_model_is_called(kwargs):
    args = {"turn": "t", "character": "Kai", **kwargs}
    llm = ScriptedLLM("[]")
    with pytest.raises(ValueError):
        extract(llm, args.pop("turn"), **args)
    assert llm.calls == []


def test_a_failing_model_raises_and_a_prose_answer_is_nothing():
    with pytest.raises(LLMError):
        extract(ScriptedLLM(LLMError("down")), "t", character="Kai")
    assert extract(ScriptedLLM("Nothing to keep today."), "t", character="Kai") == Reply([], [], [])


def test_extract_over_real_http():
    with FakeOpenAI() as fake:
        fake.replies.append(json.dumps(FULL))
        reply = extract(ChatClient(fake.url, "fake-chat"), "user: hi", character="Kai", today="2026-07-21")
        assert fake.chat_calls == 1 and len(reply.diary) == 2 and len(reply.facts) == 1
        fake.fail_status = 503
        with pytest.raises(LLMError, match="503"):
            extract(ChatClient(fake.url, "fake-chat"), "user: hi", character="Kai")
