"""A folder and its git remote: the transport (``remote``; its URL template ``urls``, its refs and objects
``gitio``), the owner's replica (``replica``), catching up with a moved remote (``catchup``), the checks every
incoming commit passes (``incoming``), what a transfer may take and where it waits (``transfer``: limits,
quarantine), and the staged branches' refs (``stagedrefs``). See ARCHITECTURE.md, "Replication"."""

from __future__ import annotations

from . import catchup, gitio, incoming, remote, replica, stagedrefs, transfer, urls
from .catchup import *  # noqa: F403
from .gitio import *  # noqa: F403
from .incoming import *  # noqa: F403
from .remote import *  # noqa: F403
from .replica import *  # noqa: F403
from .stagedrefs import *  # noqa: F403
from .transfer import *  # noqa: F403
from .urls import *  # noqa: F403

__all__ = [*catchup.__all__, *gitio.__all__, *incoming.__all__, *remote.__all__, *replica.__all__,
           *stagedrefs.__all__, *transfer.__all__, *urls.__all__]
