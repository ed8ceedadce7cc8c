"""The plain memory store: the wiki (:class:`MemoryStore`), the :class:`Diary`, the :class:`Journal`, the
mutation seam every write passes (:class:`Writer`, :class:`Unit` and its :class:`UnitInfo`, :class:`MutationHook`),
and the one door every file of a memory folder passes (:class:`Door`)."""

from __future__ import annotations

from wikimem.models import RecallItem
from wikimem.naming import sanitize_item_name, validate_file

from . import diary, door, journal, wiki, writer
from .diary import *  # noqa: F403
from .door import *  # noqa: F403
from .journal import *  # noqa: F403
from .wiki import *  # noqa: F403
from .writer import *  # noqa: F403

__all__ = ["RecallItem", "sanitize_item_name", "validate_file",  # (the upstream library's names here)
           *diary.__all__, *door.__all__, *journal.__all__, *wiki.__all__, *writer.__all__]
