"""``repair``: put a damaged memory folder right (``wikimem repair --owner ID`` or ``--store DIR``).

What a host answers with ``folder_damaged`` (HTTP 500) for one owner — a
branch naming no commit, a symbolic link, FIFO, device or oversized file in
the folder, a damaged history index, a ``settings.json`` nobody can read —
is put right by :meth:`VersionedStore.repair
<wikimem.versioned.VersionedStore.repair>`; what it moves aside lands in
``.git/wikimem-quarantine/``. With a remote (``WIKIMEM_REMOTE``) the owner is
then caught up with it and what the repair committed is pushed. A folder
beyond that (no good commit left) comes back from the remote with
``wikimem cluster restore --owner ID`` once moved away.
"""

from __future__ import annotations

import argparse
import json

from . import EXIT_OK, open_host, store_root


def register(sub) -> None:
    p = sub.add_parser("repair", help="put a damaged memory folder right (see `wikimem repair --help`)",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--owner", default=argparse.SUPPRESS, metavar="ID", help="a host owner, by id")
    p.add_argument("--data", dest="data_root", default=argparse.SUPPRESS, metavar="ROOT",
                   help="the host's data root (default: $WIKIMEM_DATA or ./data)")
    p.add_argument("--store", default=argparse.SUPPRESS, help="a memory folder instead of a host owner")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_repair)


def cmd_repair(args) -> int:
    root = store_root(args)
    if not (root / ".git").is_dir():
        raise ValueError(f"{root} is not a versioned memory folder (no .git)")
    from wikimem.versioned import VersionedStore  # dulwich only when the command runs

    vs = VersionedStore(root)
    try:
        done = vs.repair()
    finally:
        vs.close()
    if getattr(args, "owner", None):
        host = open_host(args)
        if host.replication is not None:
            owner = host.owner(args.owner)  # caught up with the remote on the way
            if owner.vstore.push_pending():
                done.append("pushed to the remote")
    if args.json:
        print(json.dumps({"folder": str(root), "done": done}, ensure_ascii=False, indent=1))
    else:
        for line in done or ["nothing to repair"]:
            print(line)
    return EXIT_OK
