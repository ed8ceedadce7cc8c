"""Versioned memory folders: every mutation one git commit (dulwich).

The only part of wikimem that imports dulwich. It plugs into the library's
mutation seam (:mod:`wikimem.store.writer`) and never changes the plain store's
behaviour: a versioned folder is still an ordinary folder of markdown. The
store's core is at the top (``vstore``, ``objects``, ``intent``, ``recovery``,
``staging``, ``bundles``, ``repair``…); its rooms are ``history/`` (index,
diffs, undo), ``replication/`` (remote, replica, catch-up, incoming checks)
and ``forgetting/`` (forget, rewrite, pruning, tombstones).
"""

from .bundles import BundleError, branch_head, bundle_refs, restore_bundle, write_bundle_of
from .forgetting import PLACEHOLDER, Forgotten, Pruned, bury, mark, marked, prune, prune_remote
from .history import (
    UNDO_KINDS,
    CommitDiff,
    HistoryEntry,
    HistoryPage,
    ItemChange,
    Plan,
    Snapshot,
    Undo,
    UndoKind,
    blame,
    item_versions,
    undo_info,
    undo_links,
)
from .objects import folder_head
from .outcomes import Committed, Outcome
from .overlay import OverlayCache, ViewStore
from .replication import (
    MODES,
    Remote,
    Replica,
    TransferLimits,
    discarded_ages,
    folder_lag,
    folder_staged,
    is_ancestor,
    remote_url,
    validate_staged_run,
    validate_template,
)
from .staging import SETTLING_ACTIONS, Overlay, StagedBranch, StagedReview, StagedRun, Staging, item_key
from .target import Target
from .vstore import PACK_EVERY, VersionedStore

__all__ = [
    # the store's core
    "VersionedStore", "PACK_EVERY", "Committed", "Outcome", "folder_head", "Target", "OverlayCache", "ViewStore",
    "BundleError", "branch_head", "bundle_refs", "restore_bundle", "write_bundle_of",
    "Staging", "StagedBranch", "StagedRun", "StagedReview", "Overlay", "SETTLING_ACTIONS", "item_key",
    # history/
    "Undo", "UndoKind", "UNDO_KINDS", "CommitDiff", "HistoryEntry", "HistoryPage", "ItemChange", "Plan", "Snapshot",
    "blame", "item_versions", "undo_info", "undo_links",
    # replication/
    "Remote", "remote_url", "validate_template", "MODES", "Replica", "folder_lag", "is_ancestor", "folder_staged",
    "validate_staged_run", "TransferLimits", "discarded_ages",
    # forgetting/
    "Forgotten", "PLACEHOLDER", "bury", "mark", "marked", "prune", "Pruned", "prune_remote",
]
