"""``staged``: runs on probation across every owner of a data root.

``wikimem staged`` lists the staged runs (actor, owners, age, size) and how many wait;
``wikimem staged show RUN`` every owner's copy of one run; ``wikimem staged approve RUN``
(``--dry-run``: each owner's plan and conflicts; ``--except OWNER``; ``--force``) and
``wikimem staged discard RUN`` settle it owner by owner; ``wikimem staged hold RUN``
(``--release``) keeps it from auto-approval and expiry; ``wikimem staged restore-discarded RUN
--owner ID`` stages a discarded run's commits again (kept ``WIKIMEM_DISCARDED_DAYS``) as ``RUN-restored``.
"""

from __future__ import annotations

import secrets
import sys

from . import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, Parser, open_host


def register(sub) -> None:
    p = sub.add_parser("staged", help="runs on probation across every owner: list, show, approve, discard, hold")
    p.add_argument("--data", default=None, help="data root of the host (default: $WIKIMEM_DATA or ./data)")
    p.add_argument("--state", default="staged", choices=("staged", "approved", "discarded", "expired"))
    p.set_defaults(handler=cmd_list)
    ssub = p.add_subparsers(dest="staged_command", metavar="ACTION", parser_class=Parser)
    s = ssub.add_parser("show", help="every owner's copy of one staged run")
    s.add_argument("run")
    s.set_defaults(handler=cmd_show)
    for action in ("approve", "discard"):
        a = ssub.add_parser(action, help=f"{action} a staged run on every owner holding it")
        a.add_argument("run")
        a.add_argument("--except", dest="except_owners", action="append", default=[], metavar="OWNER",
                       help="leave this owner out (repeat for more)")
        a.add_argument("--actor-name", dest="as_actor", default="cli", help="who approves or discards")
        if action == "approve":
            a.add_argument("--force", action="store_true", help="take the staged version over later changes")
            a.add_argument("--dry-run", action="store_true", help="only show each owner's plan")
        a.set_defaults(handler=cmd_settle, action=action)
    r = ssub.add_parser("restore-discarded", help="stage a discarded run's commits again, as RUN-restored")
    r.add_argument("run")
    r.add_argument("--owner", dest="discarded_owner", required=True, metavar="ID", help="the owner it was discarded on")
    r.set_defaults(handler=cmd_restore_discarded)
    h = ssub.add_parser("hold", help="keep a staged run from auto-approval and expiry")
    h.add_argument("run")
    h.add_argument("--release", action="store_true", help="let it go again")
    h.set_defaults(handler=cmd_hold)


def cmd_list(args) -> int:
    found = open_host(args).probation.runs(state=args.state)
    for r in found["runs"]:
        print(f"{r['run']}\t{r['actor'] or '-'}\t{r['owners']} owner(s)\t{r['changes']} change(s)\t"
              f"since {r['first']}" + (f"\t{r['held']} held" if r["held"] else ""))
    w = found["waiting"]
    print(f"{w['runs']} staged run(s) waiting on {w['owners']} owner(s)"
          + (f", the oldest for {w['oldest_age_seconds']} s" if w["oldest"] else ""), file=sys.stderr)
    return EXIT_OK if found["runs"] else EXIT_NOT_FOUND


def cmd_show(args) -> int:
    rows = open_host(args).probation.owners_of(args.run)
    for r in rows:
        print(f"{r['owner']}\t{r['state']}\t{r['changes']} change(s)\t{r['tip'][:12]}"
              + (f"\tby {r['settled_by']}" if r["settled_by"] else ""))
    return EXIT_OK if rows else EXIT_NOT_FOUND


def cmd_settle(args) -> int:
    probation = open_host(args).probation
    if getattr(args, "dry_run", False):
        preview = probation.preview(args.run, except_owners=args.except_owners)
        for plan in preview["owners"]:
            print(f"{plan['owner']}: {plan.get('change_count', 0)} change(s), {plan.get('conflict_count', 0)} "
                  "conflict(s)" + (f" ({plan['error']})" if plan.get("error") else ""))
        return EXIT_OK if preview["owners"] else EXIT_NOT_FOUND
    results = probation.settle_now(args.action, args.run, force=getattr(args, "force", False), actor=args.as_actor,
                                   except_owners=args.except_owners, job=f"cli_{secrets.token_hex(6)}")
    for r in results:
        print(f"{r['owner']}: {r['status']}" + (f" {r['commit']}" if r.get("commit") else "")
              + (f" ({r['skipped']} skipped: changed since)" if r.get("skipped") else ""))
    if not results:
        print(f"no owner holds run {args.run!r} staged", file=sys.stderr)
        return EXIT_NOT_FOUND
    return EXIT_ERROR if any(r["status"] == "missing" for r in results) else EXIT_OK


def cmd_hold(args) -> int:
    count = open_host(args).probation.hold(args.run, not args.release)
    print(f"{args.run}: {'released' if args.release else 'held'} on {count} owner(s)")
    return EXIT_OK if count else EXIT_NOT_FOUND


def cmd_restore_discarded(args) -> int:
    new = open_host(args).owner(args.discarded_owner).restore_discarded(args.run)
    print(new)
    print(f"discarded run {args.run} staged again as {new}: approve or discard it as any other", file=sys.stderr)
    return EXIT_OK
