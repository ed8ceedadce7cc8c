"""A writer killed at each step of the write path: its keyed retry lands exactly once, the repository stays clean.

A child process makes one keyed write and dies (``os._exit``, no cleanup)
right after one step: the git objects, the round's record in the intent
log, the files, the branch move, ``.git/index``, the history index, the
record marked applied. The
parent then retries the same request with the same Idempotency-Key, as a
client whose request timed out would. Whatever the step, the write is in
the history exactly once, is never an ``external-edit``, the journal has
one line per mutation, and ``git fsck --strict`` / ``git status`` are clean.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wikimem.context import WriteContext
from wikimem.versioned import VersionedStore

GIT = shutil.which("git")
REPO = Path(__file__).resolve().parents[2]

# (module, attribute path, label): the child dies right after this function returns.
STEPS = [
    ("wikimem.versioned.objects", "GitRepo.make_commit", "objects written"),
    ("wikimem.versioned.intent", "IntentLog.append", "round recorded in the intent log"),
    ("wikimem.store.writer", "Landing.write", "files written"),
    ("wikimem.versioned.objects", "GitRepo.move_ref", "branch moved"),
    ("wikimem.versioned.objects", "GitRepo.update_index", "index updated"),
    ("wikimem.versioned.history.historydb", "HistoryDB.sync", "history index fed"),
    ("wikimem.versioned.intent", "IntentLog.mark", "round marked applied"),
]
# Steps after which the commit is on the branch: the retry replays instead of writing.
COMMITTED = {"branch moved", "index updated", "history index fed", "round marked applied"}

WRITES = {
    "add": "vs.add('preferences', 'tea', '喝乌龙茶。', ctx=WriteContext(actor='bot', idempotency_key=KEY))",
    "diary": "vs.diary_append('下午去了海边。', date='2026-07-21', time='15:00', "
             "ctx=WriteContext(actor='bot', idempotency_key=KEY))",
    "settings": "settings_write(vs, KEY)",
}
# What Owner.put_settings does at the versioned store (a host is not needed to kill it half-way).
SETTINGS_WRITE = """
def settings_write(vs, key):
    new = b'{\\n  "tz": "Asia/Shanghai"\\n}\\n'
    with vs.batch(WriteContext(actor='bot', idempotency_key=key), message='settings: tz=Asia/Shanghai',
                  kind='settings') as b:
        if b.replay is None:
            vs.writer.apply({'settings.json': (vs.writer.read('settings.json'), new)},
                            {'ts': '2026-07-21T00:00:00+00:00', 'action': 'settings', 'detail': 'tz=Asia/Shanghai'})
            b.result = {'settings': {'tz': 'Asia/Shanghai'}}
    from wikimem.versioned import Committed
    return Committed(None, b.commit, b.replay is not None)
"""
exec(SETTINGS_WRITE)

CHILD = """
import importlib, os, sys
from wikimem.context import WriteContext
from wikimem.versioned import VersionedStore
module, path, write = sys.argv[2], sys.argv[3], sys.argv[4]
owner_cls, _, name = path.partition(".")
cls = getattr(importlib.import_module(module), owner_cls)
original = getattr(cls, name)
def dying(*args, **kwargs):
    result = original(*args, **kwargs)
    if path != "HistoryDB.sync" or kwargs.get("results"):  # reads sync too: die at the write's own
        os._exit(9)
    return result
