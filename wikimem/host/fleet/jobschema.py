"""The schema of the jobs database (:class:`~wikimem.host.fleet.jobs.JobStore`): its tables, its version
(``PRAGMA user_version``; a ``wikimem_schema`` row on PostgreSQL) and the migration of an older one, run on
start; a database newer than the code is refused."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from .sql import Database, Tx

__all__ = ["SCHEMA_VERSION", "TABLES", "migrate", "scope_of"]

SCHEMA_VERSION = 2  # 1: the unversioned first schema (user_version 0); 2: tenants, scopes, homes, cancel
_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    key TEXT UNIQUE,
    fingerprint TEXT NOT NULL,
    params TEXT NOT NULL,
    state TEXT NOT NULL,
    total INTEGER NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    created {real} NOT NULL,
    updated {real} NOT NULL,
    finished {real},
    tenant {text_c} NOT NULL DEFAULT '',
    scope {text_c} NOT NULL DEFAULT '',
    owner {text_c}
);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished);
CREATE TABLE IF NOT EXISTS steps (
    job TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    n INTEGER NOT NULL,
    params TEXT NOT NULL,
    state TEXT NOT NULL,
    lease_owner TEXT,
    lease_until {real},
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before {real} NOT NULL DEFAULT 0,
    result TEXT,
    error TEXT,
    home TEXT,
    finished {real},
    PRIMARY KEY (job, n)
);
CREATE INDEX IF NOT EXISTS steps_open ON steps (state, not_before);
CREATE TABLE IF NOT EXISTS tenants (tenant {text_c} PRIMARY KEY, last_claim {real} NOT NULL);
CREATE TABLE IF NOT EXISTS hosts (name TEXT PRIMARY KEY, seen {real} NOT NULL)
"""
# Version 1 → 2: what the first schema lacks (its rows are filled from their params by _fill_v2).
_V2_COLUMNS = [("jobs", "tenant", "TEXT NOT NULL DEFAULT ''"), ("jobs", "scope", "TEXT NOT NULL DEFAULT ''"),
               ("jobs", "owner", "TEXT"), ("steps", "home", "TEXT"), ("steps", "finished", "REAL")]
_V2_INDEXES = """
CREATE INDEX IF NOT EXISTS jobs_created ON jobs (created);
CREATE INDEX IF NOT EXISTS jobs_open ON jobs (state, tenant);
CREATE INDEX IF NOT EXISTS jobs_owner ON jobs (owner, state)
"""
TABLES = ("jobs", "steps", "tenants", "hosts")


def scope_of(kind: str, params: Mapping[str, Any]) -> tuple[str, str | None]:
    """``(scope, owner)`` of a job: one owner's job is scoped to its owner; a job over many owners to the owner
    prefix it was made over (a bulk rollback: its selection's prefix within its submitter's)."""
    owner = params.get("owner")
    if isinstance(owner, str) and kind != "bulk-rollback":
        return owner, owner
    persons = params.get("persons")
    if isinstance(persons, list) and persons:  # a group turn: the prefix its persons share
        return os.path.commonprefix([str(p) for p in persons]), None
    from wikimem.host.owner_ids import prefixes_of, reaches

    within = prefixes_of(params.get("within") or "")
    selection = params.get("selection")
    narrower = str(selection.get("owner_prefix") or "") if isinstance(selection, dict) else ""
    return (narrower if narrower and reaches(within, narrower) else os.path.commonprefix(list(within))), None


def migrate(db: Database) -> None:
    """Create the tables, or bring a database of an older version to :data:`SCHEMA_VERSION` (on start; safe
    when several processes start at once: each step runs in the store's one write transaction)."""
    version = db.version()
    if version > SCHEMA_VERSION:
        raise RuntimeError(f"{db.shown} is at schema version {version}, newer than this wikimem knows "
                           f"({SCHEMA_VERSION}): run the newer version, or restore a backup of the database")
    if version == SCHEMA_VERSION:
        return
    old = "jobs" in _tables(db)
    db.script(_SCHEMA)
    with db.write(schema=True) as tx:
        if db.version() == SCHEMA_VERSION:
            return  # another process migrated meanwhile
        if old:
            for table, column, decl in _V2_COLUMNS:
                if column not in db.columns(table):
                    tx.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
            _fill_v2(tx)
        for statement in (s.strip() for s in _V2_INDEXES.split(";")):
            if statement:
                tx.execute(statement)
        db.set_version(tx, SCHEMA_VERSION)


def _tables(db: Database) -> set[str]:
    if db.postgres:
        return {r[0] for r in db.rows("SELECT table_name FROM information_schema.tables "
                                      "WHERE table_schema = current_schema()")}
    return {r[0] for r in db.rows("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _fill_v2(tx: Tx) -> None:
    """Version 1 rows: their scope and owner, from their params."""
    for job_id, kind, params in tx.rows("SELECT id, kind, params FROM jobs"):
        scope, owner = scope_of(kind, json.loads(params))
        tx.execute("UPDATE jobs SET scope = ?, owner = ? WHERE id = ?", (scope, owner, job_id))
    tx.execute("UPDATE steps SET finished = (SELECT j.finished FROM jobs j WHERE j.id = steps.job) "
               "WHERE state IN ('done', 'failed')")
