"""Operating a cluster: verify a host against the remote, restore it (or one owner) from the remote,
push what is pending, and clean the copies a host no longer serves after hosts were added or removed.

These run on one host's data root (the ``wikimem cluster …`` commands), with
the same ``WIKIMEM_REMOTE`` as the host. They never rewrite history: a copy
is only ever fast-forwarded, pushed with compare-and-swap, or removed once
the remote is shown to hold exactly it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from wikimem.errors import DamagedFolder, RemoteError, RemoteMissing, RemoteRefused
from wikimem.host.owner_ids import decode_owner_id

from .shards import Ring

__all__ = ["OwnerCheck", "verify", "restore", "push_all", "rebalance", "remote_owner_ids"]


@dataclass
class OwnerCheck:
    """How one local owner compares with its remote.

    ``state``: ``equal``; ``ahead`` (commits not pushed yet: async lag);
    ``behind`` (the remote has newer commits: caught up on next use);
    ``diverged``; ``dirty`` (hand edits not committed); ``missing`` (not on
    the remote); ``unreachable``; ``refused`` (the remote's main breaks the
    rules of :mod:`wikimem.versioned.replication.incoming`: never applied, ``detail``
    says why); ``damaged`` (the local folder cannot be read: see
    ``wikimem repair``).
    """

    id: str
    state: str
    local: str | None
    remote: str | None
    detail: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _need_remote(host) -> None:
    if host.replication is None:
        raise ValueError("no remote: set WIKIMEM_REMOTE")


def check_owner(host, owner_id: str) -> OwnerCheck:
    """Compare one local owner with its remote (fetching its objects; the branch and files are not touched)."""
    from wikimem.versioned import Replica, VersionedStore, is_ancestor

    path = host.owner_path(owner_id)
    try:
        vs = VersionedStore(path)
    except Exception as exc:  # a repository that does not even open
        return OwnerCheck(owner_id, "damaged", None, None, f"{type(exc).__name__}: {exc}")
    try:
        vs.replica = Replica(host.replication.remote(path.name),
                             report=lambda refusal: host.replication.note(path.name, refusal))
        local = vs.head() or None
        try:
            theirs = vs.replica.fetch(vs.git)
        except RemoteRefused as exc:
            return OwnerCheck(owner_id, "refused", local, exc.commit, str(exc))
        except RemoteError as exc:
            return OwnerCheck(owner_id, "unreachable", local, None, str(exc))
        if not theirs:
            return OwnerCheck(owner_id, "missing", local, None)
        remote_head = theirs.decode()
        try:
            dirty = vs.external_changes()
        except DamagedFolder as exc:
            return OwnerCheck(owner_id, "damaged", local, remote_head, str(exc))
        mine = local.encode() if local else None  # None: no commit here yet, the remote is ahead
        if local == remote_head:
            state = "dirty" if dirty else "equal"
        elif mine is not None and is_ancestor(vs.git, theirs, mine):
            state = "ahead"
        elif is_ancestor(vs.git, mine, theirs):
            state = "behind"
        else:
            state = "diverged"
        return OwnerCheck(owner_id, state, local, remote_head, ", ".join(dirty))
    finally:
        vs.close()


def verify(host, owner_ids: list[str] | None = None) -> list[OwnerCheck]:
    """Every local owner (or the given ones) compared with its remote."""
    _need_remote(host)
    return [check_owner(host, i) for i in (owner_ids or host.owner_ids())]


def restore(host, owner_ids: list[str]) -> dict[str, str]:
    """Bring each owner from the remote: cloned when this host lacks it, else fetched and fast-forwarded.

    ``{owner id: "cloned" | "caught up" | "not on the remote" | "refused: <why>"}`` (a remote whose
    commits break the rules of :mod:`wikimem.versioned.replication.incoming` is never applied).
    """
    _need_remote(host)
    out = {}
    for owner_id in owner_ids:
        had = host.exists(owner_id)
        try:
            owner = host.owner(owner_id)
            if had:
                owner.vstore.catch_up()
        except RemoteMissing:
            out[owner_id] = "not on the remote"
            continue
        except LookupError:
            out[owner_id] = "not on the remote"
            continue
        except RemoteRefused as exc:
            out[owner_id] = f"refused: {exc}"
            continue
        out[owner_id] = "caught up" if had else "cloned"
    return out


def push_all(host) -> dict[str, int]:
    """Push every owner's pending commits now (async lag, or a folder that predates the remote).

    Returns ``{owner id: lag before}``.
    """
    _need_remote(host)
    lags = host.replication.lags((i, host.owner_path(i)) for i in host.owner_ids())
    for owner_id in lags:
        host.owner(owner_id).vstore.push_pending()
    return lags


def rebalance(host, servers: list[str], me: str, dry_run: bool = False) -> dict[str, str]:
    """After hosts were added or removed: drop the local copies of owners nginx now sends elsewhere.

    A copy goes only when its remote holds exactly it (pending commits are
    pushed first); otherwise it stays and is reported. ``{owner id: what
    happened}`` for every owner that does not belong here.
    """
    _need_remote(host)
    ring = Ring(servers)
    if me not in servers:
        raise ValueError(f"{me!r} is not one of the servers {servers}")
    out = {}
    for owner_id in host.owner_ids():
        if ring.server_for(owner_id) == me:
            continue
        check = check_owner(host, owner_id)
        if check.state == "ahead" and not dry_run:
            host.owner(owner_id).vstore.push_pending()
            check = check_owner(host, owner_id)
        if check.state != "equal":
            out[owner_id] = f"kept: {check.state} ({ring.server_for(owner_id)} serves it)"
            continue
        if not dry_run:
            host.drop_local(owner_id)
        verb = "would drop" if dry_run else "dropped"
        out[owner_id] = f"{verb}: on the remote, {ring.server_for(owner_id)} serves it"
    return out


def remote_owner_ids(template: str) -> list[str]:
    """The owners a file:// (or plain path) remote holds, from its folder; other schemes cannot list."""
    parts = urlsplit(template)
    if parts.scheme not in ("", "file"):
        raise ValueError("only a file:// remote can be listed; give the owners with --owner or --owners-file")
    path = Path(parts.path if parts.scheme else template)
    folder, name = path.parent, path.name
    if "{owner}" in str(folder) or name.count("{owner}") != 1:
        raise ValueError("cannot list a remote whose {owner} is not in its last path part")
    before, after = name.split("{owner}")
    ids = []
    for entry in sorted(os.listdir(folder)) if folder.is_dir() else []:
        if entry.startswith(before) and entry.endswith(after) and len(entry) > len(before) + len(after):
            owner_id = decode_owner_id(entry[len(before):len(entry) - len(after)])
            if owner_id is not None:
                ids.append(owner_id)
    return ids
