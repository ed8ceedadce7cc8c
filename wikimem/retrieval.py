"""Upstream's ``wikimem.retrieval``: retrieval over a store (a face over :mod:`wikimem.recall`).

BM25 with one-hop wiki-link expansion, a token budget and time gating;
no model is ever called (see :class:`MemoryIndex`).
"""

from __future__ import annotations

from wikimem.models import as_recall_item
from wikimem.recall import MemoryIndex, RetrievalResult, RetrievedItem
from wikimem.timeparse import TimeRange, parse_time_range

__all__ = ["MemoryIndex", "RetrievalResult", "RetrievedItem", "as_recall_item", "TimeRange", "parse_time_range"]
