"""How a card lives in a character's profile (``char:<id>``), item by item, and back: the round-trippable form.

- ``wiki/lorebook.md``: one item per ``character_book`` entry, named by its comment (else its name, else
  ``entry <id>``), its content first, then one last line ``<!-- lorebook: {…} -->`` holding every other field
  of the entry as the card has it (``keys``, ``secondary_keys``, ``enabled`` — a disabled entry stays
  ``false`` —, ``insertion_order``, ``extensions``…) as one line of JSON; :func:`entry_items`,
  :func:`item_entry`;
- ``characters/card/wiki/card.md`` (a layer of the profile's folder of its own, :data:`CARD_LAYER`, so that a
  retrieve as the character never ranks the card's greetings and examples): every other field of the card,
  one item per field of ``data`` (a text as it is; anything
  else, or a text the store would change, as one line of JSON in a ```` ```json ```` fence, in parts past the
  item size), ``card spec`` (spec and version), ``card top level`` (what the card held beside ``data``),
  ``other data fields`` (fields whose name cannot name an item); :func:`field_items`, :func:`rebuild_card`.

The JSON line is written so that the memory format cannot misread it: no line break, ``[``, ``]``, ``<`` and
``>`` escaped inside strings (never a wiki-link, never the end of the comment), a list opened as ``[ ``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from wikimem.errors import InvalidName, TooLarge
from wikimem.format import normalize_content
from wikimem.limits import MAX_CONTENT_CHARS
from wikimem.naming import sanitize_item_name

from .cards import Card, LoreEntry

__all__ = ["LOREBOOK_FILE", "CARD_FILE", "CARD_LAYER", "Planned", "json_line", "entry_items", "item_entry",
           "field_items", "rebuild_card", "item_name"]

LOREBOOK_FILE = "lorebook"
CARD_FILE = "card"
CARD_LAYER = "card"  # the layer of the profile's folder that keeps the card's other fields (never recalled)
SPEC_ITEM, TOP_ITEM, OTHER_ITEM = "card spec", "card top level", "other data fields"
_BLOCK_RE = re.compile(r"(?:\A|\n)<!-- lorebook: (\{.*\}) -->\Z")
_FENCE_RE = re.compile(r"```json(?: part (\d+)/(\d+))?\n(.*)\n```", re.S)
_PART_RE = re.compile(r"(.+) \(part (\d+) of (\d+)\)")
_FIELD_RE = re.compile(r"[A-Za-z0-9_]{1,64}")
_NAME_LEN = 120
_ESCAPES = {"[": "\\u005b", "]": "\\u005d", "<": "\\u003c", ">": "\\u003e", "\x85": "\\u0085",
            "\u2028": "\\u2028", "\u2029": "\\u2029"}
_ESCAPE_RE = re.compile("[" + re.escape("".join(_ESCAPES)) + "]")


@dataclass(frozen=True)
class Planned:
    """One item an import writes: where (its file, in ``layer``: None for the folder's shared layer), its name,
    its content."""

    file: str
    name: str
    content: str
    layer: str | None = None

    @property
    def key(self) -> tuple[str | None, str, str]:
        return (self.layer, self.file, self.name)


def json_line(value: Any) -> str:
    """``value`` as one line of JSON that the memory format keeps as it is (see the module docstring)."""
    if isinstance(value, str):
        return _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group()], json.dumps(value, ensure_ascii=False))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json_line(str(k))}: {json_line(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[ " + ", ".join(json_line(v) for v in value) + " ]" if value else "[]"
    return json.dumps(value)


def item_name(text: str, fallback: str) -> str:
    """An item name made of ``text`` (the characters a name may not hold become spaces, cut to 120), else
    ``fallback`` when nothing valid is left."""
    cleaned = re.sub(r"\[\[|\]\]|[:|#]", " ", text)[:_NAME_LEN]
    try:
        return sanitize_item_name(cleaned)
    except (InvalidName, ValueError):
        return fallback


def _unique(name: str, taken: set[str]) -> str:
    n, candidate = 1, name
    while candidate in taken:
        n += 1
        candidate = f"{name} ({n})"
    taken.add(candidate)
    return candidate


# -- lorebook entries ---------------------------------------------------------------------------------

def entry_items(entries: Sequence[LoreEntry]) -> list[Planned]:
    """The items of ``wiki/lorebook.md`` for a card's entries, in the card's order; TooLarge for an entry whose
    content and fields pass the size of one item."""
    taken: set[str] = set()
    out = []
    for entry in entries:
        name = _unique(item_name(entry.title, _numbered(entry)), taken)
        out.append(Planned(LOREBOOK_FILE, name, _entry_content(entry)))
    return out


def _numbered(entry: LoreEntry) -> str:
    """The name of an entry with nothing to name it by: ``entry <its id>`` (stable when others come and go),
    else ``entry <its place, from 1>``."""
    ident = entry.fields.get("id")
    return f"entry {ident}" if isinstance(ident, int) and not isinstance(ident, bool) else f"entry {entry.index + 1}"


def _entry_content(entry: LoreEntry) -> str:
    meta = {k: v for k, v in entry.fields.items() if k != "content"}
    body = normalize_content(entry.content)
    if body != entry.content:
        meta["content"] = entry.content  # the exact text, when the store would strip or change its line ends
    line = f"<!-- lorebook: {json_line(meta)} -->"
    content = f"{body}\n\n{line}" if body else line
    if len(content) > MAX_CONTENT_CHARS:
        raise TooLarge(f"lorebook entry {entry.index + 1} ({entry.title[:60]!r}) is {len(content):,} characters with "
                       f"its fields; an item holds at most {MAX_CONTENT_CHARS:,}")
    return content


def item_entry(content: str) -> dict[str, Any] | None:
    """The lorebook entry an item's content holds (every field, ``content`` included), or None when the item
    is not a lorebook entry (a fact, an item written by hand)."""
    match = _BLOCK_RE.search(content)
    if match is None:
        return None
    try:
        meta = json.loads(match.group(1))
    except ValueError:
        return None
    if not isinstance(meta, dict):
        return None
    exact = meta.pop("content", None)
    meta["content"] = exact if isinstance(exact, str) else content[:match.start()].strip()
    return meta


# -- the card's other fields --------------------------------------------------------------------------

def field_items(card: Card) -> list[Planned]:
    """The items of the card file (in :data:`CARD_LAYER`): every field of the card but the lorebook's entries."""
    fields = card.other_fields()
    named = {k: v for k, v in fields.items() if _FIELD_RE.fullmatch(k)}
    other = {k: v for k, v in fields.items() if k not in named}
    values: list[tuple[str, Any]] = [(SPEC_ITEM, {"spec": card.spec, "spec_version": card.version}),
                                     *named.items()]
    if other:
        values.append((OTHER_ITEM, other))
    if card.top:
        values.append((TOP_ITEM, card.top))
    out = []
    for name, value in values:
        parts = _contents(value, force_json=name in (SPEC_ITEM, OTHER_ITEM, TOP_ITEM))
        if len(parts) == 1:
            out.append(Planned(CARD_FILE, name, parts[0], CARD_LAYER))
        else:
            out += [Planned(CARD_FILE, f"{name} (part {i} of {len(parts)})", p, CARD_LAYER)
                    for i, p in enumerate(parts, 1)]
    return out


def _contents(value: Any, force_json: bool) -> list[str]:
    plain = isinstance(value, str) and value and not force_json and normalize_content(value) == value \
        and not value.startswith("```") and len(value) <= MAX_CONTENT_CHARS
    if plain:
        return [value]
    line = json_line(value)
    if len(line) + 12 <= MAX_CONTENT_CHARS:
        return [f"```json\n{line}\n```"]
    room = MAX_CONTENT_CHARS - 40
    chunks = [line[i:i + room] for i in range(0, len(line), room)]
    return [f"```json part {i}/{len(chunks)}\n{c}\n```" for i, c in enumerate(chunks, 1)]


def _value(contents: list[str]) -> Any:
    """A field's value from its item(s)' content (see :func:`_contents`)."""
    if len(contents) == 1:
        match = _FENCE_RE.fullmatch(contents[0])
        return json.loads(match.group(3)) if match else contents[0]
    return json.loads("".join(m.group(3) for m in (_FENCE_RE.fullmatch(c) for c in contents) if m))


def rebuild_card(card_items: Iterable[tuple[str, str]], lore_items: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The card a profile holds, from the ``(name, content)`` of its ``card`` and ``lorebook`` items: what
    :func:`field_items` and :func:`entry_items` wrote, as the card had it."""
    grouped: dict[str, list[tuple[int, str]]] = {}
    for name, content in card_items:
        part = _PART_RE.fullmatch(name)
        base, n = (part.group(1), int(part.group(2))) if part else (name, 0)
        grouped.setdefault(base, []).append((n, content))
    values = {base: _value([c for _, c in sorted(parts)]) for base, parts in grouped.items()}
    spec = values.pop(SPEC_ITEM, {})
    top = values.pop(TOP_ITEM, {})
    other = values.pop(OTHER_ITEM, {})
    data = {**values, **other}
    entries = [e for e in (item_entry(content) for _, content in lore_items) if e is not None]
    if entries or "character_book" in data:
        data["character_book"] = {**(data.get("character_book") or {}), "entries": entries}
    return {**top, **spec, "data": data}
