"""A child process of ``test_erasure_kills.py``: submit (or find) an erase or forget job and run it here.

``python erasure_child.py DATA REMOTE KIND KILL_AT`` — with ``KILL_AT`` > 0 the
process sends itself SIGKILL right after the KILL_AT-th step (one of
:data:`STEPS`) returns; it exits 0 when the job finished, 3 when the step
was never reached (the job is shorter than that).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time

# (module, attribute): the steps the child may die right after. Functions imported by name are patched where
# they are used.
STEPS = [
    ("wikimem.host.fleet.erasure.register", "ErasureRegister.begin"),
    ("wikimem.host.host", "Host.drop_local"),
    ("wikimem.versioned.replication.remote", "Remote.replace"),
    ("wikimem.versioned.replication.remote", "Remote.delete"),
    ("wikimem.host.fleet.runindex", "RunIndex.forget"),
    ("wikimem.host.fleet.erasure.erase", "erase_jobs"),
    ("wikimem.host.fleet.erasure.erase", "erase_rows"),
    ("wikimem.host.fleet.erasure.register", "ErasureRegister.note"),
    ("wikimem.host.fleet.erasure.register", "ErasureRegister.finish"),
    ("wikimem.host.fleet.erasure.erase", "redact_job"),
    ("wikimem.host.fleet.erasure.erase", "scrub_jobs"),
    ("wikimem.versioned.forgetting.rewrite", "Rewriter.write"),
    ("wikimem.versioned.objects", "GitRepo.make_commit"),
    ("wikimem.versioned.intent", "IntentLog.checkpoint"),
    ("wikimem.versioned.intent", "IntentLog.append"),
    ("wikimem.versioned.objects", "GitRepo.move_ref"),
    ("wikimem.versioned.objects", "GitRepo.update_index"),
    ("wikimem.versioned.intent", "IntentLog.mark"),
    ("wikimem.versioned.forgetting.forget", "Forgetting._scrub_journal"),
    ("wikimem.versioned.forgetting.forget", "Forgetting._reset_history"),
    ("wikimem.versioned.forgetting.forget", "prune"),
    ("wikimem.host.fleet.runindex", "RunIndex.reindex"),
    ("wikimem.versioned", "prune_remote"),
]
OWNER = "user:victim"
TARGET = {"file": "prefs", "name": "secret"}


def _instrument(kill_at: int) -> None:
    count = [0]
    for module_name, path in STEPS:
        module = importlib.import_module(module_name)
        holder_name, _, name = path.rpartition(".")
        holder = getattr(module, holder_name) if holder_name else module
        original = getattr(holder, name)

        def dying(*args, __original=original, **kwargs):
            result = __original(*args, **kwargs)
            count[0] += 1
            if count[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        setattr(holder, name, dying)


def main() -> int:
    data, remote, kind, kill_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if kill_at:
        _instrument(kill_at)
    from wikimem.host import build_host, load_config

    host = build_host(load_config({"DATA_ROOT": data, "REMOTE": f"file://{remote}/{{owner}}.git"}))
    if kind == "erase":
        job, _ = host.erasure.submit_erase(OWNER, actor="killer")
    else:
        job, _ = host.erasure.submit_forget(OWNER, TARGET, actor="killer")
    host.start_jobs()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = host.jobs.get(job.id)
        if found.state not in ("queued", "running"):
            print(json.dumps(found.to_dict()))
            sys.stdout.flush()
            os._exit(0 if found.state == "done" else 4)
        time.sleep(0.02)
    os._exit(5)


if __name__ == "__main__":
    sys.exit(main())
