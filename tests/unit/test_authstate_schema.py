"""The shared auth state's schema version: a file of the previous layout opens, is migrated once, keeps its rows."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from wikimem.host.access import SCHEMA_VERSION, STATE_FILE, AuthState, SchemaTooNew

# The layout every host wrote before the file had a version (user_version 0): logouts and counters only.
VERSION_0 = """
CREATE TABLE revoked (sid TEXT PRIMARY KEY, until REAL NOT NULL);
CREATE INDEX revoked_until ON revoked (until);
CREATE TABLE hits (key TEXT PRIMARY KEY, count INTEGER NOT NULL, expires REAL NOT NULL);
CREATE INDEX hits_expires ON hits (expires);
"""


def _version_0_file(root):
    path = root / STATE_FILE
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as db:
        db.executescript(VERSION_0)
        db.execute("INSERT INTO revoked VALUES ('sid-1', ?)", (time.time() + 3600,))
        db.execute("INSERT INTO hits VALUES ('login/address/1.2.3.4', 3, ?)", (time.time() + 60,))
    db.close()
    return path


def _user_version(path) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA user_version").fetchone()[0]
    finally:
        db.close()


def test_a_file_of_the_previous_version_is_migrated_and_keeps_its_rows(tmp_path):
    path = _version_0_file(tmp_path)
    assert _user_version(path) == 0
    state = AuthState(tmp_path)
    assert state.is_revoked("sid-1") and state.count("login/address/1.2.3.4") == 3
    assert state.version() == SCHEMA_VERSION == _user_version(path)
    assert state.touch_token("abcdef0123456789", now=1000.0)
    assert state.last_used() == {"abcdef0123456789": 1000.0}


def test_a_new_file_starts_at_the_current_version(tmp_path):
    state = AuthState(tmp_path)
    assert state.version() == SCHEMA_VERSION
    state.revoke("s", time.time() + 60)
    assert state.is_revoked("s")


def test_workers_opening_an_old_file_at_once_migrate_it_once(tmp_path):
    _version_0_file(tmp_path)
    errors = []

    def open_it():
        try:
            AuthState(tmp_path).touch_token("t" * 16)
        except Exception as exc:  # pragma: no cover - the failure is the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and AuthState(tmp_path).version() == SCHEMA_VERSION


def test_a_file_from_a_newer_release_is_refused_not_misread(tmp_path):
    path = _version_0_file(tmp_path)
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(SchemaTooNew, match="newer release"):
        AuthState(tmp_path).is_revoked("x")


def test_a_tokens_use_is_written_at_most_once_a_minute_per_process(tmp_path):
    state = AuthState(tmp_path)
    assert state.touch_token("a" * 16, now=100.0)
    assert not state.touch_token("a" * 16, now=130.0)  # within the minute: nothing written
    assert state.last_used()["a" * 16] == 100.0
    assert state.touch_token("a" * 16, now=161.0)
    assert state.last_used()["a" * 16] == 161.0
    other = AuthState(tmp_path)  # another worker writing an older time never moves it back
    other.touch_token("a" * 16, now=150.0)
    assert state.last_used()["a" * 16] == 161.0
