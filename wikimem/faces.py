"""Upstream's module paths as faces over today's packages (:func:`callable_face`).

The library this project grew from kept one module per subject —
``wikimem.retrieval``, ``wikimem.memorize``, ``wikimem.store``,
``wikimem.diary``, ``wikimem.journal``, ``wikimem.tokenize`` — and code
written against it imports them. Each is now a thin module that re-exports
the seed's public names from the package that holds them. Two of them are
named like a function the package also exports at the top
(``from wikimem import memorize`` is the function): those faces are modules
that are also callable, so both contracts hold (``memorize(diary, turn,
llm=…)`` and ``memorize.DIARY_PROMPT``). See docs/guides/upstream-compatibility.md.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = ["callable_face"]


class _CallableFace(types.ModuleType):
    """A module whose call is its namesake function's (``__wrapped__``, for ``inspect.signature``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)


def callable_face(module_name: str, function: Callable[..., Any]) -> None:
    """Make the module ``module_name`` (already in ``sys.modules``: call it from the module itself) callable
    as ``function``."""
    module = sys.modules[module_name]
    module.__class__ = _CallableFace
    module.__wrapped__ = function  # type: ignore[attr-defined]