setattr(cls, name, dying)
vs = VersionedStore(sys.argv[1])
KEY = "retry-me-1"
exec(sys.argv[5])
exec(write)
os._exit(0)  # the step was never reached: a broken test
"""


def _git(root, *args) -> str:
    return subprocess.run([GIT, "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(WRITES))
@pytest.mark.parametrize("step", STEPS, ids=[s[2] for s in STEPS])
def test_a_keyed_write_killed_after_any_step_lands_exactly_once(tmp_path, step, kind):
    root = tmp_path / "owner"
    vs = VersionedStore(root)
    vs.add("preferences", "sea", "喜欢海边。", ctx=WriteContext(actor="seed"))  # something before, so undo has a base
    vs.close()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.run([sys.executable, "-c", CHILD, str(root), step[0], step[1], WRITES[kind], SETTINGS_WRITE],
                           env=env, capture_output=True, text=True, timeout=60)
    assert child.returncode == 9, child.stderr  # it died right after the step

    vs = VersionedStore(root)
    KEY = "retry-me-1"  # noqa: F841 (used by the exec'd write)
    done = eval(WRITES[kind])
    assert done.replayed == (step[2] in COMMITTED)
    keyed = [line for line in _git(root, "log", "--format=%(trailers:key=Wikimem-Idempotency-Key,valueonly)")
             .splitlines() if line.strip()]
    assert keyed == [KEY]
    actions = _git(root, "log", "--format=%(trailers:key=Wikimem-Action,valueonly)").split()
    assert "external-edit" not in actions
    assert len(_git(root, "rev-list", "main").split()) == 3  # init, seed, the write
    journal = [json.loads(line) for line in (root / "journal.jsonl").read_text().splitlines()]
    assert len(journal) == 2
    if kind == "add":
        assert vs.store.get("preferences", "tea").content == "喝乌龙茶。"
    elif kind == "settings":
        assert json.loads(vs.head_file("settings.json")) == {"tz": "Asia/Shanghai"}
        assert json.loads((root / "settings.json").read_text()) == {"tz": "Asia/Shanghai"}
    else:
        assert [e.content for e in vs.diary.day("2026-07-21")] == ["下午去了海边。"]
    assert vs.intent.in_flight() is None
    assert vs.history(limit=10).entries[0].id == vs.head() == done.commit
    if GIT:
        fsck = subprocess.run([GIT, "-C", str(root), "fsck", "--strict"], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
        assert _git(root, "status", "--porcelain") == ""
    assert not [p for p in root.rglob("*.wikimem-tmp")]


def test_the_intent_of_a_writer_of_the_previous_version_is_reconciled(tmp_path):
    """Upgraded with a write in flight (the old ``wikimem-intent.json``): undone, never an ``external-edit``."""
    root = tmp_path / "owner"
    vs = VersionedStore(root)
    vs.add("preferences", "sea", "喜欢海边。", ctx=WriteContext(actor="seed"))
    head, size = vs.head(), vs.store.journal.size()
    vs.close()
    before = (root / "wiki" / "preferences.md").read_bytes()
    (root / "wiki" / "preferences.md").write_bytes(before + b"\n## tea\n\n\xe5\x96\x9d\xe8\x8c\xb6\n")  # half done
    with open(root / "journal.jsonl", "a") as fh:
        fh.write('{"ts": "2026-07-21T10:00:00Z", "action": "add", "file": "preferences", "item": "tea"}\n')
    (root / ".git" / "wikimem-intent.json").write_text(json.dumps(
        {"state": "writing", "head": head, "journal_size": size, "paths": ["wiki/preferences.md"]}))
    vs = VersionedStore(root)
    done = vs.add("preferences", "tea", "喝乌龙茶。", ctx=WriteContext(actor="bot"))
    assert done.commit == vs.head()
    assert "external-edit" not in {e.action for e in vs.history(limit=10).entries}
    assert not (root / ".git" / "wikimem-intent.json").exists()
    assert [json.loads(line)["item"] for line in (root / "journal.jsonl").read_text().splitlines()] == ["sea", "tea"]
    if GIT:
        assert _git(root, "status", "--porcelain") == ""


HOST_CHILD = """
import importlib, os, sys
from wikimem.context import WriteContext
from wikimem.host import Host, make_host
module, path = sys.argv[2], sys.argv[3]
owner_cls, _, name = path.partition(".")
cls = getattr(importlib.import_module(module), owner_cls)
original = getattr(cls, name)
def dying(*args, **kwargs):
    result = original(*args, **kwargs)
    if path != "HistoryDB.sync" or kwargs.get("results"):
        os._exit(9)
    return result
