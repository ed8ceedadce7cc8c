"""Versioned memory folders: every mutation one git commit (dulwich).

The only part of wikimem that imports dulwich. It plugs into the library's
mutation seam (:mod:`wikimem.store.writer`) and never changes the plain store's
behaviour: a versioned folder is still an ordinary folder of markdown.
"""

from .bundles import BundleError, branch_head, bundle_refs, restore_bundle, write_bundle_of
from .catchup import is_ancestor
from .forget import Forgotten
from .historydb import HistoryEntry, HistoryPage
from .itemdiff import ItemChange
from .objects import folder_head
from .outcomes import CommitDiff, Committed, Outcome
from .overlay import OverlayCache, ViewStore
from .plans import Plan
from .pruning import Pruned, prune
from .remote import Remote, remote_url, validate_template
from .replica import MODES, Replica, folder_lag
from .rewrite import PLACEHOLDER
from .snapshot import Snapshot
from .stagedrefs import discarded_ages, folder_staged, validate_staged_run
from .staging import SETTLING_ACTIONS, Overlay, StagedBranch, StagedReview, StagedRun, Staging, item_key
from .tombstones import bury, mark, marked
from .transfer import TransferLimits
from .undo import UNDO_KINDS, Undo, UndoKind
from .undolinks import undo_info, undo_links
from .versions import blame, item_versions
from .vstore import PACK_EVERY, VersionedStore

__all__ = [
    "VersionedStore", "PACK_EVERY", "Undo", "UndoKind", "UNDO_KINDS", "Committed", "Outcome", "CommitDiff",
    "HistoryEntry", "HistoryPage", "ItemChange", "Plan", "Snapshot", "blame", "item_versions", "is_ancestor",
    "Remote", "TransferLimits", "remote_url", "validate_template", "MODES", "Replica", "folder_lag", "folder_head",
    "undo_info",
    "undo_links", "Forgotten", "PLACEHOLDER", "bury", "mark", "marked", "prune", "Pruned", "BundleError",
    "branch_head", "bundle_refs",
    "restore_bundle", "write_bundle_of",
    "undo_links", "Staging", "StagedBranch", "StagedRun", "StagedReview", "Overlay", "SETTLING_ACTIONS", "item_key",
    "OverlayCache", "ViewStore",
    "folder_staged", "validate_staged_run", "discarded_ages",
]
