"""MemoryStore: reading, writing and the seed's read-tolerance table."""

from __future__ import annotations

import pytest

from wikimem import MemoryStore, RecallItem


def write(store: MemoryStore, file: str, text: str) -> None:
    path = store.root / "wiki" / f"{file}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_constructing_a_store_touches_nothing(tmp_path):
    MemoryStore(tmp_path / "mem")
    assert not (tmp_path / "mem").exists()


def test_add_writes_the_seed_format(store):
    store.add("preferences", "likes-the-sea", "喜欢海边。[[daily_life:beach-trip-plan]]",
              owner="user:xnne", source_conv="conv_20260710", ts="2026-07-10T03:00:00+00:00")
    store.add("preferences", "手冲咖啡", "只喝手冲咖啡，从不加糖。", ts="2026-07-10T03:00:00Z")
    text = (store.root / "wiki" / "preferences.md").read_text(encoding="utf-8")
    assert text == (
        "# preferences\n\n"
        "## likes-the-sea\n\n"
        "喜欢海边。[[daily_life:beach-trip-plan]]\n\n"
        "<!-- wikimem: owner=user:xnne | source=conv_20260710 | ts=2026-07-10T03:00:00+00:00 -->\n\n"
        "## 手冲咖啡\n\n"
        "只喝手冲咖啡，从不加糖。\n\n"
        "<!-- wikimem: ts=2026-07-10T03:00:00+00:00 -->\n"
    )


def test_read_back_items_files_and_get(store):
    store.add("b_file", "one", "first")
    store.add("a_file", "two", "second", owner="o")
    assert store.files() == ["a_file", "b_file"]
    assert [i.name for i in store.items()] == ["two", "one"]
    assert [i.name for i in store.items("b_file")] == ["one"]
    item = store.get("a_file", "  two ")
    assert isinstance(item, RecallItem) and item.content == "second" and item.owner == "o"
    assert store.get("a_file", "missing") is None
    assert store.get("nofile", "x") is None


def test_add_replaces_in_place_and_journals_update(store):
    store.add("f", "a", "1")
    store.add("f", "b", "2")
    store.add("f", "a", "3")
    assert [(i.name, i.content) for i in store.items("f")] == [("a", "3"), ("b", "2")]
    assert [e["action"] for e in store.journal.entries()] == ["add", "add", "update"]


def test_content_is_stripped_and_names_collapsed(store):
    item = store.add("f", "  big   name\t", "\n\n  body  \n\n")
    assert item.name == "big name" and item.content == "body"
    assert store.get("f", "big name").content == "body"


def test_ts_defaults_to_now_utc_and_is_normalised(store):
    item = store.add("f", "a", "x", ts="2026-07-10T11:00:00+08:00")
    assert item.ts == "2026-07-10T03:00:00+00:00"
    now = store.add("f", "b", "x").ts
    assert now.endswith("+00:00") and len(now) == 25


@pytest.mark.parametrize("ts", ["yesterday", "2026-13-01T00:00:00", "", "12:00"])
def test_invalid_ts_is_a_value_error(store, ts):
    with pytest.raises(ValueError):
        store.add("f", "a", "x", ts=ts)
    assert not store.root.exists()


def test_pipe_in_owner_and_source_is_written_as_slash(store):
    item = store.add("f", "a", "x", owner="user|x", source_conv="c|1")
    assert (item.owner, item.source_conv) == ("user/x", "c/1")
    assert store.get("f", "a").owner == "user/x"


def test_remove_and_last_item_deletes_the_file(store):
    store.add("f", "a", "1")
    store.add("f", "b", "2")
    assert store.remove("f", "a", owner="me") is True
    assert store.remove("f", "a") is False
    assert (store.root / "wiki" / "f.md").exists()
    assert store.remove("f", "b") is True
    assert not (store.root / "wiki" / "f.md").exists()
    assert store.files() == []
    removes = [e for e in store.journal.entries() if e["action"] == "remove"]
    assert [(e["item"], e.get("owner")) for e in removes] == [("a", "me"), ("b", None)]


def test_revision_counts_wiki_writes_only(store):
    assert store.revision == 0
    store.add("f", "a", "1")
    store.remove("f", "missing")
    assert store.revision == 1
    store.diary.append("event", ts="2026-07-21T06:30:00Z")
    assert store.revision == 1
    store.remove("f", "a")
    assert store.revision == 2


