"""An erase or forget job SIGKILLed after each of its steps resumes to the same end state (issue 27).

A child process (:mod:`erasure_child`) runs the job and kills itself right
after its k-th step (k = 1, 2, … until the job no longer reaches k); a
second child, not killed, picks the job up again (the runner reclaims a
step whose process is gone) and finishes it. Each end state is compared
with a run that was never killed: the receipt's places, the owner's items
and history, no trace of the erased owner or the forgotten text in any
byte of the data root or the file:// remote, ``git fsck --strict`` clean.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from traces import repositories, traces

from wikimem.context import WriteContext
from wikimem.host import build_host, encode_owner_id, load_config

CHILD = Path(__file__).with_name("erasure_child.py")
OWNER = "user:victim"
SECRET = ["KILLSECRET-one", "KILLSECRET-two", "KILLSECRET-three"]
MAX_STEPS = 40  # bound: every job here has fewer steps


def _world(base: Path) -> None:
    (base / "remote").mkdir(parents=True)
    host = build_host(load_config({"DATA_ROOT": str(base / "data"), "REMOTE": f"file://{base}/remote/{{owner}}.git"}))
    victim = host.create_owner(OWNER)
    for i, text in enumerate(SECRET):
        victim.add("prefs", "secret", text, ctx=WriteContext(run=f"run_{i}", actor="bot", idempotency_key=f"k{i}"))
        victim.add("prefs", f"other{i}", f"an other item {i}", ctx=WriteContext(run=f"run_{i}", actor="bot"))
    victim.diary_append("a diary entry that stays", date="2026-07-01", time="09:00")
    host.create_owner("user:bystander").add("prefs", "tea", "green tea")
    for owner_id in host.cached_owners():  # closed now: the template is copied file by file afterwards
        host.owner(owner_id).vstore.close()
    host.run_index.close()


def _run(base: Path, kind: str, kill_at: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHILD), str(base / "data"), str(base / "remote"), kind, str(kill_at)],
                          capture_output=True, text=True, timeout=300)


def _places(job: dict, base: Path) -> list[dict]:
    receipt = json.loads(json.dumps(job["results"][0]["result"]).replace(str(base), "BASE"))
    volatile = {"at", "marker", "head", "local_objects_pruned"}
    return [{k: v for k, v in p.items() if k not in volatile} for p in receipt["places"]]


def _state(base: Path, kind: str, job: dict) -> dict:
    needles = SECRET + ([OWNER, encode_owner_id(OWNER)] if kind == "erase" else [])
    state: dict = {"job": job["state"], "places": _places(job, base),
                   "traces": traces([base / "data", base / "remote"], needles)}
    host = build_host(load_config({"DATA_ROOT": str(base / "data"), "REMOTE": f"file://{base}/remote/{{owner}}.git"}))
    state["owners"] = host.owner_ids()
    if kind == "forget":
        owner = host.owner(OWNER)
        state["items"] = [(i.name, i.content) for i in owner.items()]
        state["rewritten_head"] = owner.vstore.resolve("HEAD~1")  # deterministic: times and texts kept
        state["history"] = [(e.summary, e.run, e.actor) for e in owner.history(limit=100).entries[1:]]
        for repo in repositories(base / "data") + repositories(base / "remote"):
            subprocess.run(["git", "--git-dir", str(repo), "fsck", "--strict"], check=True, capture_output=True)
    return state


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["erase", "forget"])
def test_a_job_killed_after_any_step_resumes_to_the_same_end_state(tmp_path, kind):
    template = tmp_path / "template"
    _world(template)
    reference = tmp_path / "reference"
    shutil.copytree(template, reference)
    done = _run(reference, kind, 0)
    assert done.returncode == 0, done.stderr[-2000:]
    expected = _state(reference, kind, json.loads(done.stdout))
    assert expected["traces"] == [] and expected["job"] == "done"

    killed_at = []
    for k in range(1, MAX_STEPS + 1):
        base = tmp_path / f"k{k}"
        shutil.copytree(template, base)
        first = _run(base, kind, k)
        if first.returncode == 0:  # the job ended before its k-th step: every step was tried
            break
        assert first.returncode == -signal.SIGKILL, first.stderr[-2000:]
        killed_at.append(k)
        resumed = _run(base, kind, 0)
        assert resumed.returncode == 0, (k, resumed.stderr[-2000:])
        assert _state(base, kind, json.loads(resumed.stdout)) == expected, f"killed after step {k}"
        shutil.rmtree(base)
    else:
        pytest.fail(f"the {kind} job still had steps after {MAX_STEPS}")
    assert len(killed_at) >= 8, killed_at
    print(f"{kind}: killed after steps {killed_at}")
