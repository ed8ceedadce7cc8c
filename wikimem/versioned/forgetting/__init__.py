"""Forgetting an item with its history: the run (``forget``), the object rewrite (``rewrite``), dropping
unreachable objects (``pruning``) and the erasure's tombstone (``tombstones``). See ARCHITECTURE.md, "Erasure"."""

from __future__ import annotations

from . import forget, pruning, rewrite, tombstones
from .forget import *  # noqa: F403
from .pruning import *  # noqa: F403
from .rewrite import *  # noqa: F403
from .tombstones import *  # noqa: F403

__all__ = [*forget.__all__, *pruning.__all__, *rewrite.__all__, *tombstones.__all__]
