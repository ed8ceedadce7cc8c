"""``erase`` and ``forget``: an owner erased everywhere, or one of its items forgotten with its history.

``wikimem erase ID --data ROOT`` asks for the id again (or ``--yes``), runs
the erase job in this process (as the host's runners would) and prints its
receipt; ``wikimem forget ID FILE/NAME`` (or ``--diary DATE TIME [--index N]``)
does the same for one item or diary entry. See :mod:`wikimem.host.fleet.erasure.erase`.
"""

from __future__ import annotations

import getpass
import json
import sys
import time

from wikimem.host import Caller

from . import EXIT_ERROR, EXIT_OK, open_host


def register(sub) -> None:
    p = sub.add_parser("erase", help="erase an owner everywhere: repository, history, remote, indexes, jobs")
    p.add_argument("owner_id", metavar="ID", help="the owner id")
    p.add_argument("--data", default=None, help="data root of the host (default: $WIKIMEM_DATA or ./data)")
    p.add_argument("--yes", action="store_true", help="do not ask for the id again")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the job (600)")
    p.set_defaults(handler=cmd_erase)

    p = sub.add_parser("forget", help="forget one item or diary entry of an owner, with its history")
    p.add_argument("owner_id", metavar="ID", help="the owner id")
    p.add_argument("item", nargs="?", metavar="FILE/NAME", help="the wiki item")
    p.add_argument("--diary", nargs=2, metavar=("DATE", "TIME"), help="a diary entry instead")
    p.add_argument("--index", type=int, default=None, help="which entry of that minute (0 = the first)")
    p.add_argument("--data", default=None, help="data root of the host (default: $WIKIMEM_DATA or ./data)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the job (600)")
    p.set_defaults(handler=cmd_forget)


def cli_actor() -> str:
    """Who the command line acts as: ``cli:<system user>``."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


def finish_job(host, job_id: str, timeout: float, progress=None) -> int:
    """Run the job here until it is over (the host's runners would, too); print its result (an erasure's: the
    receipt). ``progress(job)`` is told of each look while it runs."""
    runner = host.start_jobs()
    deadline = time.monotonic() + timeout
    while True:
        found = host.jobs.get(job_id)
        if found.state not in ("queued", "running"):
            break
        if progress is not None:
            progress(found)
        if time.monotonic() > deadline:
            print(f"wikimem: {job_id} still {found.state}; the host's runners finish it", file=sys.stderr)
            return EXIT_ERROR
        runner.wake()
        time.sleep(0.1)
    step = found.results[0] if found.results else {}
    if found.state != "done":
        print(f"wikimem: {job_id} {found.state}: {step.get('error', {}).get('message', '')}", file=sys.stderr)
        return EXIT_ERROR
    print(json.dumps(step.get("result"), indent=1, ensure_ascii=False))
    return EXIT_OK


def cmd_erase(args) -> int:
    if not args.yes:
        if not sys.stdin.isatty():
            print("wikimem: erasing cannot be undone: give --yes (no terminal to ask on)", file=sys.stderr)
            return EXIT_ERROR
        typed = input(f"Erase {args.owner_id} everywhere, with its whole history? Type its id again: ").strip()
        if typed != args.owner_id:
            print("wikimem: not the same id: nothing erased", file=sys.stderr)
            return EXIT_ERROR
    host = open_host(args)
    with host.gate.act(Caller.cli(cli_actor()), "erase-owner", args.owner_id) as act:
        job, _ = host.erase_owner(args.owner_id, actor=act.ctx.actor)
        act.done(job=job.id)
    return finish_job(host, job.id, args.timeout)


def cmd_forget(args) -> int:
    if (args.item is None) == (args.diary is None):
        print("wikimem: give FILE/NAME or --diary DATE TIME", file=sys.stderr)
        return EXIT_ERROR
    if args.item is not None:
        file, sep, name = args.item.partition("/")
        if not sep:
            print("wikimem: the item is FILE/NAME", file=sys.stderr)
            return EXIT_ERROR
        target = {"file": file, "name": name}
    else:
        target = {"date": args.diary[0], "time": args.diary[1], "index": args.index}
    host = open_host(args)
    with host.gate.act(Caller.cli(cli_actor()), "forget", args.owner_id, **target) as act:
        job, _ = host.forget(args.owner_id, target, actor=act.ctx.actor)
        act.done(job=job.id)
    return finish_job(host, job.id, args.timeout)
