"""Upstream's ``wikimem.memorize`` (a face over :mod:`wikimem.llm`): one turn → diary entries, and the diary tool.

The module is also callable: ``from wikimem import memorize`` then
``memorize(diary, turn, llm=…)`` works as it always did, and so does
``from wikimem.memorize import memorize, DIARY_PROMPT``; upstream's
``parse_entries`` (the reply parser) is read from :mod:`wikimem.llm` when asked.
"""

from __future__ import annotations

from typing import Any

from wikimem.faces import callable_face
from wikimem.llm import DIARY_PROMPT, DIARY_TOOL_DESCRIPTION, LLM, diary_tool, handle_diary_tool, memorize

__all__ = ["memorize", "LLM", "DIARY_PROMPT", "diary_tool", "handle_diary_tool", "DIARY_TOOL_DESCRIPTION"]

callable_face(__name__, memorize)


def __getattr__(name: str) -> Any:
    if name == "parse_entries":  # upstream's name of the reply parser (read when asked: the parser may move)
        import wikimem.llm

        return wikimem.llm.parse_diary_reply
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
