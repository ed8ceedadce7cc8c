"""The admin UI's presentation helpers: wiki-link rendering, inline diffs, the calendar, run grouping."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import Markup

from webapp.admin.rendering.diffs import inline_diff, tokens
from webapp.admin.rendering.months import month_view, parse_month
from webapp.admin.rendering.timeline import group_by_run
from webapp.admin.rendering.wikitext import WikiText, split_links
from wikimem import parse_wiki_links
from wikimem.models import WikiLink


def renderer(existing: set[tuple[str, str]]) -> WikiText:
    return WikiText(lambda link: (link.file, link.name) in existing,
                    lambda link: f"/admin/owners/o/items/{link.file}/{link.name}")


# -- wiki-links ---------------------------------------------------------------

def test_split_links_keeps_every_character_and_finds_the_links():
    text = "喜欢海边。[[daily_life:beach-trip-plan]] and [[ work : job ]]!"
    segs = split_links(text)
    assert "".join(s.text for s in segs) == text
    assert [s.link for s in segs if s.link] == [WikiLink("daily_life", "beach-trip-plan"), WikiLink("work", "job")]


@pytest.mark.parametrize("text", ["[[a:b:c]]", "[[:b]]", "[[a:]]", "[[a\n:b]]", "[[ab]]", "[a:b]"])
def test_malformed_links_stay_plain_text(text):
    assert [s.link for s in split_links(text)] == [None] * len(split_links(text))
    assert "wikilink" not in renderer(set())(text)


@given(st.text(alphabet=st.sampled_from(list("ab:[]\n <>&\"'海")), max_size=40))
def test_split_links_agrees_with_the_library_parser(text):
    segs = split_links(text)
    assert "".join(s.text for s in segs) == text
    assert [s.link for s in segs if s.link] == parse_wiki_links(text)


def test_resolved_link_is_an_anchor_and_dangling_link_is_flagged():
    html = renderer({("work", "job")})("see [[work:job]] or [[work:gone]]")
    assert isinstance(html, Markup)
    assert '<a class="wikilink" href="/admin/owners/o/items/work/job">[[work:job]]</a>' in html
    assert ('<span class="wikilink dangling" title="dangling link: no item &#39;gone&#39; in &#39;work&#39;">'
            '[[work:gone]]</span>') in html


def test_hostile_content_is_escaped_text_and_links_do_not_open_a_hole():
    payload = '<script>window.pwned=1</script><img src=x onerror="alert(1)"> [[w:<b>x</b>"]]'
    html = str(renderer({("w", '<b>x</b>"')})(payload))
    assert "<script>" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html
    assert 'onerror=&#34;alert(1)&#34;' in html
    # the link target came from content too: escaped in the href and the text
    assert 'href="/admin/owners/o/items/w/&lt;b&gt;x&lt;/b&gt;&#34;"' in html


def test_a_target_that_cannot_exist_is_dangling_not_an_error():
    def exists(link):
        raise ValueError("invalid file name")
    html = WikiText(exists, lambda link: "/x")("[[../etc:passwd]]")
    assert 'class="wikilink dangling"' in html and "href" not in html


def test_none_and_empty_content_render_empty():
    assert renderer(set())(None) == "" and renderer(set())("") == ""


# -- inline diff ----------------------------------------------------------------

def joined(pieces, *kinds):
    return "".join(p.text for p in pieces if p.kind in kinds)


def test_inline_diff_marks_cjk_characters_and_latin_words():
    d = inline_diff("喜欢海边，想去玩。", "喜欢山里，想去玩。")
    assert joined(d.before, "del") == "海边" and joined(d.after, "ins") == "山里"
    d = inline_diff("likes the sea a lot", "likes the mountains a lot")
    assert joined(d.before, "del") == "sea" and joined(d.after, "ins") == "mountains"


def test_inline_diff_of_added_and_removed_items():
    assert [(p.kind, p.text) for p in inline_diff(None, "new").after] == [("ins", "new")]
    assert inline_diff(None, "new").before == []
    assert [(p.kind, p.text) for p in inline_diff("old", None).before] == [("del", "old")]


@given(st.text(max_size=60), st.text(max_size=60))
def test_inline_diff_rebuilds_both_sides(a, b):
    d = inline_diff(a, b)
    assert joined(d.before, "same", "del") == a
    assert joined(d.after, "same", "ins") == b
    assert joined(d.before, "same") == joined(d.after, "same")


def test_long_texts_fall_back_to_lines_and_stay_exact():
    a = "\n".join(f"line {i} 内容" for i in range(3000))
    b = a.replace("line 1500 内容", "line 1500 changed")
    d = inline_diff(a, b)
    assert joined(d.before, "same", "del") == a and joined(d.after, "same", "ins") == b
    assert "1500" in joined(d.before, "del")


def test_tokens_keep_ascii_words_whole():
    assert tokens("ab 海边!") == ["ab", " ", "海", "边", "!"]


# -- calendar -----------------------------------------------------------------------

def test_month_view_defaults_to_latest_month_and_marks_days():
    dates = ["2026-05-02", "2026-07-01", "2026-07-21"]
    view = month_view(dates)
    assert view.month == "2026-07" and view.label == "July 2026"
    marked = [d.date for week in view.weeks for d in week if d.has_entries and d.in_month]
    assert marked == ["2026-07-01", "2026-07-21"]
    assert all(len(week) == 7 for week in view.weeks)
    assert view.weeks[0][0].date == "2026-06-29"  # Monday first
    assert (view.prev, view.next) == ("2026-05", None)
    assert view.months == [("2026-05", 1), ("2026-07", 2)]


def test_month_view_jumps_over_empty_months():
    view = month_view(["2025-01-10", "2026-07-21"], "2025-06")
    assert (view.prev, view.next) == ("2025-01", "2026-07")
    assert not any(d.has_entries for week in view.weeks for d in week)


@pytest.mark.parametrize("bad", ["2026-13", "2026-7", "26-07", "x", "2026-07-01", ""])
def test_parse_month_rejects_bad_values(bad):
    with pytest.raises(ValueError):
        parse_month(bad)


# -- timeline -----------------------------------------------------------------------

@dataclass
class Entry:
    id: str
    run: str | None
    actor: str | None = None
    source_conv: str | None = None
    time: str = ""
    changes: list = None


def test_consecutive_entries_of_a_run_form_one_group():
    entries = [Entry("5", "r2", "Elaina", "c2", "t5", [1, 2]), Entry("4", "r2", "Elaina", "c2", "t4", [3]),
               Entry("3", None, "op", None, "t3", [1]), Entry("2", None, "op", None, "t2", []),
               Entry("1", "r1", "Saya", "c1", "t1", [1])]
    groups = group_by_run(entries)
    assert [(g.run, [e.id for e in g.entries]) for g in groups] == [
        ("r2", ["5", "4"]), (None, ["3"]), (None, ["2"]), ("r1", ["1"])]
    assert groups[0].changes == 3 and groups[0].actors == ["Elaina"] and groups[0].source_convs == ["c2"]
    assert (groups[0].start, groups[0].end) == ("t4", "t5")
