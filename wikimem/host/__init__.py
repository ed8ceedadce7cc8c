"""The host: many owners' versioned memories under one data root (see :mod:`.host`).

Its parts: :class:`Host` (``host.py``) and :class:`Owner` (``owner.py``);
``config.py`` is the one composition root; ``fleet/`` spans owners (jobs, the
run index, bulk rollback), ``cluster/`` spans hosts (replication, peers,
shards), ``access/`` says who may do what (tokens, operators, quotas).
"""

from __future__ import annotations

from wikimem.context import new_run_id
from wikimem.errors import BadRequest, LLMNotConfigured, QueueFull, ToolCallError

from .access import OwnerQuota
from .assembly import make_host
from .auditlog import AUDIT_LOGGER, audit, result_of
from .backups import make_backup, restore_backup
from .channels import ChannelResult, Channels, GroupTurn
from .characters import Character, Characters, Migration, character_owner, slug_of
from .config import (
    Config,
    ConfigError,
    build_host,
    build_metrics,
    load_config,
    mark_worker_dead,
    prepare_embedder,
    prepare_metrics_dir,
    read_setting,
)
from .demo import bad_run_hint, seed_demo
from .fleet import JobQuery, RunQuery
from .gate import Act, Ask, Caller, Gate, job_context
from .host import EXPORT_TYPES, MAX_PAGE, Host, HostParts
from .imports import (
    BUNDLE_SUFFIX,
    IMPORT_ACTOR,
    SUPPORTED_CARDS,
    CardImported,
    CardPlan,
    ChatPreview,
    Imports,
    PersonImported,
    base64_size,
    decode_base64,
    owner_of_file,
)
from .instants import parse_instant
from .memorizing import MemorizeResult
from .owner import UNDO_TARGETS, BatchResult, Owner, OwnerStats
from .owner_ids import (
    Within,
    covers,
    decode_owner_id,
    encode_owner_id,
    reaches,
    scope_prefix,
    scope_prefixes,
    scope_text,
    validate_owner_id,
    within_json,
    within_of,
)
from .review import HISTORY_FILTERS
from .roomcontext import ChannelContext, persons_of
from .settings import SETTINGS_FIELDS, SHARED_WRITES

__all__ = [
    "make_backup", "restore_backup",
    "bad_run_hint", "seed_demo", "parse_instant", "HISTORY_FILTERS", "SETTINGS_FIELDS", "SHARED_WRITES",
    "Character", "Characters", "Migration", "character_owner", "slug_of", "Channels", "GroupTurn", "ChannelResult",
    "ChannelContext", "persons_of",
    "Imports", "CardImported", "CardPlan", "ChatPreview", "PersonImported", "owner_of_file", "BUNDLE_SUFFIX",
    "IMPORT_ACTOR", "SUPPORTED_CARDS", "decode_base64", "base64_size",
    "Host", "HostParts", "make_host",
    "Owner", "OwnerStats", "BatchResult", "MemorizeResult", "UNDO_TARGETS", "new_run_id",
    "validate_owner_id", "encode_owner_id", "decode_owner_id", "scope_prefix",
    "Within", "within_of", "reaches", "covers", "scope_prefixes", "scope_text", "within_json",
    "BadRequest", "ToolCallError", "LLMNotConfigured", "QueueFull", "MAX_PAGE", "EXPORT_TYPES", "OwnerQuota",
    "RunQuery", "JobQuery", "Act", "Ask", "Caller", "Gate", "job_context",
    "Config", "ConfigError", "load_config", "read_setting", "build_host", "audit", "result_of", "AUDIT_LOGGER",
    "build_metrics", "prepare_metrics_dir", "prepare_embedder", "mark_worker_dead",
]
