"""``ls``, ``show`` and ``grep``: read a memory folder."""

from __future__ import annotations

import re
import sys

from wikimem.models import RecallItem
from wikimem.store import MemoryStore

from . import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, store_root

# What makes a folder a memory folder: any of these in it.
_MARKERS = ("wiki", "diary", ".git", "journal.jsonl")


def open_store(args) -> MemoryStore:
    """The store of the command's memory folder; ``ValueError`` (exit 2) if there is none."""
    root = store_root(args)
    if not root.is_dir():
        raise ValueError(f"no memory folder at {root}")
    if not any((root / m).exists() for m in _MARKERS):
        shown = "the current folder" if str(root) == "." else str(root)
        raise ValueError(f"{shown} is not a memory folder (it has no wiki/ or diary/); "
                         "give --store DIR (or set WIKIMEM_STORE), or --owner ID --data ROOT for a host owner")
    return MemoryStore(root)


def register(sub) -> None:
    p = sub.add_parser("ls", help="list RecallFiles with their item counts, or the items of one")
    p.add_argument("file", nargs="?")
    p.set_defaults(handler=cmd_ls)

    p = sub.add_parser("show", help="print a RecallFile or one item (FILE NAME, FILE/NAME or FILE:NAME)")
    p.add_argument("file")
    p.add_argument("name", nargs="?")
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("grep", help="search the wiki (item names and contents) and the diary with a regular expression")
    p.add_argument("pattern")
    p.add_argument("-i", "--ignore-case", action="store_true")
    p.set_defaults(handler=cmd_grep)


def _provenance(item: RecallItem) -> str:
    bits = [f"{k}={v}" for k, v in (("owner", item.owner), ("source", item.source_conv), ("ts", item.ts)) if v]
    return "  (" + ", ".join(bits) + ")" if bits else ""


def cmd_ls(args) -> int:
    store = open_store(args)
    if args.file:
        items = store.items(args.file)
        if not items:
            print(f"wikimem: no RecallFile {args.file!r}", file=sys.stderr)
            return EXIT_NOT_FOUND
        for item in items:
            print(item.name)
        return EXIT_OK
    files = store.files()
    for file in files:
        print(f"{file}\t{len(store.items(file))}")
    days = store.diary.dates()
    if days:
        print(f"(diary)\t{len(days)} days, {days[0]} .. {days[-1]}")
    if not files and not days:
        print(f"wikimem: no memories in {store.root} yet", file=sys.stderr)
        return EXIT_NOT_FOUND
    return EXIT_OK


def _print_item(item: RecallItem) -> None:
    print(f"## {item.file}:{item.name}{_provenance(item)}")
    print()
    print(item.content)
    print()


def _split_ref(ref: str) -> tuple[str, str | None]:
    """``file/name`` (the form ``log`` prints) or ``file:name`` (``grep``'s) → ``(file, name)``.

    A RecallFile name never holds ``/`` or ``:``, so the first one splits.
    """
    cut = min((i for i in (ref.find("/"), ref.find(":")) if i > 0), default=-1)
    return (ref[:cut], ref[cut + 1:]) if cut > 0 else (ref, None)


def cmd_show(args) -> int:
    store = open_store(args)
    if args.name is None:
        args.file, args.name = _split_ref(args.file)
    if args.name is None:
        items = store.items(args.file)
    else:
        item = store.get(args.file, args.name)
        items = [item] if item else []
    if not items:
        what = f"{args.file}:{args.name}" if args.name else args.file
        print(f"wikimem: not found: {what}", file=sys.stderr)
        return EXIT_NOT_FOUND
    for item in items:
        _print_item(item)
    return EXIT_OK


def cmd_grep(args) -> int:
    store = open_store(args)
    try:
        rx = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
    except re.error as exc:
        print(f"wikimem: bad pattern: {exc}", file=sys.stderr)
        return EXIT_ERROR
    found = 0
    for item in store.items():
        for n, line in enumerate([item.name] + item.content.split("\n")):
            if rx.search(line):
                where = "name" if n == 0 else f"line {n}"
                print(f"{item.file}:{item.name}: {where}: {line}")
                found += 1
    for entry in _diary_entries(store):
        for n, line in enumerate(entry.content.split("\n"), 1):
            if rx.search(line):
                print(f"diary {entry.date} {entry.time}: line {n}: {line}")  # the form `log` prints
                found += 1
    return EXIT_OK if found else EXIT_NOT_FOUND


def _diary_entries(store: MemoryStore):
    """Every diary entry, day by day (one file in memory at a time)."""
    for day in store.diary.dates():
        yield from store.diary.day(day)
