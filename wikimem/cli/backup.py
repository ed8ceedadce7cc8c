"""``backup`` and ``restore SRC``: a data root with every owner's history, copied while the host serves.

``wikimem backup DEST --data ROOT`` writes one bundle per owner whose head
changed since the last backup in DEST, the non-derived databases and a
manifest; ``wikimem restore SRC --data ROOT`` (the history command
``restore``, given a backup folder) makes an empty data root equal to the
newest backup in SRC (``--owner ID``: that owner only, into an existing data
root), then rebuilds the derived run index. See :mod:`wikimem.host.backups`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import EXIT_OK, host_config, open_host


def register(sub) -> None:
    p = sub.add_parser("backup", help="back up a data root (every owner's history, the databases) into DEST")
    p.add_argument("dest", help="the backup folder (made if missing; later runs are incremental by owner head)")
    p.add_argument("--data", default=None, help="data root of the host (default: $WIKIMEM_DATA or ./data)")
    p.add_argument("--keep", type=int, default=None, metavar="N",
                   help="keep only the newest N backups in DEST (and the bundles they name)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=cmd_backup)



def restore_args(p) -> None:
    """The options of ``wikimem restore SRC`` (the history command ``restore POINT`` takes a backup folder too)."""
    p.add_argument("--data", default=None, help="backup: data root to restore into (default: $WIKIMEM_DATA)")
    p.add_argument("--owner", dest="restore_owner", default=None, metavar="ID",
                   help="backup: restore only this owner, into an existing data root")
    p.add_argument("--replace", action="store_true", help="backup: with --owner, put it in place of the one there")
    p.add_argument("--manifest", default=None, help="backup: a manifest file name in SRC/manifests (the newest)")
    p.add_argument("--trust-unsigned", action="store_true",
                   help="backup: restore the databases of a manifest not signed with this host's WIKIMEM_SECRET_KEY "
                        "too (only for a backup folder nobody else could write)")
    p.add_argument("--json", action="store_true", help="backup: print the report as JSON")


def is_backup(path: str) -> bool:
    """Whether ``path`` is a backup folder (it has ``manifests/``), not a commit point."""
    return (Path(path) / "manifests").is_dir()


def cmd_backup(args) -> int:
    from wikimem.host import make_backup

    host = open_host(args)
    report = make_backup(host.root, args.dest, erased=host.erasure.erased, keep=args.keep,
                         secret=host_config(args).secret_key)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print(f"{report.manifest}: {report.owners} owners ({report.bundled} bundled, {report.reused} unchanged), "
              f"databases: {', '.join(report.databases) or 'none'}, {report.bytes_written} bytes, "
              f"{report.seconds:.1f} s" + (f", {report.purged} bundles of erased owners purged" if report.purged
                                           else "") + ("" if report.signed else
                                                       " (unsigned: no WIKIMEM_SECRET_KEY; a restore will leave "
                                                       "its databases out)"))
    return EXIT_OK


def cmd_restore(args) -> int:
    from wikimem.host import restore_backup

    root = open_host(args).root
    report = restore_backup(args.point, root, owner=args.restore_owner, manifest=args.manifest, replace=args.replace,
                            secret=host_config(args).secret_key, trust_unsigned=args.trust_unsigned)
    host = open_host(args)  # a host over the restored data root: its derived run index made again
    if args.restore_owner:
        host.run_index.reindex(host.owner(args.restore_owner))
    else:
        host.fleet.refresh_run_index(full=True)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        for owner_id, head in sorted(report.heads.items()):
            print(f"{owner_id}\t{head}")
        print(f"restored {len(report.heads)} owner(s) from {report.manifest}"
              + (f" and the databases {', '.join(report.databases)}" if report.databases else ""), file=sys.stderr)
        for name, why in report.skipped.items():
            print(f"not restored: {name}: {why}", file=sys.stderr)
    return EXIT_OK
