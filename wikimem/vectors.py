"""The optional embedding layer: embedders, the vector cache, vector search.

Needs numpy (the ``[embed]`` extra) and is imported only when an embedder is
configured; ``import wikimem`` never reaches this module.

- :class:`HttpEmbedder` calls any OpenAI-compatible ``/embeddings`` endpoint.
- :class:`VectorCache` keeps vectors on disk (``vectors.keys.jsonl`` +
  ``vectors-NNNNNN.npy``) because re-embedding costs money: a row is reused
  while the sha256 of its text is unchanged (see the on-disk format seed).
- :class:`MemmapVectorIndex` searches a matrix: exact cosine up to
  ``binary_threshold`` rows; above it a 1-bit sign signature per row in RAM
  (signs taken around the corpus mean direction), a Hamming coarse rank and
  an exact rerank of ``4 * top_k`` rows.
- :class:`EmbeddingSearch` is what ``MemoryIndex`` calls: it syncs the wiki
  cache, embeds the query, scores wiki candidates and diary items (diary
  vectors embedded lazily, once per content hash, in ``diary-vectors/``).

Every failure is an exception (:class:`EmbeddingError`, or
:class:`VectorMismatch` when the cache was made by another model or
dimension); the caller degrades to BM25. Nothing here re-embeds a cache on
mismatch: deleting the two cache files does.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import secrets
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol, Sequence

import numpy as np

from .errors import WikimemError
from .fsio import TEMP_SUFFIX, atomic_write, fsync_dir
from .llm import endpoint_url, post_json
from .locking import FileLock
from .models import RecallItem

__all__ = [
    "Embedder",
    "VectorIndex",
    "EmbeddingError",
    "VectorMismatch",
    "HttpEmbedder",
    "CachedVectors",
    "VectorCache",
    "MemmapVectorIndex",
    "EmbeddingSearch",
    "content_hash",
    "embed_text",
]

KEYS_FILE = "vectors.keys.jsonl"
DIARY_VECTORS_DIR = "diary-vectors"
_VECTORS_RE = re.compile(r"vectors-(\d{6})\.npy")
_LOCK_FILE = "vectors.lock"  # matches the vectors* ignore rule of a versioned store
# Rows per chunk when a pass over the whole matrix would otherwise allocate
# a full-size temporary (norms, signatures).
_CHUNK = 16_384
# Coarse candidates reranked exactly, per result asked for.
RERANK_FACTOR = 4


class Embedder(Protocol):
    """Anything that turns texts into vectors, one per text, in order."""

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


# -- the HTTP embedder ---------------------------------------------------------


class HttpEmbedder:
    """:class:`Embedder` over any OpenAI-compatible ``/embeddings`` endpoint (stdlib HTTP).

    ``base_url`` is the API root, usually ending in ``/v1``. Rows come back
    re-ordered by their ``index``; a wrong count, a ragged or non-numeric
    vector, or any HTTP failure raises :class:`EmbeddingError`.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 10.0):
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty string")
        if not timeout or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.url = endpoint_url(base_url, "embeddings")
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.timeout = float(timeout)
        self.served_model: str | None = None  # what the server said it used, for diagnostics

    def __repr__(self) -> str:  # never shows the key
        return f"HttpEmbedder({self.base_url!r}, {self.model!r}, timeout={self.timeout:g})"

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in the order of ``texts``."""
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ValueError("texts must be a list of strings")
        if not texts:
            return []
        payload = {"model": self.model, "input": texts, "encoding_format": "float"}
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
    """One embedding as floats: a JSON list of numbers, or base64 float32."""
    if isinstance(value, str):
        try:
            value = np.frombuffer(base64.b64decode(value, validate=True), dtype="<f4").tolist()
        except ValueError:
            raise EmbeddingError(f"embeddings endpoint {url} returned an undecodable base64 vector") from None
    if (not isinstance(value, list) or not value
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value)):
        raise EmbeddingError(f"embeddings endpoint {url} returned an embedding that is not a list of finite numbers")
    return value


def _embed_matrix(embedder: Embedder, texts: list[str], batch_size: int) -> np.ndarray:
    """Embed ``texts`` in batches into one float32 matrix; any inconsistency raises."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    parts = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start:start + batch_size]
        try:
            vectors = embedder.embed(batch)
            part = np.asarray(vectors, dtype=np.float32)
        except EmbeddingError:
            raise
        except Exception as exc:  # a custom embedder's own failure, or ragged rows
            raise EmbeddingError(f"embedder failed: {type(exc).__name__}: {exc}") from exc
        if part.ndim != 2 or part.shape[0] != len(batch) or part.shape[1] == 0:
            raise EmbeddingError(f"embedder returned shape {part.shape} for {len(batch)} texts")
        if not np.isfinite(part).all():
            raise EmbeddingError("embedder returned a vector with NaN or infinite values")
        if parts and part.shape[1] != parts[0].shape[1]:
            raise EmbeddingError(f"embedder changed dimension mid-run: {parts[0].shape[1]} then {part.shape[1]}")
        parts.append(part)
    return np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)


