"""BM25 over a store's wiki items, kept in step with the store file by file (:class:`WikiIndex`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from wikimem.models import RecallItem

from .filler import is_content_free, speaker_of
from .lexical import B, BM25Index
from .smoothing import is_transcript
from .tokenizer import cached_terms, est_tokens, item_text, tokenize

__all__ = ["WikiIndex"]

Key = tuple[str, str]  # (file, name)


class WikiIndex:
    """Every wiki item of a store in a :class:`~wikimem.recall.lexical.bm25.BM25Index`, keyed ``(file, name)``.

    Follows ``store.revision``: on a change it asks the store which files
    changed and re-reads only those, re-indexing only the items whose text
    differs. ``generation`` is bumped by every change of what is indexed.
    Not thread-safe: :class:`~wikimem.MemoryIndex` calls it under its lock.
    """

    def __init__(self, store: Any, *, use_jieba: bool, b: float = B):
        self.store = store
        self.use_jieba = use_jieba
        self.b = b  # BM25's length normalisation
        self.bm25 = BM25Index(b=b)
        self.built = False
        self.generation = 0
        self._files: dict[str, dict[str, RecallItem]] = {}  # file -> name -> item, as indexed
        self.roomed: dict[Key, RecallItem] = {}  # the items that say where they were said (recall in a room)
        # (file, name) -> (item, tokens_est, links), valid while the index holds that item
        self._facts: dict[Key, tuple[RecallItem, int, list]] = {}
        self._revision: Any = None
        # file -> {name: the keys just before and after it}: smoothing's neighbours, made on first
        # use of the file; empty for a file that is not conversation-like
        self._order: dict[str, dict[str, tuple[Key, ...]]] = {}
        self._conversational: tuple[int, bool] = (-1, False)  # (generation, any conversation-like file)
        # (file, name) -> its neighbours, over every conversation-like file: _order flattened for smoothing's hot
        # path; the files changed since are merged in on the next use (None: every file)
        self._near: dict[Key, tuple[Key, ...]] = {}
        self._near_stale: set[str] | None = None
        # file -> the speakers of its labelled turns; (file, name) -> (item, content free?)
        self._speakers: dict[str, tuple[str, ...]] = {}
        self._free: dict[Key, tuple[RecallItem, bool]] = {}
        self.transcripts: Callable[[str, list[RecallItem]], bool] = is_transcript

    def __len__(self) -> int:
        return len(self.bm25)

    # -- what is indexed -----------------------------------------------------

    def get(self, file: str, name: str) -> RecallItem | None:
        """The indexed item, or None."""
        return self._files.get(file, {}).get(name)

    def item(self, key: Key) -> RecallItem:
        """The indexed item of a key the index holds (a BM25 or vector hit)."""
        return self._files[key[0]][key[1]]

    def items(self) -> list[RecallItem]:
        """Every indexed item, file by file in file order."""
        return [item for items in self._files.values() for item in items.values()]

    def holds(self, item: RecallItem) -> bool:
        """True when this very item object is what the index holds (not one replaced since)."""
        return self.get(item.file, item.name) is item

    def terms(self, item: RecallItem) -> tuple[str, ...]:
        """The item's distinct terms when indexed, else its terms (tokenised, remembered)."""
        if self.holds(item):
            return self.bm25.doc_terms((item.file, item.name))
        return cached_terms(item_text(item), self.use_jieba)

    def neighbours(self, key: Key) -> tuple[Key, ...]:
        """The items just before and after ``key`` in its file, when the file is conversation-like."""
        around = self._order.get(key[0])  # (the hot path of smoothing: the file's map, made once)
        return (around if around is not None else self._around(key[0])).get(key[1], ())

    def near(self) -> dict[Key, tuple[Key, ...]]:
        """:meth:`neighbours` as a mapping (the keys of files that are not conversation-like left out), read only:
        kept up to date file by file, as the index changes."""
        stale = self._near_stale
        if stale is None:
            self._near, stale = {}, set(self._files)
        near = self._near
        for file in stale:
            near.update({(file, name): keys for name, keys in self._around(file).items()})
        self._near_stale = set()
        return near

    def conversational(self) -> bool:
        """Whether any file is conversation-like (looked at once per :attr:`generation`)."""
        if self._conversational[0] != self.generation:
            self._conversational = (self.generation, any(self._around(f) for f in self._files))
        return self._conversational[1]

    def conversations(self) -> frozenset[str]:
        """The conversation-like files (the ones smoothing and neighbour context treat as conversations)."""
        return frozenset(f for f in self._files if self._around(f))

    def _around(self, file: str) -> dict[str, tuple[Key, ...]]:
        around = self._order.get(file)
        if around is None:
            items = self._files.get(file)
            if items is None:
                return {}
            names = list(items) if self.transcripts(file, list(items.values())) else []
            around = self._order[file] = {
                n: tuple((file, names[j]) for j in (i - 1, i + 1) if 0 <= j < len(names))
                for i, n in enumerate(names)}
        return around

    def content_free(self, item: RecallItem) -> bool:
        """Whether an item is small talk only (:func:`~wikimem.recall.filler.is_content_free`, its file's
        speakers aside); remembered while the index holds it."""
        key = (item.file, item.name)
        cached = self._free.get(key)
        if cached is not None and cached[0] is item:
            return cached[1]
        speakers = self._speakers.get(item.file)
        if speakers is None:
            found = {speaker_of(i.content) for i in self._files.get(item.file, {}).values()}
            speakers = self._speakers[item.file] = tuple(sorted(s for s in found if s))
        value = is_content_free(item.content, speakers, use_jieba=self.use_jieba)
        if self.holds(item):
            self._free[key] = (item, value)
        return value

    def facts(self, item: RecallItem) -> tuple[int, list]:
        """The item's token estimate and links, remembered while the index holds it."""
        key = (item.file, item.name)
        cached = self._facts.get(key)
        if cached is not None and cached[0] is item:
            return cached[1], cached[2]
        tokens, links = est_tokens(item_text(item)), item.links
        if self.holds(item):
            self._facts[key] = (item, tokens, links)
        return tokens, links

    # -- keeping it fresh ------------------------------------------------------

    def rebuild(self) -> None:
        """Read the whole store again."""
        revision = self.store.revision
        bm25 = BM25Index(b=self.b)
        files: dict[str, dict[str, RecallItem]] = {}
        items = self.store.items()
        for item in items:
            files.setdefault(item.file, {})[item.name] = item
        bm25.extend(((i.file, i.name), tokenize(item_text(i), use_jieba=self.use_jieba)) for i in items)
        self.bm25, self._files, self._facts, self._order = bm25, files, {}, {}
        self._near, self._near_stale = {}, None
        self._speakers, self._free = {}, {}
        self.roomed = {(i.file, i.name): i for i in items if i.channel is not None or i.present}
        self._revision, self.built = revision, True
        self.generation += 1

    def catch_up(self) -> bool:
        """Re-read the files changed since ``store.revision`` was last seen.

        False when only a rebuild can tell: never built, or the store no
        longer knows what changed.
        """
        revision = self.store.revision
        if not self.built:
            return False
        if revision == self._revision:
            return True
        changed = self.store.changed_files_since(self._revision)
        if changed is None:
            return False
        self.refresh(changed)
        self._revision = revision
        return True

    def refresh(self, files: Iterable[str]) -> None:
        """Re-read these files (every one before changing any: an invalid name changes nothing)."""
        fresh = [(f, self.store.items(f)) for f in sorted(set(files))]
        for file, items in fresh:
            self.apply_file(file, items)

    def apply_file(self, file: str, items: list[RecallItem]) -> None:
        """Diff one file's items against the index; re-index only what changed."""
        new = {i.name: i for i in items}
        old = self._files.get(file, {})
        changed = list(new) != list(old)  # the order of items decides neighbours
        for name in old.keys() - new.keys():
            self.bm25.remove((file, name))
            self._facts.pop((file, name), None)
            self.roomed.pop((file, name), None)
            changed = True
        for name, item in new.items():
            before = old.get(name)
            if before is None or before.content != item.content:
                self.bm25.add((file, name), tokenize(item_text(item), use_jieba=self.use_jieba))
                changed = True
            elif (before.owner, before.source_conv, before.ts, before.channel, before.present) != (
                    item.owner, item.source_conv, item.ts, item.channel, item.present):
                changed = True  # provenance only: same terms, new item object
            if item.channel is not None or item.present:
                self.roomed[(file, name)] = item
            else:
                self.roomed.pop((file, name), None)
        if new:
            self._files[file] = new
        else:
            self._files.pop(file, None)
        if changed:
            self.generation += 1
            self._order.pop(file, None)
            for name in old:
                self._near.pop((file, name), None)
            if self._near_stale is not None:
                self._near_stale.add(file)
            self._speakers.pop(file, None)
