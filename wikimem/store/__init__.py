"""The plain memory store: the wiki (:class:`MemoryStore`), the :class:`Diary`, the :class:`Journal`, and the
mutation seam every write passes (:class:`Writer`, :class:`Unit`, :class:`MutationHook`)."""

from __future__ import annotations

from .diary import Diary, DiaryReader, resolve_tz
from .journal import Journal, diary_record, wiki_record
from .wiki import MemoryStore, normalize_ts
from .writer import LOCK_NAME, Mutation, MutationHook, PlainHook, Unit, Writer

__all__ = [
    "Journal",
    "wiki_record",
    "diary_record",
    "Mutation",
    "MutationHook",
    "PlainHook",
    "Writer",
    "Unit",
    "LOCK_NAME",
    "MemoryStore",
    "normalize_ts",
    "Diary",
    "DiaryReader",
    "resolve_tz",
]
