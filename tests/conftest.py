"""Fixtures every test folder shares.

``tests/unit`` exercises the library alone (no flask, no git), ``tests/integration``
real dulwich repositories, the real Flask app and real gunicorn processes,
``tests/browser`` real Chromium. Every test builds its own world in ``tmp_path``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# ``from fakes import FakeOpenAI``: the fakes of true system boundaries live next to this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))

# One OpenMP thread for the local model, as each gunicorn worker has (deploy/gunicorn.conf.py): the suite runs two
# workers on two cores, and a model team of two threads beside the other worker waited on its own barriers (the
# fused golden test took 106 s with two threads and a busy core beside it, 83 s with one).
os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_configure(config):
    """A line per area of the suite as it starts (tests/areas.py)."""
    from areas import register

    register(config)


@pytest.fixture(autouse=True)
def _stop_job_runners():
    """A test's hosts go with it: the job runners started meanwhile are stopped after it (their threads held the
    host, its owners and their files for the rest of the worker: 29 hosts and 875 files after the a*-c* integration
    files). A host's next submit, or a look at an unfinished job, starts its runner again."""
    yield
    runner = sys.modules.get("wikimem.host.fleet.runner")  # (not imported: no runner was started)
    if runner is not None:  # told to stop, not waited for: a step still in flight ends on its own
        runner.stop_all(timeout=0)


@pytest.fixture
def llm():
    """A chat-completions server on 127.0.0.1 standing in for the LLM of memorize (a test may set its
    ``reply_fn``)."""
    from fakes import FakeOpenAI

    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def store(tmp_path):
    """An empty plain store in ``tmp_path / "mem"`` (a module may extend it: ``def store(store): ...``)."""
    from wikimem import MemoryStore

    return MemoryStore(tmp_path / "mem")


@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL server on 127.0.0.1 for the session (``tests/pgserver.py``); skipped with the reason when
    this machine cannot run one."""
    from pgserver import PgServer, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    server = PgServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def database_url(pg_server) -> str:
    """The URL of a new, empty database of the session's PostgreSQL server (one per test)."""
    return pg_server.new_database()