# -- the cache on disk ---------------------------------------------------------


@dataclass
class CachedVectors:
    """A loaded cache: ``keys[i] = (file, name, hash)`` is the row ``matrix[i]``."""

    keys: list[tuple[str, str, str]]
    matrix: np.ndarray
    model: str | None = None
    dim: int | None = None
    vectors_file: str | None = None
    _by_hash: dict[str, int] | None = field(default=None, repr=False)

    @property
    def rows(self) -> int:
        return len(self.keys)

    def row_of_hash(self, digest: str) -> int | None:
        """A row whose text has this hash, or None."""
        if self._by_hash is None:
            self._by_hash = {h: i for i, (_, _, h) in enumerate(self.keys)}
        return self._by_hash.get(digest)


def _entry(e: Any) -> tuple[str, str, str]:
    """``(file, name, text)`` from a tuple or a RecallItem."""
    if isinstance(e, RecallItem):
        return e.file, e.name, embed_text(e.name, e.content)
    file, name, text = e
    return file, name, text


class VectorCache:
    """The vector cache of one folder: ``vectors.keys.jsonl`` + ``vectors-NNNNNN.npy``.

    Writes are atomic (new versioned matrix first, then the keys file that
    points to it) and serialised across processes by a lock file in the
    folder. A torn or unreadable cache loads as no cache.
    """

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.keys_path = self.root / KEYS_FILE
        self._lock = FileLock(self.root / _LOCK_FILE, timeout=60.0)
        # The last load, reused while the keys file is the same file (parsing
        # a big keys file on every sync would dominate the cost of a write).
        self._memo: tuple[tuple, CachedVectors] | None = None

    # -- reading -----------------------------------------------------------

    def load(self) -> CachedVectors | None:
        """The cache as on disk, or None if there is none (or it is torn)."""
        if not self.keys_path.exists():
            return None
        with self._lock.hold():
            return self._load()

    def _load(self) -> CachedVectors | None:
        try:
            st = self.keys_path.stat()
        except OSError:
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._memo is not None and self._memo[0] == stamp:
            name = self._memo[1].vectors_file
            if name and (self.root / name).exists():
                return self._memo[1]
        loaded = self._read()
        self._memo = (stamp, loaded) if loaded is not None else None
        return loaded

    def _read(self) -> CachedVectors | None:
        try:
            lines = self.keys_path.read_text(encoding="utf-8").splitlines()
            header = json.loads(lines[0])
            keys = [_key_row(json.loads(line)) for line in lines[1:] if line.strip()]
        except (OSError, ValueError, IndexError, KeyError, TypeError):
            return None
        name = header.get("vectors_file") if isinstance(header, dict) else None
        if not isinstance(name, str) or not _VECTORS_RE.fullmatch(name):
            return None
        model, dim = header.get("model"), header.get("dim")
        if (model is not None and not isinstance(model, str)) or (dim is not None and not isinstance(dim, int)):
            return None
        matrix = _open_matrix(self.root / name)
        if matrix is None or matrix.shape[0] != len(keys) or (dim is not None and matrix.shape[1] != dim):
            return None
        return CachedVectors(keys, matrix, model, dim, name)

    # -- writing -----------------------------------------------------------

    def sync(self, entries: Iterable[Any], embedder: Embedder, batch_size: int = 64) -> CachedVectors:
        """Make the cache hold exactly ``entries`` (in order), embedding only new texts.

        ``entries`` are ``(file, name, text)`` tuples or RecallItems. When
        every row is already there in that order nothing is written and the
        embedder is not called. Raises :class:`VectorMismatch` when the cache
        was made by another model or dimension, :class:`EmbeddingError` when
        embedding fails (the cache on disk is then left as it was).
        """
        wanted = [_entry(e) for e in entries]
        keys = [(f, n, content_hash(t)) for f, n, t in wanted]
        texts = {h: t for (_, _, h), (_, _, t) in zip(keys, wanted)}
        if not keys and not self.keys_path.exists():
            return CachedVectors([], np.zeros((0, 0), np.float32), _model_of(embedder), None)
        with self._lock.hold():
            current = self._load()
            _check_model(current, embedder)
            if current is not None and current.keys == keys:
                return current
            if current is None and not keys:
                return CachedVectors([], np.zeros((0, 0), np.float32), _model_of(embedder), None)
            return self._rewrite(current, keys, texts, embedder, batch_size)

    def ensure(self, entries: Iterable[Any], embedder: Embedder, batch_size: int = 64) -> CachedVectors:
        """Add the rows of ``entries`` whose hash is not cached yet; keep every other row.

        The diary's lazy cache: each content hash is embedded once, ever.
        """
        wanted = [_entry(e) for e in entries]
        with self._lock.hold():
            current = self._load()
            _check_model(current, embedder)
            have = current.keys if current is not None else []
            seen = {h for _, _, h in have}
            added, texts = [], {}
            for f, n, t in wanted:
                h = content_hash(t)
                if h not in seen:
                    seen.add(h)
                    added.append((f, n, h))
                    texts[h] = t
            if not added:
                return current if current is not None else CachedVectors(
                    [], np.zeros((0, 0), np.float32), _model_of(embedder), None)
            return self._rewrite(current, have + added, texts, embedder, batch_size)

    def _rewrite(self, current: CachedVectors | None, keys: list[tuple[str, str, str]],
                 texts: dict[str, str], embedder: Embedder, batch_size: int) -> CachedVectors:
        """Build the matrix for ``keys`` from reused rows and new embeddings; write it."""
        reuse = {h: current.row_of_hash(h) for _, _, h in keys} if current is not None else {}
        missing = list(dict.fromkeys(h for _, _, h in keys if reuse.get(h) is None))
        fresh = _embed_matrix(embedder, [texts[h] for h in missing], batch_size)
        dim = _resulting_dim(current, fresh)
        matrix = np.empty((len(keys), dim or 0), np.float32)
        src = np.array([-1 if reuse.get(h) is None else reuse[h] for _, _, h in keys], np.int64)
        kept = src >= 0
        if kept.any():
            matrix[kept] = current.matrix[src[kept]]
        if not kept.all():
            fresh_row = {h: i for i, h in enumerate(missing)}
            matrix[~kept] = fresh[[fresh_row[h] for (_, _, h), k in zip(keys, kept) if not k]]
        model = _model_of(embedder) or (current.model if current is not None else None)
        return self._write(matrix, keys, model, dim)

    def _write(self, matrix: np.ndarray, keys: list[tuple[str, str, str]],
               model: str | None, dim: int | None) -> CachedVectors:
        """New versioned matrix, then the keys file pointing to it, then sweep old versions."""
        self.root.mkdir(parents=True, exist_ok=True)
        name = f"vectors-{self._next_version():06d}.npy"
        _write_npy(self.root / name, matrix)
        header = {"vectors_file": name, "model": model, "dim": dim}
        lines = [json.dumps(header, ensure_ascii=False)]
        lines += [json.dumps({"file": f, "name": n, "hash": h}, ensure_ascii=False) for f, n, h in keys]
        atomic_write(self.keys_path, ("\n".join(lines) + "\n").encode("utf-8", errors="surrogatepass"))
        self._sweep(keep=name)
        written = CachedVectors(list(keys), _open_matrix(self.root / name), model, dim, name)
        st = self.keys_path.stat()
        self._memo = ((st.st_ino, st.st_size, st.st_mtime_ns), written)
        return written

    def _versions(self) -> dict[int, str]:
        try:
            names = os.listdir(self.root)
        except OSError:
            return {}
        return {int(m.group(1)): n for n in names if (m := _VECTORS_RE.fullmatch(n))}

    def _next_version(self) -> int:
        return max(self._versions(), default=0) + 1

    def _sweep(self, keep: str) -> None:
        """Delete older matrices, best effort (a live memmap elsewhere may hold one)."""
        for name in self._versions().values():
            if name != keep:
                try:
                    os.unlink(self.root / name)
                except OSError:
                    pass


