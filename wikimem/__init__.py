"""wikimem — human-readable markdown memory for LLM chat bots.

``import wikimem`` needs only the standard library. Every public name is
loaded on first use, so importing the package stays cheap and never pulls
in an optional layer (jieba, numpy, dulwich, flask).

Upstream's module paths import too (``from wikimem import retrieval,
memorize, store, diary, journal, tokenize``; :mod:`wikimem.faces`):
``memorize`` and ``tokenize`` are those modules, callable as the functions
of the same name.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what a type checker should see: the functions (the faces call them)
    from .llm import memorize as memorize
    from .recall import tokenize as tokenize

__version__ = "0.1.0"

_EXPORTS = {
    "MemoryStore": "store",
    "MemoryIndex": "recall",
    "Journal": "store",
    "Diary": "store",
    "RecallItem": "models",
    "DiaryItem": "models",
    "WikiLink": "models",
    "RetrievalResult": "recall",
    "RetrievedItem": "recall",
    "tokenize": "recall",
    "est_tokens": "recall",
    "parse_wiki_links": "links",
    "validate_file": "naming",
    "sanitize_item_name": "naming",
    "memorize": "llm",
    "LLM": "llm",
    "DIARY_PROMPT": "llm",
    "diary_tool": "llm",
    "handle_diary_tool": "llm",
    "DIARY_TOOL_DESCRIPTION": "llm",
    "parse_time_range": "timeparse",
    "as_recall_item": "models",
    "Room": "recall",
}

__all__ = list(_EXPORTS) + ["__version__"]


# Names that are both a top-level function and an upstream module path: the callable face module.
_CALLABLE_FACES = ("memorize", "tokenize")


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'wikimem' has no attribute {name!r}")
    if name in _CALLABLE_FACES:
        value = importlib.import_module(f".{name}", __name__)  # (importing it binds it here too)
    else:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
