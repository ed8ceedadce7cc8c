"""The vector cache on disk (numpy): ``vectors.keys.jsonl`` + ``vectors-NNNNNN.npy``.

Re-embedding costs money or minutes, so vectors are kept: a row is reused
while the sha256 of its text is unchanged (see the on-disk format seed).
The keys file's first line is a header ``{vectors_file, model, dim}``
(``model`` is the embedder's :func:`~wikimem.vectors.embedders.vector_space`;
a field that is not known is left out, as in a legacy file), then one
``{file, name, hash}`` line per row of the matrix.

``load()`` and ``sync()`` return a ``(keys, matrix)`` pair, as the upstream
library does (``load()`` gives ``([], None)`` when there is no usable
cache); the pair also carries ``model``, ``dim`` and ``vectors_file``.

Embedding happens *outside* the folder's lock: the lock is held to read
what is there and again, briefly, to write the new version (re-reading
first, so a row another process embedded meanwhile is reused). A slow
model therefore never makes another process wait for the cache.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from wikimem.fsio import Stamp, atomic_replace, atomic_write, stat_stamp
from wikimem.locking import FileLock
from wikimem.models import RecallItem

from .embedders import Embedder, EmbeddingError, VectorMismatch, content_hash, embed_text, vector_space

__all__ = ["CachedVectors", "VectorCache", "KEYS_FILE", "embed_matrix"]

KEYS_FILE = "vectors.keys.jsonl"
_VECTORS_RE = re.compile(r"vectors-(\d{6})\.npy")
_LOCK_FILE = "vectors.lock"  # matches the vectors* ignore rule of a versioned store
_HEADER_FIELDS = ("vectors_file", "model", "dim")


class Key(NamedTuple):
    """One row of the cache: ``(file, name, hash)``, the hash being the sha256 of the embedded text.

    Also readable by field name, ``key["name"]``, like the upstream
    library's key dicts (where ``file`` is called ``category``).
    """

    file: str
    name: str
    hash: str

    def __getitem__(self, index):
        if isinstance(index, str):
            if index not in _KEY_FIELDS:
                raise KeyError(index)
            index = _KEY_FIELDS[index]
        return tuple.__getitem__(self, index)


_KEY_FIELDS = {"file": 0, "category": 0, "name": 1, "hash": 2}


def embed_matrix(embedder: Embedder, texts: list[str], batch_size: int) -> np.ndarray:
    """Embed ``texts`` in batches into one float32 matrix; any inconsistency raises."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    parts = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start:start + batch_size]
        parts.append(_as_matrix(lambda batch=batch: embedder.embed(batch), len(batch)))
        if len(parts) > 1 and parts[-1].shape[1] != parts[0].shape[1]:
            raise EmbeddingError(f"embedder changed dimension mid-run: {parts[0].shape[1]} then {parts[-1].shape[1]}")
    return np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)


def _as_matrix(call, count: int) -> np.ndarray:
    """What ``call()`` returns as a checked float32 matrix of ``count`` rows."""
    try:
        part = np.asarray(call(), dtype=np.float32)
    except EmbeddingError:
        raise
    except Exception as exc:  # a custom embedder's own failure, or ragged rows
        raise EmbeddingError(f"embedder failed: {type(exc).__name__}: {exc}") from exc
    if part.ndim != 2 or part.shape[0] != count or part.shape[1] == 0:
        raise EmbeddingError(f"embedder returned shape {part.shape} for {count} texts")
    if not np.isfinite(part).all():
        raise EmbeddingError("embedder returned a vector with NaN or infinite values")
    return part


class _Pair(NamedTuple):
    keys: list[Key]
    matrix: np.ndarray | None


class CachedVectors(_Pair):
    """A loaded cache, the pair ``(keys, matrix)``: ``keys[i] = (file, name, hash)`` is the row ``matrix[i]``.

    ``keys, matrix = cache.load()`` unpacks it; ``model``, ``dim`` (None when
    the header does not say) and ``vectors_file`` ride along as attributes.
    ``matrix`` is None only for "no cache" (``([], None)``).
    """

    model: str | None
    dim: int | None
    vectors_file: str | None
    _by_hash: dict[str, int] | None

    def __new__(cls, keys: list[Key], matrix: np.ndarray | None, model: str | None = None,
                dim: int | None = None, vectors_file: str | None = None) -> CachedVectors:
        self = super().__new__(cls, keys, matrix)
        self.model, self.dim, self.vectors_file = model, dim, vectors_file
        self._by_hash = None
        return self

    def __repr__(self) -> str:
        shape = None if self.matrix is None else tuple(self.matrix.shape)
        return f"CachedVectors(rows={self.rows}, matrix={shape}, model={self.model!r}, dim={self.dim!r})"

    @property
    def rows(self) -> int:
        return len(self.keys)

    def row_of_hash(self, digest: str) -> int | None:
        """A row whose text has this hash, or None."""
        return self._hash_rows().get(digest)

    def hashes(self) -> set[str]:
        """Every text hash the cache holds."""
        return set(self._hash_rows())

    def _hash_rows(self) -> dict[str, int]:
        if self._by_hash is None:
            self._by_hash = {h: i for i, (_, _, h) in enumerate(self.keys)}
        return self._by_hash


