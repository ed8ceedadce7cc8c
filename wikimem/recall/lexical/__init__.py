"""The lexical ranking: Okapi BM25 over an index updated in place (``bm25``: :class:`BM25Index`), a term's
postings and the bound on the impacts cached for them (``postings``), and the numpy half that scores large
queries over arrays (``bm25_numpy``, imported lazily: not shown here). See docs/explanation/bm25.md."""

from __future__ import annotations

from . import bm25, postings
from .bm25 import *  # noqa: F403
from .postings import *  # noqa: F403

__all__ = [*bm25.__all__, *postings.__all__]
