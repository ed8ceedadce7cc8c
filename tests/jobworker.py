"""A host-like process that runs jobs, for tests that kill it mid-job.

    python tests/jobworker.py DATA_ROOT [--lease S] [--threads N]

Opens the data root's job store and runs, until killed:

- ``effect`` steps ``{"n", "sleep"}``: logs ``start <n> <pid> <attempt>`` to
  ``DATA_ROOT/effects.log``, sleeps, then makes the step's effect — a file
  ``DATA_ROOT/effects/<n>`` created with O_EXCL under the step key, so a
  re-run finds it and does not repeat it — logging ``effect <n>`` only when
  it made it; with ``--die-after-effect N`` the process SIGKILLs itself right
  after making step N's effect on its first attempt (before the step is
  marked done);
- ``memorize`` steps: the host's real handler (:func:`memorize_handler`)
  over ``DATA_ROOT`` with the chat endpoint ``WIKIMEM_LLM_URL``; with
  ``--die-after-memorize`` the process SIGKILLs itself after the first
  memorize step returned (its commit made, the step not marked done);
- ``import-chat`` steps (a chat memorized turn by turn): the host's real handler, with the same endpoint.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikimem.host.fleet import JobRunner, JobStore, Step, memorize_handler  # noqa: E402


def _log(root: Path, line: str) -> None:
    with open(root / "effects.log", "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def effect_handler(root: Path, die_after: int | None):
    def run(step: Step):
        n = step.params["n"]
        _log(root, f"start {n} {os.getpid()} {step.attempt}")
        time.sleep(step.params.get("sleep", 0))
        (root / "effects").mkdir(exist_ok=True)
        try:
            fd = os.open(root / "effects" / str(n), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass  # made by an earlier run of this step: the effect is idempotent under the step key
        else:
            os.write(fd, step.key.encode())
            os.close(fd)
            _log(root, f"effect {n}")
        if die_after == n and step.attempt == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return {"n": n, "pid": os.getpid()}

    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--lease", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--die-after-effect", type=int, default=None)
    ap.add_argument("--die-after-memorize", action="store_true")
    args = ap.parse_args()

    runner = JobRunner(JobStore.at(args.root), threads=args.threads, lease=args.lease, poll=0.05)
    runner.register("effect", effect_handler(args.root, args.die_after_effect))
    if os.environ.get("WIKIMEM_LLM_URL"):
        from wikimem.host import make_host
        from wikimem.llm.chat import ChatClient

        host = make_host(args.root, llm=ChatClient(os.environ["WIKIMEM_LLM_URL"], "fake-chat", timeout=30))
        memorize = memorize_handler(host)

        def memorize_then_maybe_die(step: Step):
            result = memorize(step)
            _log(args.root, f"memorized {step.n} {os.getpid()} {step.attempt}")
            if args.die_after_memorize and step.attempt == 1:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        runner.register("memorize", memorize_then_maybe_die)
        from wikimem.host.imports import chat_handler

        runner.register("import-chat", chat_handler(host.owners.owner, lambda: runner.store))
    serve_until_sigterm(runner)


def serve_until_sigterm(runner: JobRunner) -> None:
    """Run ``runner``'s threads, say "ready" on stdout, stop cleanly on SIGTERM (the test's way to end us)."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runner.start()
    print("ready", flush=True)
    while not stop.wait(0.2):
        pass
    runner.stop()


if __name__ == "__main__":
    main()
