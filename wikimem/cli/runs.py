"""``runs``, ``index rebuild``, ``bulk-rollback``: runs across every owner of a data root.

``wikimem runs --data ROOT --actor Elaina-v12 --since 2026-07-21T14:00Z --until 2026-07-21T15:00Z``
lists the matching runs of every owner (newest first) with the totals;
``--by-owner`` counts them per owner instead. ``wikimem index rebuild``
brings the cross-owner run index up to every owner's history (``--full``:
from scratch). ``wikimem bulk-rollback`` previews (``--dry-run``) or undoes
the matching runs, one commit per owner. ``--character ID`` selects the runs
that wrote that character's layer of a person (``bulk-rollback --character kai``:
undo Kai's runs across persons).
"""

from __future__ import annotations

import secrets
import sys

from . import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, Parser, layer_of, open_host

_FILTERS = ("run", "actor", "source_conv", "action", "since", "until", "owner_prefix")


def _data_arg(p) -> None:
    p.add_argument("--data", default=None, help="data root of the host (default: $WIKIMEM_DATA or ./data)")


def _filter_args(p) -> None:
    p.add_argument("--run", help="a run id")
    p.add_argument("--actor", help="the actor (character, worker or operator) of the run")
    p.add_argument("--source-conv", dest="source_conv", help="the source conversation")
    p.add_argument("--action", help="an action among the run's commits (add, diary, batch, memorize, rollback…)")
    p.add_argument("--since", help="runs with a commit at or after this date or ISO time (UTC)")
    p.add_argument("--until", help="runs with a commit at or before this date or ISO time (UTC)")
    p.add_argument("--owner-prefix", dest="owner_prefix", default="", help="owners whose id starts with this")


def register(sub) -> None:
    p = sub.add_parser("runs", help="runs across every owner of a data root (by actor, run, time…)")
    _data_arg(p)
    _filter_args(p)
    p.add_argument("--by-owner", action="store_true", help="count the matching runs per owner")
    p.add_argument("-n", "--limit", type=int, default=50)
    p.add_argument("--cursor", help="the next page's cursor, as printed")
    p.set_defaults(handler=cmd_runs, layered=True)

    p = sub.add_parser("index", help="the cross-owner run index of a data root")
    isub = p.add_subparsers(dest="index_command", metavar="ACTION", required=True, parser_class=Parser)
    r = isub.add_parser("rebuild", help="bring the run index up to every owner's history")
    _data_arg(r)
    r.add_argument("--full", action="store_true", help="index every owner from scratch")
    r.set_defaults(handler=cmd_index_rebuild)

    p = sub.add_parser("bulk-rollback", help="undo every matching run, one commit per owner")
    _data_arg(p)
    _filter_args(p)
    p.add_argument("--dry-run", action="store_true", help="only show each owner's plan")
    p.add_argument("--force", action="store_true", help="also owners whose items changed since (overwrites)")
    p.add_argument("--actor-name", dest="as_actor", default="cli", help="who the commits name as the actor")
    p.set_defaults(handler=cmd_bulk_rollback, layered=True)


def _host(args):
    return open_host(args)  # configured like the web app's host: replication, peers, recall (dulwich only now)


def _query(args):
    from wikimem.host import RunQuery

    return RunQuery.parse(**{k: getattr(args, k) for k in _FILTERS}, character=layer_of(args))


def cmd_runs(args) -> int:
    host, query = _host(args), _query(args)
    if args.by_owner:
        found = host.fleet.runs_per_owner(query, limit=args.limit, cursor=args.cursor)
        counts, nxt = found.owners, found.next
        for c in counts:
            print(f"{c.owner}\t{c.runs} run{'s' if c.runs != 1 else ''}"
                  f"\t{c.commits} commit{'s' if c.commits != 1 else ''}\t{c.first} … {c.last}")
        if nxt:
            print(f"next: --cursor {nxt}", file=sys.stderr)
        return EXIT_OK if counts else EXIT_NOT_FOUND
    page = host.fleet.find_runs(query, limit=args.limit, cursor=args.cursor)
    for r in page.runs:
        mark = f"  rolled back by {r.rolled_back_by[:12]}" if r.rolled_back_by else ""
        layers = f"  [{','.join(r.characters)}]" if r.characters else ""
        print(f"{r.last}  {r.owner}  {r.run or 'commit ' + r.commit[:12]}  {r.actor or '-'}  "
              f"{r.commits} commit{'s' if r.commits != 1 else ''}{layers}{mark}")
    total = page.total
    print(f"{total['runs']} run(s) of {total['owners']} owner(s), {total['commits']} commit(s)", file=sys.stderr)
    if page.next:
        print(f"next: --cursor {page.next}", file=sys.stderr)
    return EXIT_OK if page.runs else EXIT_NOT_FOUND


def cmd_index_rebuild(args) -> int:
    counts = _host(args).fleet.refresh_run_index(full=args.full)
    print(f"run index: {counts['owners']} owner(s), {counts['commits']} commit(s) indexed, "
          f"{counts['dropped']} deleted owner(s) dropped")
    return EXIT_OK


def cmd_bulk_rollback(args) -> int:
    host, query = _host(args), _query(args)
    if args.dry_run:
        preview = host.fleet.preview_bulk_rollback(query)
        for plan in preview.plans:
            print(f"{plan.part.owner}: {len(plan.changes)} change(s), {len(plan.conflicts)} conflict(s)"
                  + (f" ({plan.error})" if plan.error else ""))
        t = preview.total
        print(f"{t['owners']} owner(s), {t['changes']} change(s), {t['owners_with_conflicts']} owner(s) with "
              "conflicts", file=sys.stderr)
        return EXIT_OK if preview.plans else EXIT_NOT_FOUND
    job = f"bulk_cli_{secrets.token_hex(6)}"
    results = host.fleet.bulk_rollback_now(query, job=job, force=args.force, actor=args.as_actor)
    for r in results:
        print(f"{r['owner']}: {r['status']}" + (f" {r['commit']}" if r.get("commit") else ""))
    conflicts = sum(1 for r in results if r["status"] == "conflict")
    print(f"run id of the rollback commits: {job} (undo them all: wikimem bulk-rollback --run {job})",
          file=sys.stderr)
    return EXIT_ERROR if conflicts else (EXIT_OK if results else EXIT_NOT_FOUND)
