"""The power goes out at any moment of the write path: every acknowledged write survives, exactly once.

A child process makes ten keyed writes to one owner (wiki adds and diary
appends; four of them from threads at once, so that group commit lands
several in one round; the intent log made small so that a checkpoint falls
in the middle) under :class:`powerloss.Recorder`, which records a crash
point at every sync, every rename and every acknowledgement. For a bounded
sample of those points the test builds what a disk could hold after a power
loss there — only what was synced (``durable``), each file either synced or
not (``mixed``, seeded), or everything (``current``: a process kill) — and
opens it as the next boot would. Then every write is retried with its key,
as clients do: an acknowledged one must be replayed (it survived), and in
the end each key is in exactly one commit, each diary entry in the diary
once, no commit is an ``external-edit``, the journal has one line per
commit, and ``git fsck --strict`` / ``git status`` are clean.

``WIKIMEM_POWERLOSS_IMAGES`` sets how many crash points are tried (default 40).
"""

from __future__ import annotations

import os
import pickle
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from powerloss import crash_image, materialize

from wikimem.context import WriteContext
from wikimem.versioned import VersionedStore

GIT = shutil.which("git")
TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
IMAGES = int(os.environ.get("WIKIMEM_POWERLOSS_IMAGES", "40"))
WRITES = [(i, "diary" if i % 2 else "add") for i in range(10)]
THREADED = range(4, 8)

CHILD = """
import pickle, sys, threading
from powerloss import Recorder
from wikimem.context import WriteContext
from wikimem.versioned import VersionedStore

root, out = sys.argv[1], sys.argv[2]
vs = VersionedStore(root)
vs.intent.limit = 6000  # a checkpoint falls in the middle of the run
recorder = Recorder(root)
recorder.install()

def write(i, kind):
    ctx = WriteContext(actor="pl", idempotency_key=f"w{i}")
    if kind == "diary":
        vs.diary_append(f"event {i}", date="2026-07-21", time="10:00", ctx=ctx)
    else:
        vs.add("notes", f"n{i}", f"note {i}", ctx=ctx)
    recorder.ack(f"w{i}", kind, i)

writes = [(i, "diary" if i % 2 else "add") for i in range(10)]
for i, kind in writes[:4]:
    write(i, kind)
threads = [threading.Thread(target=write, args=w) for w in writes[4:8]]
for t in threads:
    t.start()
for t in threads:
    t.join()
for i, kind in writes[8:]:
    write(i, kind)
with open(out, "wb") as fh:
    pickle.dump(recorder.points, fh)
print(recorder.syncs, "syncs,", len(recorder.points), "crash points")
"""


def _write(vs: VersionedStore, i: int, kind: str):
    ctx = WriteContext(actor="pl", idempotency_key=f"w{i}")
    if kind == "diary":
        return vs.diary_append(f"event {i}", date="2026-07-21", time="10:00", ctx=ctx)
    return vs.add("notes", f"n{i}", f"note {i}", ctx=ctx)


def _git(root: Path, *args: str) -> str:
    return subprocess.run([GIT, "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def _check(root: Path, acked: set[str]) -> None:
    vs = VersionedStore(root)
    try:
        for i, kind in WRITES:  # every client retries with its key; the first retry reconciles the folder
            done = _write(vs, i, kind)
            assert done.replayed or f"w{i}" not in acked, f"acknowledged write w{i} was lost"
        keys = [k for k in _git(root, "log", "--format=%(trailers:key=Wikimem-Idempotency-Key,valueonly)").split()]
        assert sorted(keys) == sorted(f"w{i}" for i, _ in WRITES), keys
        assert "external-edit" not in _git(root, "log", "--format=%(trailers:key=Wikimem-Action,valueonly)").split()
        diary = [e.content for e in vs.diary.day("2026-07-21")]
        assert sorted(diary) == sorted(f"event {i}" for i, kind in WRITES if kind == "diary")
        for i, kind in WRITES:
            if kind == "add":
                assert vs.store.get("notes", f"n{i}").content == f"note {i}"
        commits = len(_git(root, "rev-list", "main").split())
        assert len((root / "journal.jsonl").read_text().splitlines()) == commits - 1  # all but the init commit
        fsck = subprocess.run([GIT, "-C", str(root), "fsck", "--strict"], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
        assert _git(root, "status", "--porcelain") == ""
    finally:
        vs.close()


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(GIT is None, reason="git is the witness of this test")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the recorder reads /proc/self/fd")
def test_every_acknowledged_write_survives_a_power_loss_at_any_point(tmp_path, monkeypatch):
    root = tmp_path / "owner"
    seed = VersionedStore(root)
    seed.add("notes", "seed", "before the run", ctx=WriteContext(actor="seed"))
    seed.pack()  # (a checkpoint: what the run starts from is on disk)
    seed.close()
    out = tmp_path / "points.pickle"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(TESTS)]))
    child = subprocess.run([sys.executable, "-c", CHILD, str(root), str(out)], env=env, capture_output=True,
                           text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    points = pickle.loads(out.read_bytes())
    acks = [n for n, p in enumerate(points) if p.label.startswith("ack")]
    assert len(acks) == len(WRITES)
    # Every point right after an acknowledgement (where a lost write would show), then an even sample.
    step = max(1, len(points) // max(1, IMAGES - len(acks)))
    chosen = sorted(set(acks) | set(range(0, len(points), step)))[:max(IMAGES, len(acks))]
    rng = random.Random(26)
    tried = 0
    for n in chosen:
        point = points[n]
        for mode in ("durable", "mixed") + (("current",) if n % 4 == 0 else ()):
            image = tmp_path / f"image-{n}-{mode}"
            materialize(crash_image(point, rng, mode), image)
            with monkeypatch.context() as m:
                if mode != "current":  # the machine restarted: another boot
                    m.setattr("wikimem.versioned.intent.boot_id", lambda: "after-the-power-loss")
                try:
                    _check(image, {a[0] for a in point.acked})
                except AssertionError as exc:
                    raise AssertionError(f"crash point {n} ({point.label}, {mode}): {exc}") from exc
            shutil.rmtree(image)
            tried += 1
    print(f"\npower loss: {len(points)} crash points recorded ({child.stdout.strip()}), {tried} images checked "
          f"from {len(chosen)} points: 0 acknowledged writes lost, 0 duplicated, fsck --strict clean")
