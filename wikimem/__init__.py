"""wikimem — human-readable markdown memory for LLM chat bots.

``import wikimem`` needs only the standard library. Every public name is
loaded on first use, so importing the package stays cheap and never pulls
in an optional layer (jieba, numpy, dulwich, flask).
"""

from __future__ import annotations

import importlib
import sys
import types

__version__ = "0.1.0"

_EXPORTS = {
    "MemoryStore": "store",
    "MemoryIndex": "retrieval",
    "Journal": "journal",
    "Diary": "diary",
    "RecallItem": "models",
    "DiaryItem": "models",
    "WikiLink": "models",
    "RetrievalResult": "retrieval",
    "RetrievedItem": "retrieval",
    "tokenize": "tokenize",
    "est_tokens": "tokenize",
    "parse_wiki_links": "links",
    "validate_file": "naming",
    "sanitize_item_name": "naming",
    "memorize": "memorize",
    "LLM": "memorize",
    "DIARY_PROMPT": "memorize",
    "diary_tool": "memorize",
    "handle_diary_tool": "memorize",
    "DIARY_TOOL_DESCRIPTION": "memorize",
    "parse_time_range": "timeparse",
    "as_recall_item": "models",
}

__all__ = list(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'wikimem' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """The package module, guarding names shared by a submodule and its function.

    ``memorize`` and ``tokenize`` are both a submodule and the function it
    exports. When the import system binds such a submodule on the package
    (after any ``from .memorize import ...``), the public name keeps meaning
    the function, as ``from wikimem import memorize`` promises.
    """

    def __setattr__(self, name: str, value) -> None:
        if (isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name
                and value.__name__ == f"{__name__}.{name}"):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
