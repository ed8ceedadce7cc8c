"""The retrieval query of a chat transcript: what the user said, most recent last.

A bot worker holds the conversation as OpenAI-style messages. What to recall
is decided by the user's turns — the assistant's own words would pull its
earlier answers back — and, in a long chat, by the last few of them.
:func:`query_from_messages` makes that query; the API uses it when a
retrieve call carries ``messages`` instead of ``query``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["query_from_messages", "message_text"]


def message_text(message: Any) -> str:
    """The text of one message: its ``content`` string, or its text parts joined.

    Raises ``ValueError`` for anything that is not a chat message.
    """
    if not isinstance(message, dict):
        raise ValueError(f"a message is an object with 'role' and 'content', got {type(message).__name__}")
    if not isinstance(message.get("role"), str):
        raise ValueError("a message needs a 'role' string")
    content = message.get("content")
    if content is None:
        return ""  # e.g. an assistant message that only calls tools
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": "..."}, {"type": "image_url", ...}]
        parts = []
        for part in content:
            if not isinstance(part, dict):
                raise ValueError("message content parts must be objects")
            if part.get("type") == "text":
                if not isinstance(part.get("text"), str):
                    raise ValueError("a text part needs a 'text' string")
                parts.append(part["text"])
        return "\n".join(parts)
    raise ValueError("message content must be a string, a list of parts, or null")


def query_from_messages(messages: Sequence[Any], *, last: int | None = None,
                        roles: Iterable[str] = ("user",)) -> str:
    """The user's turns of ``messages`` (the last ``last`` of them), oldest first, one per line.

    ``roles`` picks whose turns count (``("user",)``). Empty turns are
    skipped; no matching turn gives ``""``. Invalid input raises ``ValueError``.
    """
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise ValueError("messages must be a list of chat messages")
    if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 1):
        raise ValueError(f"last must be a positive integer, got {last!r}")
    wanted = set(roles)
    texts = []
    for message in messages:
        text = message_text(message)  # validates every message, not only the kept ones
        if message["role"] in wanted and text.strip():
            texts.append(text.strip())
    if last is not None:
        texts = texts[-last:]
    return "\n".join(texts)
