"""The code blocks of README.md and docs/, each named by the marker on the line before it.

Every fenced block of the documentation is introduced by one marker line::

    <!-- test: NAME -->      a test runs the block, or checks it against the code
    <!-- output: NAME -->    what a command prints or writes: a test compares it with the real thing

A test claims a block by calling :func:`doc_block` (or :func:`doc_blocks`) with its
name, as a literal string; ``tests/unit/test_doc_blocks.py`` fails on a block without
a marker and on a name no test claims. Names may repeat (the generated reference pages
share one); :func:`doc_block` wants exactly one.
"""

from __future__ import annotations

import contextlib
import io
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^\s*<!-- (test|output): ([a-z0-9][a-z0-9-]*) -->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")


@dataclass(frozen=True)
class Block:
    path: str        # relative to the repository
    line: int        # of the opening fence, 1-based
    lang: str
    kind: str | None  # "test", "output", or None (no marker)
    name: str | None
    text: str        # dedented, as a reader would copy it


def documents() -> list[Path]:
    """README.md and every page of the site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        indent, fence, lang = opened.groups()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence[:3]):
            j += 1
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = MARKER.match(before)
        body = "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:j])
        out.append(Block(path.relative_to(ROOT).as_posix(), i + 1, lang,
                         marker.group(1) if marker else None, marker.group(2) if marker else None,
                         textwrap.dedent(body) + "\n"))
        i = j + 1
    return out


def all_blocks() -> list[Block]:
    return [b for doc in documents() for b in blocks_of(doc)]


def doc_blocks(name: str) -> list[Block]:
    """Every block marked ``name``."""
    found = [b for b in all_blocks() if b.name == name]
    assert found, f"no documentation block is marked {name!r}"
    return found


def doc_block(name: str) -> str:
    """The text of the one block marked ``name``."""
    found = doc_blocks(name)
    assert len(found) == 1, f"{name!r} marks {len(found)} blocks: {[(b.path, b.line) for b in found]}"
    return found[0].text


def printed_by(code: str, filename: str) -> str:
    """What a Python block prints when run (in the current directory, with fresh globals)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, filename, "exec"), {})
    return printed.getvalue()


def page_addresses(text: str) -> list[str]:
    """The addresses of a guide's list of pages: each line's first word."""
    return [line.split()[0] for line in text.splitlines() if line.strip()]
