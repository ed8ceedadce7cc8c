"""Names and wiki-links."""

from __future__ import annotations

import pytest

from wikimem import WikiLink, parse_wiki_links, sanitize_item_name, validate_file


@pytest.mark.parametrize("good", ["preferences", "daily_life", "a", "0", "_x", "x-y-z", "a" * 128])
def test_valid_files(good):
    assert validate_file(good) == good


@pytest.mark.parametrize("bad", ["", "Preferences", "-x", "a b", "a.md", "../a", "a/b", "é", "a" * 129, None, 3])
def test_invalid_files(bad):
    with pytest.raises(ValueError):
        validate_file(bad)


@pytest.mark.parametrize("raw,clean", [("likes-the-sea", "likes-the-sea"), ("  手冲   咖啡 ", "手冲 咖啡"),
                                      ("a\tb\nc", "a b c"), ("[single] brackets", "[single] brackets")])
def test_sanitize(raw, clean):
    assert sanitize_item_name(raw) == clean


@pytest.mark.parametrize("bad", ["", "  ", "a:b", "a|b", "#tag", "x [[y", "y]] x", "x" * 201])
def test_sanitize_rejects(bad):
    with pytest.raises(ValueError):
        sanitize_item_name(bad)


def test_links_in_order_stripped_malformed_ignored():
    text = ("see [[daily_life:beach-trip-plan]] and [[ work : current job ]], not [[a:b:c]], "
            "not [[nocolon]], not [[a\n:b]], not [[:x]], not [[x:]], [[p:q]]")
    assert parse_wiki_links(text) == [
        WikiLink("daily_life", "beach-trip-plan"), WikiLink("work", "current job"), WikiLink("p", "q")]


def test_render():
    assert WikiLink("a", "b c").render() == "[[a:b c]]"
