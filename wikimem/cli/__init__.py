"""The ``wikimem`` command line (also ``python -m wikimem``).

Each command group lives in its own module with a ``register(subparsers)``
function; a command's handler takes the parsed arguments and returns the
exit code: 0 ok, 1 not found / no match, 2 usage or store error (no memory
folder there, an unknown host owner, a bad name).

The memory folder is ``--store DIR`` (or ``$WIKIMEM_STORE``, or the current
folder), or a host owner's folder: ``--owner ID`` under ``--data ROOT`` (or
``$WIKIMEM_DATA``, or ``./data``), i.e. ``ROOT/owners/<encoded id>``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from wikimem import __version__
from wikimem.errors import WikimemError

__all__ = ["main", "store_root", "Parser", "EXIT_OK", "EXIT_NOT_FOUND", "EXIT_ERROR"]

EXIT_OK, EXIT_NOT_FOUND, EXIT_ERROR = 0, 1, 2

# Modules holding command groups, in help order. Optional layers (git, host)
# import their dependencies only when their command runs.
_GROUPS = ("browse", "explain", "history", "hostcmd", "cluster", "runs")


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors exit 2, like argparse, with our prefix
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"wikimem: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="wikimem", description="Read, search and manage a wikimem memory folder.")
    parser.add_argument("--version", action="version", version=f"wikimem {__version__}")
    parser.add_argument("--store", default=None,
                        help="memory folder (default: $WIKIMEM_STORE or the current folder)")
    parser.add_argument("--owner", default=None, metavar="ID",
                        help="a host owner's memory folder instead, by owner id (e.g. user:xnne)")
    parser.add_argument("--data", dest="data_root", default=None, metavar="ROOT",
                        help="the host's data root for --owner (default: $WIKIMEM_DATA or ./data)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    import importlib

    for name in _GROUPS:
        importlib.import_module(f".{name}", __name__).register(sub)
    return parser


def store_root(args: argparse.Namespace) -> Path:
    """The memory folder the command works on (``--store``, or ``--owner`` under ``--data``)."""
    if getattr(args, "owner", None):
        if args.store:
            raise ValueError("give either --store or --owner, not both")
        from ..host.owner_ids import encode_owner_id  # stdlib only, validates the id

        data = Path(args.data_root or os.environ.get("WIKIMEM_DATA") or "data")
        root = data / "owners" / encode_owner_id(args.owner)
        if not (root / ".git").is_dir():
            raise ValueError(f"no owner {args.owner!r} under the data root {data} (looked for {root}); "
                             f"create it with PUT /api/v1/owners/<id>, or give --data ROOT")
        return root
    return Path(args.store or os.environ.get("WIKIMEM_STORE") or ".")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return int(args.handler(args) or 0)
    except (WikimemError, ValueError, OSError) as exc:
        print(f"wikimem: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `wikimem ls | head`
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
