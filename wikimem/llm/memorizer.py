"""Memorize: turn a conversation turn into diary entries — two ways.

Design notes: docs/explanation/recall-internals.md (``wikimem/llm/memorizer.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Any, Protocol, TypeVar

from wikimem.format import clean_meta_value
from wikimem.models import DiaryItem
from wikimem.naming import validate_date, validate_time
from wikimem.store import Diary, normalize_ts, resolve_tz
from wikimem.timeparse import event_day

from .reply import entry_text, find_json, json_kind, seed_entries

__all__ = ["LLM", "DiaryLike", "memorize", "parse_diary_reply", "render_prompt", "DIARY_PROMPT", "DIARY_RULES",
           "diary_tool", "handle_diary_tool", "DIARY_TOOL_NAME", "DIARY_TOOL_DESCRIPTION", "event_date"]


class LLM(Protocol):
    """The port to the host's model: chat-completions shaped and synchronous."""

    def chat(self, messages: list[dict[str, str]]) -> str: ...


E = TypeVar("E")
E_co = TypeVar("E_co", covariant=True)


class DiaryLike(Protocol[E_co]):
    """What :func:`memorize` appends to: the store's :class:`~wikimem.store.Diary`, or a stand-in
    with its ``append`` (the host records the entries and writes them later, under its lock)."""

    def append(self, content: str, *, ts: str | None = ..., date: str | None = ..., time: str | None = ...,
               owner: str | None = ..., source_conv: str | None = ..., tz: tzinfo | str | None = ...) -> E_co: ...


DIARY_RULES = (
    "Record only events: something that happened, was said, decided, planned or felt at a "
    "particular moment. Lasting facts and preferences belong elsewhere, unless learning them "
    "was itself the event.",
    "One event per entry: split unrelated happenings, never split one happening.",
    "Each entry is 2 to 4 sentences, written from your own point of view, in the language "
    "the conversation is held in.",
    "Be concrete about what happened and how the person seemed; keep names, numbers and "
    "places exactly as they were said, and invent nothing the conversation does not show.",
    "When an event happened on another day than the conversation, say when, as the person "
    "said it (yesterday, three days ago, July 21, or the same words in their language): "
    "the entry is filed under that day.",
    "When an event clearly concerns a known wiki item you may link it as [[file:item]].",
    "Greetings, small talk and passing remarks are not worth keeping.",
)

DIARY_PROMPT = (
    "You are {character}. You keep a private diary about the person you talk with, so that "
    "later you can remember what happened between you and when.\n"
    "\n"
    "Read the conversation turn you are given and write down what in it is worth "
    "remembering.\n"
    "\n"
    "Rules:\n"
    + "".join(f"- {rule}\n" for rule in DIARY_RULES)
    + "- Most turns hold nothing worth keeping. Then answer []; that is a normal, good "
    "answer.\n"
    "\n"
    "Answer with a JSON array and nothing else, one object per entry:\n"
    '[{"content": "..."}]\n'
)

DIARY_TOOL_NAME = "append_diary"

DIARY_TOOL_DESCRIPTION = (
    "Write one entry in your private diary about the person you are talking with, so that "
    "later you can remember what happened and when. Call it when something in this "
    "conversation is worth remembering; most turns need no entry. "
    + " ".join(DIARY_RULES)
    + " The date and time are recorded for you: put only the entry text in `content`."
)

_CHARACTER = "{character}"


# -- memorize ----------------------------------------------------------------


def render_prompt(prompt: str, character: str) -> str:
    """The system prompt: only ``{character}`` is replaced, other braces stay literal."""
    return prompt.replace(_CHARACTER, character)


def memorize(
    diary: DiaryLike[E],
    turn: str,
    *,
    llm: LLM,
    character: str = "the assistant",
    prompt: str | None = None,
    owner: str | None = None,
    source_conv: str | None = None,
    **append_kwargs: Any,
) -> list[E]:
    """Ask ``llm`` once what in ``turn`` is worth keeping; append it to ``diary``.

    Returns what ``diary.append`` returned (with a Diary, the entries
    written), ``[]`` when the reply holds nothing usable (prose, bad JSON,
    no valid entry). Errors of the LLM itself (``llm.chat``
    raising) propagate: "the model was down" must not look like "nothing
    worth keeping". ``append_kwargs`` (``date``, ``time``, ``ts``, ``tz``) go
    to every ``diary.append``; invalid ones raise ``ValueError`` before the
    LLM is called.
    """
    if not isinstance(turn, str):
        raise ValueError("turn must be a string")
    if not isinstance(character, str):
        raise ValueError("character must be a string")
    if prompt is not None and not isinstance(prompt, str):
        raise ValueError("prompt must be a string")
    _check_append_kwargs(append_kwargs)
    clean_meta_value(owner, "owner")
    clean_meta_value(source_conv, "source_conv")
    messages = [
        {"role": "system", "content": render_prompt(DIARY_PROMPT if prompt is None else prompt, character)},
        {"role": "user", "content": turn},
    ]
    append_kwargs["ts"] = normalize_ts(append_kwargs.get("ts"))  # the turn's instant, for every entry
    reply = llm.chat(messages)
    return [diary.append(text, owner=owner, source_conv=source_conv,
                         **_dated(append_kwargs, text, turn))
            for text in parse_diary_reply(reply)]


