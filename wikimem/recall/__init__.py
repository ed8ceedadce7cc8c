"""Retrieval: :class:`MemoryIndex` and what it holds — BM25 (and its numpy half), the tokenizer, query
stopwords, the wiki and diary indexes, the vectors and their fusion with BM25, result assembly, the result types."""

from __future__ import annotations

from .assembly import cut
from .diary_index import DiaryIndex
from .fusion import Candidate, apply_recency, fuse, normalise, recency_factor
from .hybrid import HybridRanker
from .index import DIARY_MODES, DIARY_WAIT, MemoryIndex
from .lexical import K1, B, BM25Index, idf
from .results import Query, RecallOptions, RetrievalResult, RetrievedItem
from .rooms import Audience, Recaller, Room, audience
from .semantic import DIARY_WANTED_MAX, EMBED_BUSY_SECONDS, EMBED_RETRY_SECONDS, EMBED_SLICE, Contents, IndexVectors
from .stopwords import CHINESE_CHARS, CHINESE_WORDS, ENGLISH, content_terms, is_function_term
from .tokenizer import JIEBA_MAX_RUN, cached_terms, est_tokens, item_text, jieba_available, tokenize
from .wiki_index import WikiIndex

__all__ = [
    "Room",
    "Audience",
    "Recaller",
    "audience",
    "tokenize",
    "cached_terms",
    "est_tokens",
    "item_text",
    "jieba_available",
    "JIEBA_MAX_RUN",
    "ENGLISH",
    "CHINESE_CHARS",
    "CHINESE_WORDS",
    "is_function_term",
    "content_terms",
    "BM25Index",
    "K1",
    "B",
    "idf",
    "Candidate",
    "normalise",
    "fuse",
    "recency_factor",
    "apply_recency",
    "RetrievedItem",
    "cut",
    "RetrievalResult",
    "RecallOptions",
    "Query",
    "WikiIndex",
    "DiaryIndex",
    "IndexVectors",
    "Contents",
    "HybridRanker",
    "EMBED_SLICE",
    "EMBED_RETRY_SECONDS",
    "EMBED_BUSY_SECONDS",
    "DIARY_WANTED_MAX",
    "MemoryIndex",
    "DIARY_MODES",
    "DIARY_WAIT",
]
