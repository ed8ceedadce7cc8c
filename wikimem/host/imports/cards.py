"""Character cards (SillyTavern's Character Card V2 and V3) read from their bytes: :func:`read_card`.

A card arrives as a JSON file or as a PNG carrying it, base64, in a ``ccv3`` (V3) or ``chara`` (V2) text
chunk (``ccv3`` wins when both are there). Sizes are checked before anything is parsed
(:data:`~wikimem.limits.MAX_CARD_BYTES` the file, :data:`~wikimem.limits.MAX_CARD_JSON_BYTES` the JSON,
:data:`~wikimem.limits.MAX_LOREBOOK_ENTRIES` the lorebook), the base64 is checked, the text must be UTF-8 and
valid Unicode, ``spec`` and ``spec_version`` must name a supported version. The result, :class:`Card`, keeps
every field as the card has it: what this host does not map is kept, never dropped.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from wikimem.errors import BadImport, TooLarge
from wikimem.limits import MAX_CARD_BYTES, MAX_CARD_JSON_BYTES, MAX_LOREBOOK_ENTRIES

from .png import SIGNATURE, text_chunks

__all__ = ["Card", "LoreEntry", "read_card", "parse_json", "decode_base64", "base64_size", "SUPPORTED_CARDS"]

SPECS = {"chara_card_v2": 2, "chara_card_v3": 3}
SUPPORTED_CARDS = ("Character Card V2 (spec chara_card_v2, spec_version 2.x) and V3 (spec chara_card_v3, "
                   "spec_version 3.x), as a JSON file or a PNG with the card in a chara or ccv3 text chunk")
MAX_NAME = 200  # a character's display name (the registry's rule)
_VERSION_RE = re.compile(r"(\d{1,3})(?:\.(\d{1,6}))?")
_WHITESPACE = re.compile(rb"[ \t\r\n]+")


@dataclass(frozen=True)
class LoreEntry:
    """One ``character_book`` entry: its ``content`` and ``keys`` as the card has them, and every field of it
    (``fields``: the entry object, content included)."""

    index: int
    fields: dict[str, Any]

    @property
    def content(self) -> str:
        return self.fields.get("content") or ""

    @property
    def keys(self) -> list[str]:
        return list(self.fields.get("keys") or [])

    @property
    def secondary_keys(self) -> list[str]:
        value = self.fields.get("secondary_keys") or []
        return [k.strip() for k in value.split(",") if k.strip()] if isinstance(value, str) else list(value)

    @property
    def enabled(self) -> bool:
        return self.fields.get("enabled", True) is not False

    @property
    def title(self) -> str:
        """What names the entry for a person: its comment, else its name, else its first key."""
        for value in (self.fields.get("comment"), self.fields.get("name"), *self.keys[:1]):
            if isinstance(value, str) and value.strip():
                return value.strip()
        return ""


@dataclass(frozen=True)
class Card:
    """A card as read: its ``spec`` and ``version``, the ``data`` object, what else its top level held
    (``top``), where it came from (``source``: ``json``, ``png:ccv3``, ``png:chara``) and ``warnings``."""

    spec: str
    version: str
    data: dict[str, Any]
    top: dict[str, Any] = field(default_factory=dict)
    source: str = "json"
    warnings: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.data["name"].strip()

    @property
    def description(self) -> str:
        return self.data.get("description") or ""

    @property
    def personality(self) -> str:
        return self.data.get("personality") or ""

    @property
    def book(self) -> dict[str, Any] | None:
        """The ``character_book`` without its entries (its name, scan depth… kept as the card has them)."""
        book = self.data.get("character_book")
        return {k: v for k, v in book.items() if k != "entries"} if isinstance(book, dict) else None

    @property
    def entries(self) -> list[LoreEntry]:
        book = self.data.get("character_book")
        found = (book.get("entries") or []) if isinstance(book, dict) else []
        return [LoreEntry(i, e) for i, e in enumerate(found)]

    def persona(self) -> str:
        """The persona the character is registered with: the description, then the personality."""
        parts = [p.strip() for p in (self.description, self.personality) if p.strip()]
        return "\n\n".join(parts)

    def other_fields(self) -> dict[str, Any]:
        """Every field of ``data`` but the lorebook's entries (they become items of their own)."""
        out = {k: v for k, v in self.data.items() if k != "character_book"}
        if self.book is not None:
            out["character_book"] = self.book
        return out

    def summary(self) -> dict[str, Any]:
        return {"spec": self.spec, "spec_version": self.version, "source": self.source, "name": self.name,
                "entries": len(self.entries), "disabled": sum(1 for e in self.entries if not e.enabled),
                "warnings": list(self.warnings)}