def _empty(embedder: Embedder) -> CachedVectors:
    return CachedVectors([], np.zeros((0, 0), np.float32), vector_space(embedder), None)


def _entry(e: Any) -> tuple[str, str, str]:
    """``(file, name, text)`` from a RecallItem, a triple or a ``((file, name), text)`` pair."""
    if isinstance(e, RecallItem):
        return e.file, e.name, embed_text(e.name, e.content)
    if isinstance(e, (tuple, list)) and len(e) == 2 and isinstance(e[0], (tuple, list)) and len(e[0]) == 2:
        (file, name), text = e
    else:
        file, name, text = e
    if not all(isinstance(x, str) for x in (file, name, text)):
        raise ValueError(f"a cache entry is (file, name, text) or ((file, name), text) of strings, got {e!r}")
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
        self._memo: tuple[Stamp | None, CachedVectors] | None = None

    # -- reading -----------------------------------------------------------

    def load(self) -> CachedVectors:
        """The cache as on disk: ``(keys, matrix)``, or ``([], None)`` if there is none (or it is torn)."""
        if self.keys_path.exists():
            with self._lock.hold():
                found = self._load()
            if found is not None:
                return found
        return CachedVectors([], None)

    def header(self) -> dict[str, Any]:
        """The keys file's header as a dict (``vectors_file``, ``model``, ``dim``); ``{}`` without a usable cache.

        Only the fields the file has are there: a legacy cache written
        before ``model`` and ``dim`` were recorded (or by an embedder without
        a model name) lacks them until the next write stamps them.
        """
        found = self.load()
        if found.matrix is None:
            return {}
        head = {"vectors_file": found.vectors_file, "model": found.model, "dim": found.dim}
        return {k: v for k, v in head.items() if v is not None}

    def _load(self) -> CachedVectors | None:
        try:
            stamp = stat_stamp(self.keys_path)
        except OSError:
            return None
        if stamp is None:
            return None
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
        except (OSError, ValueError, IndexError, KeyError, TypeError, AttributeError):
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

    def sync(self, entries: Iterable[Any], embedder: Embedder, batch_size: int = 64, *,
             max_new: int | None = None) -> CachedVectors:
        """Make the cache hold exactly ``entries`` (in order), embedding only new texts; ``(keys, matrix)``.

        ``entries`` are RecallItems, ``(file, name, text)`` triples or
        ``((file, name), text)`` pairs. When every row is already there in
        that order nothing is written and the embedder is not called.
        ``max_new`` bounds the texts embedded by this call: entries left
        without a vector are left out of the cache (a partial sync, for
        background embedding; call again to go on). Raises
        :class:`VectorMismatch` when the cache was made by another model or
        dimension, :class:`EmbeddingError` when embedding fails (the cache on
        disk is then left as it was).
        """
        wanted = [_entry(e) for e in entries]
        keys = [(f, n, content_hash(t)) for f, n, t in wanted]
        texts = {h: t for (_, _, h), (_, _, t) in zip(keys, wanted)}
        if not keys and not self.keys_path.exists():
            return _empty(embedder)
        return self._update(lambda have: keys, texts, embedder, batch_size, max_new)

    def ensure(self, entries: Iterable[Any], embedder: Embedder, batch_size: int = 64, *,
               max_new: int | None = None) -> CachedVectors:
        """Add the rows of ``entries`` whose hash is not cached yet; keep every other row.

        The diary's cache: each content hash is embedded once, ever, and
        rows accumulate across windows. ``max_new`` as in :meth:`sync`.
        """
        wanted = [_entry(e) for e in entries]
        texts: dict[str, str] = {}
        added: list[Key] = []
        for f, n, t in wanted:
            h = content_hash(t)
            if h not in texts:
                texts[h] = t
                added.append(Key(f, n, h))

        def keys_of(current: CachedVectors | None) -> list[Key]:
            have = current.keys if current is not None else []
            held = current.hashes() if current is not None else set()
            return have + [k for k in added if k[2] not in held]

        return self._update(keys_of, texts, embedder, batch_size, max_new)

    def _update(self, keys_of, texts: dict[str, str], embedder: Embedder, batch_size: int,
                max_new: int | None) -> CachedVectors:
        """Read (locked), embed what is missing (unlocked), write (locked, re-read first)."""
        with self._lock.hold():
            current = self._load()
            _check_model(current, embedder)
            keys = keys_of(current)
            missing = _missing(current, keys)
            if not missing:
                return self._settle(current, keys, {}, embedder)
        if max_new is not None:
            missing = missing[:max(0, max_new)]
        fresh = dict(zip(missing, embed_matrix(embedder, [texts[h] for h in missing], batch_size)))
        with self._lock.hold():
            current = self._load()  # another process may have written meanwhile
            _check_model(current, embedder)
            keys = keys_of(current)
            late = [h for h in _missing(current, keys) if h not in fresh]
            if late and max_new is None:  # rows another process dropped meanwhile: embed them now
                fresh.update(zip(late, embed_matrix(embedder, [texts[h] for h in late], batch_size)))
            return self._settle(current, keys, fresh, embedder)

    def _settle(self, current: CachedVectors | None, keys: list[Key], fresh: dict[str, np.ndarray],
                embedder: Embedder) -> CachedVectors:
        """Write ``keys`` (those with a vector) unless the cache already is exactly that."""
        held = current.hashes() if current is not None else set()
        keys = [k for k in keys if k[2] in held or k[2] in fresh]
        if current is not None and current.keys == keys:
            return current
        if current is None and not keys:
            return _empty(embedder)
        return self._rewrite(current, keys, fresh, embedder)

    def _rewrite(self, current: CachedVectors | None, keys: list[Key], fresh: dict[str, np.ndarray],
                 embedder: Embedder) -> CachedVectors:
        """Build the matrix for ``keys`` from reused rows and new embeddings; write it."""
        dim = _resulting_dim(current, fresh)
        matrix = np.empty((len(keys), dim or 0), np.float32)
        src = np.array([_row(current, h) for _, _, h in keys], np.int64)
        kept = src >= 0
        if current is not None and current.matrix is not None and kept.any():
            matrix[kept] = current.matrix[src[kept]]
        if not kept.all():
            matrix[~kept] = np.stack([fresh[h] for (_, _, h), k in zip(keys, kept) if not k])
        model = vector_space(embedder) or (current.model if current is not None else None)
        return self._write(matrix, keys, model, dim)

    def _write(self, matrix: np.ndarray, keys: list[Key], model: str | None, dim: int | None) -> CachedVectors:
        """New versioned matrix, then the keys file pointing to it, then sweep old versions."""
        self.root.mkdir(parents=True, exist_ok=True)
        name = f"vectors-{self._next_version():06d}.npy"
        _write_npy(self.root / name, matrix)
        keys = [Key(*k) for k in keys]
        header = {k: v for k, v in zip(_HEADER_FIELDS, (name, model, dim)) if v is not None}
        lines = [json.dumps(header, ensure_ascii=False)]
        lines += [json.dumps({"file": f, "name": n, "hash": h}, ensure_ascii=False) for f, n, h in keys]
        atomic_write(self.keys_path, ("\n".join(lines) + "\n").encode("utf-8", errors="surrogatepass"))
        self._sweep(keep=name)
        written = CachedVectors(list(keys), _open_matrix(self.root / name), model, dim, name)
        self._memo = (stat_stamp(self.keys_path), written)
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


