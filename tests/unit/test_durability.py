"""Durable writes, the mutation seam, batches and concurrent writers."""

from __future__ import annotations

import multiprocessing
import os
from contextlib import contextmanager

import pytest
from parallel import run_threads

from wikimem import MemoryStore
from wikimem.store.writer import Mutation


def snapshot(root) -> dict[str, bytes]:
    """Every file under root (lock file excluded), as bytes."""
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            if n == ".wikimem.lock":
                continue
            path = os.path.join(dirpath, n)
            out[os.path.relpath(path, root)] = open(path, "rb").read()
    return out


@pytest.fixture
def store(store):
    s = store
    s.add("f", "a", "one")
    s.diary.append("event", date="2026-07-21", time="10:00")
    return s


@pytest.mark.parametrize("target", ["os.replace", "os.fsync", "os.write"])
def test_failed_write_leaves_files_and_journal_as_before(store, monkeypatch, target):
    before = snapshot(store.root)
    module, name = target.split(".")

    def boom(*args, **kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, name, boom)
    with pytest.raises(OSError):
        store.add("f", "a", "two")
    with pytest.raises(OSError):
        store.diary.append("second", date="2026-07-21", time="11:00")
    monkeypatch.undo()
    assert snapshot(store.root) == before  # no temp file left either
    assert store.get("f", "a").content == "one"


def test_failed_journal_append_restores_the_file(store, monkeypatch):
    before = snapshot(store.root)
    monkeypatch.setattr(store.journal, "write_many", lambda records, **kw: (_ for _ in ()).throw(OSError("full")))
    with pytest.raises(OSError):
        store.add("f", "a", "two")
    with pytest.raises(OSError):
        store.remove("f", "a")
    monkeypatch.undo()
    assert snapshot(store.root) == before


def test_invalid_input_changes_nothing(store):
    before = snapshot(store.root)
    for call in (lambda: store.add("F", "a", "x"), lambda: store.add("f", "a:b", "x"),
                 lambda: store.remove("f", "a|b"), lambda: store.diary.append("")):
        with pytest.raises(ValueError):
            call()
    assert snapshot(store.root) == before


class RecordingHook:
    """A hook that locks per unit and records what the seam reports."""

    def __init__(self):
        self.units: list[tuple[list[Mutation], dict]] = []
        self.depth = 0

    @contextmanager
    def locked(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def writing(self, unit, paths):
        assert self.depth == 1, "writing() must run inside the lock"

    def committed(self, unit):
        assert self.depth == 1, "committed() must run inside the lock"
        self.units.append((unit.mutations, unit.info.to_dict()))


def test_every_mutation_is_reported_once_with_its_files_and_record(tmp_path):
    hook = RecordingHook()
    s = MemoryStore(tmp_path / "m", hook=hook)
    s.add("prefs", "a", "x", owner="o")
    s.diary.append("e", date="2026-07-21", time="10:00")
    s.remove("prefs", "a")
    s.remove("prefs", "missing")  # not a mutation
    assert [[m.paths for m in ms] for ms, _ in hook.units] == [
        [("wiki/prefs.md",)], [("diary/2026-07-21.md",)], [("wiki/prefs.md",)]]
    assert [ms[0].record["action"] for ms, _ in hook.units] == ["add", "diary", "remove"]
    assert hook.units[0][0][0].record == s.journal.entries()[0]


def test_batch_is_one_unit_with_its_info(tmp_path):
    hook = RecordingHook()
    s = MemoryStore(tmp_path / "m", hook=hook)
    with s.batch(run="run_42", actor="Elaina"):
        s.add("a", "x", "1")
        s.diary.append("e", date="2026-07-21", time="10:00")
        with s.batch(run="inner"):  # nested batches join the outer one
            s.add("b", "y", "2")
    assert len(hook.units) == 1
    mutations, info = hook.units[0]
    assert info == {"run": "run_42", "actor": "Elaina"}
    assert [m.paths[0] for m in mutations] == ["wiki/a.md", "diary/2026-07-21.md", "wiki/b.md"]


def test_failed_batch_restores_everything(store):
    before = snapshot(store.root)
    rev = store.revision
    with pytest.raises(RuntimeError):
        with store.batch(run="bad"):
            store.add("f", "a", "changed")
            store.add("g", "new", "file")
            store.diary.append("more", date="2026-07-21", time="12:00")
            store.diary.append("new day", date="2026-07-22", time="12:00")
            raise RuntimeError("the LLM call died")
    assert snapshot(store.root) == before
    assert store.get("f", "a").content == "one" and store.get("g", "new") is None
    assert store.revision > rev  # readers are told the files changed (back)


def test_hook_failure_restores_the_write(tmp_path):
    class Failing(RecordingHook):
        def committed(self, unit):
            raise RuntimeError("commit failed")

    s = MemoryStore(tmp_path / "m", hook=Failing())
    with pytest.raises(RuntimeError):
        s.add("f", "a", "x")
    assert s.files() == [] and s.journal.entries() == []


def test_threads_do_not_lose_updates(tmp_path):
    s = MemoryStore(tmp_path / "m")

    def writer(t):
        for i in range(25):
            s.add("shared", f"t{t}-{i}", f"content {t} {i}")
            s.diary.append(f"event {t} {i}", date="2026-07-21", time="10:00")

    assert run_threads(writer, [(t,) for t in range(4)]) == []
    fresh = MemoryStore(s.root)
    assert len(fresh.items("shared")) == 100
    assert len(fresh.diary.day("2026-07-21")) == 100
    assert len(fresh.journal.entries()) == 200


def _process_writer(root, tag, n):
    s = MemoryStore(root)
    for i in range(n):
        s.add("shared", f"{tag}-{i}", f"content {tag} {i}")
        s.diary.append(f"event {tag} {i}", date="2026-07-21", time="10:00")


def test_processes_do_not_lose_updates(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_writer, args=(tmp_path / "m", f"p{p}", 30)) for p in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    fresh = MemoryStore(tmp_path / "m")
    assert len(fresh.items("shared")) == 90
    assert len(fresh.diary.day("2026-07-21")) == 90
    assert len(fresh.journal.entries()) == 180


def test_stale_lock_file_is_no_obstacle(tmp_path):
    root = tmp_path / "m"
    root.mkdir()
    (root / ".wikimem.lock").write_text("left behind by a crashed writer")
    MemoryStore(root).add("f", "a", "x")
    assert MemoryStore(root).get("f", "a").content == "x"
