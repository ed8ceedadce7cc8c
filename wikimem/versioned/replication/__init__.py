"""A folder and its git remote: the transport (``remote``), the owner's replica (``replica``), catching up
with a moved remote (``catchup``), the checks every incoming commit passes (``incoming``), and the staged
branches' refs (``stagedrefs``). See ARCHITECTURE.md, "Replication"."""

from __future__ import annotations

from . import catchup, incoming, remote, replica, stagedrefs
from .catchup import *  # noqa: F403
from .incoming import *  # noqa: F403
from .remote import *  # noqa: F403
from .replica import *  # noqa: F403
from .stagedrefs import *  # noqa: F403

__all__ = [*catchup.__all__, *incoming.__all__, *remote.__all__, *replica.__all__, *stagedrefs.__all__]
