"""SillyTavern files made from the published specifications, for the import tests (stdlib only).

- :func:`v2_card` — a Character Card V2 (malfoyslastname/character-card-spec-v2: ``spec`` ``chara_card_v2``,
  ``spec_version`` ``2.0``, every field of ``data``, the V1 fields mirrored at the top), with or without a
  ``character_book``; :func:`v3_card` — a V3 (kwaroran/character-card-spec-v3: ``chara_card_v3`` ``3.0``, the
  new fields, ``use_regex`` entries);
- :func:`png` — a real PNG (IHDR, IDAT of a tiny picture, IEND; every CRC right) with the text chunks given;
  :func:`card_png` — a card in one (``tEXt`` ``chara`` / ``ccv3`` base64, or ``iTXt``, compressed or not);
  :func:`chunk` — one chunk, to build broken ones;
- :func:`chat_lines` / :func:`chat_file` — a chat of several days as SillyTavern writes it: a header line, the
  character's greeting, user and character messages with ``send_date`` in SillyTavern's forms, swipes (the chosen
  one in ``mes``), and system messages (``is_system``, and a narrator's ``extra.type``); :func:`long_chat`;
- :func:`stand_in_reply` — what the stand-in chat model (tests/fakes.py) answers to memorize a turn of them.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def lore_entry(keys: list[str], content: str, *, enabled: bool = True, order: int = 100, **fields: Any) -> dict:
    """One ``character_book`` entry, the spec's required fields first."""
    return {"keys": keys, "content": content, "extensions": fields.pop("extensions", {}), "enabled": enabled,
            "insertion_order": order, **fields}


def book(entries: list[dict] | None = None) -> dict:
    """A lorebook with entries of every kind: keys and secondary keys, a disabled one, HTML and markdown, a
    constant one, SillyTavern's fields in ``extensions``."""
    if entries is None:
        entries = [
            lore_entry(["dragon", "wyrm"], "Dragons hoard <b>gold</b> -->\n\n## not a heading", comment="Dragons",
                       secondary_keys=["cave"], selective=True, id=0, position="before_char",
                       extensions={"depth": 2, "probability": 80, "useProbability": True, "group": "beasts"}),
            lore_entry(["Elaina"], "Elaina is a traveling witch. [[not:a link]] | # :", comment="Elaina: the witch",
                       case_sensitive=True, id=1, priority=10),
            lore_entry(["old war"], "The old war ended a century ago.", enabled=False, comment="Old war (off)", id=2),
            lore_entry([], "Always: the kingdom is called Robetta.", constant=True, comment="", id=3),
            lore_entry(["tea", "茶"], "  Kai brews 乌龙茶 every morning.\r\n", name="tea", id=4),
        ]
    return {"name": "World", "description": "the book", "scan_depth": 4, "token_budget": 500,
            "recursive_scanning": False, "extensions": {}, "entries": entries}


def v2_card(name: str = "Kai", *, lorebook: bool = True, description: str = "A cheerful <i>barista</i>.",
            personality: str = "Warm; **curious**.", **data: Any) -> dict:
    fields = {"name": name, "description": description, "personality": personality,
              "scenario": "A small café by the sea.", "first_mes": "Hi {{user}}! The usual?",
              "mes_example": "<START>\n{{user}}: Hi\n{{char}}: Hello!", "creator_notes": "Made for tests.",
              "system_prompt": "", "post_history_instructions": "", "alternate_greetings": ["Welcome back!"],
              "tags": ["cafe", "slice of life"], "creator": "ann", "character_version": "1.0",
              "extensions": {"talkativeness": "0.5", "fav": False, "world": "", "depth_prompt": {"prompt": "",
                                                                                                  "depth": 4}}}
    if lorebook:
        fields["character_book"] = book()
    fields.update(data)
    top = {k: fields[k] for k in ("name", "description", "personality", "scenario", "first_mes", "mes_example")}
    return {**top, "spec": "chara_card_v2", "spec_version": "2.0", "data": fields, "avatar": "none", "chat": "x",
            "create_date": "2024-5-12 @19h 30m 00s 000ms"}


def v3_card(name: str = "Elaina", *, lorebook: bool = True, **data: Any) -> dict:
    card = v2_card(name, lorebook=lorebook, description="A traveling witch.", personality="Proud, kind.")
    card["spec"], card["spec_version"] = "chara_card_v3", "3.0"
    fields = card["data"]
    fields.update({"nickname": "the Ashen Witch", "creator_notes_multilingual": {"en": "notes", "ja": "メモ"},
                   "source": ["https://example.invalid/elaina"], "group_only_greetings": ["Hello, everyone."],
                   "creation_date": 1715542200, "modification_date": 1715628600,
                   "assets": [{"type": "icon", "uri": "ccdefault:", "name": "main", "ext": "png"}]})
    if lorebook:
        for entry in fields["character_book"]["entries"]:
            entry["use_regex"] = False
    fields.update(data)
    return card


# -- PNG ---------------------------------------------------------------------------------------------

