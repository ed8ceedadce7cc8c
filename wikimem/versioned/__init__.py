"""Versioned memory folders: every mutation one git commit (dulwich).

The only part of wikimem that imports dulwich. It plugs into the library's
mutation seam (:mod:`wikimem.mutation`) and never changes the plain store's
behaviour: a versioned folder is still an ordinary folder of markdown.
"""

from .historydb import HistoryEntry, HistoryPage
from .itemdiff import ItemChange
from .plans import Plan
from .snapshot import Snapshot
from .results import CommitDiff, Committed, Outcome
from .vstore import PACK_EVERY, VersionedStore

__all__ = ["VersionedStore", "Committed", "Outcome", "CommitDiff", "HistoryEntry", "HistoryPage", "ItemChange",
           "Plan", "Snapshot", "PACK_EVERY"]
