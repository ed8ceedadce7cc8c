"""Retention (issue 27): each kind of record the host must not keep for ever has a period, a variable, and goes.

Idempotency keys (and the stored results, which hold what was written),
finished jobs (their parameters, turns and results), erase and forget
receipts, operator sessions' records — each with its ``WIKIMEM_*``
variable in the config table and its default.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from wikimem.context import WriteContext
from wikimem.host import ConfigError, load_config, make_host
from wikimem.host.retention import DAY, Retention


def test_every_period_has_a_variable_and_a_default():
    config = load_config(environ={})
    assert config.retention() == Retention(idempotency=30 * DAY, jobs=7 * DAY, receipts=365 * DAY)
    assert config.session_hours == 12.0
    env = {"WIKIMEM_IDEMPOTENCY_DAYS": "2", "WIKIMEM_JOBS_KEEP_DAYS": "0.5", "WIKIMEM_ERASURE_RECEIPT_DAYS": "90",
           "WIKIMEM_SESSION_HOURS": "1"}
    config = load_config(environ=env)
    assert config.retention() == Retention(idempotency=2 * DAY, jobs=0.5 * DAY, receipts=90 * DAY)
    for var in env:
        with pytest.raises(ConfigError, match=var):
            load_config(environ={var: "0"})


def test_the_web_session_lasts_as_configured(tmp_path):
    from webapp import create_app

    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path), "SESSION_HOURS": 2.0})
    assert app.permanent_session_lifetime == timedelta(hours=2)


def test_an_idempotency_key_past_its_retention_is_a_new_request_and_its_result_goes(tmp_path):
    host = make_host(tmp_path, retention=Retention(idempotency=1.0))
    owner = host.create_owner("user:ret")
    first = owner.add("notes", "a", "one", ctx=WriteContext(idempotency_key="key-1"))
    assert owner.add("notes", "a", "one", ctx=WriteContext(idempotency_key="key-1")).replayed
    time.sleep(2.2)
    again = owner.add("notes", "a", "one again", ctx=WriteContext(idempotency_key="key-1"))
    assert not again.replayed and again.commit != first.commit
    owner.add("notes", "b", "two", ctx=WriteContext(idempotency_key="key-2"))
    time.sleep(2.2)
    owner.vstore.pack()  # housekeeping: stored results past the retention are purged
    assert owner.vstore.db.idem("key-2") is None


def test_finished_jobs_and_receipts_go_after_their_periods(tmp_path):
    host = make_host(tmp_path, retention=Retention(jobs=1.0, receipts=1.0))
    host.create_owner("user:ret").add("notes", "a", "one")
    job, _ = host.erase_owner("user:ret")
    deadline = time.monotonic() + 30
    while host.jobs.get(job.id).state != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host.erasure.receipt("user:ret") is not None
    time.sleep(1.5)
    assert host.jobs.prune() >= 1 and host.erasure.maintain() == 1
    assert host.erasure.receipt("user:ret") is None
    with pytest.raises(Exception, match="no job"):
        host.jobs.get(job.id)
