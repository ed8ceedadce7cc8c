"""BM25 over every diary entry, for ``retrieve(diary="all")``.

The seed searches the diary only through a time window (its entries are
tokenised per query). Recall by topic ("when did we talk about the
puppy?") needs every entry indexed; the diary is append-only, so the index
is updated incrementally, one day file at a time:

- freshness: the diary folder's listing with each day file's (inode,
  mtime, size) — an append rewrites its day file atomically (new inode), a
  hand edit or a git restore changes size or mtime; only the days that
  differ are re-read;
- keys: ``(date, time, k)`` where ``k`` counts the earlier entries of the
  same minute that day. Appends keep every existing key (entries are
  sorted by minute, stably), so re-reading a day re-indexes only the new
  or changed entries;
- a store without a diary folder (a read-only snapshot of a commit) is read
  once: it never changes.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from wikimem.fsio import folder_signature
from wikimem.models import RecallItem, as_recall_item
from wikimem.naming import DATE_RE
from wikimem.vectors import content_hash, embed_text

from .lexical import B, BM25Index
from .tokenizer import item_text, tokenize

__all__ = ["DiaryIndex", "DiaryBuild", "DIARY_RETRY"]

log = logging.getLogger(__name__)
# A failed first build is tried again after this many seconds.
DIARY_RETRY = 5.0

Key = tuple[str, str, int]

Signature = dict[str, Any]  # day -> its stamp on disk, or the content id its diary gives


def _keyed(date: str, entries: Iterable[Any]) -> list[tuple[Key, RecallItem]]:
    seen: dict[str, int] = {}
    out = []
    for entry in entries:
        item = as_recall_item(entry)
        k = seen.get(item.name, 0)
        seen[item.name] = k + 1
        out.append(((date, item.name, k), item))
    return out


class DiaryIndex:
    """Every diary entry of a store in a :class:`~wikimem.recall.lexical.bm25.BM25Index` (see the module docstring).

    Not thread-safe: :class:`~wikimem.MemoryIndex` calls it under its lock.
    """

    def __init__(self, diary: Any, *, use_jieba: bool, b: float = B):
        self.diary = diary
        self.use_jieba = use_jieba
        self.b = b  # BM25's length normalisation
        self.bm25 = BM25Index(b=b)
        self._days: dict[str, list[tuple[Key, RecallItem]]] = {}
        self._near: dict[Key, tuple[Key, ...]] = {}  # each entry's neighbours on its day (smoothing's hot path)
        self._items: dict[Key, RecallItem] = {}
        self._by_hash: dict[str, set[Key]] = {}  # hash of the embedded text -> entries (vector hits)
        self.roomed: dict[Key, RecallItem] = {}  # the entries that say where they were said (recall in a room)
        self._signature: Signature | None = None
        self._static_read = False
        self.generation = 0  # bumped by every change of what is indexed

    def __len__(self) -> int:
        return len(self._items)

    def item(self, key: Key) -> RecallItem | None:
        return self._items.get(key)

    def keys_of_hash(self, digest: str) -> list[Key]:
        """The entries whose embedded text has this hash (a vector cache row), sorted."""
        return sorted(self._by_hash.get(digest, ()))

    def items(self) -> list[RecallItem]:
        """Every entry, oldest day first, in file order within a day."""
        return [item for day in sorted(self._days) for _, item in self._days[day]]

    @property
    def near(self) -> dict[Key, tuple[Key, ...]]:
        """Each entry's neighbours on its day (entries alone on their day are left out): :meth:`neighbours` as a
        mapping, read only."""
        return self._near

    def neighbours(self, key: Key) -> tuple[Key, ...]:
        """The entries just before and after ``key`` on its day (a day is conversation-like)."""
        return self._near.get(key, ())

    def keyed(self, start: str | None = None, end: str | None = None) -> list[tuple[Key, RecallItem]]:
        """``(key, item)`` of the entries in the closed date range (all without one), in time order."""
        days = sorted(d for d in self._days if (start is None or d >= start) and (end is None or d <= end))
        return [pair for d in days for pair in self._days[d]]

    # -- freshness -----------------------------------------------------------

    def refresh(self) -> bool:
        """Re-read the days that changed since the last call; True when anything did. A diary on disk says so by its
        folder's stamps; one that has a ``signature()`` (``{date: content id}``) by it; any other is read once."""
        folder = getattr(self.diary, "diary_dir", None)
        signature_of = getattr(self.diary, "signature", None)
        if callable(signature_of):
            signature = signature_of()
        elif isinstance(folder, Path):
            signature = folder_signature(folder, _day)
        else:
            if self._static_read:
                return False
            self._static_read = True
            return self._apply_days({d: None for d in self.diary.dates()})
        if signature == self._signature:
            return False
        old = self._signature or {}
        changed = {d: None for d in old.keys() | signature.keys() if old.get(d) != signature.get(d)}
        self._signature = signature
        return self._apply_days(changed)

    def rebuild(self) -> None:
        """Forget everything and read the whole diary again."""
        self.bm25 = BM25Index(b=self.b)
        self._days, self._items, self._by_hash, self.roomed, self._near = {}, {}, {}, {}, {}
        self._signature, self._static_read = None, False
        self.generation += 1
        self.refresh()

    def _apply_days(self, days: dict[str, None]) -> bool:
        if not self._items and days:
            return self._build(days)
        changed = False
        for date in sorted(days):
            try:
                entries = _keyed(date, self.diary.day(date))
            except ValueError:  # a file named like a date that is not one (2026-02-30.md)
                continue
            changed |= self._apply_day(date, entries)
        if changed:
            self.generation += 1
        return changed

    def _build(self, days: dict[str, None]) -> bool:
        """The first read of a diary: every day parsed, then one bulk build of the BM25 index."""
        docs = []
        for date in sorted(days):
            try:
                entries = _keyed(date, self.diary.day(date))
            except ValueError:  # a file named like a date that is not one (2026-02-30.md)
                continue
            if not entries:
                continue
            self._days[date] = entries
            self._near.update(_near(entries))
            for key, item in entries:
                self._items[key] = item
                self._room(key, item)
                docs.append((key, tokenize(item_text(item), use_jieba=self.use_jieba)))
                self._by_hash.setdefault(content_hash(embed_text(item.name, item.content)), set()).add(key)
        self.bm25.extend(docs)
        if docs:
            self.generation += 1
        return bool(docs)

    def _apply_day(self, date: str, entries: list[tuple[Key, RecallItem]]) -> bool:
        old = dict(self._days.get(date, []))
        new = dict(entries)
        changed = False
        for key in old.keys() - new.keys():
            self.bm25.remove(key)
            self._unhash(key, old[key])
            del self._items[key]
            self.roomed.pop(key, None)
            self._near.pop(key, None)
            changed = True
        for key, item in new.items():
            before = old.get(key)
            if before is None or before.content != item.content:
                if before is not None:
                    self._unhash(key, before)
                self.bm25.add(key, tokenize(item_text(item), use_jieba=self.use_jieba))
                self._by_hash.setdefault(content_hash(embed_text(item.name, item.content)), set()).add(key)
                changed = True
            elif _meta(before) != _meta(item):
                changed = True
            self._items[key] = item
            self._room(key, item)
        if entries:
            self._days[date] = entries
            self._near.update(_near(entries))
        else:
            self._days.pop(date, None)
        return changed

    def _room(self, key: Key, item: RecallItem) -> None:
        if item.channel is not None or item.present:
            self.roomed[key] = item
        else:
            self.roomed.pop(key, None)

    def _unhash(self, key: Key, item: RecallItem) -> None:
        digest = content_hash(embed_text(item.name, item.content))
        keys = self._by_hash.get(digest)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_hash[digest]


