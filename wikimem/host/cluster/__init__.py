"""More than one host: replication to a git remote, peers, nginx's shard ring, cluster maintenance."""

from __future__ import annotations

from . import maintenance, peers, replication, shards
from .maintenance import *  # noqa: F403
from .peers import *  # noqa: F403
from .replication import *  # noqa: F403
from .shards import *  # noqa: F403

__all__ = [*maintenance.__all__, *peers.__all__, *replication.__all__, *shards.__all__]
