"""Errors the host adds to the library's (:mod:`wikimem.errors`)."""

from __future__ import annotations

from wikimem.errors import QuotaExceeded, WikimemError

__all__ = ["BadRequest", "ToolCallError", "LLMNotConfigured", "QueueFull"]


class BadRequest(WikimemError, ValueError):
    """A request whose shape is wrong: a missing or unknown field, a wrong type."""

    code = "bad_request"


class ToolCallError(WikimemError, ValueError):
    """A diary tool call that was refused; the message is meant for the agent."""

    code = "bad_tool_call"


class LLMNotConfigured(WikimemError):
    """Memorize was asked for, but the host has no chat endpoint configured."""

    code = "llm_not_configured"


class QueueFull(QuotaExceeded):
    """A job refused: its tenant (or owner) has as many open jobs as it may, or the jobs database is full.

    HTTP 429 with ``Retry-After`` (``retry_after`` seconds).
    """

    code = "queue_full"

    def __init__(self, message: str, retry_after: int = 5):
        super().__init__(message, retry_after=retry_after)
