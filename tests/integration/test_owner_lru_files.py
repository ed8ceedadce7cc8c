"""Owners left out of a process's LRU give their files back (wikimem/host/owners.py: COLLECT_EVERY).

An evicted owner holds its history index (with WAL and shm) and its intent log until the garbage collector
breaks its reference cycles; a scan through many owners must not run the process out of files meanwhile.
"""

from __future__ import annotations

import gc
import os

import pytest

from wikimem.context import WriteContext
from wikimem.host import make_host
from wikimem.host.owners import COLLECT_EVERY

CTX = WriteContext(actor="test")


def _files_under(root) -> int:
    mine = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            mine += str(root) in os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    return mine


@pytest.fixture
def no_automatic_gc():
    """As in a busy process whose next full collection is far away."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if was:
        gc.enable()


def test_a_scan_through_many_owners_keeps_few_files_open(tmp_path, no_automatic_gc):
    host = make_host(tmp_path / "data", index_cache=2)
    n = 3 * COLLECT_EVERY
    for i in range(n):
        host.create_owner(f"user:o{i}").add("people", "mia", f"Mia likes tea number {i}", ctx=CTX)
    for i in range(n):  # a scan: each opened again, retrieved from, left
        assert host.owner(f"user:o{i}").retrieve("tea").items
    # (each owner holds 4 files: without the collections these would be 4 × 96)
    assert _files_under(tmp_path / "data" / "owners") <= 4 * (2 + COLLECT_EVERY + 1)


def test_an_owner_a_caller_still_holds_stays_usable_after_it_is_evicted(tmp_path, no_automatic_gc):
    host = make_host(tmp_path / "data", index_cache=1)
    held = host.create_owner("user:held")
    held.add("people", "tom", "Tom plays the fiddle.", ctx=CTX)
    for i in range(COLLECT_EVERY + 2):  # evicts "held" and collects at least once
        host.create_owner(f"user:o{i}")
    held.add("people", "mia", "Mia likes tea.", ctx=CTX)
    assert [r.item.name for r in held.retrieve("fiddle").items][:1] == ["tom"]
    assert host.owner("user:held").item("people", "mia").content == "Mia likes tea."
