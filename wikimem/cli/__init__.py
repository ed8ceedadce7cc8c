"""The ``wikimem`` command line (also ``python -m wikimem``).

Each command group lives in its own module with a ``register(subparsers)``
function; a command's handler takes the parsed arguments and returns the
exit code: 0 ok, 1 not found / no match, 2 usage or store error.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from ..errors import WikimemError

__all__ = ["main", "EXIT_OK", "EXIT_NOT_FOUND", "EXIT_ERROR"]

EXIT_OK, EXIT_NOT_FOUND, EXIT_ERROR = 0, 1, 2

# Modules holding command groups, in help order. Optional layers (git, host)
# import their dependencies only when their command runs.
_GROUPS = ("browse", "explain", "history", "hostcmd", "runs")


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors exit 2, like argparse, with our prefix
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"wikimem: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="wikimem", description="Read, search and manage a wikimem memory folder.")
    parser.add_argument(
        "--store",
        default=os.environ.get("WIKIMEM_STORE", "."),
        help="memory folder (default: $WIKIMEM_STORE or the current folder)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    import importlib

    for name in _GROUPS:
        importlib.import_module(f".{name}", __name__).register(sub)
    return parser


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
