"""Property tests of the block format, names and links (hypothesis)."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikimem import MemoryStore, parse_wiki_links, sanitize_item_name
from wikimem.format.blocks import Block, normalize_content, parse_blocks, render_blocks

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Lines mixing the characters that matter to the format: heading marks,
# backslashes, comment syntax, pipes, CJK, whitespace.
_alphabet = st.sampled_from(list("ab #\\<>!-=|:[]\t 海边")
                            + ["## ", "\\## ", "<!-- wikimem: ", "owner=x", " -->", "\n"])
contents = st.lists(_alphabet, max_size=40).map("".join) | st.text(max_size=80)
names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(list(string.ascii_letters + " ")),
    min_size=1, max_size=30,
).filter(lambda n: n.strip() and not any(b in n for b in ("[[", "]]", ":", "|", "#")))
meta_values = st.none() | st.text(alphabet="abc:@.-_ |", min_size=1, max_size=12).filter(lambda v: v.strip())
files = st.from_regex(r"[a-z0-9_][a-z0-9_-]{0,12}", fullmatch=True)


def _clean_name(n: str) -> str | None:
    try:
        return sanitize_item_name(n)
    except ValueError:
        return None


@SETTINGS
@given(st.lists(st.tuples(names, contents, meta_values, meta_values), max_size=8))
def test_any_valid_items_serialise_and_parse_back(entries):
    blocks, seen = [], set()
    for name, content, owner, source in entries:
        clean = _clean_name(name)
        if clean is None or clean in seen:
            continue
        seen.add(clean)
        owner = owner.strip().replace("|", "/") or None if owner else None
        source = source.strip().replace("|", "/") or None if source else None
        blocks.append(Block(clean, normalize_content(content), owner, source, None))
    parsed = parse_blocks(render_blocks("f", blocks))
    assert parsed == blocks


@SETTINGS
@given(st.lists(st.tuples(names, contents, meta_values), min_size=1, max_size=5), files)
def test_store_round_trip_through_disk(tmp_path_factory, entries, file):
    store = MemoryStore(tmp_path_factory.mktemp("s"))
    expected = {}
    for name, content, owner in entries:
        if _clean_name(name) is None:
            continue
        item = store.add(file, name, content, owner=owner)
        expected[item.name] = item
    fresh = MemoryStore(store.root)
    assert {i.name: i for i in fresh.items(file)} == expected


@SETTINGS
@given(st.text(max_size=400) | st.lists(_alphabet, max_size=80).map("".join))
def test_parser_never_raises(text):
    for block in parse_blocks(text):
        assert block.heading and block.heading == " ".join(block.heading.split())


@SETTINGS
@given(st.text(max_size=40))
def test_sanitising_is_idempotent(name):
    clean = _clean_name(name)
    if clean is not None:
        assert sanitize_item_name(clean) == clean


_link_pieces = st.lists(st.sampled_from(["[[", "]]", ":", "a", " ", "\n", "[", "b"]), max_size=40).map("".join)


@SETTINGS
@given(st.text(max_size=200) | _link_pieces)
def test_link_parsing_never_raises_and_links_are_clean(text):
    for link in parse_wiki_links(text):
        for side in (link.file, link.name):
            assert side and side == side.strip()
            assert not any(c in side for c in "[]:\n")
    assert len(parse_wiki_links(text)) <= text.count("[[")
