"""What operators do with one owner beyond reading and writing: history with every filter, undo marks,
item versions and blame, plain text search, creating an item that must not exist, rolling back a selection.

:class:`Review` is held by each :class:`~wikimem.host.owner.Owner` as ``owner.review``, built over the
owner's versioned store.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from wikimem.context import WriteContext
from wikimem.errors import BadRequest, InvalidValue, NotFound, PreconditionFailed
from wikimem.format import item_etag
from wikimem.linkgraph import LinkGraph, link_graph
from wikimem.naming import validate_channel_id
from wikimem.recall import Audience, audience

from .instants import parse_instant
from .textsearch import TextHit, TextSearch, compile_query, matches, spans

if TYPE_CHECKING:
    from wikimem.models import DiaryItem
    from wikimem.versioned import Committed, HistoryEntry, HistoryPage, Plan, VersionedStore

__all__ = ["Review", "HistoryMarks", "LayerStats", "DayEntry", "HISTORY_FILTERS", "MAX_TEXT_HITS"]

# The filters of an owner's history (besides paging), as the API and the admin page name them.
HISTORY_FILTERS = ("file", "item", "run", "actor", "action", "since", "until", "channel")
MAX_TEXT_HITS = 500


@dataclass
class HistoryMarks:
    """The undo links of a page of history, both ways."""

    reverted_by: dict[str, list[str]] = field(default_factory=dict)  # commit → the undo commits that undid it
    run_rolled_back_by: dict[str, list[str]] = field(default_factory=dict)  # run → standing rollbacks naming it
    undoes: dict[str, Any] = field(default_factory=dict)  # undo commit → UndoInfo (what it undid)

    def to_dict(self) -> dict:
        return {"reverted_by": self.reverted_by, "run_rolled_back_by": self.run_rolled_back_by,
                "undoes": {k: v.to_dict() for k, v in self.undoes.items()}}


@dataclass(frozen=True)
class LayerStats:
    """One layer of a person's folder as the operators' overview shows it (``layer`` None: the shared one)."""

    layer: str | None
    items: int
    files: int
    diary_days: int
    last_change: str | None  # the newest commit that changed an item or entry of this layer (UTC)


class DayEntry(NamedTuple):
    """A diary entry with its position in its day (what names it on the operators' pages)."""

    position: int
    entry: DiaryItem

    @property
    def time(self) -> str:
        return self.entry.time


def _cursor(value: str | None, what: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise BadRequest(f"invalid history {what} {str(value)[:40]!r}") from None
    if not 0 <= number < 2**63:  # a position in the history index (SQLite's INTEGER): none of ours is outside
        raise BadRequest(f"invalid history {what} {str(value)[:40]!r}")
    return number


class Review:
    """Operator views and actions of one owner: its history with every filter, undo marks, item versions and
    blame, text search, and the writes an operator makes (a new item, a rollback of a selection)."""

    def __init__(self, vstore: VersionedStore, owner_id: str) -> None:
        self._vstore = vstore
        self._owner_id = owner_id
        self._links_cache: tuple[str | None, Any] | None = None  # (head, UndoLinks)

    def link_graph(self) -> LinkGraph:
        """The wiki-link graph of the owner's wiki (the shared layer): ``wikimem graph``'s data."""
        return link_graph(self._vstore.store.items())

    # -- layers ----------------------------------------------------------------

    def layers_overview(self) -> list[LayerStats]:
        """The shared layer and each character's layer of the folder: counts and the last change of each."""
        return [self._layer_stats(layer) for layer in [None, *self._vstore.layers()]]

    def _layer_stats(self, layer: str | None) -> LayerStats:
        store = self._vstore.store.layer(layer)
        files = store.files()
        return LayerStats(layer, sum(len(store.items(f)) for f in files), len(files), len(store.diary.dates()),
                          self._last_change(layer))

    def _last_change(self, layer: str | None) -> str | None:
        """The time of the newest commit that changed this layer (the layer filter also passes commits that
        changed no item: a settings commit is not a change of the layer)."""
        cursor = None
        for _ in range(3):  # commits without items are rare: a few pages at most, then "unknown"
            page = self._vstore.history(limit=20, cursor=cursor, layers=(layer,))
            found = next((e.time for e in page.entries if e.changes), None)
            if found is not None or page.next is None:
                return found
            cursor = page.next
        return None

    def run_layers(self, run: str) -> list[str]:
        """The characters whose layer of this folder a run wrote (on ``main``): who made a proposal to the shared
        layer that is the same run on its staged branch."""
        return [layer for layer in self._vstore.layers()
                if any(e.changes for e in self._vstore.history(run=run, limit=20, layers=(layer,)).entries)]

    # -- history ---------------------------------------------------------------

    def search_history(self, *, file: str | None = None, item: str | None = None, run: str | None = None,
                       actor: str | None = None, action: str | None = None, since: str | None = None,
                       until: str | None = None, limit: int = 50, cursor: str | None = None,
                       after: str | None = None, at: str | None = None,
                       layers: tuple[str | None, ...] | None = None, channel: str | None = None) -> HistoryPage:
        """Commits newest first, filtered by file, item, run, actor, action, time (``since``/``until``:
        a date or ISO time, UTC) and ``channel`` (the commits that added or removed a diary entry said there),
        paged to older (``cursor``) or newer (``after``) commits, or from ``at`` (a date or time: the page that
        starts with the newest commit made by then); of ``layers`` (None in it: the shared layer; ``None``, the
        default: every layer) and the commits that touched no item."""
        before, newer = _cursor(cursor, "cursor"), _cursor(after, "cursor")
        if channel is not None:
            validate_channel_id(channel)
        moment = parse_instant(at, "at", end_of_day=True)  # None when blank (a blank ``at`` jumps nowhere)
        if moment is not None:
            found = self._vstore.db.seq_at(moment)
            before = (found + 1) if found is not None else 0
        return self._vstore.db.query(
            file=file, item=" ".join(item.split()) if item else None, run=run, actor=actor, action=action,
            since=parse_instant(since, "since"), until=parse_instant(until, "until", end_of_day=True),
            limit=max(1, int(limit)), before=before, after=None if before is not None else newer, layers=layers,
            channel=channel)

    # -- channels (issue 34) ---------------------------------------------------------------

    def channels(self, layer: str | None | bool = False) -> list[str]:
        """The channels this person's diary entries were said in, as its history knows them (``layer``: of that
        character's layer only, None the shared one; ``False``: every layer)."""
        return self._vstore.db.channels(layer)

    def channel_days(self, channel: str, layer: str | None = None) -> list[str]:
        """The days of the diary (of ``layer``) holding an entry said in ``channel``, ascending: the days its history
        saw such an entry written, each read again (a day whose entries of it were all removed since is left out)."""
        diary = self._vstore.store.layer(layer).diary
        return [day for day in self._vstore.db.diary_days(validate_channel_id(channel), layer)
                if any(e.channel == channel for e in diary.day(day))]

    def diary_entries(self, day: str, layer: str | None = None,
                      channel: str | None = None) -> list[DayEntry]:
        """The entries of ``day`` (of ``layer``), each with its position in the day; with ``channel``, only those
        said there."""
        if channel is not None:
            validate_channel_id(channel)
        return [DayEntry(i, e) for i, e in enumerate(self._vstore.store.layer(layer).diary.day(day))
                if channel is None or e.channel == channel]

    def who_could_hear(self, day: str, index: int, layer: str | None = None, *,
                       dm_with_others: bool = False) -> tuple[DiaryItem, Audience]:
        """The ``index``-th entry of ``day`` (of ``layer``), who was there and who may recall it by the rules of a
        room (:func:`wikimem.recall.audience`; ``dm_with_others``: the person's setting)."""
        entries = self._vstore.store.layer(layer).diary.day(day)
        if not 0 <= index < len(entries):
            raise NotFound(f"no diary entry #{index + 1} on {day}" + (f" in {layer}'s layer" if layer else ""))
        entry = entries[index]
        return entry, audience(entry, person=self._owner_id, layer=layer, characters=tuple(self._vstore.layers()),
                               dm_with_others=dm_with_others)

    def undo_links(self):
        """The undo commits of this owner and what each undid (kept until the head moves)."""
        from wikimem.versioned import undo_links

        head = self._vstore.head()
        cached = self._links_cache
        if cached is not None and cached[0] == head:
            return cached[1]
        links = undo_links(self._vstore.git, self._vstore.db.undo_commits())
        self._links_cache = (head, links)
        return links

    def undone_by(self, entries: list[HistoryEntry]) -> dict[str, list[str]]:
        """For each entry that some revert or rollback undid: the undo commit ids, newest first."""
        links = self.undo_links()
        out = {}
        for entry in entries:
            found = links.reverted_by(entry.id)
            if found:
                out[entry.id] = found
        return out

    def history_marks(self, entries: list[HistoryEntry]) -> HistoryMarks:
        """What marks a page of history: commits undone (by which commit), runs rolled back, what undo commits undid."""
        runs = {e.run for e in entries if e.run}
        return HistoryMarks(self.undone_by(entries),
                            {r: found for r in sorted(runs) if (found := self.run_rolled_back_by(r))},
                            {e.id: self.undo_of(e.id) for e in entries if e.action in ("revert", "rollback")})

    def entry_at(self, point: str) -> HistoryEntry:
        """The history entry of a commit point (id, prefix, ``HEAD~N`` or a time)."""
        entry = self._vstore.db.entry(self._vstore.resolve(point))
        if entry is None:
            raise NotFound(f"no commit {point!r} in this history")
        return entry

    def undo_of(self, commit: str):
        """What an undo commit undid (:class:`~wikimem.versioned.history.UndoInfo`; empty for other commits)."""
        from wikimem.versioned import undo_info

        return undo_info(self._vstore.git, self._vstore.resolve(commit))

    def run_rolled_back_by(self, run: str) -> list[str]:
        """The rollback commits that name ``run`` and still stand (not undone in turn), newest first."""
        links = self.undo_links()
        return [c for c in links.run_rolled_back_by(run) if links.live(c)]

    # -- one item through time ---------------------------------------------------

    def item_versions(self, file: str, name: str, *, limit: int = 50, cursor: str | None = None):
        """``(versions, next cursor)``: the item's text as each commit that touched it left it, newest first."""
        from wikimem.versioned import item_versions

        name = " ".join(name.split())
        page = self._vstore.db.query(file=file, item=name, limit=max(1, int(limit)), before=_cursor(cursor, "cursor"))
        return item_versions(self._vstore.git, page.entries, file, name), page.next

    def item_blame(self, file: str, name: str):
        """The version whose commit wrote the item's current text (None if the text is not committed yet);
        :class:`NotFound` if there is no such item."""
        from wikimem.versioned import blame

        current = self._vstore.store.get(file, name)
        if current is None:
            raise NotFound(f"no item {name!r} in {file!r}")
        cursor, found = None, None
        while True:
            versions, cursor = self.item_versions(file, name, limit=100, cursor=cursor)
            version, complete = blame(versions, current.content)
            if version is None and found is None:
                return None
            found = version or found
            if complete or version is None or cursor is None:
                return found

    # -- plain text search ---------------------------------------------------------

    def text_search(self, query: str, *, limit: int = 50, diary: bool = True, layer: str | None = None) -> TextSearch:
        """Wiki items and diary entries holding every word of ``query`` (any case), at most ``limit`` shown, in one
        layer (``layer``: a character's; None: the shared one)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_TEXT_HITS:
            raise InvalidValue(f"limit must be an integer from 1 to {MAX_TEXT_HITS}")
        patterns = compile_query(query)
        hits: list[TextHit] = []
        total = 0
        store = self._vstore.store.layer(layer)
        for it in store.items():
            if matches(patterns, it.name, it.content):
                total += 1
                if len(hits) < limit:
                    hits.append(TextHit("wiki", it.content, file=it.file, name=it.name,
                                        spans=spans(patterns, it.content), name_spans=spans(patterns, it.name)))
        for day in reversed(store.diary.dates()) if diary else ():
            for entry in store.diary.day(day):
                if matches(patterns, entry.content):
                    total += 1
                    if len(hits) < limit:
                        hits.append(TextHit("diary", entry.content, date=entry.date, time=entry.time,
                                            spans=spans(patterns, entry.content)))
        return TextSearch(query, hits, total)

    # -- writes an operator makes ----------------------------------------------------

    def add_new(self, file: str, name: str, content: str, *, ctx: WriteContext | None = None) -> Committed:
        """Add an item that must not exist yet (one commit); 412 :class:`PreconditionFailed` if it does."""
        from wikimem.versioned import Committed

        ctx = WriteContext.of(ctx)
        with self._vstore.batch(ctx, kind=f"add-new {file}/{name}") as b:
            store = self._vstore.store
            if b.replay is not None:
                return Committed(store.get(file, name), b.commit, True)
            existing = store.get(file, name)
            if existing is not None:
                raise PreconditionFailed(f"an item named {name!r} already exists in {file!r}: edit it instead",
                                         current=item_etag(existing))
            item = store.add(file, name, content, owner=self._owner_id, source_conv=ctx.source_conv)
            b.result = {"value": asdict(item)}
        return Committed(item, b.commit)

    def edit(self, file: str, name: str, content: str, *, ctx: WriteContext | None = None) -> Committed:
        """Change the text of an existing item (one commit): its other fields (owner, ``source_conv``, ``ts``)
        stay as they are, and the commit records ``ctx.actor`` (the operator) as its author.

        ``ctx.if_match`` is the item's etag when the editor was opened: if the
        item changed since, nothing is written (:class:`PreconditionFailed`).
        :class:`NotFound` if there is no such item; empty text is refused
        (``ValueError``: deleting an item is its own action).
        """
        from wikimem.versioned import Committed

        if not isinstance(content, str) or not content.strip():
            raise ValueError("the text is empty: an item needs some text (to remove the item, delete it)")
        ctx = WriteContext.of(ctx)
        # The etag is checked here against the item, not as a head commit by batch().
        with self._vstore.batch(replace(ctx, if_match=None), kind=f"edit {file}/{name}") as b:
            store = self._vstore.store
            if b.replay is not None:
                return Committed(store.get(file, name), b.commit, True)
            current = store.get(file, name)
            if current is None:
                raise NotFound(f"no item {name!r} in {file!r}")
            if ctx.if_match is not None and item_etag(current) != ctx.if_match:
                raise PreconditionFailed(f"item {file}/{name} changed since it was opened",
                                         current=item_etag(current))
            item = store.add(file, current.name, content, owner=current.owner or self._owner_id,
                             source_conv=current.source_conv, ts=current.ts)
            b.result = {"value": asdict(item)}
        return Committed(item, b.commit)

    def _already_undone(self) -> frozenset[str]:
        """Commits that a standing revert or rollback undid: a selection leaves them alone."""
        links = self.undo_links()
        return frozenset(t for info in links.infos if links.live(info.commit) for t in info.reverts)

    def preview_selection(self, runs=(), commits=()) -> Plan:
        """What rolling back these runs and loose commits together would change now, and its conflicts
        (commits already undone by a standing revert or rollback are left out)."""
        return self._vstore.undo.preview_selection(list(runs), list(commits), self._already_undone())

    def rollback_selection(self, runs=(), commits=(), *, force: bool = False, ctx: WriteContext | None = None,
                           message: str | None = None) -> Committed:
        """Undo these runs and loose commits as one commit (the step of a bulk rollback for this owner)."""
        if not runs and not commits:
            raise NotFound("nothing selected to roll back")
        return self._vstore.undo.rollback_selection(list(runs), list(commits), skip=self._already_undone(),
                                                    force=force, ctx=ctx, message=message, kind="rollback-selection")
