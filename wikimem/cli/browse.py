"""``ls``, ``show``, ``grep`` and ``graph``: read a memory folder, in upstream wikimem's shapes.

``ls`` — RecallFiles with their item counts (``ls FILE``: its items); ``show
FILE [NAME]`` — a RecallFile or one item exactly as the file stores it;
``grep PATTERN [-i]`` — ``file:name:line`` for every matching line (a name
match as ``file:name:## name``; diary entries as ``date:HH:MM:line``);
``graph [--format mermaid|json]`` — the wiki-link graph. Exit codes 0 ok,
1 not found / no match, 2 usage or store error. ``--character ID`` reads the
folder's layer ``characters/ID/`` (the plain library's store of it) instead.
"""

from __future__ import annotations

import json
import re
import sys

from wikimem.format import render_wiki
from wikimem.linkgraph import link_graph
from wikimem.store import MemoryStore

from . import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, layer_of, store_root

# What makes a folder a memory folder: any of these in it (or nothing at all: an empty one).
_MARKERS = ("wiki", "diary", ".git", "journal.jsonl")


def open_store(args) -> MemoryStore:
    """The store of the command's memory folder, or of its layer ``--character ID``; ``ValueError`` (exit 2) if
    there is none."""
    root = store_root(args)
    layer = layer_of(args)
    if not root.is_dir():
        raise ValueError(f"memory folder not found: {root}")
    if not any((root / m).exists() for m in _MARKERS) and any(root.iterdir()):
        shown = "the current folder" if str(root) == "." else str(root)
        raise ValueError(f"{shown} is not a memory folder (it has no wiki/ or diary/); "
                         "give --store DIR (or set WIKIMEM_STORE), or --owner ID --data ROOT for a host owner")
    if layer is None:
        return MemoryStore(root)
    if not (root / "characters" / layer).is_dir():
        raise ValueError(f"no layer of the character {layer!r} in {root} (no characters/{layer}/ folder)")
    return MemoryStore(root).layer(layer)


def register(sub) -> None:
    p = sub.add_parser("ls", help="list RecallFiles with their item counts, or the items of one")
    p.add_argument("file", nargs="?")
    p.set_defaults(handler=cmd_ls, layered=True)

    p = sub.add_parser("show", help="print a RecallFile or one item as the file stores it "
                                    "(FILE NAME, FILE/NAME or FILE:NAME)")
    p.add_argument("file")
    p.add_argument("name", nargs="?")
    p.set_defaults(handler=cmd_show, layered=True)

    p = sub.add_parser("grep", help="search item names and contents (and the diary) with a regular expression")
    p.add_argument("pattern")
    p.add_argument("-i", "--ignore-case", action="store_true")
    p.set_defaults(handler=cmd_grep, layered=True)

    p = sub.add_parser("graph", help="the wiki-link graph: which item links where, which links dangle")
    p.add_argument("--format", choices=("mermaid", "json"), default="mermaid",
                   help="mermaid (paste into any markdown renderer, the default) or JSON {nodes, edges}")
    p.set_defaults(handler=cmd_graph, layered=True)


def cmd_ls(args) -> int:
    store = open_store(args)
    if args.file:
        items = store.items(args.file)
        if not items:
            print(f"wikimem: no such category (RecallFile) {args.file!r}", file=sys.stderr)
            return EXIT_NOT_FOUND
        for item in items:
            print(item.name)
        return EXIT_OK
    files = store.files()
    width = max([15, *(len(f) + 1 for f in files)])
    for file in files:
        print(f"{file:<{width}} {len(store.items(file))}")
    days = store.diary.dates()
    if days:
        print(f"{'(diary)':<{width}} {len(days)} days, {days[0]} .. {days[-1]}")
    if not files and not days:
        print(f"wikimem: no memories in {store.root} yet", file=sys.stderr)  # (stdout stays quiet)
    return EXIT_OK


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
    items = store.items(args.file)
    if not items:
        print(f"wikimem: no such category (RecallFile) {args.file!r}", file=sys.stderr)
        return EXIT_NOT_FOUND
    if args.name is not None:
        item = store.get(args.file, args.name)
        if item is None:
            print(f"wikimem: no item {args.name!r} in {args.file}", file=sys.stderr)
            return EXIT_NOT_FOUND
        text = (render_wiki(args.file, [item]) or b"").decode("utf-8")
        text = text.split("\n", 2)[2] if text.startswith("# ") else text  # the item's block, without the title
    else:
        text = (render_wiki(args.file, items) or b"").decode("utf-8")
    sys.stdout.write(text)
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
        for line in [f"## {item.name}"] + item.content.split("\n"):
            if rx.search(line):
                print(f"{item.file}:{item.name}:{line}")
                found += 1
    for day in store.diary.dates():  # one day file in memory at a time
        for entry in store.diary.day(day):
            for line in entry.content.split("\n"):
                if rx.search(line):
                    print(f"{entry.date}:{entry.time}:{line}")
                    found += 1
    return EXIT_OK if found else EXIT_NOT_FOUND


def cmd_graph(args) -> int:
    graph = link_graph(open_store(args).items())
    if args.format == "json":
        print(json.dumps(graph.to_json(), ensure_ascii=False, indent=2))
    else:
        sys.stdout.write(graph.to_mermaid())
    return EXIT_OK
