"""More than one host: replication to a git remote, peers, nginx's shard ring, cluster maintenance."""

from __future__ import annotations

from .maintenance import OwnerCheck, push_all, rebalance, remote_owner_ids, restore, verify
from .peers import Breaker, Peers, merge_owner_pages
from .replication import PROBE_FOLDER, Pusher, Replication, Settings
from .shards import Ring

__all__ = [
    "Ring",
    "Peers",
    "Breaker",
    "merge_owner_pages",
    "Settings",
    "Replication",
    "Pusher",
    "PROBE_FOLDER",
    "OwnerCheck",
    "verify",
    "restore",
    "push_all",
    "rebalance",
    "remote_owner_ids",
]
