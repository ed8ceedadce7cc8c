"""A stopped job runner lets its host go (wikimem/host/fleet/runner.py: stop_all, the weak set of started runners).

Each runner used to register its own bound ``stop`` with atexit, so a host whose jobs had run once stayed alive,
with its owners and their open files, for the life of the process.
"""

from __future__ import annotations

import gc
import weakref

from wikimem.host import make_host
from wikimem.host.fleet.runner import stop_all


def test_a_host_whose_runner_was_stopped_is_freed(tmp_path):
    host = make_host(tmp_path / "data")
    host.create_owner("user:a")
    runner = host.start_jobs()
    assert runner.running
    stop_all(timeout=10)
    assert not runner.running
    gone = weakref.ref(host)
    del host, runner
    gc.collect()
    assert gone() is None


def test_a_stopped_runner_starts_again_when_its_host_is_asked(tmp_path):
    host = make_host(tmp_path / "data")
    first = host.start_jobs()
    stop_all(timeout=10)
    assert not first.running
    assert host.start_jobs().running
    stop_all(timeout=10)
