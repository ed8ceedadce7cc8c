"""The one block format shared by wiki files and diary days.

Design notes: docs/explanation/file-format.md (``wikimem/format/blocks.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from wikimem.errors import InvalidName
from wikimem.limits import MAX_CONTENT_CHARS, check_length
from wikimem.naming import validate_provenance

__all__ = ["Block", "parse_blocks", "render_blocks", "render_meta", "normalize_content", "clean_content",
           "clean_meta_value"]

HEADING_RE = re.compile(r"##[ \t]+(.*\S)[ \t]*")
_ESCAPE_RE = re.compile(r"\\*##[ \t]")
_UNESCAPE_RE = re.compile(r"\\+##[ \t]")
META_RE = re.compile(r"<!--[ \t]*wikimem:(.*?)-->")
_META_KEYS = {"owner": "owner", "source": "source_conv", "ts": "ts", "channel": "channel", "present": "present"}


@dataclass
class Block:
    """One ``##`` section: its heading text, content and provenance."""

    heading: str
    content: str
    owner: str | None = None
    source_conv: str | None = None
    ts: str | None = None
    channel: str | None = None
    present: tuple[str, ...] = ()


def normalize_content(text: str) -> str:
    """Content as stored: newlines normalised to ``\\n``, outer whitespace stripped."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def clean_content(value: str) -> str:
    """Content as it will be written: a string, newlines normalised, stripped, valid UTF-8 (else ValueError),
    at most :data:`~wikimem.limits.MAX_CONTENT_CHARS` characters (else :class:`~wikimem.errors.TooLarge`)."""
    if not isinstance(value, str):
        raise ValueError("content must be a string")
    content = check_length(normalize_content(value), MAX_CONTENT_CHARS, "content")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"content is not valid Unicode text: {exc.reason}") from None
    return content


def clean_meta_value(value: str | None, what: str) -> str | None:
    """A provenance value as written in the metadata comment: one line of visible text, ``|`` becomes ``/``.

    Control, format and line-separator characters, and ``-->``, are refused
    (ValueError): they would end the comment or fool a reader.
    """
    text = validate_provenance(value, what)
    if text is None:
        return None
    text = text.replace("|", "/")
    if "-->" in text:
        raise InvalidName(f"{what} may not contain '-->'")
    return text


def _parse_meta(line: str) -> dict | None:
    """Fields of a metadata comment line, or None if it is not a valid one."""
    match = META_RE.fullmatch(line.strip())
    if not match:
        return None
    fields: dict[str, Any] = {}
    body = match.group(1).strip()
    if not body:
        return fields
    for piece in body.split("|"):
        piece = piece.strip()
        if not piece:
            continue
        key, sep, value = piece.partition("=")
        if not sep:
            return None  # "owner xnne": malformed, so the line is content
        attr = _META_KEYS.get(key.strip())
        if attr == "present":  # tolerant: a hand-written list keeps what it says, blanks dropped
            fields[attr] = tuple(dict.fromkeys(p.strip() for p in value.split(",") if p.strip()))
        elif attr is not None:
            fields[attr] = value.strip() or None
    return fields


def _unescape(line: str) -> str:
    return line[1:] if _UNESCAPE_RE.match(line) else line


def _escape(line: str) -> str:
    return "\\" + line if _ESCAPE_RE.match(line) else line


def _finish(heading: str, lines: list[str]) -> Block:
    # Trailing blank lines are not content; the metadata comment, when
    # present, is the last non-blank line of the block.
    while lines and not lines[-1].strip():
        lines.pop()
    meta = _parse_meta(lines[-1]) if lines else None
    if meta is not None:
        lines.pop()
    content = "\n".join(_unescape(line) for line in lines).strip()
    return Block(heading=heading, content=content, **(meta or {}))


def parse_blocks(text: str) -> list[Block]:
    """All ``##`` blocks of a file, in file order (duplicates kept)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    blocks: list[Block] = []
    heading: str | None = None
    lines: list[str] = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        match = HEADING_RE.fullmatch(raw)
        if match:
            if heading is not None:
                blocks.append(_finish(heading, lines))
            heading, lines = " ".join(match.group(1).split()), []
        elif heading is not None:
            lines.append(raw)
    if heading is not None:
        blocks.append(_finish(heading, lines))
    return blocks


def render_meta(owner: str | None, source_conv: str | None, ts: str | None, channel: str | None = None,
                present: tuple[str, ...] = ()) -> str | None:
    pairs = (("owner", owner), ("source", source_conv), ("ts", ts), ("channel", channel),
             ("present", ",".join(present)))
    fields = [(k, v) for k, v in pairs if v]
    if not fields:
        return None
    return "<!-- wikimem: " + " | ".join(f"{k}={v}" for k, v in fields) + " -->"


def _render_block(block: Block) -> str:
    lines = [_escape(line) for line in block.content.split("\n")] if block.content else []
    meta = render_meta(block.owner, block.source_conv, block.ts, block.channel, block.present)
    if meta is None and lines and _parse_meta(lines[-1]) is not None:
        meta = "<!-- wikimem: -->"  # protect a content line that looks like metadata
    parts = [f"## {block.heading}", "", "\n".join(lines)]
    if meta is not None:
        parts += ["", meta]
    return "\n".join(parts)


def render_blocks(title: str, blocks: list[Block]) -> str:
    """The whole file text for ``blocks`` under ``# title``."""
    body = "\n\n".join(_render_block(b) for b in blocks)
    return f"# {title}\n\n{body}\n" if blocks else f"# {title}\n"
