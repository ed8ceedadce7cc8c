"""One owner of the host: the service the web layer and the CLI call for everything about one memory."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikimem.context import WriteContext
from wikimem.errors import (
    BadRequest,
    DamagedFolder,
    InvalidValue,
    LLMNotConfigured,
    NotFound,
    QuotaExceeded,
    RemoteError,
    RemoteMoved,
    ToolCallError,
)
from wikimem.format import SETTINGS_PATH, item_etag, normalize_ts, parse_settings, render_settings
from wikimem.limits import MAX_LAYERS, MAX_QUERY_CHARS, MAX_RETRIEVE_LIMIT, MAX_TURN_CHARS, check_length
from wikimem.models import DiaryItem, RecallItem
from wikimem.naming import is_character_id, validate_channel_id, validate_character_id, validate_present
from wikimem.recall import Room
from wikimem.store import resolve_tz
from wikimem.vectors import RememberedQueries, one_retrieve

from .batchops import Op, check_content, parse_ops
from .duplicates import check_duplicate
from .indexes import Indexes
from .layered import CHARACTER, PROFILE, SHARED, Source, mark_staged, retrieve_layers
from .memorizing import MemorizeResult, check_room, memorize_turn, replayed, run_for
from .metrics import NULL_METRICS, NullMetrics
from .planned import check_planned
from .probation import StagingPolicy
from .review import Review
from .settings import OwnerSettings, check_settings, settings_record, settings_summary

if TYPE_CHECKING:
    from wikimem.versioned import (
        CommitDiff,
        Committed,
        Forgotten,
        HistoryPage,
        Plan,
        StagedReview,
        StagedRun,
        Staging,
        Target,
    )

__all__ = ["Owner", "OwnerStats", "BatchResult", "MemorizeResult", "UNDO_TARGETS",
           "remove_vector_files"]

# Which layers of a folder a read covers (None in it: the shared layer); None: every layer (operators).
Layers = tuple[str | None, ...] | None
# Attempts of a write whose sync push found the remote moved (another host wrote this owner):
# each failed attempt was rolled back and the folder caught up before the next one.
MOVED_ATTEMPTS = 5


def _check_when(*, ts: str | None = None, date: str | None = None, time: str | None = None,
                tz: Any = None, channel: str | None = None, present: Any = None) -> None:
    """The time and room fields of a diary write, refused (422) as :meth:`Diary.append` would refuse them."""
    from wikimem.format import normalize_ts
    from wikimem.naming import validate_channel_id, validate_date, validate_present, validate_time
    from wikimem.store import resolve_tz

    normalize_ts(ts)
    resolve_tz(tz)
    if date is not None:
        validate_date(date)
    if time is not None:
        validate_time(time)
    if channel is not None:
        validate_channel_id(channel)
    if present is not None:
        validate_present(present)


@dataclass(frozen=True)
class OwnerStats:
    """What a listing shows of an owner."""

    id: str
    items: int
    files: int
    diary_days: int
    last_change: str | None  # UTC ISO-8601 time of the newest commit
    head: str | None  # the newest commit id
    # With an embedder: how many items have their vectors ({"embedded", "total"}), so a client can
    # wait for background embedding; None in listings and without an embedder.
    vectors: dict[str, int] | None = None
    # In a listing: why the owner's folder cannot be read (DamagedFolder); its counts are then 0.
    damaged: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("vectors", "damaged"):
            if out[key] is None:
                del out[key]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OwnerStats:
        """Stats as :meth:`to_dict` gave them (e.g. a peer's listing); a field left out is None."""
        fields: dict[str, Any] = {k: data.get(k) for k in cls.__dataclass_fields__}
        return cls(**fields)


@dataclass
class BatchResult:
    """The outcome of :meth:`Owner.apply_ops`: one result per op, and the commit."""

    results: list[dict[str, Any]]
    commit: str | None
    replayed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"results": self.results, "commit": self.commit, "replayed": self.replayed}


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
    """One owner's memory, as the web layer and the CLI use it: the one service API of an owner.

    Reads come from the working tree (wiki, diary) and the history index;
    every write is one commit under the owner's inter-process lock, carrying
    a :class:`~wikimem.context.WriteContext`. Safe to share between the
    threads of a process. ``review`` holds what operators do beyond reading
    and writing (:class:`~wikimem.host.review.Review`: history filters, undo
    marks, blame, text search). ``vstore`` is the versioned store underneath,
    for the library's own tools and tests — the web layer never reaches it.
    """

    def __init__(self, owner_id: str, root: Path, *, embedder=None, llm=None, cache_dir: Path | None = None,
                 recall=None, metrics: NullMetrics = NULL_METRICS):
        from wikimem.versioned import VersionedStore

        self.id = owner_id
        self.root = Path(root)
        self.vstore = VersionedStore(self.root)
        self.review = Review(self.vstore, owner_id)
        self.embedder = embedder
        # What its indexes embed with: the embedder, its recent query vectors shared by every index (layers too)
        self._queries = RememberedQueries(embedder) if embedder is not None else None
        self.llm = llm
        self._cache_dir = cache_dir
        self.recall = recall  # RecallOptions of the host (None: the library's defaults)
        self.metrics = metrics  # what the host reports (wikimem/host/metrics.py): write and retrieve latency
        # Its indexes, per layer of its folder: live, as of a past point, with the staged runs.
        self.indexes = Indexes(self.vstore, self._new_index, lambda: self.staging, cache_dir)
        # A character's profile (the owner char:<id>), looked up by the host (None: none, or no host).
        self.profile_of: Callable[[str], Owner | None] = lambda _character: None
        # The host's character registry (memorize as a character) and where memorize's facts go without one.
        self.characters: Any = _NoCharacters()
        self.memorize_facts = "direct"
        self._settings: tuple[str | None, OwnerSettings] = (None, OwnerSettings())  # (head, settings there)
        self._generation = self.vstore.generation()  # changes when another process rewrites the history
        # Runs on probation (SPEC §10): which writes are staged by actor (the host's policy), and the index of a
        # retrieve that includes them (host/stagedview.py: one build at a time, kept fresh incrementally).
        self.policy = StagingPolicy()
        self.default_tz: str | None = None  # the host's WIKIMEM_TZ, for an owner without a tz
        self._staging: Staging | None = None
        self._staged_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Owner({self.id!r})"

    def delete_everywhere(self) -> None:
        """Record the owner's deletion on its remote: a commit removing every memory file, pushed now."""
        self.write_attempts(lambda: self.vstore.clear(WriteContext(actor="operator")))
        self.vstore.push_pending()  # async mode too: the deletion must be on the remote before the copy goes

    def write_attempts(self, write):
        """Run ``write()``; when the remote moved under it, run it again on the caught-up memory.

        A write refused by the remote's compare-and-swap left nothing behind
        (files and journal restored) and its folder fetched the remote, so
        the next attempt starts from the remote's head: both hosts' writes
        are kept, one after the other. After :data:`MOVED_ATTEMPTS` the
        :class:`~wikimem.errors.RemoteMoved` goes to the caller (retriable).
        """
        start = time.perf_counter()
        try:
            for attempt in range(MOVED_ATTEMPTS):
                try:
                    return write()
                except RemoteMoved:
                    self.metrics.push_failed("sync")
                    if attempt == MOVED_ATTEMPTS - 1:
                        raise
                    time.sleep(random.uniform(0, 0.02 * (attempt + 1)))  # two hosts racing: let one through
            raise AssertionError("unreachable")  # (the loop returns or raises)
        except RemoteError as exc:
            if not isinstance(exc, RemoteMoved):
                self.metrics.push_failed("sync")  # the remote down or refusing: the write failed
            raise
        finally:
            self.metrics.write(time.perf_counter() - start)

    @property
    def store(self):
        """The plain wiki store (library level)."""
        return self.vstore.store

    @property
    def diary(self):
        """The plain diary (library level)."""
        return self.vstore.diary

    def exists(self) -> bool:
        """Whether the owner's repository is still on disk (another process may delete it)."""
        return (self.root / ".git").is_dir()

    def current(self) -> bool:
        """Whether this object may still be used: the repository is there and its history was not rewritten
        (a forget) since it was opened; else the host opens the owner again, dropping every cache of it."""
        return self.exists() and self.vstore.generation() == self._generation

    # -- forgetting ----------------------------------------------------------

    def forget(self, kind: str, *, actor: str = "operator", key: str | None = None,
               before: Callable[[set[str], set[str]], None] | None = None, **where: Any) -> Forgotten:
        """Forget one wiki item (``file``, ``name``) or diary entry (``date``, ``time_``, ``index``) with its
        history (:meth:`VersionedStore.forget`): every commit rewritten without it, the remote's history
        replaced, unreachable objects pruned; ``before(texts, runs)`` is called, under the owner lock, with every
        text it held and the runs that wrote it before anything is rewritten. This object's caches go, the
        vector caches are deleted (made again from the memory); other processes open the owner again on
        their next lookup. ``key`` makes a second call a replay (a job's step key)."""
        done = self.write_attempts(lambda: self.vstore.forget(kind, actor=actor, key=key, before=before, **where))
        self.indexes.reset()
        self._settings = (None, OwnerSettings())
        for folder in [self.root, *(self.store.layer(layer).root for layer in self.vstore.layers())]:
            remove_vector_files(folder)
        if self._cache_dir is not None:
            remove_vector_files(self._cache_dir)
        self._generation = self.vstore.generation()
        return done

    # -- reading -----------------------------------------------------------

    def stats(self, *, vectors: bool = False) -> OwnerStats:
        """Counts and last activity; with ``vectors`` and an embedder, how many items are embedded.

        Asking for the vector counts also schedules what background embedding has not done yet.
        """
        files = self.store.files()
        counts = None
        if vectors and self.embedder is not None:
            embedded, total = self.index().vector_counts()
            counts = {"embedded": embedded, "total": total}
        return OwnerStats(
            id=self.id,
            items=sum(len(self.store.items(f)) for f in files),
            files=len(files),
            diary_days=len(self.diary.dates()),
            last_change=_last_change(self.vstore),
            head=self.vstore.head(),
            vectors=counts,
        )

    def head(self) -> str:
        """The newest commit id."""
        return self.vstore.head()

    # -- settings ----------------------------------------------------------

    def settings(self) -> OwnerSettings:
        """The owner's settings: ``settings.json`` as the branch holds it (re-read when the head moves).

        The branch, not the file on disk, is what replicates: a copy of the
        file a catch-up has not rewritten yet never decides a diary date.
        An unreadable file is :class:`~wikimem.errors.DamagedFolder`.
        """
        head = self.vstore.head()
        cached_key, cached = self._settings
        if head and head == cached_key:
            return cached
        value = OwnerSettings.from_file(self._committed_settings())
        self._settings = (head, value)
        return value

    def _committed_settings(self) -> dict:
        try:
            return parse_settings(self.vstore.head_file(SETTINGS_PATH))
        except ValueError as exc:
            raise DamagedFolder(f"{self.id}: {exc} (at {self.vstore.head()[:12]}); write the settings again "
                                f"(PUT …/settings) or run: wikimem repair --owner {self.id}") from None

    def put_settings(self, changes: dict[str, Any], *, ctx: WriteContext | None = None) -> Committed:
        """Set some settings (``None`` unsets one; the others keep their value) as one commit."""
        from wikimem.versioned import Committed

        changes = check_settings(changes)
        ctx = WriteContext.of(ctx).bound("settings", sorted(changes.items()))
        with self.vstore.batch(ctx, message=settings_summary(changes), kind="settings") as b:
            if b.replay is not None:
                return Committed(OwnerSettings.from_file(b.replay.get("settings") or {}), b.commit, True)
            # From the branch (what the other hosts see), never from a copy on disk that may be stale:
            # a write starting from an old file would put back settings another host changed.
            base = self.vstore.head_file(SETTINGS_PATH)
            merged = {k: v for k, v in {**self._committed_settings(), **changes}.items() if v is not None}
            new = render_settings(merged)
            if changes and new != base:
                old = self.vstore.writer.read(SETTINGS_PATH)
                self.vstore.writer.apply({SETTINGS_PATH: (old, new)}, settings_record(changes))
            b.result = {"settings": merged}
        return Committed(OwnerSettings.from_file(merged), b.commit)

    def _tz(self, tz: Any) -> Any:
        """A request's time zone, else the owner's, else the host's (``WIKIMEM_TZ``)."""
        return tz if tz is not None else self.settings().tz or self.default_tz

    def time_zone(self, tz: Any = None) -> Any:
        """The time zone a write of this owner files by: ``tz`` if given, else the owner's, else the host's."""
        return self._tz(tz)

    def layer(self, character: str | None = None):
        """The plain store of a layer of this folder: the shared one, or ``character``'s (``characters/<id>/``)."""
        return self.store.layer(character)

    def layers(self) -> list[str]:
        """The characters with a layer in this person's folder."""
        return self.vstore.layers()

    def files(self, character: str | None = None) -> list[str]:
        return self.layer(character).files()

    def items(self, file: str | None = None, character: str | None = None) -> list[RecallItem]:
        """All items, or those of one RecallFile (:class:`NotFound` if there is no such file), of a layer."""
        store = self.layer(character)
        found = store.items(file)
        if file is not None and not found and file not in store.files():
            raise NotFound(f"no RecallFile {file!r}" + (f" in {character}'s layer" if character else ""))
        return found

    def item(self, file: str, name: str, character: str | None = None) -> RecallItem:
        """One item of a layer; :class:`NotFound` if there is none."""
        found = self.layer(character).get(file, name)
        if found is None:
            raise NotFound(f"no item {name!r} in {file!r}" + (f" of {character}'s layer" if character else ""))
        return found

    def has_item(self, file: str, name: str, character: str | None = None) -> bool:
        """Whether a link target exists in a layer (an impossible name is simply absent)."""
        try:
            return self.layer(character).get(file, name) is not None
        except ValueError:
            return False

    @staticmethod
    def etag(item: RecallItem) -> str:
        """The item's etag, what an ``If-Match`` write must carry."""
        return item_etag(item)

    def diary_dates(self, character: str | None = None) -> list[str]:
        return self.layer(character).diary.dates()

    def diary_day(self, date: str, character: str | None = None) -> list[DiaryItem]:
        return self.layer(character).diary.day(date)

    def diary_window(self, start: str, end: str, character: str | None = None) -> list[DiaryItem]:
        return self.layer(character).diary.window(start, end)

    def index(self, layer: str | None = None):
        """This owner's :class:`~wikimem.MemoryIndex` (of one layer), fresh with every process's writes and hand
        edits."""
        return self.indexes.live(layer)

    def _new_index(self, store, vectors_dir=None):
        from wikimem.recall import MemoryIndex

        options = self.recall.kwargs() if self.recall is not None else {}
        return MemoryIndex(store, embedder=self._queries, vectors_dir=vectors_dir, **options)

    def retrieve(self, query: str | None = None, *, messages: Any = None, messages_last: int | None = None,
                 as_of: str | None = None, include_staged: bool = False, character: str | None = None,
                 channel: str | None = None, present: Any = None, **retrieve_kwargs: Any):
        """``MemoryIndex.retrieve`` on the live memory, or on the memory as of a commit or time.

        Give ``query``, or a chat transcript as ``messages`` (OpenAI-style
        ``{"role", "content"}`` dicts): the query is then the user's turns
        (the last ``messages_last`` of them), cut to the most recent
        :data:`~wikimem.limits.MAX_QUERY_CHARS` characters. A ``query`` is
        at most that long (:class:`TooLarge`), ``limit`` from 1 to
        :data:`~wikimem.limits.MAX_RETRIEVE_LIMIT` (:class:`InvalidValue`).
        Time words are read in ``tz``, else in the owner's time zone.
        ``include_staged``: the approved memory plus this owner's staged runs
        (each entry then says whether it is ``staged``); not with ``as_of``.
        ``character``: recall as that character — its layer of this folder,
        the shared layer and its profile, ranked as one list
        (:func:`~wikimem.host.layered.retrieve_layers`; each entry says its
        ``layer`` and ``character``); no other character's layer is read.
        ``channel``/``present``: where the answer will be read and who is
        there; with them, or with ``character``, the rules of
        :mod:`wikimem.recall.rooms` leave entries out in the query.
        """
        if (query is None) == (messages is None):
            raise BadRequest("give either query or messages")
        limit = retrieve_kwargs.get("limit")
        if limit is not None and not 1 <= limit <= MAX_RETRIEVE_LIMIT:
            raise InvalidValue(f"limit must be from 1 to {MAX_RETRIEVE_LIMIT}, got {limit}")
        if messages is not None:
            from wikimem.llm import query_from_messages

            query = query_from_messages(messages, last=messages_last)[-MAX_QUERY_CHARS:]
        if isinstance(query, str):
            check_length(query, MAX_QUERY_CHARS, "query")
        if include_staged and as_of is not None:
            raise BadRequest("give as_of or include_staged, not both")
        start = time.perf_counter()
        commit = self.vstore.resolve(as_of) if as_of is not None else None
        sources = self._sources(character, commit, include_staged, self._room(character, channel, present))
        retrieve_kwargs["tz"] = self._tz(retrieve_kwargs.get("tz"))
        ready = time.perf_counter()
        take = getattr(self.embedder, "take", None)  # a TimedEmbedder: what this thread spent embedding
        if callable(take):
            take()
        if character is None:
            result = sources[0].index.retrieve(query, room=sources[0].room, **retrieve_kwargs)
            if sources[0].staged is not None:
                mark_staged([*result.items, *result.dropped], sources[0].staged)
        else:
            with one_retrieve():  # the query embedded once for the three sources (the profile is another owner)
                result = retrieve_layers(sources, str(query), **retrieve_kwargs)
        end = time.perf_counter()
        embedding = take() if callable(take) else 0.0
        self.metrics.retrieve({"freshness": ready - start, "embedding": embedding,
                               "ranking": max(0.0, end - ready - embedding), "total": end - start})
        return result

    def _room(self, character: str | None, channel: Any, present: Any) -> Room | None:
        """Where a retrieve's answer will be read (None: nowhere said, and no character recalls)."""
        if character is None and channel is None and present is None:
            return None
        # (the person's dm_with_others counts only when the room says a channel or who is there: no settings
        # read on a character's every retrieve)
        open_to_others = channel is not None or present is not None
        return Room(person=self.id, channel=None if channel is None else validate_channel_id(channel),
                    present=None if present is None else validate_present(present), character=character,
                    dm_with_others=open_to_others and bool(self.settings().dm_with_others))

    def _sources(self, character: str | None, commit: str | None, include_staged: bool,
                 room: Room | None = None) -> list[Source]:
        """What a retrieve reads: the shared layer; with ``character``, also its layer and its profile; each with
        the ``room`` as its layer sees it."""
        def source(kind: str, layer: str | None) -> Source:
            seen = room.of_layer(kind != SHARED) if room is not None else None
            if include_staged:
                index, staged = self.indexes.with_staged(layer)
                return Source(kind, character, index, staged, seen)
            return Source(kind, character, self.indexes.live(layer) if commit is None else
                          self.indexes.as_of(commit, layer), room=seen)

        if character is None:
            return [source(SHARED, None)]
        validate_character_id(character)
        out = [source(CHARACTER, character), source(SHARED, None)]
        profile = self.profile_of(character)
        if profile is not None and profile is not self:
            out.append(Source(PROFILE, character, profile.index(), room=room.of_layer(True) if room else None))
        return out

    # -- history -----------------------------------------------------------

    def history(self, *, file: str | None = None, item: str | None = None, run: str | None = None,
                limit: int = 50, cursor: str | None = None, layers: Layers = None) -> HistoryPage:
        """Commits, newest first, optionally of one RecallFile, one item or one run; of ``layers`` (None in it: the
        shared layer; ``None``, the default: every layer — an edge that answers a caller passes what it may read)
        and those that touched no item."""
        return self.vstore.history(file=file, item=item, run=run, limit=limit, cursor=cursor, layers=layers)

    def runs(self, limit: int = 50) -> list[dict]:
        return self.vstore.runs(limit)

    def show_commit(self, point: str, layers: Layers = None) -> CommitDiff:
        """One commit with its per-item diff, as a reader of ``layers`` sees it (:class:`NotFound` when it changed
        only layers left out)."""
        return self.vstore.show_commit(point, layers)

    def diff(self, a: str, b: str = "HEAD", layers: Layers = None) -> CommitDiff:
        """What changed between two points, item by item, in ``layers``."""
        return self.vstore.diff(a, b, layers)

    # -- undo ----------------------------------------------------------------

    def preview_undo(self, kind: str, target: str) -> Plan:
        """What ``undo(kind, target)`` would change, and its conflicts, without writing."""
        return self.vstore.undo.preview(kind, target)

    def undo(self, kind: str, target: str, *, force: bool = False, ctx: WriteContext | None = None) -> Committed:
        """Revert a commit, roll back a run, or restore to a point, as one new commit (see :data:`UNDO_TARGETS`).

        Conflicts raise :class:`~wikimem.errors.Conflict` unless ``force``
        (a restore has none: it makes the memory equal to its target).
        An unknown ``kind`` raises ``ValueError``. A rollback also withdraws
        what the run still proposes on probation (:meth:`withdraw_proposals`).
        """
        try:
            done = self.write_attempts(lambda: self.vstore.undo.apply(kind, target, force=force, ctx=ctx))
        except NotFound:  # a run that only proposed: its rollback is the withdrawal
            withdrawn = self.withdraw_proposals([target], ctx=ctx) if kind == "rollback" else []
            if not withdrawn:
                raise
            return withdrawn[-1]
        if kind == "rollback":
            self.withdraw_proposals([target], ctx=ctx)
        return done

    def withdraw_proposals(self, runs: list[str], *, ctx: WriteContext | None = None) -> list[Committed]:
        """Discard the staged runs among ``runs`` (a rolled-back run's proposals to the shared layer go with it;
        kept as discarded runs, so they can be restored): one commit each, ``ctx.actor`` as who."""
        pending = self.staging.tips()
        plain = replace(WriteContext.of(ctx), idempotency_key=None)  # (the key names the rollback, not these)
        return [self.discard_staged(run, ctx=plain, reason="rolled back") for run in runs if run in pending]

    # -- writing -----------------------------------------------------------

    def add(self, file: str, name: str, content: str, *, ts: str | None = None, ctx: WriteContext | None = None,
            character: str | None = None, **room: Any) -> Committed:
        """Add or replace an item (one commit; ``created`` when it is new); ``ctx.if_match`` is its
        etag or the head commit id, ``ctx.if_none_match`` makes it create-only (412 when it exists).
        Empty content is refused (``ValueError``). ``character``: into that character's layer; ``room``: the
        ``channel`` and ``present`` it was learnt in."""
        check_content(content)
        target, ctx = self.target(ctx, character)
        return self.write_attempts(lambda: target.add(file, name, content, owner=self.id, ts=ts, ctx=ctx, **room))

    def remove(self, file: str, name: str, *, ctx: WriteContext | None = None,
               character: str | None = None) -> Committed:
        """Remove an item (one commit) of a layer; :class:`NotFound` when it does not exist."""
        target, ctx = self.target(ctx, character)
        done = self.write_attempts(lambda: target.remove(file, name, owner=self.id, ctx=ctx))
        if not done.value:
            raise NotFound(f"no item {name!r} in {file!r}" + (f" of {character}'s layer" if character else ""))
        return done

    def diary_append(self, content: str, *, ctx: WriteContext | None = None, character: str | None = None,
                     **append_kwargs: Any) -> Committed:
        """Append a diary entry (one commit) to a layer; ``append_kwargs`` as :meth:`wikimem.Diary.append`
        (``tz`` defaults to the owner's)."""
        where = ("layer", character) if character is not None else ()
        planned = bool(append_kwargs.pop("planned", False))
        ctx = WriteContext.of(ctx).bound("diary", content, sorted(append_kwargs.items()), self.id, *where)  # as sent
        given = append_kwargs.pop("tz", None)
        check_planned(append_kwargs.get("date"), append_kwargs.get("ts"), self._tz(given), planned)
        target, ctx = self.target(ctx, character)
        # The owner's time zone is looked up for each attempt: one after a catch-up files by the settings
        # the catch-up brought.
        return self.write_attempts(lambda: target.diary_append(content, owner=self.id, ctx=ctx, tz=self._tz(given),
                                                       **append_kwargs))

    @staticmethod
    def memorize_request(turn: str, *, character: str | None = None, prompt: str | None = None,
                         ctx: WriteContext | None = None, **append_kwargs: Any) -> WriteContext:
        """The context of a memorize request, bound to what a retry with its key must repeat."""
        given = sorted((k, v) for k, v in append_kwargs.items() if v is not None)
        return WriteContext.of(ctx).bound("memorize", turn, character, prompt, given)

    def memorize(self, turn: str, *, character: str | None = None, prompt: str | None = None,
                 ctx: WriteContext | None = None, **append_kwargs: Any) -> MemorizeResult:
        """Run the host's LLM over one turn and write what it keeps — diary entries and facts — as one run.

        ``character``: a registered character's id (else the owner's ``character`` setting when it names one):
        its diary entries and facts go to its layer, its facts also to the shared layer by its ``shared_writes``
        (a proposal: a staged run of the same run id; direct; or none). Without a character both go to the
        shared layer, the facts as the host's ``WIKIMEM_MEMORIZE_FACTS`` says (:mod:`wikimem.host.memorizing`).
        The LLM is asked before the owner's lock is taken (a slow model must not block other writers); a retry
        carrying the same idempotency key returns the first result without asking again. The run id defaults
        to a new one, ``tz`` to the owner's. The actor is ``ctx.actor`` as for every other write. ``channel`` and
        ``present`` (among ``append_kwargs``) go on every diary entry it writes (refused before the model is asked
        when they are not ids). Unpacks as ``entries, run_id, commit``.
        """
        from wikimem.llm import extract

        if self.llm is None:
            raise LLMNotConfigured("memorize needs a chat endpoint: set WIKIMEM_LLM_URL and WIKIMEM_LLM_MODEL")
        if isinstance(turn, str):
            check_length(turn, MAX_TURN_CHARS, "turn")
        room = check_room(append_kwargs.get("channel"), append_kwargs.get("present"))  # 422 before anything is asked
        # Bound to the request as sent: the run id made up here and the owner's defaults (which may
        # change between a request and its retry) are not part of what a retry must repeat.
        ctx = self.memorize_request(turn, character=character, prompt=prompt, ctx=ctx, **append_kwargs)
        who = self._memorize_as(character)
        tz = self._tz(append_kwargs.get("tz"))
        ctx = WriteContext.of(ctx, run=run_for(ctx))
        check_duplicate(self, turn, ctx, character, prompt)  # the same turn moments ago, without a key: 409
        if ctx.idempotency_key is not None:
            target, keyed = self.target(ctx, who.id if who is not None else None)
            found = target.replay(ctx.idempotency_key, "memorize", target.request_of(keyed, "memorize"))
            if found is not None:
                return replayed(found)
        name = who.name if who is not None else (self.settings().character or "the assistant")
        stamp = {"ts": normalize_ts(append_kwargs.get("ts")), "tz": tz, "source_conv": ctx.source_conv,
                 "date": append_kwargs.get("date"), "time": append_kwargs.get("time"), "turn": turn, **room}
        today = datetime.fromisoformat(stamp["ts"]).astimezone(resolve_tz(tz)).date()
        reply = extract(self.llm, turn, character=name, persona=(who.persona or "") if who else "", person=self.id,
                        today=today, prompt=prompt)
        return memorize_turn(self, reply, character=who, facts_policy=self.memorize_facts, ctx=ctx, stamp=stamp)

    def _memorize_as(self, character: str | None):
        """The registered character a memorize writes as: the one asked for, else the owner's ``character``
        setting when it names a registered one (a free-text name there is only the prompt's name), else none."""
        if character is not None:
            return self.characters.resolve(character)
        setting = self.settings().character
        if setting and is_character_id(setting):
            try:
                return self.characters.resolve(setting)
            except NotFound:
                return None
        return None

    def diary_tool(self, arguments: Any, *, ctx: WriteContext | None = None, character: str | None = None,
                   **append_kwargs: Any):
        """Handle an ``append_diary`` tool call as one commit (in a layer); a bad call raises :class:`ToolCallError`.

        Returns ``(entry, commit, replayed)``.
        """
        from wikimem.llm import handle_diary_tool

        where = ("layer", character) if character is not None else ()
        ctx = WriteContext.of(ctx).bound("diary-tool", arguments, sorted(append_kwargs.items()), *where)
        append_kwargs["tz"] = self._tz(append_kwargs.get("tz"))  # after binding: a retry is the same request
        _check_when(**append_kwargs)  # the request's own fields are refused as in any diary write, not told the agent
        target, ctx = self.target(ctx, character)

        def write():
            with target.batch(ctx, kind="diary-tool", action="diary-tool") as b:
                if b.replay is not None:
                    entry = b.replay.get("entry")
                    return (DiaryItem(**entry) if entry else None), b.replay.get("commit"), True
                try:
                    entry = handle_diary_tool(target.diary, arguments, owner=self.id, source_conv=ctx.source_conv,
                                              **append_kwargs)
                except ValueError as exc:
                    raise ToolCallError(str(exc)) from None
                b.result = {"entry": asdict(entry)}
            return entry, b.commit, False

        return self.write_attempts(write)

    def apply_ops(self, ops: Any, *, message: str | None = None, ctx: WriteContext | None = None,
                  character: str | None = None) -> BatchResult:
        """Apply several writes sent as data (see :mod:`wikimem.host.batchops`) as one commit, or none of them, to
        a layer."""
        checked = parse_ops(ops)
        target, ctx = self.target(ctx, character)
        ctx = ctx.bound("batch", ops, message, *(("layer", character) if character is not None else ()))

        def write() -> BatchResult:
            with target.batch(ctx, message=message, kind="batch", action="batch") as b:
                if b.replay is not None:
                    return BatchResult(b.replay.get("results", []), b.replay.get("commit"), True)
                results = [self._apply_op(target, op, ctx.source_conv) for op in checked]
                b.result = {"results": results}
            return BatchResult(results, b.commit)

        return self.write_attempts(write)

    def _apply_op(self, target: Target, op: Op, source_conv: str | None) -> dict[str, Any]:
        args: dict[str, Any] = dict(op.args)
        if op.kind == "add":
            args.setdefault("source_conv", source_conv)
            item: RecallItem = target.store.add(args.pop("file"), args.pop("name"), args.pop("content"),
                                                owner=self.id, **args)
            return {"op": "add", "item": asdict(item)}
        if op.kind == "remove":
            removed = target.store.remove(op.args["file"], op.args["name"], owner=self.id)
            return {"op": "remove", "file": op.args["file"], "name": op.args["name"], "removed": removed}
        args.setdefault("source_conv", source_conv)
        args["tz"] = self._tz(args.get("tz"))
        check_planned(args.get("date"), args.get("ts"), args["tz"], bool(args.pop("planned", False)))
        entry = target.diary.append(args.pop("content"), owner=self.id, **args)
        return {"op": "diary", "entry": asdict(entry)}

    # -- runs on probation (SPEC §10) -----------------------------------------------

    @property
    def staging(self) -> Staging:
        """This owner's staged runs (:class:`~wikimem.versioned.Staging`): their writers, review, approve, discard."""
        if self._staging is None:
            from wikimem.versioned import Staging

            with self._staged_lock:
                if self._staging is None:
                    self._staging = Staging(self.vstore)
        return self._staging

    def stages(self, ctx: WriteContext | None) -> bool:
        """Whether a write with ``ctx`` goes on probation: asked for (``ctx.staged``), or the host's policy stages its
        actor (``WIKIMEM_STAGED_ACTORS``)."""
        return ctx is not None and (ctx.staged or self.policy.stages(ctx.actor))

    def target(self, ctx: WriteContext | None, layer: str | None = None) -> tuple[Target, WriteContext]:
        """Where a write goes — ``main`` (the versioned store) or its run's staged branch — and its context (a staged
        write always carries its run id; :class:`InvalidName` when that id cannot name a branch). A character's
        layer is written only for a registered character, and a person holds at most :data:`MAX_LAYERS` layers."""
        ctx = WriteContext.of(ctx)
        if layer is not None:
            self._check_layer(layer)
        if not self.stages(ctx):
            return self.vstore.main.with_layer(layer), ctx
        ctx = replace(ctx, staged=True, run=run_for(ctx))
        assert ctx.run is not None
        return self.staging.branch(ctx.run, layer), ctx

    def _check_layer(self, layer: str) -> None:
        self.characters.writable(layer)  # (NotFound saying how to register it; NotPermitted once deleted)
        held = self.vstore.layers()
        if layer not in held and len(held) >= MAX_LAYERS:
            raise QuotaExceeded(f"{self.id} holds the layers of {len(held)} characters already (at most {MAX_LAYERS}"
                                "): a new character's layer is refused")

    def staged_runs(self) -> list[StagedRun]:
        """This owner's staged runs, oldest first."""
        return self.staging.runs()

    def staged_review(self, run: str) -> StagedReview:
        """A staged run against current ``main``: what it changed, what approving would change now, the conflicts
        (:class:`NotFound` when it is not staged here)."""
        return self.staging.review(run)

    def approve_staged(self, run: str, *, force: bool = False, edits: Any = (),
                       ctx: WriteContext | None = None) -> Committed:
        """Approve a staged run onto ``main`` (one commit; conflicting items skipped unless ``force``; ``edits``
        change what is approved); ``ctx.actor`` is the approver."""
        done = self.write_attempts(lambda: self.staging.approve(run, force=force, edits=edits or (), ctx=ctx))
        self.indexes.drop_staged()
        return done

    def discard_staged(self, run: str, *, ctx: WriteContext | None = None, reason: str = "discarded") -> Committed:
        """Discard a staged run: its branch goes, a commit on ``main`` records it (``ctx.actor``: who)."""
        done = self.write_attempts(lambda: self.staging.discard(run, ctx=ctx, reason=reason))
        self.indexes.drop_staged()
        return done

    def discarded_runs(self) -> list[str]:
        """The discarded runs whose commits are still kept here (``restore_discarded`` stages one again)."""
        return sorted(self.staging.discarded())

    def restore_discarded(self, run: str) -> str:
        """Stage a discarded run's commits again (kept ``WIKIMEM_DISCARDED_DAYS``) as a new run; its id."""
        return self.staging.restore_discarded(run)


# What each undo operation takes as its target: a commit point, a run id, a commit point or time. The
# targets of wikimem.versioned.UNDO_KINDS (the one dispatch; tests hold the two equal), spelled out here so
# that importing the host needs no dulwich.
UNDO_TARGETS = {"revert": "commit", "rollback": "run", "restore": "to"}


def remove_vector_files(folder: Path) -> int:
    """Delete the vector caches under ``folder`` (matrices and their keys; the lock files stay, as other processes
    may hold them); how many files. They are derived: the next retrieve embeds what the memory holds now."""
    removed = 0
    for top in folder.iterdir() if folder.is_dir() else ():
        if not (top.name.startswith(("vectors", "diary-vectors", "as-of-vectors"))):
            continue
        for path in [top] if top.is_file() else [p for p in top.rglob("*") if p.is_file()]:
            if path.suffix == ".npy" or path.name.endswith(".keys.jsonl"):
                path.unlink(missing_ok=True)
                removed += 1
    return removed


class _NoCharacters:
    """The registry of an owner opened without a host: no character is registered."""

    def resolve(self, value: object):
        raise NotFound(f"no character {value!r}: characters are registered on a host (PUT /api/v1/characters/<id>)")

    writable = resolve
