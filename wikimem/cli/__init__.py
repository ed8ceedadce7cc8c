"""The ``wikimem`` command line (also ``python -m wikimem``).

Each command group lives in its own module with a ``register(subparsers)``
function; a command's handler takes the parsed arguments and returns the
exit code: 0 ok, 1 not found / no match, 2 usage or store error (no memory
folder there, an unknown host owner, a bad name).

The memory folder is ``--store DIR`` / ``-s DIR`` (or ``$WIKIMEM_STORE``, or
the current folder), or a host owner's folder: ``--owner ID`` under ``--data
ROOT`` (or ``$WIKIMEM_DATA``, or ``./data``), i.e. ``ROOT/owners/<encoded id>``.
These global options are accepted before or after the command, the same for
every command (:func:`build_parser`); a command that has an option of the
same name for itself (``cluster verify --owner``) keeps its own. ``--character
ID`` addresses a character's layer of the folder (``characters/ID/``, SPEC
§11): only the commands marked ``layered=True`` in their defaults take it.

Settings come from :mod:`wikimem.host.config` (the environment, then the
command's flags): :func:`read_setting` for one of them, :func:`open_host` (and
:func:`open_owner`) for a command that needs the host — the same host the web app builds, with its
replication, peers, embedder and recall options.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wikimem import __version__
from wikimem.errors import WikimemError

__all__ = ["main", "store_root", "layer_of", "read_setting", "host_config", "open_host", "open_owner", "Parser",
           "EXIT_OK", "EXIT_NOT_FOUND", "EXIT_ERROR", "GLOBAL_OPTIONS", "is_global_copy"]

EXIT_OK, EXIT_NOT_FOUND, EXIT_ERROR = 0, 1, 2
# Async replication: how long a command waits at its end for its commits to reach the remote.
PUSH_WAIT = 60.0
_OPENED: list = []  # the hosts the running command opened (see open_host)

# Modules holding command groups, in help order. Optional layers (git, host)
# import their dependencies only when their command runs.
_GROUPS = ("browse", "explain", "history", "hostcmd", "cluster", "runs", "staged", "repair", "backup", "erase",
           "characters", "imports")


class Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.commands: list[argparse.ArgumentParser] = []  # the parsers of its subcommands (every level below)

    def error(self, message: str):  # usage errors exit 2, like argparse, with our prefix
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"wikimem: error: {message}\n")

    def add_subparsers(self, **kwargs: Any):
        action = super().add_subparsers(**kwargs)
        make = action.add_parser

        def add_parser(name: str, **options: Any) -> argparse.ArgumentParser:
            child = make(name, **options)
            self.commands.append(child)
            return child

        action.add_parser = add_parser  # type: ignore[method-assign]
        return action

    def every_command(self):
        """The parsers of every subcommand, at every level."""
        for child in self.commands:
            yield child
            if isinstance(child, Parser):
                yield from child.every_command()


# The global options: (flags, dest, metavar, help).
GLOBAL_OPTIONS = (
    (("--store", "-s"), "store", "DIR", "memory folder (default: $WIKIMEM_STORE or the current folder)"),
    (("--owner",), "owner", "ID", "a host owner's memory folder instead, by owner id (e.g. user:xnne)"),
    (("--data",), "data_root", "ROOT", "the host's data root for --owner (default: $WIKIMEM_DATA or ./data)"),
    (("--character",), "layer", "ID",
     "a character's layer (characters/ID/) instead of the shared one (ls, show, grep, graph, explain, log, diff); "
     "runs, bulk-rollback: the runs that wrote it"),
)


def is_global_copy(action: argparse.Action) -> bool:
    """Whether ``action`` is a global option as a command repeats it (given after the command)."""
    return action.default is argparse.SUPPRESS and action.dest in {dest for _, dest, _, _ in GLOBAL_OPTIONS}


def _add_globals(parser: argparse.ArgumentParser, *, after: bool) -> None:
    """The global options on ``parser``: with their defaults at the top, left unset after a command (so a value
    given before the command stays), and not where the command has an option of that name itself."""
    for flags, dest, metavar, text in GLOBAL_OPTIONS:
        try:
            parser.add_argument(*flags, dest=dest, metavar=metavar, help=text,
                                default=argparse.SUPPRESS if after else None)
        except argparse.ArgumentError:  # the command's own --owner / --data / -s: it keeps its meaning
            continue


def build_parser() -> Parser:
    parser = Parser(prog="wikimem", description="Read, search and manage a wikimem memory folder.")
    parser.add_argument("--version", action="version", version=f"wikimem {__version__}")
    _add_globals(parser, after=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    import importlib

    for name in _GROUPS:
        importlib.import_module(f".{name}", __name__).register(sub)
    for child in parser.every_command():
        _add_globals(child, after=True)
    return parser


def store_root(args: argparse.Namespace) -> Path:
    """The memory folder the command works on (``--store``, or ``--owner`` under ``--data``)."""
    if getattr(args, "owner", None):
        if args.store:
            raise ValueError("give either --store or --owner, not both")
        from wikimem.host import encode_owner_id  # stdlib only, validates the id

        data = Path(getattr(args, "data_root", None) or getattr(args, "data", None) or read_setting("DATA_ROOT"))
        root = data / "owners" / encode_owner_id(args.owner)
        if not (root / ".git").is_dir():
            raise ValueError(f"no owner {args.owner!r} under the data root {data} (looked for {root}); "
                             f"create it with PUT /api/v1/owners/<id>, or give --data ROOT")
        return root
    return Path(args.store or read_setting("STORE"))


def layer_of(args: argparse.Namespace) -> str | None:
    """The character id ``--character`` names (None: the shared layer); :class:`~wikimem.errors.InvalidName` when
    it is not one."""
    from wikimem.naming import validate_character_id

    layer = getattr(args, "layer", None)
    return validate_character_id(layer) if layer is not None else None


def read_setting(key: str) -> Any:
    """One setting from the environment (:func:`wikimem.host.read_setting`), for a command without a host."""
    from wikimem.host import read_setting as one

    return one(key)


def host_config(args: argparse.Namespace, **flags: Any):
    """The host's :class:`~wikimem.host.config.Config`: ``WIKIMEM_*``, then the command's ``--data`` and ``flags``
    (by key, e.g. ``REMOTE=args.remote``; None = not given)."""
    from wikimem.host import load_config

    given = {"DATA_ROOT": getattr(args, "data", None) or getattr(args, "data_root", None), **flags}
    return load_config({key: value for key, value in given.items() if value is not None})


def open_host(args: argparse.Namespace, **flags: Any):
    """The :class:`~wikimem.host.Host` of the command, built by :func:`wikimem.host.build_host`.

    Its writes replicate as the web app's do: ``sync``, on the remote before
    they return; ``async``, pushed in the background, and waited for by
    :func:`main` when the command ends (a process that exits drops its queue).
    """
    from wikimem.host import build_host

    host = build_host(host_config(args, **flags))
    _OPENED.append(host)
    return host


def open_owner(args: argparse.Namespace):
    """The :class:`~wikimem.host.Owner` that ``--owner`` names, from the host of :func:`open_host`.

    With a remote, an owner the data root lacks is cloned from it first, as the
    host does; without one, a missing owner is refused before anything is made.
    """
    return owner_with_gate(args)[0]


def owner_with_gate(args: argparse.Namespace):
    """``(owner, gate)``: :func:`open_owner`'s owner and its host's gate (:class:`~wikimem.host.Gate`), through
    which a command's change gets its write context and its audit event."""
    if args.store:
        raise ValueError("give either --store or --owner, not both")
    if host_config(args).replication_settings is None:
        store_root(args)  # the plain commands' refusal (no folder made under a mistyped --data)
    host = open_host(args)
    return host.owner(args.owner), host.gate


def _settle() -> None:
    """Wait for the async pushes of the hosts the command opened."""
    while _OPENED:
        _wait_for_pushes(_OPENED.pop())


def _wait_for_pushes(host) -> None:
    pusher = host.replication.pusher if host.replication is not None else None
    if pusher is not None and not pusher.drain(PUSH_WAIT):
        print(f"wikimem: {pusher.queued()} owner(s) not on the remote yet; the host pushes them "
              "(or run `wikimem cluster push`)", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    if getattr(args, "layer", None) is not None and not getattr(args, "layered", False):
        takers = ", ".join(c.prog.removeprefix("wikimem ") for c in parser.every_command() if c.get_default("layered"))
        parser.error(f"`wikimem {args.command}` takes no --character (these do: {takers})")
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:  # `wikimem ls | head` (an OSError: before the clause below)
        return EXIT_OK
    except (WikimemError, ValueError, OSError) as exc:  # (a bad WIKIMEM_* value is a ValueError too)
        print(f"wikimem: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    finally:
        _settle()
