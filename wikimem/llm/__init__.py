"""What talks to a language model: the chat client, memorize and the diary tool, the transcript query."""

from __future__ import annotations

from .chat import ChatClient, ChatRetry, LLMError
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
]
