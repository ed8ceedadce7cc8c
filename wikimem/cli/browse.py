"""``ls``, ``show`` and ``grep``: read a memory folder."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ..models import RecallItem
from ..store import MemoryStore
from . import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK


def open_store(args) -> MemoryStore:
    root = Path(args.store)
    if not root.is_dir():
        raise ValueError(f"no memory folder at {root}")
    return MemoryStore(root)


def register(sub) -> None:
    p = sub.add_parser("ls", help="list RecallFiles with their item counts, or the items of one")
    p.add_argument("file", nargs="?")
    p.set_defaults(handler=cmd_ls)

    p = sub.add_parser("show", help="print a RecallFile or one item")
    p.add_argument("file")
    p.add_argument("name", nargs="?")
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("grep", help="search item names and contents with a regular expression")
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
    return EXIT_OK if files or days else EXIT_NOT_FOUND


def _print_item(item: RecallItem) -> None:
    print(f"## {item.file}:{item.name}{_provenance(item)}")
    print()
    print(item.content)
    print()


def cmd_show(args) -> int:
    store = open_store(args)
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
    return EXIT_OK if found else EXIT_NOT_FOUND