def read_card(raw: bytes) -> Card:
    """The card in ``raw`` (a JSON file, or a PNG carrying one); BadImport or TooLarge when it is refused."""
    if not isinstance(raw, (bytes, bytearray)):
        raise BadImport("a card is the bytes of a JSON or PNG file")
    if len(raw) > MAX_CARD_BYTES:
        raise TooLarge(f"the card file is {len(raw):,} bytes; at most {MAX_CARD_BYTES:,} are read")
    warnings: list[str] = []
    source = "json"
    if bytes(raw[:8]) == SIGNATURE:
        chunks = text_chunks(bytes(raw), ("ccv3", "chara"), base64_size(MAX_CARD_JSON_BYTES))
        if not chunks:
            raise BadImport(f"the PNG carries no character card (no chara or ccv3 text chunk); this host reads "
                            f"{SUPPORTED_CARDS}")
        keyword = "ccv3" if "ccv3" in chunks else "chara"
        if len(chunks) == 2:
            warnings.append("the PNG holds both a ccv3 and a chara chunk: the ccv3 (V3) card was read")
        raw, source = _unbase64(chunks[keyword], keyword), f"png:{keyword}"
    return check_card(parse_json(bytes(raw), "the card", MAX_CARD_JSON_BYTES), source, warnings)


def _unbase64(text: str, keyword: str) -> bytes:
    return decode_base64(text, f"the PNG's {keyword} chunk", MAX_CARD_JSON_BYTES)


