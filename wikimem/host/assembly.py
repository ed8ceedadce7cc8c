"""The assembly of a :class:`~wikimem.host.Host` from its parts, the second half of the composition root:
:func:`wikimem.host.build_host` (``config.py``) turns a :class:`~wikimem.host.Config` into the options of
:func:`make_host`, which makes the run index, the replication, the owners, the jobs, the fleet, probation
and erasure, wires them to each other once, and hands them to the :class:`Host`. Tests call it with
parts of their own (an embedder, a chat model, a policy)."""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path
from typing import Any

from wikimem.errors import NotFound
from wikimem.host.cluster import Peers, Replication, Settings
from wikimem.host.fleet import (
    APPROVE_JOB,
    CHANNEL_MEMORIZE,
    DISCARD_JOB,
    ERASE,
    FORGET,
    IMPORT_CHAT,
    INDEX_PATH,
    JOB_KIND,
    JOBS_FILE,
    MEMORIZE,
    STAGED_PATH,
    Erasure,
    Fleet,
    HostJobs,
    Limits,
    Probation,
    RunIndex,
    StagedIndex,
    channel_handler,
    memorize_handler,
    staged_handler,
)
from wikimem.host.fleet import handler as bulk_handler

from .access import OwnerQuota
from .backups import known_backups
from .channels import Channels
from .characters import Characters
from .gate import Gate
from .host import Host, HostParts
from .imports import Imports, chat_handler
from .metrics import NULL_METRICS, NullMetrics, TimedEmbedder
from .owner import Owner
from .owners import Owners
from .probation import StagingPolicy
from .retention import Retention

__all__ = ["make_host"]


def make_host(data_root: Path | str, *, index_cache: int = 64, embedder: Any = None, llm: Any = None,
              recall: Any = None, quota: OwnerQuota | None = None, replication: Settings | None = None,
              peers: Peers | None = None, metrics: NullMetrics = NULL_METRICS, database: str | None = None,
              name: str | None = None, job_limits: Limits | None = None, staging: StagingPolicy | None = None,
              retention: Retention | None = None, default_tz: str | None = None,
              memorize_facts: str = "direct") -> Host:
    """A :class:`Host` of the owners under ``data_root``, for this process.

    ``database``: the ``postgresql://`` URL a cluster's hosts share for the run index and the jobs (None:
    SQLite files in the data root); ``name`` names this host there (default: the machine's name and the data
    root); ``job_limits`` bound what one tenant may queue; ``staging`` is the policy of runs on probation;
    ``replication`` makes every owner replicate to its own git remote (SPEC §9); ``peers`` are the other hosts
    of the cluster, asked for listings; ``default_tz`` the time zone of owners without one (``WIKIMEM_TZ``);
    ``memorize_facts`` where memorize's facts go without a character (``WIKIMEM_MEMORIZE_FACTS``)."""
    root = Path(data_root)
    retention = retention or Retention()
    name = name or f"{socket.gethostname()}:{root.resolve()}"
    if metrics.enabled and embedder is not None:  # with real metrics the embedder is timed per request
        from wikimem.vectors import shared_worker

        embedder = TimedEmbedder(embedder)
        shared_worker().on_backlog.append(metrics.embedding_backlog)
    # Runs of every owner, fed whenever an owner's main moves (fleet/runindex.py); derived, rebuildable.
    run_index = RunIndex(database or root / INDEX_PATH, host=name)
    (root / "owners").mkdir(parents=True, exist_ok=True)
    with os.scandir(root / "owners") as entries:
        run_index.start(has_owners=any(entries))
    replicating = (Replication(replication, state_dir=root / "replication", metrics=metrics)
                   if replication is not None else None)
    owners = Owners(root, open_owner=functools.partial(Owner, embedder=embedder, llm=llm, recall=recall,
                                                       metrics=metrics),
                    run_index=run_index, replication=replicating, index_cache=index_cache, quota=quota,
                    retention=retention, metrics=metrics, default_tz=default_tz)
    # With a remote this host can act on any owner: it takes over the steps of a host that is gone.
    jobs = HostJobs(database or root / JOBS_FILE, host=name, limits=job_limits or Limits(),
                    retention=retention.jobs, foreign=replicating is not None, count=metrics.job_step)
    fleet = Fleet(run_index, owners, jobs, peers=peers, lock_dir=root / INDEX_PATH.parent)
    probation = Probation(StagedIndex(database or root / STAGED_PATH), owners, jobs, policy=staging)
    owners.on_open.append(probation.attach)
    owners.on_clone.append(probation.sync)  # (the staged runs a clone brought)
    owners.on_drop.append(probation.forget_copy)
    erasure = Erasure(root, owners, jobs, run_index=run_index, replication=replicating,
                      retention=retention.receipts, staged_index=probation.index,
                      backups=functools.partial(known_backups, root))
    owners.on_erased.append(erasure.drop_erased)
    jobs.maintenance += [fleet.sweep_run_index, probation.tick, erasure.maintain, erasure.sweep]
    jobs.register(JOB_KIND, bulk_handler(owners.owner))
    jobs.register(ERASE, erasure.run_erase)
    jobs.register(FORGET, erasure.run_forget)
    for kind in (APPROVE_JOB, DISCARD_JOB):
        jobs.register(kind, staged_handler(owners.owner, kind))
    # Every change an edge asks for passes the gate: its write context, staging decision and audit event.
    gate = Gate(owners.owner, lambda: probation.policy, erasure.digest,
                shared_writes=lambda character: characters.shared_writes(character))
    # The bot's characters, each defined in its own owner char:<id> (host/characters.py).
    characters = Characters(owner=owners.owner, ensure=owners.ensure, ids=owners.owner_ids, gate=gate)
    owners.on_open.append(functools.partial(_with_characters, characters, owners, memorize_facts))
    # Cards, chats and persons from elsewhere; memories back as a lorebook (host/imports/).
    imports = Imports(owners=owners, characters=characters, jobs=jobs, llm=llm,
                      export=lambda owner_id, fmt, by: host.export_owner(owner_id, fmt, by=by))
    jobs.register(IMPORT_CHAT, chat_handler(owners.owner, lambda: jobs.store))
    if replicating is not None:
        replicating.erased = erasure.erased_copy
        replicating.resume(owners.owner, owners.folders)
    # Group chats: a turn of several persons, each one's part filed in that person's folder (host/channels.py).
    channels = Channels(owner=owners.owner, characters=characters, llm=llm, jobs=jobs, default_tz=default_tz)
    host = Host(HostParts(owners, jobs, run_index, fleet, probation, erasure, gate, characters, metrics, retention,
                          name, replication=replicating, peers=peers, embedder=embedder, llm=llm, recall=recall,
                          database=database, default_tz=default_tz, channels=channels, imports=imports))
    # What reads the host's own settings when it runs: the memorize retry (host.memorize_retry), the discarded runs.
    jobs.register(MEMORIZE, memorize_handler(host))
    jobs.register(CHANNEL_MEMORIZE, channel_handler(host))
    jobs.maintenance.append(host.sweep_discarded)
    return host


def _with_characters(characters: Characters, owners: Owners, memorize_facts: str, owner: Owner) -> None:
    """What an opened owner needs of the host's characters: the registry (memorize as one), where memorize's facts
    go without one, and each character's profile (``char:<id>``, read by a retrieve as that character)."""
    owner.characters = characters
    owner.memorize_facts = memorize_facts

    def profile_of(character: str) -> Owner | None:
        try:
            return owners.owner(f"char:{character}")
        except NotFound:
            return None

    owner.profile_of = profile_of
