"""The text chunks of a PNG, read with the standard library and bounded before anything is parsed.

- :func:`text_chunks` — the ``tEXt``, ``zTXt`` and ``iTXt`` chunks of a PNG whose keyword is one of ``wanted``
  (first one of each keyword), every chunk's CRC checked;
- :data:`SIGNATURE` — the eight bytes a PNG starts with.

A chunk's length is checked against what is left of the file and against the limit of what it may hold
before it is read; a compressed text is inflated at most to that limit (a small chunk that inflates to
gigabytes is refused, not inflated). Everything refused is :class:`~wikimem.errors.BadImport` (422) or
:class:`~wikimem.errors.TooLarge` (413).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Collection

from wikimem.errors import BadImport, TooLarge
from wikimem.limits import MAX_PNG_CHUNKS

__all__ = ["SIGNATURE", "text_chunks"]

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_TEXT_TYPES = (b"tEXt", b"zTXt", b"iTXt")
_HEADER = struct.Struct(">I4s")


def text_chunks(data: bytes, wanted: Collection[str], limit: int) -> dict[str, str]:
    """``{keyword: text}`` of the first text chunk of each keyword in ``wanted`` (at most ``limit`` bytes of
    text each); BadImport when ``data`` is not a whole PNG (signature, chunk lengths, CRCs, IHDR first, IEND)."""
    view = memoryview(data)
    if bytes(view[:8]) != SIGNATURE:
        raise BadImport("not a PNG file (its first bytes are not the PNG signature)")
    found: dict[str, str] = {}
    pos, count, ended = 8, 0, False
    while pos < len(view):
        count += 1
        if count > MAX_PNG_CHUNKS:
            raise BadImport(f"the PNG has more than {MAX_PNG_CHUNKS:,} chunks")
        if pos + 12 > len(view):
            raise BadImport(f"the PNG is cut short (a chunk header at byte {pos:,})")
        length, kind = _HEADER.unpack_from(view, pos)
        start, end = pos + 8, pos + 8 + length
        if length > 0x7FFFFFFF or end + 4 > len(view):
            raise BadImport(f"the PNG is cut short or damaged (chunk {_shown(kind)} at byte {pos:,} claims "
                            f"{length:,} bytes)")
        if count == 1 and kind != b"IHDR":
            raise BadImport("the PNG does not start with its IHDR chunk")
        (crc,) = struct.unpack_from(">I", view, end)
        if zlib.crc32(view[pos + 4:end]) != crc:
            raise BadImport(f"the PNG's chunk {_shown(kind)} at byte {pos:,} is damaged (its CRC does not match)")
        if kind in _TEXT_TYPES:
            keyword = _keyword(view[start:end], kind)
            if keyword in wanted and keyword not in found:
                found[keyword] = _text(view[start:end], kind, keyword, limit)
        pos = end + 4
        if kind == b"IEND":
            ended = True
            break
    if not ended:
        raise BadImport("the PNG is cut short (no IEND chunk)")
    return found


def _shown(kind: bytes) -> str:
    return kind.decode("latin-1") if kind.isalpha() else repr(kind)


def _keyword(body: memoryview, kind: bytes) -> str:
    """The keyword of a text chunk: 1-79 Latin-1 bytes before a NUL."""
    raw = bytes(body[:80])
    cut = raw.find(b"\0")
    if cut < 1:
        raise BadImport(f"a {kind.decode()} chunk of the PNG has no keyword")
    return raw[:cut].decode("latin-1")


def _text(body: memoryview, kind: bytes, keyword: str, limit: int) -> str:
    """The text of a chunk whose keyword was wanted, at most ``limit`` bytes (TooLarge beyond)."""
    rest = body[len(keyword.encode("latin-1")) + 1:]
    if kind == b"tEXt":
        return _bounded(bytes(rest), keyword, limit).decode("latin-1")
    if kind == b"zTXt":
        if len(rest) < 1 or rest[0] != 0:
            raise BadImport(f"the PNG's {keyword} chunk uses an unknown compression method")
        return _inflate(rest[1:], keyword, limit).decode("latin-1")
    if len(rest) < 2:
        raise BadImport(f"the PNG's {keyword} chunk is cut short")
    compressed, method, tail = rest[0], rest[1], bytes(rest[2:])
    parts = tail.split(b"\0", 2)  # language tag, translated keyword, text
    if len(parts) != 3:
        raise BadImport(f"the PNG's {keyword} iTXt chunk is malformed")
    text = parts[2]
    if compressed:
        if method != 0:
            raise BadImport(f"the PNG's {keyword} chunk uses an unknown compression method")
        raw = _inflate(memoryview(text), keyword, limit)
    else:
        raw = _bounded(text, keyword, limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadImport(f"the PNG's {keyword} iTXt chunk is not UTF-8") from None


def _bounded(raw: bytes, keyword: str, limit: int) -> bytes:
    if len(raw) > limit:
        raise TooLarge(f"the PNG's {keyword} chunk holds {len(raw):,} bytes; at most {limit:,} are read")
    return raw


def _inflate(data: memoryview, keyword: str, limit: int) -> bytes:
    """zlib data inflated to at most ``limit`` bytes (TooLarge when it would give more)."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise BadImport(f"the PNG's {keyword} chunk does not inflate ({exc})") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise TooLarge(f"the PNG's {keyword} chunk inflates to more than {limit:,} bytes")
    if not inflater.eof:
        raise BadImport(f"the PNG's {keyword} chunk is cut short")
    return out