def chunk(kind: bytes, data: bytes, *, crc: int | None = None) -> bytes:
    """One PNG chunk (its CRC right unless ``crc`` is given)."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data)
                                                                    if crc is None else crc)


def text_chunk(keyword: str, text: str) -> bytes:
    return chunk(b"tEXt", keyword.encode("latin-1") + b"\0" + text.encode("latin-1"))


def itxt_chunk(keyword: str, text: str, *, compressed: bool = False) -> bytes:
    body = text.encode("utf-8")
    body = zlib.compress(body) if compressed else body
    return chunk(b"iTXt", keyword.encode("latin-1") + b"\0" + bytes([1 if compressed else 0, 0]) + b"en\0\0" + body)


def png(*extra: bytes, width: int = 2, height: int = 2) -> bytes:
    """A valid PNG picture (an RGB gradient) with the chunks ``extra`` between its header and its data."""
    rows = b"".join(b"\0" + b"".join(bytes((x * 90 % 256, y * 90 % 256, 120)) for x in range(width))
                    for y in range(height))
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    return SIGNATURE + header + b"".join(extra) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def card_png(card: dict | str | bytes, keyword: str = "chara", *, kind: str = "tEXt",
             compressed: bool = False) -> bytes:
    """A PNG carrying ``card`` (an object, JSON text, or raw bytes) base64 in a ``keyword`` chunk."""
    raw = card if isinstance(card, bytes) else (card if isinstance(card, str) else json.dumps(card)).encode()
    text = base64.b64encode(raw).decode("ascii")
    made = itxt_chunk(keyword, text, compressed=compressed) if kind == "iTXt" else text_chunk(keyword, text)
    return png(made)


# -- chats -------------------------------------------------------------------------------------------

def message(name: str, is_user: bool, mes: str, send_date: Any, **extra: Any) -> dict:
    return {"name": name, "is_user": is_user, "is_system": False, "send_date": send_date, "mes": mes, **extra}


def chat_lines(user: str = "Ann", character: str = "Kai") -> list[dict]:
    """Three days of a chat (May 12, 13 and 15, 2024), in SillyTavern's date forms, with swipes and system
    messages; 5 turns (the greeting, then four exchanges), 2 unchosen swipes, 2 system messages."""
    return [
        {"user_name": user, "character_name": character, "create_date": "2024-5-12 @19h 30m 00s 000ms",
         "chat_metadata": {"note_prompt": "", "integrity": "abc"}},
        message(character, False, "Hi! The usual?", "May 12, 2024 7:30pm"),
        message(user, True, "I switched to oat milk, and I got a cat named Mia.", "May 12, 2024 7:31pm"),
        message(character, False, "Oat milk it is. Mia is a lovely name!", "May 12, 2024 7:32pm",
                swipes=["Oat milk, noted.", "Oat milk it is. Mia is a lovely name!", "Sure."], swipe_id=1,
                swipe_info=[{}, {}, {}]),
        message("System", False, "[Chat summary: hidden]", "May 12, 2024 7:33pm", is_system=True),
        message(user, True, "Today I start my new job at the library.", "2024-05-13T08:05:00.000Z"),
        message(character, False, "Good luck at the library!", "2024-05-13T08:06:00.000Z",
                swipes=["Good luck at the library!", "Break a leg!"], swipe_id=0),
        message("Narrator", False, "The café closes for the night.", "2024-05-13T08:07:00.000Z",
                extra={"type": "narrator"}),
        message(user, True, "Mia knocked my tea over this morning.", 1715763600000),  # 2024-05-15T09:00:00Z
        message(user, True, "Twice!", 1715763660000),
        message(character, False, "Poor tea. Naughty Mia!", "2024-05-15 @11h 02m 00s 000ms"),
    ]


def chat_file(lines: list[dict] | None = None) -> bytes:
    return ("\n".join(json.dumps(line, ensure_ascii=False) for line in (lines or chat_lines())) + "\n").encode()


def long_chat(messages: int, *, start: int = 1715540000, step: int = 600) -> bytes:
    """A chat of ``messages`` messages, alternating person and character, ``step`` seconds apart."""
    lines: list[dict] = [{"user_name": "Ann", "character_name": "Kai", "create_date": "2024-5-12 @19h 00m"}]
    for i in range(messages):
        user = i % 2 == 0
        text = f"message {i}: " + (f"I like tea number {i}." if user else f"Noted {i}.")
        lines.append(message("Ann" if user else "Kai", user, text, (start + i * step) * 1000))
    return chat_file(lines)


def stand_in_reply(messages: list[dict]) -> str:
    """The stand-in model's memorize reply: a diary entry ``Ann told me: …`` per line Ann says in the turn, a fact
    when she names her cat, and one when she numbers her tea (``I like tea number 7.``)."""
    turn = messages[-1]["content"]
    said = [line.split(": ", 1)[1] for line in turn.splitlines() if line.startswith("Ann: ")]
    facts = [{"file": "people", "name": "mia", "content": "Ann's cat is named Mia."}] if "cat named Mia" in turn else []
    facts += [{"file": "tea", "name": f"tea {s.split()[-1].strip('.')}", "content": s} for s in said
              if "tea number" in s][:1]
    return json.dumps({"diary": [{"content": f"Ann told me: {s}"} for s in said], "facts": facts})