def _key_row(row: Any) -> tuple[str, str, str]:
    if not all(isinstance(row.get(k), str) for k in ("file", "name", "hash")):
        raise ValueError("bad key row")
    return row["file"], row["name"], row["hash"]


def _open_matrix(path: Path) -> np.ndarray | None:
    """A float32 2-D matrix memory-mapped read-only, or None if unusable."""
    try:
        matrix = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError:  # an empty array cannot be mapped: read it instead
        try:
            matrix = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None
    except OSError:
        return None
    if matrix.ndim != 2 or matrix.dtype != np.float32:
        return None
    return matrix


def _write_npy(path: Path, matrix: np.ndarray) -> None:
    """Stream ``matrix`` to a temp file, fsync, rename: the cache can be big."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    try:
        with open(tmp, "xb") as fh:
            np.lib.format.write_array(fh, np.ascontiguousarray(matrix, dtype=np.float32), allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def _model_of(embedder: Embedder) -> str | None:
    model = getattr(embedder, "model", None)
    return model if isinstance(model, str) else None


def _check_model(current: CachedVectors | None, embedder: Embedder) -> None:
    model = _model_of(embedder)
    if current is not None and current.model and model and current.model != model:
        raise VectorMismatch(
            f"vector cache was made with model {current.model!r} but the embedder is {model!r}; "
            f"not re-embedding (that costs money): delete {KEYS_FILE} and the vectors-*.npy "
            f"file to rebuild")


def _resulting_dim(current: CachedVectors | None, fresh: np.ndarray) -> int | None:
    old = current.matrix.shape[1] if current is not None and current.rows else None
    new = fresh.shape[1] if fresh.shape[0] else None
    if old is not None and new is not None and old != new:
        raise VectorMismatch(
            f"vector cache holds {old}-dimensional vectors but the embedder returned {new}; "
            f"delete {KEYS_FILE} and the vectors-*.npy file to rebuild")
    if old is None and new is None and current is not None:
        return current.dim
    return old if old is not None else new


# -- search ----------------------------------------------------------------------


def _unit(query: Sequence[float], dim: int) -> np.ndarray:
    """The query as a float32 unit vector of the index's dimension."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if q.shape[0] != dim:
        raise ValueError(f"query has {q.shape[0]} dimensions, the index {dim}")
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 0 else q