host = make_host(sys.argv[1])
owner = host.owner("user:ann")
setattr(cls, name, dying)
owner.add("preferences", "tea", "oolong", ctx=WriteContext(run="run_crash", actor="bot", idempotency_key="k-1"))
os._exit(0)
"""


@pytest.mark.slow
@pytest.mark.parametrize("step", STEPS, ids=[s[2] for s in STEPS])
def test_a_host_write_killed_after_any_step_is_in_the_run_index_after_its_retry(tmp_path, step):
    """Issue 22 finding 4: killed after the branch moved, the retry replays without a new commit — the run
    index must still learn of the commit (the recovery tells the listeners), without any search catching up."""
    from wikimem.host import RunQuery, make_host

    data = tmp_path / "data"
    host = make_host(data)
    host.ensure_owner("user:ann")[0].add("preferences", "sea", "likes the sea", ctx=WriteContext(actor="seed"))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.run([sys.executable, "-c", HOST_CHILD, str(data), step[0], step[1]], env=env,
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == 9, child.stderr

    host = make_host(data)  # the retry, in another process's shoes
    done = host.owner("user:ann").add("preferences", "tea", "oolong",
                                      ctx=WriteContext(run="run_crash", actor="bot", idempotency_key="k-1"))
    assert done.replayed == (step[2] in COMMITTED)
    rows = host.run_index.search(RunQuery.parse(run="run_crash")).runs  # the index itself, no catch-up
    assert [(r.owner, r.commit, r.commits) for r in rows] == [("user:ann", done.commit, 1)]
    assert host.run_index.indexed_head("user:ann") == done.commit
    before = host.run_index.dump()
    host.fleet.refresh_run_index(full=True)
    assert host.run_index.dump() == before  # equal to a rebuild from git


TORN_CHILD = """
import os, sys
from wikimem.context import WriteContext
from wikimem.versioned import VersionedStore
from wikimem.versioned.objects import GitRepo
original, seen = GitRepo.write_raw, []
def tearing(self, sha, data, *, logged=False):
    seen.append(sha)
    if logged and len(seen) == int(sys.argv[2]):  # killed half-way through this object's file
        path = self._objects_dir / sha[:2] / sha[2:]
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        os.write(fd, data[: len(data) // 2])
        os._exit(9)
    return original(self, sha, data, logged=logged)
GitRepo.write_raw = tearing
vs = VersionedStore(sys.argv[1])
KEY = "retry-me-1"
exec(sys.argv[3])
os._exit(0)
"""


@pytest.mark.slow
@pytest.mark.parametrize("torn", [1, 2, 3, 4], ids=["blob", "tree", "tree2", "commit"])
def test_a_writer_killed_half_way_through_an_object_file_leaves_nothing_a_later_write_trusts(tmp_path, torn):
    """A round's objects go straight to their names (no temp file): a kill mid-write leaves a torn object
    under its name. The retry and every later write must not take it as present: recovery rewrites it."""
    root = tmp_path / "owner"
    vs = VersionedStore(root)
    vs.add("preferences", "sea", "喜欢海边。", ctx=WriteContext(actor="seed"))
    vs.close()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.run([sys.executable, "-c", TORN_CHILD, str(root), str(torn), WRITES["add"]],
                           env=env, capture_output=True, text=True, timeout=60)
    assert child.returncode == 9, child.stderr
    torn_files = [p for p in (root / ".git" / "objects").glob("??/*") if p.stat().st_size and p.stat().st_mode]
    assert torn_files  # (the torn copy is there, under its final name)

    vs = VersionedStore(root)
    KEY = "retry-me-1"  # noqa: F841 (used by the exec'd write)
    done = eval(WRITES["add"])
    assert not done.replayed  # the branch never moved: the retry writes it
    assert vs.store.get("preferences", "tea").content == "喝乌龙茶。"
    vs.add("preferences", "tea2", "喝乌龙茶。", ctx=WriteContext(actor="bot"))  # the same blob again
    assert len(_git(root, "rev-list", "main").split()) == 4
    if GIT:
        fsck = subprocess.run([GIT, "-C", str(root), "fsck", "--strict", "--full"], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
        assert _git(root, "status", "--porcelain") == ""


def test_a_long_lived_writer_sweeps_the_temp_files_of_a_round_killed_in_another_process(tmp_path):
    """Temp files are swept on each process's first write and after every recovery: a worker that stays up
    cleans what a worker killed mid-round left (its record was pending), on its next write."""
    root = tmp_path / "owner"
    vs = VersionedStore(root)
    vs.add("preferences", "sea", "喜欢海边。", ctx=WriteContext(actor="seed"))  # this process swept already
    step = STEPS[1]  # killed right after its round was recorded
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.run([sys.executable, "-c", CHILD, str(root), step[0], step[1], WRITES["add"], SETTINGS_WRITE],
                           env=env, capture_output=True, text=True, timeout=60)
    assert child.returncode == 9, child.stderr
    debris = root / "wiki" / ".preferences.md.dead0001.wikimem-tmp"  # (as its Door.write would have left it)
    debris.write_bytes(b"half a file")
    vs.add("preferences", "tea2", "喝绿茶。", ctx=WriteContext(actor="bot"))
    assert not debris.exists()
    assert vs.store.get("preferences", "tea") is None  # the killed round was undone
