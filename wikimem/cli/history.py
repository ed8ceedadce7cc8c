"""``log``, ``diff``, ``revert``, ``rollback``, ``restore``: the history of a versioned memory folder.

``log`` and ``diff`` show every layer of the folder (a change in a character's layer is marked ``[ID]``);
``--character ID`` narrows them to that character's layer (and the commits that touched no item)."""

from __future__ import annotations

import sys

from . import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, layer_of, open_owner, owner_with_gate, store_root


def open_versioned(args):
    """The versioned store of ``--store DIR``, or of ``--owner ID`` as the configured host holds it.

    A host owner is opened through the host (:func:`~wikimem.cli.open_owner`): caught
    up with (or cloned from) its remote first; what the command commits replicates
    and reaches the run index, as a write through the web app does.
    """
    if getattr(args, "owner", None):
        return open_owner(args).vstore
    root = store_root(args)
    if not (root / ".git").is_dir():
        raise ValueError(f"{root} is not a versioned memory folder (no .git)")
    from wikimem.versioned import VersionedStore  # dulwich only when a history command runs

    return VersionedStore(root)


def register(sub) -> None:
    p = sub.add_parser("log", help="the history, newest first (of a file, an item or a run)")
    p.add_argument("--file")
    p.add_argument("--item")
    p.add_argument("--run")
    p.add_argument("--actor")
    p.add_argument("--action", help="add, update, remove, diary, batch, memorize, revert, rollback, restore…")
    p.add_argument("--since", help="a date (whole UTC day) or an ISO-8601 time")
    p.add_argument("--until", help="a date (whole UTC day) or an ISO-8601 time")
    p.add_argument("--channel", help="the commits that added or removed a diary entry said in this channel (dm: a "
                                     "direct chat)")
    p.add_argument("-n", "--limit", type=int, default=20)
    p.set_defaults(handler=cmd_log, layered=True)

    p = sub.add_parser("diff", help="what a commit changed, or the changes between two points, item by item")
    p.add_argument("commit", help="a commit id/prefix, an ISO-8601 time, or HEAD")
    p.add_argument("to", nargs="?", help="a second point: show FROM..TO instead of one commit")
    p.add_argument("--patch", action="store_true", help="also print the raw unified patch")
    p.set_defaults(handler=cmd_diff, layered=True)

    for name, what, helptext in (("revert", "commit", "undo one commit, item by item, as a new commit"),
                                 ("rollback", "run", "undo every commit of a run as one new commit"),
                                 ("restore", "point", "make wiki/ and diary/ what they were at a commit or time; "
                                                      "given a backup folder (wikimem backup), a data root from it")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument(what)
        p.add_argument("--dry-run", action="store_true", help="only show the plan")
        if name != "restore":
            p.add_argument("--force", action="store_true", help="apply even over conflicts")
        else:
            from .backup import restore_args

            restore_args(p)
        p.add_argument("--actor", default="cli")
        p.set_defaults(handler=cmd_undo, op=name, target=what, force=False)


def _layers(args) -> tuple[str, ...] | None:
    """The layers ``log`` and ``diff`` show: ``--character``'s alone, else every one (None)."""
    layer = layer_of(args)
    return None if layer is None else (layer,)


def _change_line(ch) -> str:
    where = f"{ch.file}/{ch.name}" if ch.kind == "wiki" else f"diary {ch.date} {ch.time}"
    mark = {"added": "+", "removed": "-", "changed": "~"}[ch.status]
    return f"{mark} [{ch.layer}] {where}" if getattr(ch, "layer", None) else f"{mark} {where}"


def _print_changes(changes) -> None:
    for ch in changes:
        print(_change_line(ch))
        if ch.before is not None and ch.status != "added":
            for line in ch.before.splitlines() or [""]:
                print(f"    - {line}")
        if ch.after is not None and ch.status != "removed":
            for line in ch.after.splitlines() or [""]:
                print(f"    + {line}")


def cmd_log(args) -> int:
    from wikimem.host import parse_instant
    from wikimem.naming import validate_channel_id

    vs = open_versioned(args)
    page = vs.db.query(file=args.file, item=" ".join(args.item.split()) if args.item else None, run=args.run,
                       actor=args.actor, action=args.action, since=parse_instant(args.since, "--since"),
                       until=parse_instant(args.until, "--until", end_of_day=True), limit=max(1, args.limit),
                       layers=_layers(args), channel=validate_channel_id(args.channel) if args.channel else None)
    for e in page.entries:
        tags = " ".join(f"{k}={v}" for k, v in (("run", e.run), ("actor", e.actor), ("layers", e.layers)) if v)
        print(f"{e.id[:12]}  {e.time}  {e.summary}  [{tags}]")
    return EXIT_OK if page.entries else EXIT_NOT_FOUND


def cmd_diff(args) -> int:
    vs = open_versioned(args)
    layers = _layers(args)
    result = vs.diff(args.commit, args.to, layers) if args.to else vs.show_commit(args.commit, layers)
    if result.entry is not None:
        print(f"commit {result.entry.id}\n{result.entry.time}  {result.entry.actor}  {result.entry.summary}\n")
    _print_changes(result.changes)
    if args.patch:
        sys.stdout.write(result.patch)
    return EXIT_OK


def _undo_calls(args):
    """``(preview, apply, gate, owner)`` of the one undo table: through the host's Owner for ``--owner`` (its retry
    when the remote moved) and the host's gate, else the folder's own versioned store and a folder's gate."""
    from wikimem.host import Gate

    if getattr(args, "owner", None):
        owner, gate = owner_with_gate(args)
        return owner.preview_undo, owner.undo, gate, owner.id
    vs = open_versioned(args)
    return vs.undo.preview, vs.undo.apply, Gate(), str(vs.root)


def cmd_undo(args) -> int:
    from wikimem.errors import Conflict
    from wikimem.host import Ask, Caller

    from .backup import cmd_restore, is_backup

    if args.op == "restore" and is_backup(args.point):
        return cmd_restore(args)

    preview, apply, gate, where = _undo_calls(args)
    target = getattr(args, args.target)
    if args.dry_run:
        plan = preview(args.op, target)
        if not plan.changes and not plan.conflicts:
            print(f"nothing to change: {args.op} {target} would write nothing")
            return EXIT_OK
        _print_changes(plan.changes)
        for c in plan.conflicts:
            print(f"! conflict {c.get('file')}/{c.get('name')}: {c.get('reason')}")
        return EXIT_OK
    try:
        with gate.act(Caller.cli(), args.op, where, Ask(actor=args.actor), **{args.target: target},
                      force=args.force or None) as act:
            done = apply(args.op, target, force=args.force, ctx=act.ctx)
            act.done(done.commit)
    except Conflict as exc:
        print(f"wikimem: {exc} (nothing written; --force to apply anyway)", file=sys.stderr)
        for c in exc.conflicts:
            print(f"! conflict {c.get('file')}/{c.get('name')}: {c.get('reason')}", file=sys.stderr)
        return EXIT_ERROR
    _print_changes(done.value.changes)
    print(f"commit {done.commit}" if done.commit else "nothing to change")
    return EXIT_OK
