"""One owner of the host: a versioned store, its fresh index, memorize and batches."""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..models import DiaryItem, RecallItem
from .batch import Op, parse_ops
from .errors import LLMNotConfigured, ToolCallError
from .freshness import IndexSlot

__all__ = ["Owner", "OwnerStats", "BatchResult", "MemorizeResult", "new_run_id"]

# As-of indexes are immutable (a commit never changes); keep a few per owner.
AS_OF_CACHE = 4


def new_run_id() -> str:
    """A fresh, sortable run id: ``run_<UTC time>_<random>``."""
    return f"run_{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}_{secrets.token_hex(3)}"


@dataclass(frozen=True)
class OwnerStats:
    """What a listing shows of an owner."""

    id: str
    items: int
    files: int
    diary_days: int
    last_change: str | None  # UTC ISO-8601 time of the newest commit
    head: str | None  # the newest commit id

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BatchResult:
    """The outcome of :meth:`Owner.apply_batch`: one result per op, and the commit."""

    results: list[dict[str, Any]]
    commit: str | None
    replayed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"results": self.results, "commit": self.commit, "replayed": self.replayed}


@dataclass
class MemorizeResult:
    """The outcome of :meth:`Owner.memorize` (unpacks as ``entries, run, commit``)."""

    entries: list[DiaryItem] = field(default_factory=list)
    run: str = ""
    commit: str | None = None
    replayed: bool = False

    def __iter__(self):
        return iter((self.entries, self.run, self.commit))

    def to_dict(self) -> dict[str, Any]:
        return {"entries": [asdict(e) for e in self.entries], "run": self.run,
                "commit": self.commit, "replayed": self.replayed}


class _RecordingDiary:
    """Stands in for the diary while the LLM thinks, so the write lock is not held meanwhile."""

    def __init__(self) -> None:
        self.appends: list[tuple[str, dict[str, Any]]] = []

    def append(self, content: str, **kwargs: Any) -> None:
        self.appends.append((content, kwargs))


def _last_change(vstore) -> str | None:
    page = vstore.history(limit=1)
    if not page.entries:
        return None
    entry = page.entries[0]
    for attr in ("time", "ts", "timestamp", "date"):
        value = getattr(entry, attr, None)
        if value:
            return str(value)
    return None