def _signatures(matrix: np.ndarray, inv_norms: np.ndarray, center: np.ndarray) -> np.ndarray:
    """1-bit signatures ``sign(row/|row| - center)``, packed, padded to whole uint64 words."""
    n, dim = matrix.shape
    words = -(-dim // 64)
    out = np.zeros((n, words * 8), np.uint8)
    for start in range(0, n, _CHUNK):
        chunk = np.asarray(matrix[start:start + _CHUNK], np.float32) * inv_norms[start:start + _CHUNK, None]
        bits = np.packbits(chunk > center, axis=1)
        out[start:start + bits.shape[0], :bits.shape[1]] = bits
    return out.view(np.uint64)


def _mean_direction(matrix: np.ndarray, inv_norms: np.ndarray) -> np.ndarray:
    """The mean of the unit rows.

    Real embedding models are anisotropic (every vector shares a common
    component); signs taken around the mean keep their bits informative.
    """
    total = np.zeros(matrix.shape[1], np.float64)
    for start in range(0, matrix.shape[0], _CHUNK):
        chunk = np.asarray(matrix[start:start + _CHUNK], np.float32) * inv_norms[start:start + _CHUNK, None]
        total += chunk.sum(axis=0, dtype=np.float64)
    return (total / max(matrix.shape[0], 1)).astype(np.float32)


def _popcount(words: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(words)
    as_bytes = words.view(np.uint8)  # pragma: no cover - older numpy
    return _POP8[as_bytes].reshape(words.shape + (8,)).sum(axis=-1)


_POP8 = np.array([bin(i).count("1") for i in range(256)], np.uint8)


class MemmapVectorIndex:
    """Cosine search over a (memory-mapped) matrix; see the module doc for the two tiers.

    Read-only after construction, so any number of threads may search at once.
    """

    def __init__(self, matrix: np.ndarray, binary_threshold: int = 10_000):
        if matrix.ndim != 2:
            raise ValueError("matrix must be 2-dimensional")
        self.matrix = matrix
        self.rows, self.dim = matrix.shape
        self.binary_threshold = binary_threshold
        self.inv_norms = self._inverse_norms()
        self.center: np.ndarray | None = None
        self.signatures: np.ndarray | None = None
        if self.binary:
            self.center = _mean_direction(matrix, self.inv_norms)
            self.signatures = _signatures(matrix, self.inv_norms, self.center)

    @property
    def binary(self) -> bool:
        """True when the sign-bit tier answers (more rows than the threshold)."""
        return self.rows > self.binary_threshold

    @property
    def resident_bytes(self) -> int:
        """RAM this index holds of its own (the matrix itself stays in the page cache)."""
        sig = self.signatures.nbytes + self.center.nbytes if self.signatures is not None else 0
        return self.inv_norms.nbytes + sig

    def _inverse_norms(self) -> np.ndarray:
        out = np.empty(self.rows, np.float32)
        for start in range(0, self.rows, _CHUNK):
            chunk = np.asarray(self.matrix[start:start + _CHUNK], dtype=np.float32)
            out[start:start + chunk.shape[0]] = np.sqrt(np.einsum("ij,ij->i", chunk, chunk))
        with np.errstate(divide="ignore"):
            inv = np.where(out > 0, 1.0 / out, 0.0)
        return inv.astype(np.float32)

    def search(self, query: Sequence[float], top_k: int) -> list[tuple[int, float]]:
        """The ``top_k`` rows nearest to ``query`` as ``(row, cosine)``, best first."""
        if top_k <= 0 or self.rows == 0:
            return []
        q = _unit(query, self.dim)
        if self.binary:
            return self._search_binary(q, top_k)
        return self.exact(q, top_k)

    def exact(self, query: Sequence[float], top_k: int) -> list[tuple[int, float]]:
        """Exact cosine over every row (tier 0; the reference the binary tier is measured by)."""
        if top_k <= 0 or self.rows == 0:
            return []
        q = _unit(query, self.dim)
        scores = (self.matrix @ q) * self.inv_norms
        return _best(np.arange(self.rows), scores, top_k)

    def _search_binary(self, q: np.ndarray, top_k: int) -> list[tuple[int, float]]:
        words = self.signatures.shape[1]
        qsig = np.zeros(words * 8, np.uint8)
        bits = np.packbits(q > self.center)
        qsig[:bits.shape[0]] = bits
        distance = _popcount(self.signatures ^ qsig.view(np.uint64)).sum(axis=1)
        m = min(self.rows, RERANK_FACTOR * top_k)
        coarse = np.argpartition(distance, m - 1)[:m] if m < self.rows else np.arange(self.rows)
        coarse.sort()  # ascending rows read the memmap in file order
        return _best(coarse, self.scores(q, coarse), top_k)

    def scores(self, query: Sequence[float], rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """Exact cosine of ``query`` with each of ``rows`` (in that order)."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            return np.zeros(0, np.float32)
        q = _unit(query, self.dim)
        return (np.asarray(self.matrix[rows]) @ q) * self.inv_norms[rows]


def _best(rows: np.ndarray, scores: np.ndarray, top_k: int) -> list[tuple[int, float]]:
    """The ``top_k`` (row, score) pairs by score, best first; ties by row."""
    k = min(top_k, rows.shape[0])
    if k < rows.shape[0]:
        part = np.argpartition(-scores, k - 1)[:k]
    else:
        part = np.arange(rows.shape[0])
    order = part[np.lexsort((rows[part], -scores[part]))]
    return [(int(rows[i]), float(scores[i])) for i in order]


# -- what MemoryIndex calls ------------------------------------------------------


@dataclass
class _WikiState:
    index: MemmapVectorIndex
    keys: list[tuple[str, str]]
    row_of_key: dict[tuple[str, str], int]
    model: str | None


class EmbeddingSearch:
    """Cosine scores for retrieval: the wiki cache, lazy diary vectors, the query.

    ``sync(items)`` brings the wiki cache in line with the wiki (no API call
    when nothing changed); ``search`` embeds the query once and answers the
    cosine of the vector top ``top_k`` plus the given candidates, and of each
    diary item. Both raise on any failure; a model/dimension mismatch with a
    cache also warns, once, so an operator sees why embeddings stopped.
    Safe to call from several threads.
    """

    QUERY_CACHE_SIZE = 256

    def __init__(self, embedder: Embedder, vectors_dir: Path | str, *,
                 binary_threshold: int = 10_000, batch_size: int = 64):
        self.embedder = embedder
        self.vectors_dir = Path(vectors_dir)
        self.binary_threshold = binary_threshold
        self.batch_size = batch_size
        self.wiki_cache = VectorCache(self.vectors_dir)
        self.diary_cache = VectorCache(self.vectors_dir / DIARY_VECTORS_DIR)
        self._state: _WikiState | None = None
        self._diary: CachedVectors | None = None
        self._diary_loaded = False
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._diary_lock = threading.Lock()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._warned = False

    # -- the wiki ----------------------------------------------------------

    def sync(self, items: list[RecallItem]) -> None:
        """Bring the wiki vectors in line with ``items`` (row order = item order)."""
        with self._sync_lock:
            try:
                cached = self._guard(lambda: self.wiki_cache.sync(items, self.embedder, self.batch_size))
            except BaseException:
                with self._lock:
                    self._state = None  # stale rows must not score changed items
                raise
            keys = [(f, n) for f, n, _ in cached.keys]
            state = _WikiState(MemmapVectorIndex(cached.matrix, self.binary_threshold), keys,
                               {k: i for i, k in enumerate(keys)}, cached.model)
            with self._lock:
                self._state = state
                self._warned = False  # a later mismatch deserves a new warning

    def search(self, query: str, top_k: int, *, candidates: list[tuple[str, str]],
               diary: list[RecallItem]) -> tuple[dict[tuple[str, str], float], list[float]]:
        """Cosine of the vector top ``top_k`` and of every candidate; one cosine per diary item."""
        with self._lock:
            state = self._state
        if state is None:
            raise EmbeddingError("no wiki vectors: sync() has not succeeded yet")
        q = self._query_vector(query)
        if state.index.rows and q.shape[0] != state.index.dim:
            self._guard(lambda: _raise_dim(state.index.dim, q.shape[0]))
        wiki: dict[tuple[str, str], float] = {}
        if state.index.rows:
            for row, score in state.index.search(q, top_k):
                wiki[state.keys[row]] = score
            extra = [state.row_of_key[k] for k in dict.fromkeys(candidates)
                     if k not in wiki and k in state.row_of_key]
            for row, score in zip(extra, state.index.scores(q, extra)):
                wiki[state.keys[row]] = float(score)
        return wiki, self._diary_scores(q, diary)

    # -- the query ---------------------------------------------------------

    def _query_vector(self, query: str) -> np.ndarray:
        """The query's embedding; recent queries are remembered (one API call saved each)."""
        if not isinstance(query, str) or not query.strip():
            raise EmbeddingError("nothing to embed: the query is empty")
        with self._lock:
            cached = self._queries.get(query)
            if cached is not None:
                self._queries.move_to_end(query)
                return cached
        q = _embed_matrix(self.embedder, [query], 1)[0]
        with self._lock:
            self._queries[query] = q
            while len(self._queries) > self.QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return q

    # -- the diary ---------------------------------------------------------

    def _diary_scores(self, q: np.ndarray, diary: list[RecallItem]) -> list[float]:
        if not diary:
            return []
        texts = [embed_text(it.name, it.content) for it in diary]
        hashes = [content_hash(t) for t in texts]
        with self._diary_lock:
            if not self._diary_loaded:
                self._diary = self.diary_cache.load()
                self._diary_loaded = True
            cached = self._diary
            if cached is not None:
                self._guard(lambda: _check_model(cached, self.embedder))
            if cached is None or any(cached.row_of_hash(h) is None for h in hashes):
                entries = [(it.file, it.name, t) for it, t in zip(diary, texts)]
                cached = self._guard(lambda: self.diary_cache.ensure(entries, self.embedder, self.batch_size))
                self._diary = cached
        if cached.rows and cached.matrix.shape[1] != q.shape[0]:
            self._guard(lambda: _raise_dim(cached.matrix.shape[1], q.shape[0]))
        rows = np.array([cached.row_of_hash(h) for h in hashes], dtype=np.int64)
        vectors = np.asarray(cached.matrix[rows], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(q))
        with np.errstate(divide="ignore", invalid="ignore"):
            scores = np.where(norms > 0, (vectors @ q) / norms, 0.0)
        return [float(s) for s in scores]

    # -- mismatch ----------------------------------------------------------

    def _guard(self, action):
        """Run ``action``; on a mismatch warn (once) before re-raising."""
        try:
            return action()
        except VectorMismatch as exc:
            with self._lock:
                warn, self._warned = not self._warned, True
            if warn:
                warnings.warn(f"wikimem embeddings disabled, using BM25 only: {exc}",
                              RuntimeWarning, stacklevel=3)
            raise


def _raise_dim(cache_dim: int, query_dim: int) -> None:
    raise VectorMismatch(
        f"vector cache holds {cache_dim}-dimensional vectors but the embedder returned "
        f"{query_dim}; delete {KEYS_FILE} and the vectors-*.npy file to rebuild")
