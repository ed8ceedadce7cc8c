"""``character``: the host's character registry (SPEC §11).

``wikimem character put ID --name NAME [--persona TEXT | --persona-file FILE] [--shared-writes staged]``
registers or changes a character (a commit in its owner ``char:<id>``); ``list`` (``--deleted``), ``show ID``,
``delete ID``; ``migrate`` (``--dry-run``) registers one character per free-text ``character`` setting of the
owners and rewrites each setting to its id. Each change is an audit event, made through the host's gate.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from wikimem.errors import NotFound
from wikimem.host import SHARED_WRITES, Caller, character_owner

from . import EXIT_NOT_FOUND, EXIT_OK, Parser, open_host
from .erase import cli_actor


def register(sub) -> None:
    p = sub.add_parser("character", help="the character registry: put, list, show, delete, migrate")
    csub = p.add_subparsers(dest="character_command", metavar="ACTION", required=True, parser_class=Parser)
    put = csub.add_parser("put", help="register or change a character (a commit in char:<id>)")
    put.add_argument("character", metavar="ID", help="the character id, e.g. kai")
    put.add_argument("--name", required=True, help="its display name, e.g. Kai")
    persona = put.add_mutually_exclusive_group()
    persona.add_argument("--persona", default=None, help="who it is, for memorize's prompt")
    persona.add_argument("--persona-file", default=None, metavar="FILE", help="the persona, from a UTF-8 file")
    put.add_argument("--shared-writes", default="staged", choices=SHARED_WRITES,
                     help="its facts reach the shared layer as a proposal (staged, default), directly, or never")
    put.set_defaults(handler=cmd_put)
    ls = csub.add_parser("list", help="the registered characters")
    ls.add_argument("--deleted", action="store_true", help="the deleted ones too")
    ls.set_defaults(handler=cmd_list)
    show = csub.add_parser("show", help="one character's definition (JSON)")
    show.add_argument("character", metavar="ID")
    show.set_defaults(handler=cmd_show)
    delete = csub.add_parser("delete", help="mark a character deleted: it can no longer write; its layers stay")
    delete.add_argument("character", metavar="ID")
    delete.set_defaults(handler=cmd_delete)
    migrate = csub.add_parser("migrate", help="register the free-text character settings of the owners as "
                                              "characters and rewrite each setting to the id")
    migrate.add_argument("--dry-run", action="store_true", help="only print what it would do")
    migrate.set_defaults(handler=cmd_migrate)
    for parser in (put, ls, show, delete, migrate):
        parser.add_argument("--data", default=None, help="data root of the host (default: $WIKIMEM_DATA or ./data)")


def _caller() -> Caller:
    return Caller.cli(cli_actor())


def cmd_put(args) -> int:
    persona = Path(args.persona_file).read_text(encoding="utf-8") if args.persona_file else args.persona
    host = open_host(args)
    created = not host.characters.exists(args.character)
    with host.gate.act(_caller(), "character-put", character_owner(args.character), character=args.character) as act:
        found, commit = host.characters.put(args.character, name=args.name, persona=persona,
                                            shared_writes=args.shared_writes, ctx=act.ctx)
        act.done(commit, created=created)
    what = "registered" if created else "changed" if commit else "unchanged"
    print(f"{what} {found.id} ({found.name}, shared_writes={found.shared_writes})"
          + (f" in {found.owner_id} at {commit}" if commit else ""))
    return EXIT_OK


def cmd_list(args) -> int:
    found = open_host(args).characters.list(deleted=args.deleted)
    for c in found:
        print(f"{c.id}\t{c.name}\t{c.shared_writes}\t{'deleted' if c.deleted else 'active'}\t{c.updated or '-'}")
    return EXIT_OK if found else EXIT_NOT_FOUND


def cmd_show(args) -> int:
    try:
        found = open_host(args).characters.get(args.character)
    except NotFound as exc:
        print(f"wikimem: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    print(json.dumps(found.to_dict(), indent=1, ensure_ascii=False))
    return EXIT_OK


def cmd_delete(args) -> int:
    host = open_host(args)
    with host.gate.act(_caller(), "character-delete", character_owner(args.character),
                       character=args.character) as act:
        found, commit = host.characters.delete(args.character, ctx=act.ctx)
        act.done(commit)
    print(f"deleted {found.id} ({found.name})" + (f" at {commit}" if commit else " (it was already)"))
    return EXIT_OK


def cmd_migrate(args) -> int:
    plan = open_host(args).characters.migrate(_caller(), dry_run=args.dry_run)
    would = "would " if args.dry_run else ""
    for step in plan:
        made = f"{would}register {step.character} ({step.name!r})" if step.registered \
            else f"{step.name!r} is {step.character}"
        print(made)
        for owner_id in step.owners:
            print(f"  {owner_id}: {would}set character {step.name!r} -> {step.character}"
                  + (f" at {step.commits[owner_id]}" if step.commits.get(owner_id) else ""))
    if not plan:
        print("nothing to migrate: every character setting names a registered character", file=sys.stderr)
    return EXIT_OK