def base64_size(limit: int) -> int:
    """How long the base64 text of ``limit`` bytes may be (with room for line breaks)."""
    return 4 * (limit // 3 + 1) + limit // 48 + 1024


def decode_base64(text: str | bytes, what: str, limit: int) -> bytes:
    """The bytes of a base64 text (standard alphabet, padded; line breaks allowed) of at most ``limit`` bytes:
    its length is checked before it is decoded (TooLarge), its alphabet strictly (BadImport)."""
    raw = text.encode("latin-1", "replace") if isinstance(text, str) else bytes(text)
    if len(raw) > base64_size(limit):
        raise TooLarge(f"{what} is {len(raw):,} characters of base64; at most {limit:,} bytes are read")
    try:
        decoded = base64.b64decode(_WHITESPACE.sub(b"", raw), validate=True)
    except (binascii.Error, ValueError):
        raise BadImport(f"{what} is not base64") from None
    if len(decoded) > limit:
        raise TooLarge(f"{what} is {len(decoded):,} bytes; at most {limit:,} are read")
    return decoded


def parse_json(raw: bytes, what: str, limit: int, line: int | None = None) -> Any:
    """JSON text of at most ``limit`` bytes, UTF-8 (a BOM allowed), valid Unicode; BadImport otherwise."""
    if len(raw) > limit:
        raise TooLarge(f"{what} is {len(raw):,} bytes of JSON; at most {limit:,} are read")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadImport(f"{what} is not UTF-8 text (byte {exc.start:,})", line) from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise BadImport(f"{what} is JSON nested too deeply", line) from None
    except json.JSONDecodeError as exc:
        where = f" at line {exc.lineno}, column {exc.colno}" if line is None else ""
        raise BadImport(f"{what} is not JSON: {exc.msg}{where}", line) from None
    bad = next(_unencodable(value, "$"), None)
    if bad is not None:
        raise BadImport(f"{what} holds text that is not valid Unicode (a lone surrogate) at {bad}", line)
    return value


def _unencodable(value: Any, where: str) -> Iterator[str]:
    """Where ``value`` holds a string that cannot be written as UTF-8 (lone surrogates from ``\\ud800``)."""
    stack = [(value, where)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                yield at
        elif isinstance(node, dict):
            stack += [(k, f"{at} (a key)") for k in node] + [(v, f"{at}.{str(k)[:40]}") for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, f"{at}[{i}]") for i, v in enumerate(node)]


def check_card(value: Any, source: str = "json", warnings: list[str] | None = None) -> Card:
    """A parsed card object checked against the specs: its spec and version, its name, its lorebook."""
    warnings = list(warnings or [])
    if not isinstance(value, dict):
        raise BadImport(f"a card is a JSON object; this host reads {SUPPORTED_CARDS}")
    spec, version = value.get("spec"), value.get("spec_version")
    if spec not in SPECS:
        shown = "no spec field (a Character Card V1?)" if spec is None else f"spec {str(spec)[:60]!r}"
        raise BadImport(f"unknown card format: {shown}; this host reads {SUPPORTED_CARDS}")
    match = _VERSION_RE.fullmatch(str(version)) if isinstance(version, (str, int, float)) else None
    if match is None or int(match.group(1)) != SPECS[spec]:
        raise BadImport(f"{spec} spec_version {str(version)[:40]!r} is not supported; this host reads "
                        f"{SUPPORTED_CARDS}")
    if spec == "chara_card_v3" and int(match.group(2) or 0) > 0:
        warnings.append(f"spec_version {version} is newer than 3.0: fields this host does not know are kept as "
                        "they are")
    data = value.get("data")
    if not isinstance(data, dict):
        raise BadImport(f"the card has no data object ({spec} keeps its fields in data)")
    _check_text(data)
    _check_book(data.get("character_book"))
    top = {k: v for k, v in value.items() if k not in ("spec", "spec_version", "data")}
    return Card(spec, str(version), data, top, source, tuple(warnings))


def _check_text(data: dict[str, Any]) -> None:
    name = data.get("name")
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > MAX_NAME or "\n" in name.strip() \
            or "\r" in name:
        raise BadImport(f"the card's name must be a one-line text of 1 to {MAX_NAME} characters")
    for key in ("description", "personality"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise BadImport(f"the card's {key} must be text")


def _check_book(book: Any) -> None:
    if book is None:
        return
    if not isinstance(book, dict):
        raise BadImport("the card's character_book must be an object")
    entries = book.get("entries", [])
    if not isinstance(entries, list):
        raise BadImport("the card's character_book.entries must be a list")
    if len(entries) > MAX_LOREBOOK_ENTRIES:
        raise TooLarge(f"the card's lorebook has {len(entries):,} entries; at most {MAX_LOREBOOK_ENTRIES:,} are "
                       "imported")
    for i, entry in enumerate(entries):
        where = f"lorebook entry {i}"
        if not isinstance(entry, dict):
            raise BadImport(f"{where} is not an object")
        if not isinstance(entry.get("content", ""), str):
            raise BadImport(f"{where}: content must be text")
        for key in ("keys", "secondary_keys"):
            keys = entry.get(key)
            if keys is not None and not (isinstance(keys, str) and key == "secondary_keys") and not (
                    isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
                raise BadImport(f"{where}: {key} must be a list of texts")
        if entry.get("enabled") is not None and not isinstance(entry["enabled"], bool):
            raise BadImport(f"{where}: enabled must be true or false")
