"""A folder's history read back, and undone: the history index (``historydb``; what it answers, ``entries``),
per-item diffs (``itemdiff``), what an item was (``versions``), a commit's tree as a store (``snapshot``), replayed
answers (``answers``), and undo (``undo``: its plans, ``plans``; its links, ``undolinks``). See ARCHITECTURE.md,
"The git layer"."""

from __future__ import annotations

from . import answers, entries, historydb, itemdiff, plans, snapshot, undo, undolinks, versions
from .answers import *  # noqa: F403
from .entries import *  # noqa: F403
from .historydb import *  # noqa: F403
from .itemdiff import *  # noqa: F403
from .plans import *  # noqa: F403
from .snapshot import *  # noqa: F403
from .undo import *  # noqa: F403
from .undolinks import *  # noqa: F403
from .versions import *  # noqa: F403

__all__ = [*answers.__all__, *entries.__all__, *historydb.__all__, *itemdiff.__all__, *plans.__all__, *snapshot.__all__,
           *undo.__all__, *undolinks.__all__, *versions.__all__]
