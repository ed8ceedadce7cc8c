"""What talks to a language model: the chat client, memorize and the diary tool, memorize as a character
(diary entries and facts, :func:`extract` / :func:`parse_reply`), the transcript query."""

from __future__ import annotations

from .chat import ChatClient, ChatRetry, LLMError
from .extraction import CHANNEL_PROMPT, CHARACTER_PROMPT, FACT_RULES, extract, render_character_prompt
from .memorizer import (
    DIARY_PROMPT,
    DIARY_RULES,
    DIARY_TOOL_DESCRIPTION,
    DIARY_TOOL_NAME,
    LLM,
    DiaryLike,
    diary_tool,
    event_date,
    handle_diary_tool,
    memorize,
    parse_diary_reply,
    render_prompt,
)
from .reply import MAX_REPLY_ELEMENTS, Fact, Note, Reply, parse_reply
from .transcript import message_text, query_from_messages

__all__ = [
    "ChatClient",
    "ChatRetry",
    "LLMError",
    "LLM",
    "DiaryLike",
    "memorize",
    "parse_diary_reply",
    "render_prompt",
    "DIARY_PROMPT",
    "DIARY_RULES",
    "diary_tool",
    "handle_diary_tool",
    "DIARY_TOOL_NAME",
    "DIARY_TOOL_DESCRIPTION",
    "event_date",
    "query_from_messages",
    "message_text",
    "Note",
    "Fact",
    "Reply",
    "parse_reply",
    "extract",
    "render_character_prompt",
    "CHARACTER_PROMPT",
    "CHANNEL_PROMPT",
    "FACT_RULES",
    "MAX_REPLY_ELEMENTS",
]
