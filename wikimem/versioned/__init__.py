"""Versioned memory folders: every mutation one git commit (dulwich).

The only part of wikimem that imports dulwich. It plugs into the library's
mutation seam (:mod:`wikimem.mutation`) and never changes the plain store's
behaviour: a versioned folder is still an ordinary folder of markdown.
"""

from .historydb import HistoryEntry, HistoryPage
from .itemdiff import ItemChange
from .plans import Plan
from .snapshot import Snapshot
from .vstore import PACK_EVERY, Batch, CommitDiff, Committed, VersionedStore, item_etag

__all__ = ["VersionedStore", "Committed", "Batch", "CommitDiff", "HistoryEntry", "HistoryPage", "ItemChange",
           "Plan", "Snapshot", "item_etag", "PACK_EVERY"]
