"""The optional embedding layer, in one namespace (SPEC §3 "Vectors").

Design notes: docs/explanation/recall-internals.md (``wikimem/vectors/__init__.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .embedders import (
    Embedder,
    EmbeddingError,
    HttpEmbedder,
    VectorIndex,
    VectorMismatch,
    content_hash,
    embed_queries,
    embed_text,
    vector_space,
)
from .kernel import prepared_engine
from .local import KERNELS, LocalEmbedder, local_model_available
from .queries import RememberedQueries, one_retrieve
from .worker import shared_worker

if TYPE_CHECKING:  # what __getattr__ below loads on first access, named here for type checkers
    from .cache import KEYS_FILE as KEYS_FILE  # (as: re-exported, though not in __all__)
    from .cache import CachedVectors, VectorCache
    from .index import RERANK_FACTOR as RERANK_FACTOR
    from .index import MemmapVectorIndex
    from .search import DIARY_VECTORS_DIR as DIARY_VECTORS_DIR
    from .search import EmbeddingSearch, NeighbourContext

__all__ = [
    "local_model_available", "shared_worker", "RememberedQueries", "one_retrieve",
    "Embedder",
    "VectorIndex",
    "EmbeddingError",
    "VectorMismatch",
    "HttpEmbedder",
    "LocalEmbedder", "KERNELS", "prepared_engine",
    "CachedVectors",
    "VectorCache",
    "MemmapVectorIndex",
    "EmbeddingSearch",
    "NeighbourContext",
    "content_hash",
    "embed_text",
    "embed_queries",
    "vector_space",
]

# name -> module holding it; imported (with numpy) on first access.
_LAZY = {
    "CachedVectors": "cache",
    "VectorCache": "cache",
    "KEYS_FILE": "cache",
    "MemmapVectorIndex": "index",
    "RERANK_FACTOR": "index",
    "EmbeddingSearch": "search",
    "NeighbourContext": "search",
    "DIARY_VECTORS_DIR": "search",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
