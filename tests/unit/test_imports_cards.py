"""Character cards read from their bytes (wikimem/host/imports/cards.py, png.py) and kept item by item (lorebook.py).

Cards are made from the published specifications (tests/cardfiles.py): V2 and V3, JSON and PNG (tEXt, iTXt
plain and compressed), with and without a lorebook; then malformed and hostile variants, each refused with
what is wrong, sizes refused before anything is parsed.
"""

from __future__ import annotations

import base64
import json
import zlib

import pytest
from cardfiles import SIGNATURE, card_png, chunk, itxt_chunk, lore_entry, png, text_chunk, v2_card, v3_card

from wikimem.errors import BadImport, TooLarge
from wikimem.format import normalize_content
from wikimem.host.imports import cards as cards_module
from wikimem.host.imports import png as png_module
from wikimem.host.imports import read_card
from wikimem.host.imports.lorebook import entry_items, field_items, item_entry, json_line, rebuild_card
from wikimem.host.imports.worldinfo import world_info
from wikimem.models import RecallItem

# -- what the specs say, in every container -------------------------------------------------------


@pytest.mark.parametrize("make", [v2_card, v3_card], ids=["v2", "v3"])
@pytest.mark.parametrize("lorebook", [True, False], ids=["lorebook", "no-lorebook"])
@pytest.mark.parametrize("container", ["json", "png-text", "png-itxt", "png-itxt-compressed"])
def test_a_card_of_the_spec_reads_the_same_from_every_container(make, lorebook, container):
    card = make(lorebook=lorebook)
    keyword = "ccv3" if card["spec"] == "chara_card_v3" else "chara"
    raw = {"json": lambda: json.dumps(card).encode(),
           "png-text": lambda: card_png(card, keyword),
           "png-itxt": lambda: card_png(card, keyword, kind="iTXt"),
           "png-itxt-compressed": lambda: card_png(card, keyword, kind="iTXt", compressed=True)}[container]()
    found = read_card(raw)
    assert (found.spec, found.version, found.name) == (card["spec"], card["spec_version"], card["data"]["name"])
    assert found.data == card["data"] and found.source == ("json" if container == "json" else f"png:{keyword}")
    assert found.persona() == f"{card['data']['description']}\n\n{card['data']['personality']}"
    assert len(found.entries) == (5 if lorebook else 0)
    if lorebook:
        assert [e.enabled for e in found.entries] == [True, True, False, True, True]
        assert found.entries[0].keys == ["dragon", "wyrm"] and found.entries[0].secondary_keys == ["cave"]


def test_a_png_with_both_chunks_is_read_from_ccv3():
    raw = png(text_chunk("chara", base64.b64encode(json.dumps(v2_card("Old")).encode()).decode()),
              text_chunk("ccv3", base64.b64encode(json.dumps(v3_card("New")).encode()).decode()))
    found = read_card(raw)
    assert found.name == "New" and found.source == "png:ccv3" and "ccv3" in found.warnings[0]


def test_base64_with_line_breaks_is_read():
    text = base64.encodebytes(json.dumps(v2_card()).encode()).decode()  # 76-column lines
    assert "\n" in text and read_card(png(text_chunk("chara", text))).name == "Kai"


def test_a_newer_v3_minor_version_is_read_with_a_warning():
    card = v3_card()
    card["spec_version"] = "3.1"
    assert "newer than 3.0" in read_card(json.dumps(card).encode()).warnings[0]


# -- refused: what is wrong, said ------------------------------------------------------------------

def struct_chunk_claiming(length: int) -> bytes:
    """A chunk header that claims ``length`` bytes the file does not have."""
    import struct

    return struct.pack(">I", length) + b"tEXt" + b"chara\0" + b"x" * 20


def _b64(value) -> str:
    return base64.b64encode(value if isinstance(value, bytes) else json.dumps(value).encode()).decode()


