"""The schema of ``jobs.sqlite3`` is versioned: a database of the previous version is migrated on start.

``V1_SCHEMA`` is the schema the jobs store had before it was versioned
(``PRAGMA user_version`` 0), copied from that code; the fixture builds such a
database with a queued memorize job, a finished one and a bulk job half done,
as a host of that version would have left them.
"""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from wikimem.host.fleet import JobQuery, JobRunner, JobStore
from wikimem.host.fleet.jobs import SCHEMA_VERSION

V1_SCHEMA = """
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
    created REAL NOT NULL,
    updated REAL NOT NULL,
    finished REAL
);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished);
CREATE TABLE IF NOT EXISTS steps (
    job TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    n INTEGER NOT NULL,
    params TEXT NOT NULL,
    state TEXT NOT NULL,            -- pending | running | done | failed
    lease_owner TEXT,
    lease_until REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    result TEXT,
    error TEXT,
    PRIMARY KEY (job, n)
);
CREATE INDEX IF NOT EXISTS steps_open ON steps (state, not_before);
"""

QUEUED = "job_20260101T000000Z_aaaaaaaaaaaa"
FINISHED = "job_20260101T000001Z_bbbbbbbbbbbb"
BULK = "job_20260101T000002Z_cccccccccccc"


def _v1_database(path) -> None:
    """A jobs.sqlite3 as the unversioned code left it."""
    now = time.time()
    db = sqlite3.connect(path)
    db.executescript(V1_SCHEMA)
    rows = [
        (QUEUED, "memorize", "memorize\nuser:ann\nk1", "f1", json.dumps({"owner": "user:ann", "run": "run_1"}),
         "queued", 1, 0, 0, now - 30, now - 30, None),
        (FINISHED, "memorize", None, "f2", json.dumps({"owner": "user:bob", "run": "run_2"}), "done", 1, 1, 0,
         now - 20, now - 19, now - 19),
        (BULK, "bulk-rollback", None, "f3", json.dumps({"selection": {"actor": "x"}, "within": "user:", "force": False,
                                                        "actor": "alice"}), "running", 2, 1, 0, now - 10, now - 9,
         None),
    ]
    db.executemany("INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    steps = [
        (QUEUED, 0, json.dumps({"owner": "user:ann", "turn": "we went to the sea", "run": "run_1"}), "pending", None,
         None, 0, 0, None, None),
        (FINISHED, 0, json.dumps({"owner": "user:bob", "turn": "tea", "run": "run_2"}), "done", None, None, 1, 0,
         json.dumps({"written": 1}), None),
        (BULK, 0, json.dumps({"owner": "user:a1", "runs": ["r"], "commits": []}), "done", None, None, 1, 0,
         json.dumps({"owner": "user:a1", "status": "done"}), None),
        (BULK, 1, json.dumps({"owner": "user:a2", "runs": ["r"], "commits": []}), "pending", None, None, 0, 0, None,
         None),
    ]
    db.executemany("INSERT INTO steps VALUES (?,?,?,?,?,?,?,?,?,?)", steps)
    db.commit()
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    db.close()


def test_a_database_of_the_previous_version_is_migrated_and_keeps_its_jobs(tmp_path):
    _v1_database(tmp_path / "jobs.sqlite3")
    jobs = JobStore.at(tmp_path)
    assert sqlite3.connect(tmp_path / "jobs.sqlite3").execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert jobs.get(QUEUED).state == "queued" and jobs.get(FINISHED).results[0]["result"] == {"written": 1}
    assert jobs.get(BULK).done == 1
    # the new columns were filled from what the old rows hold: the list filters by owner prefix and kind
    listed = jobs.list(JobQuery.parse(owner_prefix="user:ann"), within="", admin=True)
    assert [j.id for j in listed.jobs] == [QUEUED]
    assert {j.id for j in jobs.list(JobQuery.parse(kind="bulk-rollback"), admin=True).jobs} == {BULK}
    # a queued job of the old version still runs, and can still be cancelled
    seen = []
    runner = JobRunner(jobs, lease=5.0, poll=0.05)
    runner.register("bulk-rollback", lambda step: seen.append(step.params["owner"]) or {"status": "done"})
    assert runner.run_once() and seen == ["user:a2"] and jobs.get(BULK).state == "done"
    assert jobs.cancel(QUEUED).state == "cancelled"
    JobStore.at(tmp_path)  # opening again is a no-op


def test_a_database_of_a_newer_version_is_refused_with_the_reason(tmp_path):
    db = sqlite3.connect(tmp_path / "jobs.sqlite3")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(RuntimeError, match="newer"):
        JobStore.at(tmp_path)
