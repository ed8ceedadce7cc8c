"""The plain memory store: the wiki (:class:`MemoryStore`), the :class:`Diary`, the :class:`Journal`, the
mutation seam every write passes (:class:`Writer`, :class:`Unit` and its :class:`UnitInfo`, :class:`MutationHook`),
and the one door every file of a memory folder passes (:class:`Door`)."""

from __future__ import annotations

from wikimem.models import RecallItem
from wikimem.naming import sanitize_item_name, validate_file

from .diary import Diary, DiaryReader, resolve_tz
from .door import GITIGNORE_NAME, JOURNAL_NAME, TOP_FILES, Door, OverlayDoor, folder_file
from .journal import Journal, diary_record, parse_record, wiki_record
from .wiki import MemoryStore, Saved, normalize_ts
from .writer import LOCK_NAME, MAX_ROUND, Landing, Mutation, MutationHook, PlainHook, Unit, UnitInfo, Writer

__all__ = [
    "Door",
    "OverlayDoor",
    "folder_file",
    "TOP_FILES",
    "JOURNAL_NAME",
    "GITIGNORE_NAME",
    "Journal",
    "wiki_record",
    "diary_record",
    "parse_record",
    "Mutation",
    "MutationHook",
    "MAX_ROUND",
    "PlainHook",
    "Writer",
    "Unit",
    "UnitInfo",
    "Landing",
    "LOCK_NAME",
    "MemoryStore",
    "Saved",
    "normalize_ts",
    "Diary",
    "DiaryReader",
    "resolve_tz",
    # upstream's wikimem.store also showed these (the face of its module path)
    "RecallItem",
    "validate_file",
    "sanitize_item_name",
]
