"""``import`` and ``export``: SillyTavern's cards and chats in, a person in and out, memories back as a lorebook.

``wikimem import card FILE [--character ID] [--preview]`` (a JSON or PNG card: a character, its lorebook);
``wikimem import chat FILE --owner ID --character ID [--preview] [--transcript] [--tz ZONE]`` (a chat
memorized turn by turn as one run, run here until done; ``--transcript`` keeps it as a conversation file);
``wikimem import person FILE [--owner ID] [--replace]`` (a person's portable file); ``wikimem import rollback
RUN --owner ID`` (an import undone); ``wikimem export person --owner ID``, ``wikimem export lorebook --owner ID
[--character ID] [--shared] [--format worldinfo|databank]``, ``wikimem export card ID``. Each change is an
audit event, made through the host's gate. See :mod:`wikimem.host.imports`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from wikimem.host import IMPORT_ACTOR, SHARED_WRITES, Ask, Caller, character_owner, owner_of_file

from . import EXIT_OK, Parser, open_host
from .erase import cli_actor, finish_job

_DATA_HELP = "data root of the host (default: $WIKIMEM_DATA or ./data)"


def register(sub) -> None:
    p = sub.add_parser("import", help="import SillyTavern cards and chats, or a person's portable file")
    isub = p.add_subparsers(dest="import_command", metavar="WHAT", required=True, parser_class=Parser)
    card = isub.add_parser("card", help="a character card (V2/V3, JSON or PNG) becomes a character")
    card.add_argument("file", metavar="FILE")
    card.add_argument("--character", default=None, metavar="ID", help="the character id (default: from its name)")
    card.add_argument("--shared-writes", default=None, choices=SHARED_WRITES, help="its policy for the shared layer")
    card.add_argument("--preview", action="store_true", help="only show what it would change")
    card.set_defaults(handler=cmd_card)
    chat = isub.add_parser("chat", help="a SillyTavern chat (JSONL) becomes a person's memory with a character")
    chat.add_argument("file", metavar="FILE")
    chat.add_argument("--character", required=True, metavar="ID", help="the character the person talked with")
    chat.add_argument("--tz", default=None, help="the zone of the chat's local times (default: the person's)")
    chat.add_argument("--preview", action="store_true", help="only show the turns, days and estimated cost")
    chat.add_argument("--transcript", action="store_true", help="keep it as a conversation file (no model)")
    chat.add_argument("--timeout", type=float, default=24 * 3600.0, help="seconds to wait for the job")
    chat.set_defaults(handler=cmd_chat)
    person = isub.add_parser("person", help="a person's portable file (from `wikimem export person`)")
    person.add_argument("file", metavar="FILE")
    person.add_argument("--replace", action="store_true", help="put it in place of a person of that id here")
    person.set_defaults(handler=cmd_person)
    undo = isub.add_parser("rollback", help="undo an import's run on a person (and its proposal)")
    undo.add_argument("run", metavar="RUN")
    undo.set_defaults(handler=cmd_rollback)
    e = sub.add_parser("export", help="export a person's portable file, a lorebook, or a character's card")
    esub = e.add_subparsers(dest="export_command", metavar="WHAT", required=True, parser_class=Parser)
    ep = esub.add_parser("person", help="one person as one file: every layer, the whole history, settings")
    ep.set_defaults(handler=cmd_export_person)
    lore = esub.add_parser("lorebook", help="what a character knows of a person, for SillyTavern")
    lore.add_argument("--character", default=None, metavar="ID", help="its layer (default: the shared layer)")
    lore.add_argument("--shared", action="store_true", help="the shared layer too")
    lore.add_argument("--format", default="worldinfo", choices=("worldinfo", "databank"),
                      help="World Info JSON (default) or a Data Bank markdown file")
    lore.set_defaults(handler=cmd_export_lorebook)
    ec = esub.add_parser("card", help="the card a character was imported from (JSON)")
    ec.add_argument("character", metavar="ID")
    ec.set_defaults(handler=cmd_export_card)
    for parser in (card, chat, person, undo, ep, lore, ec):
        parser.add_argument("--data", default=None, help=_DATA_HELP)
    for parser in (ep, lore, ec):
        parser.add_argument("-o", "--output", default=None, metavar="FILE", help="write it here (default: stdout)")


def _caller() -> Caller:
    return Caller.cli(cli_actor())


def _read(path: str) -> bytes:
    return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()


def _print(value) -> None:
    print(json.dumps(value, indent=1, ensure_ascii=False))


def _owner_id(args) -> str:
    if not getattr(args, "owner", None):
        raise ValueError("give the person: --owner ID")
    return args.owner


def cmd_card(args) -> int:
    host, raw = open_host(args), _read(args.file)
    if args.preview:
        _print(host.imports.preview_card(raw, character=args.character, shared_writes=args.shared_writes).to_dict())
        return EXIT_OK
    plan = host.imports.preview_card(raw, character=args.character, shared_writes=args.shared_writes)
    with host.gate.act(_caller(), "import-card", character_owner(plan.character), Ask(actor=IMPORT_ACTOR),
                       character=plan.character) as act:
        done = host.imports.import_card(raw, ctx=act.ctx, character=plan.character, shared_writes=args.shared_writes)
        act.done(done.commit, run=done.run, created=done.plan.created)
    _print(done.to_dict())
    return EXIT_OK


def cmd_chat(args) -> int:
    host, raw = open_host(args), _read(args.file)
    person = host.owner(_owner_id(args))
    if args.preview:
        _print(host.imports.preview_chat(person, args.character, raw, tz=args.tz).to_dict())
        return EXIT_OK
    if args.transcript:
        with host.gate.act(_caller(), "import-transcript", person, Ask(actor=IMPORT_ACTOR, layer=args.character),
                           character=args.character) as act:
            done = host.imports.keep_transcript(person, args.character, raw, ctx=act.ctx, tz=args.tz)
            act.done(done["commit"], run=done["run"])
        _print(done)
        return EXIT_OK
    with host.gate.act(_caller(), "import-chat", person, Ask(actor=IMPORT_ACTOR, layer=args.character),
                       character=args.character) as act:
        job, _, preview = host.imports.import_chat(person, args.character, raw, ctx=act.ctx, tz=args.tz,
                                                   tenant=act.tenant)
        act.done(job=job.id, run=job.params.get("run"), turns=preview.turns)
    print(f"import {job.id}: {preview.turns} turns over {len(preview.days)} day(s), run {job.params.get('run')}",
          file=sys.stderr)
    return finish_job(host, job.id, args.timeout, _progress())


def _progress():
    """What the command prints of a running import: each new count of turns done."""
    shown = [-1]

    def told(job) -> None:
        done = ((job.results[0] if job.results else {}).get("result") or {}).get("done", 0)
        if done != shown[0] and job.state == "running":
            print(f"  {done} of {job.params.get('turns')} turns", file=sys.stderr)
            shown[0] = done

    return told


def cmd_person(args) -> int:
    owner_id = args.owner or owner_of_file(args.file)
    host = open_host(args)
    with host.gate.act(_caller(), "import-person", owner_id, replace=args.replace or None) as act:
        done = host.imports.import_person(owner_id, Path(args.file), replace=args.replace)
        act.done(done.head, replaced=done.replaced)
    _print(done.to_dict())
    if done.unregistered:
        print(f"wikimem: characters with a layer in {owner_id} not registered here: {', '.join(done.unregistered)} "
              "(wikimem character put, or wikimem import card)", file=sys.stderr)
    return EXIT_OK


def cmd_rollback(args) -> int:
    host = open_host(args)
    person = host.owner(_owner_id(args))
    with host.gate.act(_caller(), "import-rollback", person, Ask(), run=args.run) as act:
        done = host.imports.roll_back(person, args.run, ctx=act.ctx)
        act.done(done["commit"], discarded=done["discarded"])
    _print(done)
    return EXIT_OK


def _write(args, data: bytes) -> None:
    if args.output:
        Path(args.output).write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


def cmd_export_person(args) -> int:
    host, owner_id = open_host(args), _owner_id(args)
    caller = _caller()
    data = host.imports.export_person(owner_id, by=caller.name)
    host.gate.note(caller, "export-person", owner=owner_id, bytes=len(data))
    _write(args, data)
    if args.output:
        print(f"wrote {owner_id} to {args.output} ({len(data):,} bytes); import it with: wikimem import person "
              f"{args.output}", file=sys.stderr)
    return EXIT_OK


def cmd_export_lorebook(args) -> int:
    host = open_host(args)
    person = host.owner(_owner_id(args))
    if args.format == "databank":
        text = host.imports.data_bank(person, args.character, shared=args.shared)
        _write(args, text.encode("utf-8"))
    else:
        book = host.imports.world_info(person, args.character, shared=args.shared)
        _write(args, (json.dumps(book, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    return EXIT_OK


def cmd_export_card(args) -> int:
    card = open_host(args).imports.card_of(args.character)
    _write(args, (json.dumps(card, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    return EXIT_OK

