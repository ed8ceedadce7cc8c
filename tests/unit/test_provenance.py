"""Provenance values and names are one line of visible text, checked where they enter (issue: trailer forgery).

A value with U+2028, U+2029 or U+0085 used to split into a second trailer
(``Wikimem-Run: <victim>``) in the parser; NUL or ESC reached git objects.
Validation refuses them at the edge; the trailer parser and the message
writer hold even if one slipped through.
"""

from __future__ import annotations

import pytest

from wikimem import sanitize_item_name
from wikimem.context import WriteContext
from wikimem.errors import InvalidName
from wikimem.format.blocks import clean_meta_value
from wikimem.naming import validate_provenance

HOSTILE = ["a\x00b", "a\x1b[31mred", "bell\x07", "a\u2028Wikimem-Run: victim", "a\u2029b", "a\x85b",
           "a\u202eevil", "zero\u200bwidth", "a\x7fb", "a\ud800b", "a\nWikimem-Run: victim", "a\rb", "tab\there"]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("field", ["run", "actor", "source_conv"])
def test_write_context_refuses_unsafe_provenance(field, value):
    with pytest.raises(InvalidName):
        WriteContext(**{field: value})


@pytest.mark.parametrize("value", HOSTILE)
def test_item_metadata_refuses_unsafe_provenance(store, value):
    with pytest.raises(ValueError):
        store.add("f", "a", "x", source_conv=value)
    with pytest.raises(ValueError):
        store.diary.append("x", source_conv=value)
    assert store.files() == [] and store.diary.dates() == []


@pytest.mark.parametrize("value", ["Elaina", "小雨", "run_2026-07-21T14:30Z_ab12", "worker-3 (v12)", "a/b|c"])
def test_ordinary_provenance_is_kept(value):
    assert WriteContext(actor=value).actor == value
    assert clean_meta_value(value, "source_conv") == value.replace("|", "/")


def test_provenance_has_a_length_limit():
    assert validate_provenance("x" * 200, "run") == "x" * 200
    with pytest.raises(InvalidName):
        validate_provenance("x" * 201, "run")


@pytest.mark.parametrize("name", ["tea\u202e", "\u2066tea", "pa\u200bypal", "p\u0430ypal", "t\u0435a time", "a\x00b"])
def test_item_names_refuse_bidi_zero_width_and_lookalike_letters(name):
    with pytest.raises(InvalidName):
        sanitize_item_name(name)


@pytest.mark.parametrize("name", ["likes-the-sea", "喜欢tea", "Привет", "αβγ notes", "café au lait", "a\u2028b"])
def test_ordinary_item_names_in_any_language_are_kept(name):
    assert sanitize_item_name(name) == " ".join(name.split())


@pytest.mark.parametrize("key", ["a b", "", "ключ", "k\x00", "x" * 201])
def test_idempotency_keys_are_printable_ascii(key):
    with pytest.raises(InvalidName):
        WriteContext(idempotency_key=key)
