"""Upstream's ``wikimem.tokenize`` (a face over :mod:`wikimem.recall`): ``tokenize`` and ``est_tokens``.

The module is also callable: ``from wikimem import tokenize`` then
``tokenize("喜欢海边")`` works as it always did.
"""

from __future__ import annotations

from wikimem.faces import callable_face
from wikimem.recall import est_tokens, jieba_available, tokenize

__all__ = ["tokenize", "est_tokens", "jieba_available"]

callable_face(__name__, tokenize)