def _near(day: list[tuple[Key, RecallItem]]) -> dict[Key, tuple[Key, ...]]:
    """Each entry of a day with the keys just before and after it."""
    keys = [key for key, _ in day]
    return {key: tuple(keys[j] for j in (i - 1, i + 1) if 0 <= j < len(keys)) for i, key in enumerate(keys)}


def _meta(item: RecallItem) -> tuple:
    return item.owner, item.source_conv, item.ts, item.channel, item.present


@lru_cache(maxsize=4096)
def _day(name: str) -> str | None:
    """The date a day file's name stands for, else None."""
    return name[:-3] if name.endswith(".md") and DATE_RE.fullmatch(name[:-3]) else None


class DiaryBuild:
    """The first build of a :class:`MemoryIndex`'s diary index, in a thread of its own (see :data:`DIARY_WAIT`)."""

    def __init__(self, diary: Any, use_jieba: bool, b: float, install: Callable[[DiaryBuild, DiaryIndex], None]):
        self.diary, self.use_jieba, self.b = diary, use_jieba, b
        self._install = weakref.WeakMethod(install)  # a build in flight keeps no index alive
        self.done = threading.Event()
        self.retry_at = 0.0

    def start(self) -> None:
        threading.Thread(target=self._run, name="wikimem-diary-index", daemon=True).start()

    def _run(self) -> None:
        try:
            built = DiaryIndex(self.diary, use_jieba=self.use_jieba, b=self.b)
            built.refresh()  # every day file read and indexed, outside the index's lock
            built.bm25.warm()
            install = self._install()
            if install is not None:
                install(self, built)
        except Exception:
            self.retry_at = time.monotonic() + DIARY_RETRY
            log.exception("building a diary index failed; retrying in %.0f s", DIARY_RETRY)
        finally:
            self.done.set()
