"""``wikimem cluster …``: operate the hosts of a cluster (one host's data root at a time).

- ``verify``     every local owner against its remote (exit 1 when any differs);
- ``restore``    one owner, a list, or (file:// remotes) every owner, from the remote alone;
- ``push``       push every owner's pending commits now (async lag, or data from before the remote);
- ``where``      which host nginx sends an owner to (the same ring as ``hash $owner consistent``);
- ``rebalance``  after adding or removing a host: drop the copies now served elsewhere, once the
                 remote is shown to hold exactly them.

Settings come from the environment the host runs with (``WIKIMEM_DATA``,
``WIKIMEM_REMOTE``, ``WIKIMEM_REPLICATION``, ``WIKIMEM_PEERS``, ``WIKIMEM_SELF`` …),
through :mod:`wikimem.host.config`, which builds the same host the web app has.
"""

from __future__ import annotations

import json

from . import EXIT_NOT_FOUND, EXIT_OK, Parser, open_host, read_setting


def register(sub) -> None:
    p = sub.add_parser("cluster", help="verify, restore, push and rebalance the owners of one host")
    p.add_argument("--data", default=None, help="data root ($WIKIMEM_DATA)")
    p.add_argument("--remote", default=None, help="remote template ($WIKIMEM_REMOTE)")
    p.add_argument("--json", action="store_true", help="print JSON")
    csub = p.add_subparsers(dest="cluster_command", metavar="ACTION", required=True, parser_class=Parser)
    v = csub.add_parser("verify", help="compare every local owner (or --owner) with its remote")
    v.add_argument("--owner", action="append", help="only this owner (repeatable)")
    v.set_defaults(handler=cmd_verify)
    r = csub.add_parser("restore", help="bring owners from the remote (clone, or fetch + fast-forward)")
    r.add_argument("--owner", action="append", default=[], help="an owner id (repeatable)")
    r.add_argument("--owners-file", help="a file of owner ids, one a line")
    r.add_argument("--all", action="store_true",
                   help="every owner the remote holds (file:// remotes) and every local one")
    r.set_defaults(handler=cmd_restore)
    u = csub.add_parser("push", help="push every owner's pending commits now")
    u.set_defaults(handler=cmd_push)
    w = csub.add_parser("where", help="which server of the upstream serves an owner")
    w.add_argument("owner")
    w.add_argument("--servers", default=None, help="the upstream's servers, host:port,… (default: $WIKIMEM_PEERS)")
    w.set_defaults(handler=cmd_where)
    b = csub.add_parser("rebalance", help="drop local copies of owners that now hash to another server")
    b.add_argument("--servers", default=None, help="the new upstream's servers, host:port,… (default: $WIKIMEM_PEERS)")
    b.add_argument("--self", dest="me", default=None,
                   help="this host's host:port in --servers (default: from $WIKIMEM_SELF/$WIKIMEM_BIND)")
    b.add_argument("--dry-run", action="store_true")
    b.set_defaults(handler=cmd_rebalance)


def _host(args):
    host = open_host(args, REMOTE=args.remote)
    if host.replication is None:
        raise ValueError("no remote: set WIKIMEM_REMOTE or pass --remote")
    args.remote = host.replication.settings.remote  # (--all lists it)
    return host


def _print(args, data, lines) -> None:
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=1))
    else:
        for line in lines:
            print(line)


def cmd_verify(args) -> int:
    from wikimem.host.cluster import verify

    checks = verify(_host(args), args.owner)
    _print(args, [c.to_dict() for c in checks],
           [f"{c.state:12} {c.id}  local {(c.local or '-')[:12]}  remote {(c.remote or '-')[:12]}"
            + (f"  {c.detail}" if c.detail else "") for c in checks])
    return EXIT_OK if all(c.state == "equal" for c in checks) else EXIT_NOT_FOUND


def cmd_restore(args) -> int:
    from wikimem.host.cluster import remote_owner_ids, restore

    host = _host(args)
    ids = list(args.owner)
    if args.owners_file:
        with open(args.owners_file, encoding="utf-8") as fh:
            ids += [line.strip() for line in fh if line.strip() and not line.startswith("#")]
    if args.all:
        ids += remote_owner_ids(args.remote) + host.owner_ids()
    if not ids:
        raise ValueError("name owners with --owner, --owners-file or --all")
    done = restore(host, list(dict.fromkeys(ids)))
    _print(args, done, [f"{what:18} {owner_id}" for owner_id, what in done.items()])
    return EXIT_OK if all(w in ("cloned", "caught up") for w in done.values()) else EXIT_NOT_FOUND


def cmd_push(args) -> int:
    from wikimem.host.cluster import push_all

    pushed = push_all(_host(args))
    lines = [f"pushed {n:5} commit(s)  {owner_id}" for owner_id, n in pushed.items()]
    _print(args, pushed, lines or ["nothing pending"])
    return EXIT_OK


def _servers(value: str | None) -> list[str]:
    from urllib.parse import urlsplit

    text = value or read_setting("PEERS") or ""
    out = []
    for item in text.replace(",", " ").split():
        out.append(urlsplit(item).netloc if "://" in item else item)
    if not out:
        raise ValueError("give the upstream's servers with --servers (or set WIKIMEM_PEERS)")
    return out


def cmd_where(args) -> int:
    from wikimem.host import validate_owner_id
    from wikimem.host.cluster import Ring

    order = Ring(_servers(args.servers)).servers_for(validate_owner_id(args.owner))
    _print(args, order, [order[0]] + [f"  then {s}" for s in order[1:]])
    return EXIT_OK


def cmd_rebalance(args) -> int:
    from urllib.parse import urlsplit

    from wikimem.host.cluster import rebalance

    servers = _servers(args.servers)
    host = _host(args)
    me = args.me or read_setting("SELF") or read_setting("BIND") or ""
    me = urlsplit(me).netloc if "://" in me else me
    done = rebalance(host, servers, me, dry_run=args.dry_run)
    _print(args, done, [f"{owner_id}: {what}" for owner_id, what in done.items()] or ["every local owner belongs here"])
    return EXIT_OK if all(not w.startswith("kept") for w in done.values()) else EXIT_NOT_FOUND
