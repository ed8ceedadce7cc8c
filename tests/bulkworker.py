"""A host process that runs bulk jobs (rollback, or approve of a staged run), for tests that kill it mid-job.

    python tests/bulkworker.py DATA_ROOT [--kind rollback|approve] [--lease S] [--die-after-step N]

Runs the host's real ``bulk-rollback`` (or ``staged-approve``) handler over
``DATA_ROOT`` until SIGTERM. With ``--die-after-step N`` the process SIGKILLs
itself right after step N made its owner's commit on its first attempt — the
commit is made, the step not yet marked done: the next process re-runs it, and
the owner must still change once (the commit's idempotency key, or the run
already approved, makes that re-run write nothing).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobworker import serve_until_sigterm  # noqa: E402  (this folder is on sys.path: scripts run from here)

from wikimem.host import make_host  # noqa: E402
from wikimem.host.fleet import APPROVE_JOB, JobRunner, Step, staged_handler  # noqa: E402  # noqa: E402
from wikimem.host.fleet.bulk import JOB_KIND, handler  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--kind", choices=("rollback", "approve"), default="rollback")
    ap.add_argument("--lease", type=float, default=1.0)
    ap.add_argument("--die-after-step", type=int, default=None)
    args = ap.parse_args()
    host = make_host(args.root)
    kind = JOB_KIND if args.kind == "rollback" else APPROVE_JOB
    run = handler(host.owner) if args.kind == "rollback" else staged_handler(host.owner, APPROVE_JOB)

    def step_then_maybe_die(step: Step):
        result = run(step)
        with open(args.root / "steps.log", "a", encoding="utf-8") as fh:
            fh.write(f"{step.n} {os.getpid()} {step.attempt} {result['status']} {result.get('replayed')}\n")
        if step.n == args.die_after_step and step.attempt == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    runner = JobRunner(host.jobs, threads=1, lease=args.lease, poll=0.05)
    runner.register(kind, step_then_maybe_die)
    serve_until_sigterm(runner)


if __name__ == "__main__":
    main()