def _row(current: CachedVectors | None, digest: str) -> int:
    row = current.row_of_hash(digest) if current is not None else None
    return -1 if row is None else row


def _missing(current: CachedVectors | None, keys: list[Key]) -> list[str]:
    """Hashes of ``keys`` the cache lacks, once each, in order."""
    held = current.hashes() if current is not None else set()
    return list(dict.fromkeys(h for _, _, h in keys if h not in held))


def _key_row(row: Any) -> Key:
    if not all(isinstance(row.get(k), str) for k in ("file", "name", "hash")):
        raise ValueError("bad key row")
    return Key(row["file"], row["name"], row["hash"])


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
    atomic_replace(path, lambda fh: np.lib.format.write_array(
        fh, np.ascontiguousarray(matrix, dtype=np.float32), allow_pickle=False))


def check_model(current: CachedVectors | None, embedder: Embedder) -> None:
    """Raise :class:`VectorMismatch` when ``current`` was made in another vector space."""
    _check_model(current, embedder)


def _check_model(current: CachedVectors | None, embedder: Embedder) -> None:
    model = vector_space(embedder)
    if current is not None and current.model and model and current.model != model:
        raise VectorMismatch(
            f"vector cache was made with model {current.model!r} but the embedder is {model!r}; "
            f"not re-embedding (that costs money): delete {KEYS_FILE} and the vectors-*.npy "
            f"file to rebuild")


def _resulting_dim(current: CachedVectors | None, fresh: dict[str, np.ndarray]) -> int | None:
    have = current.matrix if current is not None and current.rows else None
    old = have.shape[1] if have is not None else None
    new = next(iter(fresh.values())).shape[0] if fresh else None
    if old is not None and new is not None and old != new:
        raise VectorMismatch(
            f"vector cache holds {old}-dimensional vectors but the embedder returned {new}; "
            f"delete {KEYS_FILE} and the vectors-*.npy file to rebuild")
    if old is None and new is None and current is not None:
        return current.dim
    return old if old is not None else new