class Owner:
    """An owner's memory: ``vstore`` (git), ``store`` (wiki), ``diary``, a fresh ``index()``.

    Writes go through ``vstore`` (each one commit, under the owner's
    inter-process lock). Reads through ``store`` and ``diary``. Safe to share
    between the threads of a process.
    """

    def __init__(self, owner_id: str, root: Path, *, embedder=None, llm=None, cache_dir: Path | None = None,
                 recall=None):
        from ..versioned import VersionedStore

        self.id = owner_id
        self.root = Path(root)
        self.vstore = VersionedStore(self.root)
        self.embedder = embedder
        self.llm = llm
        self._cache_dir = cache_dir
        self.recall = recall  # RecallOptions of the host (None: the library's defaults)
        self._slot = IndexSlot(self.vstore, self._new_index)
        self._as_of: OrderedDict[str, Any] = OrderedDict()
        self._as_of_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Owner({self.id!r})"

    @property
    def store(self):
        return self.vstore.store

    @property
    def diary(self):
        return self.vstore.diary

    def exists(self) -> bool:
        """Whether the owner's repository is still on disk (another process may delete it)."""
        return (self.root / ".git").is_dir()

    # -- reading -----------------------------------------------------------

    def stats(self) -> OwnerStats:
        """Counts and last activity."""
        files = self.store.files()
        return OwnerStats(
            id=self.id,
            items=sum(len(self.store.items(f)) for f in files),
            files=len(files),
            diary_days=len(self.diary.dates()),
            last_change=_last_change(self.vstore),
            head=self.vstore.head(),
        )

    def index(self):
        """This owner's :class:`~wikimem.MemoryIndex`, fresh with every process's writes and hand edits."""
        return self._slot.fresh()

    @property
    def index_loaded(self) -> bool:
        return self._slot.index is not None

    def _new_index(self, store=None, vectors_dir=None):
        from ..retrieval import MemoryIndex

        options = self.recall.kwargs() if self.recall is not None else {}
        return MemoryIndex(self.store if store is None else store, embedder=self.embedder, vectors_dir=vectors_dir,
                           **options)

    def retrieve(self, query: str, *, as_of: str | None = None, **retrieve_kwargs: Any):
        """``MemoryIndex.retrieve`` on the live memory, or on the memory as of a commit or time."""
        index = self.index() if as_of is None else self._index_as_of(as_of)
        return index.retrieve(query, **retrieve_kwargs)

    def _index_as_of(self, point: str):
        commit = self.vstore.resolve(point)
        with self._as_of_lock:
            index = self._as_of.get(commit)
            if index is not None:
                self._as_of.move_to_end(commit)
                return index
        vectors = self._cache_dir / "as-of-vectors" if self._cache_dir is not None else None
        index = self._new_index(self.vstore.snapshot(commit), vectors_dir=vectors)
        with self._as_of_lock:
            self._as_of[commit] = index
            while len(self._as_of) > AS_OF_CACHE:
                self._as_of.popitem(last=False)
        return index

    # -- writing -----------------------------------------------------------

    def memorize(self, turn: str, *, character: str = "the assistant", prompt: str | None = None,
                 source_conv: str | None = None, run: str | None = None, actor: str | None = None,
                 idempotency_key: str | None = None, **append_kwargs: Any) -> MemorizeResult:
        """Run the host's LLM over one turn and append what it keeps, as one run and one commit.

        The LLM is asked before the owner's lock is taken (a slow model must
        not block other writers); a retry carrying the same
        ``idempotency_key`` returns the first result without asking again.
        Unpacks as ``entries, run_id, commit``.
        """
        from ..memorize import memorize

        if self.llm is None:
            raise LLMNotConfigured("memorize needs a chat endpoint: set WIKIMEM_LLM_URL and WIKIMEM_LLM_MODEL")
        run = run or new_run_id()
        actor = actor or character
        if idempotency_key is not None:
            replay = self._replay(idempotency_key, "memorize")
            if replay is not None:
                return _memorize_replay(replay)
        recorder = _RecordingDiary()
        memorize(recorder, turn, llm=self.llm, character=character, prompt=prompt, owner=self.id,
                 source_conv=source_conv, **append_kwargs)
        message = f"memorize {len(recorder.appends)} diary entr{'y' if len(recorder.appends) == 1 else 'ies'}"
        with self.vstore.batch(run=run, actor=actor, message=message, source_conv=source_conv,
                               idempotency_key=idempotency_key, kind="memorize") as b:
            if b.replay is not None:
                return _memorize_replay(b.replay)
            entries = [self.diary.append(content, **kwargs) for content, kwargs in recorder.appends]
            b.result = {"entries": [asdict(e) for e in entries], "run": run}
        return MemorizeResult(entries, run, b.commit)

    def _replay(self, key: str, kind: str):
        """The stored result of an already-applied request with this key, or None."""
        with self.vstore.batch(idempotency_key=key, kind=kind) as b:
            return b.replay

    def diary_tool(self, arguments: Any, *, run: str | None = None, actor: str | None = None,
                   source_conv: str | None = None, idempotency_key: str | None = None, **append_kwargs: Any):
        """Handle an ``append_diary`` tool call as one commit; a bad call raises :class:`ToolCallError`.

        Returns ``(entry, commit, replayed)``.
        """
        from ..memorize import handle_diary_tool

        with self.vstore.batch(run=run, actor=actor, source_conv=source_conv, idempotency_key=idempotency_key,
                               kind="diary-tool") as b:
            if b.replay is not None:
                return DiaryItem(**b.replay["entry"]), b.replay.get("commit"), True
            try:
                entry = handle_diary_tool(self.diary, arguments, owner=self.id, source_conv=source_conv,
                                          **append_kwargs)
            except ValueError as exc:
                raise ToolCallError(str(exc)) from None
            b.result = {"entry": asdict(entry)}
        return entry, b.commit, False

    def apply_batch(self, ops: Any, *, run: str | None = None, actor: str | None = None,
                    message: str | None = None, source_conv: str | None = None,
                    if_match: str | None = None, idempotency_key: str | None = None) -> BatchResult:
        """Apply several writes (see :mod:`wikimem.host.batch`) as one commit, or none of them."""
        checked = parse_ops(ops)
        with self.vstore.batch(run=run, actor=actor, message=message, source_conv=source_conv,
                               if_match=if_match, idempotency_key=idempotency_key, kind="batch") as b:
            if b.replay is not None:
                return BatchResult(b.replay["results"], b.replay.get("commit"), True)
            results = [self._apply_op(op, source_conv) for op in checked]
            b.result = {"results": results}
        return BatchResult(results, b.commit)

    def _apply_op(self, op: Op, source_conv: str | None) -> dict[str, Any]:
        args = dict(op.args)
        if op.kind == "add":
            args.setdefault("source_conv", source_conv)
            item: RecallItem = self.store.add(args.pop("file"), args.pop("name"), args.pop("content"),
                                              owner=self.id, **args)
            return {"op": "add", "item": asdict(item)}
        if op.kind == "remove":
            removed = self.store.remove(op.args["file"], op.args["name"], owner=self.id)
            return {"op": "remove", "file": op.args["file"], "name": op.args["name"], "removed": removed}
        args.setdefault("source_conv", source_conv)
        entry = self.diary.append(args.pop("content"), owner=self.id, **args)
        return {"op": "diary", "entry": asdict(entry)}


def _memorize_replay(stored: dict) -> MemorizeResult:
    return MemorizeResult([DiaryItem(**e) for e in stored.get("entries", [])], stored.get("run", ""),
                          stored.get("commit"), True)