def event_date(content: str, *, ts: str | None = None, tz: Any = None, turn: str | None = None) -> str | None:
    """The day an entry's event happened (``YYYY-MM-DD``), or None for the day it was told.

    The entry's own text decides first; only when it has no time expression
    at all does ``turn`` (the conversation it came from) decide. Only one
    past day counts: a week, a range or a day after the telling gives None.
    Days are counted from ``ts`` (the instant it was told; default now) in
    ``tz`` (default local).
    """
    told = datetime.fromisoformat(normalize_ts(ts)).astimezone(resolve_tz(tz)).date()
    for text in (content, turn):
        if not text:
            continue
        day = event_day(text, today=told, tz=tz)
        if day is not None:
            return day or None
    return None


def _dated(append_kwargs: Mapping[str, Any], content: str, turn: str | None) -> dict[str, Any]:
    """``append_kwargs`` with the event's own day as ``date``, unless the caller set one."""
    kwargs = dict(append_kwargs)
    if kwargs.get("date") is None:
        day = event_date(content, ts=kwargs.get("ts"), tz=kwargs.get("tz"), turn=turn)
        if day is not None:
            kwargs["date"] = day
    return kwargs


def _check_append_kwargs(kwargs: Mapping[str, Any]) -> None:
    """Fail before spending an LLM call on arguments ``diary.append`` would refuse."""
    allowed = {"ts", "date", "time", "tz"}
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ValueError(f"unknown append arguments {unknown}; allowed: {sorted(allowed)}")
    if kwargs.get("ts") is not None:
        normalize_ts(kwargs["ts"])
    if kwargs.get("date") is not None:
        validate_date(kwargs["date"])
    if kwargs.get("time") is not None:
        validate_time(kwargs["time"])
    resolve_tz(kwargs.get("tz"))


def parse_diary_reply(reply: Any) -> list[str]:
    """The entry texts of an LLM reply, fail-open.

    Accepted: a JSON array of ``{"content": "..."}`` objects, bare or inside
    a fenced code block or after some prose; a single such object; an
    object wrapping the array under one key (``{"entries": [...]}``, what
    JSON modes tend to produce). Within the array an element is kept when
    its ``content`` (or the element itself, if it is a string) is a
    non-empty string of valid Unicode; other keys are ignored (the model has
    no clock, so a ``"time"`` it invents is dropped); exact repeats are kept
    once. Everything else — prose, bad JSON, numbers — yields ``[]``.
    The JSON is found as :func:`wikimem.llm.reply.parse_reply` finds it.
    """
    out: list[str] = []
    for element in seed_entries(find_json(reply)) or []:
        text = entry_text(element)
        if text is not None and text not in out:
            out.append(text)
    return out


# -- the diary tool ------------------------------------------------------------


def diary_tool() -> dict:
    """The OpenAI-style function schema of ``append_diary(content)`` (a fresh dict)."""
    return {
        "type": "function",
        "function": {
            "name": DIARY_TOOL_NAME,
            "description": DIARY_TOOL_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {
                    "content": {
                        "type": "string",
                        "description": "The diary entry: 2 to 4 sentences about one event, "
                                       "in the language of the conversation.",
                    },
                },
                "required": ["content"],
                "additionalProperties": False,
            },
        },
    }


_EXAMPLE = '{"content": "..."}'


def handle_diary_tool(diary: Diary, args: str | Mapping[str, Any], **append_kwargs: Any) -> DiaryItem:
    """Validate an ``append_diary`` call and append it; ``append_kwargs`` go to ``diary.append``.

    ``args`` is the call's arguments as the model sent them (a JSON string)
    or already parsed. A bad call raises ``ValueError`` with a message meant
    to be returned to the agent as the tool result.
    """
    if isinstance(args, (str, bytes, bytearray)):
        try:
            args = json.loads(args)
        except ValueError as exc:
            raise ValueError(f"{DIARY_TOOL_NAME} was not called: the arguments are not valid JSON "
                             f"({getattr(exc, 'msg', exc)}). Call it again with arguments like {_EXAMPLE}.") from None
    if not isinstance(args, Mapping):
        raise ValueError(f"{DIARY_TOOL_NAME} was not called: the arguments must be a JSON object "
                         f"like {_EXAMPLE}, not {json_kind(args)}.")
    extra = sorted(str(k) for k in args if k != "content")
    if extra:
        raise ValueError(f"{DIARY_TOOL_NAME} was not called: unexpected argument(s) "
                         f"{', '.join(extra)}. The only argument is content; the date and time "
                         f"are recorded for you.")
    if "content" not in args:
        raise ValueError(f"{DIARY_TOOL_NAME} was not called: the content argument is missing. "
                         f"Call it again with arguments like {_EXAMPLE}.")
    content = args["content"]
    if not isinstance(content, str):
        raise ValueError(f"{DIARY_TOOL_NAME} was not called: content must be a string of text, "
                         f"not {json_kind(content)}.")
    if not content.strip():
        raise ValueError(f"{DIARY_TOOL_NAME} was not called: content is empty. Write the entry "
                         f"text, 2 to 4 sentences about one event.")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{DIARY_TOOL_NAME} was not called: content contains an invalid "
                         f"character (a lone surrogate). Write it again as plain text.") from None
    append_kwargs = dict(append_kwargs)
    append_kwargs["ts"] = normalize_ts(append_kwargs.get("ts"))
    return diary.append(content, **_dated(append_kwargs, content, None))