@pytest.mark.parametrize("raw, said", [
    (b"", "not JSON"),
    (b"hello", "not JSON"),
    (b"[1, 2]", "a card is a JSON object"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (json.dumps({"name": "Old", "description": "a V1 card"}).encode(), "no spec field"),
    (json.dumps({"spec": "chara_card_v9", "spec_version": "9.0", "data": {}}).encode(), "unknown card format"),
    (json.dumps({**v2_card(), "spec_version": "3.0"}).encode(), "spec_version '3.0' is not supported"),
    (json.dumps({**v3_card(), "spec_version": "4.0"}).encode(), "spec_version '4.0' is not supported"),
    (json.dumps({**v2_card(), "spec_version": "two"}).encode(), "is not supported"),
    (json.dumps({"spec": "chara_card_v2", "spec_version": "2.0"}).encode(), "no data object"),
    (json.dumps(v2_card(name="")).encode(), "name must be a one-line text"),
    (json.dumps(v2_card(name="Kai\nEvil")).encode(), "name must be a one-line text"),
    (json.dumps(v2_card(name="K" * 201)).encode(), "name must be a one-line text"),
    (json.dumps(v2_card(description=["not", "text"])).encode(), "description must be text"),
    (json.dumps(v2_card(character_book=[1])).encode(), "character_book must be an object"),
    (json.dumps(v2_card(character_book={"entries": {"a": 1}})).encode(), "entries must be a list"),
    (json.dumps(v2_card(character_book={"entries": ["x"]})).encode(), "entry 0 is not an object"),
    (json.dumps(v2_card(character_book={"entries": [{"keys": [1], "content": ""}]})).encode(), "list of texts"),
    (json.dumps(v2_card(character_book={"entries": [{"keys": [], "content": 5}]})).encode(), "content must be text"),
    (json.dumps(v2_card(character_book={"entries": [{"content": "", "enabled": "yes"}]})).encode(),
     "enabled must be true or false"),
    (b'{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "K", "description": "\\ud800"}}',
     "lone surrogate"),
])
def test_a_bad_card_is_refused_saying_what_is_wrong(raw, said):
    with pytest.raises(BadImport, match=said):
        read_card(raw)


def test_an_unknown_spec_is_refused_with_what_is_supported():
    with pytest.raises(BadImport) as refused:
        read_card(json.dumps({"spec": "chara_card_v1", "spec_version": "1.0", "data": {"name": "x"}}).encode())
    assert "chara_card_v2" in str(refused.value) and "chara_card_v3" in str(refused.value)
    assert "PNG" in str(refused.value)


@pytest.mark.parametrize("raw, said", [
    (SIGNATURE, "cut short"),
    (SIGNATURE + b"\0\0\0\x0dIHDR", "cut short"),
    (png()[:-6], "cut short"),
    (SIGNATURE + chunk(b"tEXt", b"chara\0eA==") + png()[8:], "does not start with its IHDR"),
    (png(chunk(b"tEXt", b"chara\0" + _b64(v2_card()).encode(), crc=1)), "CRC does not match"),
    (png(), "no chara or ccv3"),
    (png(text_chunk("chara", "not base64 !!")), "not base64"),
    (png(text_chunk("chara", _b64(b"\xff\xfe\xfd"))), "not UTF-8"),
    (png(text_chunk("chara", _b64(b"{not json"))), "not JSON"),
    (png(text_chunk("chara", _b64({"spec": "chara_card_v5"}))), "unknown card format"),
    (png(chunk(b"tEXt", b"\0no keyword")), "no keyword"),
    (png(chunk(b"zTXt", b"chara\0\x07" + zlib.compress(b"x"))), "unknown compression method"),
    (png(chunk(b"iTXt", b"chara\0\x01\x00en\0\0" + b"not zlib")), "does not inflate"),
    (png(chunk(b"iTXt", b"chara\0\x00\x00en")), "malformed"),
    (SIGNATURE + chunk(b"IHDR", b"\0" * 13) + struct_chunk_claiming(10**9), "claims"),
])
def test_a_bad_png_is_refused_saying_what_is_wrong(raw, said):
    with pytest.raises(BadImport, match=said):
        read_card(raw)


def test_sizes_are_refused_before_anything_is_parsed(monkeypatch):
    monkeypatch.setattr(cards_module, "MAX_CARD_BYTES", 1000)
    with pytest.raises(TooLarge, match="1,000 are read"):
        read_card(b"{" + b" " * 2000)  # not even JSON: refused for its size first
    monkeypatch.setattr(cards_module, "MAX_CARD_BYTES", 10**7)
    monkeypatch.setattr(cards_module, "MAX_CARD_JSON_BYTES", 500)
    with pytest.raises(TooLarge):
        read_card(json.dumps(v2_card()).encode())
    with pytest.raises(TooLarge, match="chunk holds"):  # the chunk's text, before its base64 is decoded
        read_card(card_png(v2_card()))


def test_a_compressed_chunk_that_inflates_past_the_limit_is_refused_unread(monkeypatch):
    monkeypatch.setattr(cards_module, "MAX_CARD_JSON_BYTES", 10_000)
    bomb = zlib.compress(b"A" * 50_000_000, 9)  # 50 MB of text in ~50 KB
    with pytest.raises(TooLarge, match="inflates to more than"):
        read_card(png(chunk(b"iTXt", b"ccv3\0\x01\x00\0\0" + bomb)))
    with pytest.raises(TooLarge, match="inflates to more than"):
        read_card(png(chunk(b"zTXt", b"chara\0\0" + bomb)))


def test_a_png_of_too_many_chunks_is_refused(monkeypatch):
    monkeypatch.setattr(png_module, "MAX_PNG_CHUNKS", 50)
    with pytest.raises(BadImport, match="more than 50 chunks"):
        read_card(png(*[chunk(b"teSt", b"") for _ in range(60)]))


def test_a_lorebook_past_its_limit_is_refused(monkeypatch):
    monkeypatch.setattr(cards_module, "MAX_LOREBOOK_ENTRIES", 3)
    with pytest.raises(TooLarge, match="at most 3 are imported"):
        read_card(json.dumps(v2_card()).encode())


# -- the round-trippable form -----------------------------------------------------------------------

def _stored(planned) -> list[tuple[str, str]]:
    """``(name, content)`` of planned items as the store keeps them (content normalised)."""
    return [(p.name, normalize_content(p.content)) for p in planned]


@pytest.mark.parametrize("make", [v2_card, v3_card], ids=["v2", "v3"])
def test_a_card_kept_item_by_item_is_the_same_card_again(make):
    card = make(mes_example="x" * 70_000, **{"weird key: 1": [[1, 2], "[[file:x]]"], "empty": ""})
    found = read_card(json.dumps(card).encode())
    lore, fields = entry_items(found.entries), field_items(found)
    assert {p.file for p in lore} == {"lorebook"} and {p.file for p in fields} == {"card"}
    assert len(lore) == 5 and any("(part 2 of" in p.name for p in fields)
    assert rebuild_card(_stored(fields), _stored(lore)) == card


def test_every_entry_keeps_its_keys_content_and_state_in_its_item():
    found = read_card(json.dumps(v2_card()).encode())
    items = entry_items(found.entries)
    assert [p.name for p in items] == ["Dragons", "Elaina the witch", "Old war (off)", "entry 3", "tea"]
    for planned, entry in zip(items, found.entries):
        back = item_entry(normalize_content(planned.content))
        assert back == entry.fields
    # what a person reads first is the entry's own text; the fields follow on one last line
    assert normalize_content(items[0].content).startswith("Dragons hoard <b>gold</b> -->")
    assert items[0].content.splitlines()[-1].startswith("<!-- lorebook: {")


def test_the_fields_line_cannot_be_misread_by_the_memory_format():
    line = json_line({"keys": ["a]]b", "<!-- x -->", "[[file:name]]"], "nested": [[1], []], "s": "\u2028\x85"})
    assert "[[" not in line and "]]" not in line and "-->" not in line and "<" not in line
    assert "\u2028" not in line and "\x85" not in line and "\n" not in line
    assert json.loads(line) == {"keys": ["a]]b", "<!-- x -->", "[[file:name]]"], "nested": [[1], []],
                                "s": "\u2028\x85"}


def test_items_that_are_not_lorebook_entries_are_facts():
    assert item_entry("Ann likes green tea.") is None
    assert item_entry("text\n<!-- lorebook: [1, 2] -->") is None
    assert item_entry("text\n<!-- lorebook: {not json} -->") is None


def test_the_world_info_of_a_card_keeps_every_entry():
    found = read_card(json.dumps(v2_card()).encode())
    items = [RecallItem("lorebook", p.name, normalize_content(p.content)) for p in entry_items(found.entries)]
    items.append(RecallItem("preferences", "tea", "Ann likes green tea."))
    book = world_info([("", items)])
    entries = [book["entries"][str(i)] for i in range(len(items))]
    assert [e["key"] for e in entries] == [e.keys for e in found.entries] + [["tea"]]
    assert [e["content"] for e in entries[:5]] == [e.content for e in found.entries]
    assert [e["disable"] for e in entries] == [False, False, True, False, False, False]
    assert entries[0]["keysecondary"] == ["cave"] and entries[0]["position"] == 0 and entries[0]["depth"] == 2
    assert entries[0]["probability"] == 80 and entries[0]["group"] == "beasts" and entries[1]["position"] == 1
    assert entries[1]["comment"] == "Elaina: the witch" and entries[3]["constant"] is True
    assert entries[5]["comment"] == "preferences: tea" and entries[5]["content"] == "Ann likes green tea."


def test_an_entry_too_big_for_one_item_is_refused():
    card = v2_card(character_book={"extensions": {}, "entries": [lore_entry(["k"], "x" * 40_000)]})
    with pytest.raises(TooLarge, match="lorebook entry 1"):
        entry_items(read_card(json.dumps(card).encode()).entries)


def test_chunk_helpers_make_what_png_readers_accept():
    raw = card_png(v2_card(), kind="iTXt")
    assert png_module.text_chunks(raw, ("chara",), 10**7)["chara"]
    assert itxt_chunk("k", "v")[4:8] == b"iTXt"