def test_changed_files_since(store):
    store.add("f", "a", "1")
    rev = store.revision
    store.add("g", "a", "1")
    store.add("f", "b", "1")
    assert store.changed_files_since(rev) == {"f", "g"}
    assert store.changed_files_since(store.revision) == set()
    assert store.changed_files_since(-5) is None


@pytest.mark.parametrize(
    "file,name",
    [("Bad", "a"), ("-x", "a"), ("a b", "a"), ("../x", "a"), ("", "a"), ("f", "a:b"),
     ("f", "a|b"), ("f", "a#b"), ("f", "[[a"), ("f", "a]]"), ("f", "   "), ("f", "x" * 300),
     ("x" * 200, "a"), ("f", "a\x00b")],
)
def test_invalid_names_raise_and_write_nothing(store, file, name):
    with pytest.raises(ValueError):
        store.add(file, name, "content")
    assert not store.root.exists()


def test_invalid_content_raises(store):
    with pytest.raises(ValueError):
        store.add("f", "a", "\ud800 lone surrogate")
    with pytest.raises(ValueError):
        store.add("f", "a", 42)  # type: ignore[arg-type]
    assert not store.root.exists()


# -- the seed's read-tolerance table: each row is a test ---------------------


def test_tolerance_hand_written_item_without_metadata(store):
    write(store, "notes", "# notes\n\n## 手写条目\n\n没有元数据。\n")
    item = store.get("notes", "手写条目")
    assert item == RecallItem("notes", "手写条目", "没有元数据。", None, None, None)


def test_tolerance_duplicate_headings_last_wins_and_converge_on_write(store):
    write(store, "notes", "# notes\n\n## dup\n\nfirst\n\n## other\n\nx\n\n## dup\n\nsecond\n")
    assert store.get("notes", "dup").content == "second"
    assert [i.name for i in store.items("notes")].count("dup") == 1
    store.add("notes", "new", "y")
    text = (store.root / "wiki" / "notes.md").read_text()
    assert text.count("## dup") == 1 and "second" in text and "first" not in text


def test_tolerance_text_before_first_heading_is_ignored(store):
    write(store, "notes", "# notes\n\nA preface someone wrote.\nMore of it.\n\n## item\n\nbody\n")
    assert [(i.name, i.content) for i in store.items("notes")] == [("item", "body")]


def test_tolerance_malformed_metadata_is_content(store):
    write(store, "notes", "# notes\n\n## item\n\nbody\n\n<!-- wikimem: owner xnne -->\n")
    item = store.get("notes", "item")
    assert item.content == "body\n\n<!-- wikimem: owner xnne -->" and item.owner is None


def test_tolerance_dangling_link_does_not_break_reading(store):
    store.add("a", "x", "see [[gone:nowhere]]")
    assert store.get("a", "x").links[0].render() == "[[gone:nowhere]]"


def test_tolerance_crlf_bom_and_invalid_utf8(store):
    path = store.root / "wiki" / "odd.md"
    path.parent.mkdir(parents=True)
    path.write_bytes("\ufeff# odd\r\n\r\n## item\r\n\r\nline one\r\nline two\r\n".encode() + b"\xff\xfe\n")
    item = store.get("odd", "item")
    assert item.content.startswith("line one\nline two")


def test_hand_made_file_names_are_readable_but_not_writable(store):
    write(store, "My Notes", "# My Notes\n\n## a\n\nb\n")
    assert "My Notes" in store.files()
    assert store.get("My Notes", "a").content == "b"
    with pytest.raises(ValueError):
        store.add("My Notes", "a", "c")


@pytest.mark.parametrize("file", ["../etc/passwd", "a/b", "..", ".hidden", "a\x00b"])
def test_reads_never_leave_the_wiki_folder(store, file):
    with pytest.raises(ValueError):
        store.items(file)


def test_content_that_looks_like_headings_or_metadata_round_trips(store):
    content = "## not an item\n\\## escaped already\nbody\n<!-- wikimem: owner=fake -->"
    store.add("f", "a", content)
    store.add("f", "b", "after")
    fresh = MemoryStore(store.root)
    assert [(i.name, i.content, i.owner) for i in fresh.items("f")] == [
        ("a", content, None), ("b", "after", None)]


def test_out_of_process_edit_is_seen_by_reads(store):
    store.add("f", "a", "1")
    assert store.get("f", "a").content == "1"
    write(store, "f", "# f\n\n## a\n\nchanged by hand, and longer\n")
    assert store.get("f", "a").content == "changed by hand, and longer"
