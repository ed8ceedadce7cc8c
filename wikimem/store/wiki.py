"""MemoryStore: the wiki (state) — one markdown file per RecallFile."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wikimem.format import (
    WIKI_DIR,
    clean_content,
    clean_meta_value,
    layer_of,
    layer_prefix,
    memory_path,
    normalize_ts,
    parse_wiki,
    render_wiki,
    wiki_path,
)
from wikimem.fsio import Stamp
from wikimem.models import RecallItem
from wikimem.naming import (
    safe_stem,
    sanitize_item_name,
    validate_channel_id,
    validate_character_id,
    validate_file,
    validate_present,
)

from .diary import Diary
from .door import Door
from .journal import Journal, wiki_record
from .writer import MutationHook, UnitInfo, Writer

__all__ = ["MemoryStore", "Saved", "normalize_ts"]

# How many recent changes the store remembers for incremental index updates;
# an index that fell further behind rebuilds from scratch.
CHANGE_LOG_SIZE = 4096


@dataclass(frozen=True)
class Saved:
    """What :meth:`MemoryStore.save` decided under the write lock: the item written, and whether it is new."""

    item: RecallItem
    created: bool  # False: it replaced an item of the same name


class MemoryStore:
    """Read and write the wiki of one memory folder.

    Constructing a store touches nothing on disk; folders appear on the
    first write. ``hook`` plugs a layer (git) into the mutation seam, see
    :mod:`wikimem.store.writer`. ``layer`` with ``writer``: the store of a
    character's layer of the folder ``root`` (``characters/<layer>/``),
    written by the folder's own writer, so one unit may span layers; its
    journal lines name the layer.
    """

    def __init__(self, root: Path | str, *, hook: MutationHook | None = None, door: Door | None = None,
                 writer: Writer | None = None, layer: str | None = None):
        if layer is not None and writer is None:
            raise ValueError("a layer's store is written by its folder's writer: give writer= too")
        self.layer_id = layer  # None: the shared layer
        self._prefix = layer_prefix(layer)
        self.root = Path(root) / self._prefix if self._prefix else Path(root)
        self.journal = writer.journal if writer is not None else Journal(self.root / "journal.jsonl")
        self.writer = writer if writer is not None else Writer(self.root, self.journal, hook, door)
        self.writer.listeners.append(self._on_change)
        self._revision = 0
        self._changes: deque[tuple[int, str]] = deque(maxlen=CHANGE_LOG_SIZE)
        self._cache: dict[str, tuple[tuple, list[RecallItem]]] = {}
        self._cache_lock = threading.Lock()
        self._diary: Diary | None = None
        self._layers: dict[str, MemoryStore] = {}  # the characters' layers reached from this (shared) store

    # -- reading -----------------------------------------------------------

    @property
    def revision(self) -> int:
        """Bumped by every successful in-process wiki write (not by diary writes)."""
        return self._revision

    @property
    def diary(self) -> Diary:
        """The store's :class:`~wikimem.Diary`, sharing its journal and seam."""
        if self._diary is None:
            self._diary = Diary(self.root, journal=self.journal, _writer=self.writer, layer=self.layer_id)
        return self._diary

    def files(self) -> list[str]:
        """Sorted RecallFile names: one per ``wiki/*.md``."""
        return [name[:-3] for name in self.writer.door.names(self._prefix + WIKI_DIR)]

    def items(self, file: str | None = None) -> list[RecallItem]:
        """All items, or those of one RecallFile, in file order."""
        if file is not None:
            return list(self._read(file))
        out: list[RecallItem] = []
        stamps = self.writer.door.stamps(self._prefix + WIKI_DIR)  # one listing for every file's cache check
        for name in sorted(stamps):
            out.extend(self._read(name[:-3], stamps[name]))
        return out

    def get(self, file: str, name: str) -> RecallItem | None:
        """The item, or None (the name is whitespace-normalised first)."""
        wanted = " ".join(name.split()) if isinstance(name, str) else name
        for item in self._read(file):
            if item.name == wanted:
                return item
        return None

    def _read(self, file: str, key: Stamp | None = None) -> list[RecallItem]:
        """Items of a file, from a cache validated by the file's identity (or as a unit in progress staged them);
        ``key`` is its stamp when the caller listed the folder already."""
        rel = self._path(safe_stem(file))
        if self.writer.active:
            staged = self.writer.read(rel)
            return parse_wiki(staged, file)
        door = self.writer.door
        key = door.stamp(rel) if key is None else key
        if key is None:
            return []
        cached = self._cache.get(file)
        if cached is not None and cached[0] == key:
            return cached[1]
        data = door.read(rel)
        items = parse_wiki(data, file)
        with self._cache_lock:
            self._cache[file] = (key, items)
        return items

    def _read_fresh(self, file: str) -> tuple[bytes | None, list[RecallItem]]:
        """Bytes and items as the unit in progress sees them — used under the write lock."""
        return self.writer.parse(self._path(safe_stem(file)), lambda data: parse_wiki(data, file))

    def _path(self, file: str) -> str:
        """The file's path in the folder (in this store's layer)."""
        return self._prefix + wiki_path(file)

    def _record(self, action: str, file: str, name: str, owner: str | None, source_conv: str | None) -> dict:
        record = wiki_record(action, file, name, owner, source_conv)
        if self.layer_id is not None:
            record["layer"] = self.layer_id
        return record

    # -- writing -----------------------------------------------------------

    @contextmanager
    def batch(self, **info: Any) -> Iterator[None]:
        """Make every mutation inside the block one unit (one commit in git).

        ``info`` names fields of :class:`~wikimem.store.writer.UnitInfo`
        (``run``, ``actor``, ``message``…). If the block raises, every file it
        changed is restored and the journal is cut back: a batch lands
        entirely or not at all.
        """
        with self.writer.unit(UnitInfo(**info)):
            yield

    def add(
        self,
        file: str,
        name: str,
        content: str,
        *,
        owner: str | None = None,
        source_conv: str | None = None,
        ts: str | None = None,
        channel: str | None = None,
        present: Iterable[str] | str | None = None,
    ) -> RecallItem:
        """Insert or replace an item (journal: ``add`` or ``update``); ``channel``/``present``: where it was said
        and who was there (a fact learnt in a direct chat is recalled by a diary entry's rules)."""
        return self.save(file, name, content, owner=owner, source_conv=source_conv, ts=ts, channel=channel,
                         present=present).item

    def save(self, file: str, name: str, content: str, *, owner: str | None = None,
             source_conv: str | None = None, ts: str | None = None, channel: str | None = None,
             present: Iterable[str] | str | None = None) -> Saved:
        """:meth:`add`, telling also whether the item is new (decided under the write lock)."""
        validate_file(file)
        item = RecallItem(
            file=file,
            name=sanitize_item_name(name),
            content=clean_content(content),
            owner=clean_meta_value(owner, "owner"),
            source_conv=clean_meta_value(source_conv, "source_conv"),
            ts=normalize_ts(ts),
            channel=validate_channel_id(channel) if channel is not None else None,
            present=validate_present(present) if present is not None else (),
        )
        with self.writer.unit() as unit:
            old, items = self._read_fresh(file)
            existed = any(i.name == item.name for i in items)
            # Replace in place: the item keeps its position in the file.
            new_items = [item if i.name == item.name else i for i in items] if existed else items + [item]
            record = self._record("update" if existed else "add", file, item.name, item.owner, item.source_conv)
            self._write(file, old, new_items, record)
        if self._path(file) in unit.final:  # (a later unit of the same round may have written the file again)
            self._prime_cache(file, new_items)
        return Saved(item, created=not existed)

    def remove(self, file: str, name: str, *, owner: str | None = None) -> bool:
        """Remove an item; False if it did not exist. The last item takes the file with it."""
        validate_file(file)
        name = sanitize_item_name(name)
        owner = clean_meta_value(owner, "owner")
        with self.writer.unit():
            old, items = self._read_fresh(file)
            remaining = [i for i in items if i.name != name]
            if len(remaining) == len(items):
                return False
            record = self._record("remove", file, name, owner, None)
            self._write(file, old, remaining, record)
        return True

    def _write(self, file: str, old: bytes | None, items: list[RecallItem], record: dict | None) -> None:
        rel = self._path(file)
        self.writer.apply({rel: (old, render_wiki(file, items))}, record, parsed={rel: items})

    def _prime_cache(self, file: str, items: list[RecallItem]) -> None:
        # We just wrote this file: remember its parse so the next read (the
        # index's incremental update) does not parse it again. Inside an
        # enclosing unit the file is not written yet: nothing to remember.
        if self.writer.active or not items:
            return
        key = self.writer.door.stamp(self._path(safe_stem(file)))
        if key is None:
            return
        with self._cache_lock:
            self._cache[file] = (key, list(items))

    def _on_change(self, paths: tuple[str, ...]) -> None:
        for rel in paths:
            layer, inner = layer_of(rel)
            kind = memory_path(inner) if layer == self.layer_id else None
            if kind is not None and kind[0] == WIKI_DIR:
                with self._cache_lock:
                    self._cache.pop(kind[1], None)
                    self._revision += 1
                    self._changes.append((self._revision, kind[1]))

    def changed_files_since(self, revision: int) -> set[str] | None:
        """RecallFiles written in-process after ``revision``; None if unknown (too old)."""
        with self._cache_lock:
            if revision == self._revision:
                return set()
            if not self._changes or self._changes[0][0] > revision + 1 or revision > self._revision:
                return None
            return {file for rev, file in self._changes if rev > revision}

    def invalidate(self) -> None:
        """Forget cached parses (after edits made outside this process), this store's and its layers'."""
        with self._cache_lock:
            self._cache.clear()
            layers = list(self._layers.values())
        for layer in layers:
            layer.invalidate()

    def layer(self, layer: str | None) -> MemoryStore:
        """The store of a character's layer of this folder (``characters/<layer>/``), written by this store's
        writer (one lock, one unit may span layers); ``None`` is this store itself. :class:`InvalidName` for an
        id that is not a character id."""
        if layer is None or layer == self.layer_id:
            return self
        if self.layer_id is not None:
            raise ValueError("a layer is reached from its folder's shared store, not from another layer")
        with self._cache_lock:
            found = self._layers.get(layer)
            if found is None:
                found = self._layers[layer] = MemoryStore(self.root, writer=self.writer,
                                                          layer=validate_character_id(layer))
        return found
