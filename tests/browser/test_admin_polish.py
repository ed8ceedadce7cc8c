"""What a new operator noticed (issue 16, item 6), each checked in Chromium at laptop and phone widths.

A disabled button looks disabled; the calendar's weekday labels keep apart;
the phone owners table shows every column; a placeholder does not pass for a
value; commit ids keep off the panel's border; ``/favicon.ico`` exists; the
dark scheme follows the system. Each test saves a screenshot of its page at
both widths into ``tests/screenshots/``.
"""

from __future__ import annotations

import pytest

from wikimem.context import WriteContext

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

from browser_env import open_filters
from browser_seed import BAD_RUN, OWNER

pytestmark = pytest.mark.browser

WIDTHS = ("laptop", "phone")
LONG_OWNER = "user:a-rather-long-owner-id.from-some-bot-platform@2026"


def owner_url(world, tail: str = "") -> str:
    return f"{world.url}/admin/owners/{OWNER}{tail}"


def style(locator, *props: str, pseudo: str | None = None) -> dict:
    """Computed style properties of the first element of ``locator``."""
    return locator.first.evaluate(
        "(el, [props, pseudo]) => { const s = getComputedStyle(el, pseudo);"
        " return Object.fromEntries(props.map(p => [p, s.getPropertyValue(p)])); }",
        [list(props), pseudo])


def luminance(css_colour: str) -> float:
    """Relative luminance (0 black … 1 white) of an ``rgb()``/``rgba()`` colour."""
    inside = css_colour[css_colour.index("(") + 1:css_colour.index(")")].replace("/", " ").replace(",", " ")
    r, g, b = (float(v) / 255 for v in inside.split()[:3])
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


# -- a disabled button ----------------------------------------------------------

def test_a_disabled_button_looks_disabled(world, operator_page, screenshots):
    head = world.owner().vstore.head()
    for width in WIDTHS:
        page = operator_page(width)
        # Restoring to the newest commit would change nothing: the button is disabled.
        page.goto(owner_url(world, f"/restore/{head}"))
        button = page.locator("#confirm")
        expect(button).to_be_disabled()
        expect(page.locator(".notice")).to_contain_text("Nothing would change")
        off = style(button, "opacity", "cursor", "filter")
        page.screenshot(path=screenshots / f"confirm-nothing-to-do-{width}.png", full_page=True)
        # The same button, enabled, on a rollback that would change something.
        page.goto(owner_url(world, f"/runs/{BAD_RUN}/rollback"))
        expect(page.locator("#confirm")).to_be_enabled()
        on = style(page.locator("#confirm"), "opacity", "cursor", "filter")
        assert float(on["opacity"]) == 1 and float(off["opacity"]) <= 0.6, (on, off)
        assert (on["cursor"], off["cursor"]) == ("pointer", "not-allowed")
        assert "grayscale" in off["filter"] and "grayscale" not in on["filter"]


# -- the calendar ---------------------------------------------------------------

WEEKDAY_TEXT_BOXES = """() => [...document.querySelectorAll('table.calendar thead th')].map(th => {
  const r = document.createRange(); r.selectNodeContents(th);
  const b = r.getBoundingClientRect(); return [b.left, b.right, th.textContent.trim()];
})"""


def test_calendar_weekday_labels_keep_apart(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, "/diary?day=2026-07-20"))
        boxes = page.evaluate(WEEKDAY_TEXT_BOXES)
        assert [label for _, _, label in boxes] == ["Mo", "Tu", "We", "Th", "Fr", "Sa", "Su"]
        gaps = [nxt[0] - prev[1] for prev, nxt in zip(boxes, boxes[1:])]
        assert min(gaps) >= 6, f"weekday labels run together at {width} width: gaps {gaps}"
        # The full day name is there for whoever hovers or reads aloud.
        expect(page.locator("table.calendar thead abbr[title=Wednesday]")).to_have_text("We")
        page.screenshot(path=screenshots / f"diary-calendar-{width}.png", full_page=True)


# -- the owners table on a phone ------------------------------------------------

CELLS_OUTSIDE = """wrap => {
  const box = wrap.getBoundingClientRect();
  const out = [...wrap.querySelectorAll('tbody td')].filter(td => {
    const b = td.getBoundingClientRect(); return b.right > box.right + 0.5 || b.left < box.left - 0.5;
  });
  return {outside: out.map(td => td.textContent.trim()), scroll: wrap.scrollWidth, client: wrap.clientWidth};
}"""


def test_owners_table_shows_every_column_at_both_widths(world, operator_page, screenshots):
    owner, _ = world.host.ensure_owner(LONG_OWNER)
    owner.vstore.add("preferences", "tea", "Likes green tea.", owner=LONG_OWNER, ctx=WriteContext(actor="test"))
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(world.url + "/admin/")
        expect(page.locator("table.owners tbody tr")).to_have_count(3)
        fit = page.locator(".table-wrap").evaluate(CELLS_OUTSIDE)
        assert fit["outside"] == [] and fit["scroll"] <= fit["client"], f"{width}: {fit}"
        # Each value keeps its meaning once the header row is out of sight.
        row = page.locator("table.owners tbody tr", has_text=OWNER)
        expect(row.locator("td.when time.instant")).to_be_visible()
        if width == "phone":
            assert "last change" in row.locator("td.when").evaluate(
                "td => getComputedStyle(td, '::before').content")
        page.screenshot(path=screenshots / f"owners-long-id-{width}.png", full_page=True)


# -- placeholders ---------------------------------------------------------------

def test_a_placeholder_does_not_look_like_a_value(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        page.goto(owner_url(world, "/history"))
        open_filters(page)
        empty, filled = page.locator("#f-file"), page.locator("#f-item")
        expect(empty).to_have_value("")
        expect(empty).to_have_attribute("placeholder", "e.g. preferences")
        filled.fill("tea")
        hint = style(empty, "color", "font-style", pseudo="::placeholder")
        value = style(filled, "color", "font-style")
        assert hint["font-style"] == "italic" and value["font-style"] == "normal"
        assert hint["color"] != value["color"]
        # Lighter than a value, yet still readable on the field.
        field_bg = luminance(style(empty, "background-color")["background-color"])
        assert abs(luminance(hint["color"]) - field_bg) < abs(luminance(value["color"]) - field_bg)
        page.screenshot(path=screenshots / f"history-filter-{width}.png", full_page=True)


# -- commit ids -----------------------------------------------------------------

# From the bordered box around each commit list (the list itself, or the panel it sits in).
COMMIT_ID_INSETS = """() => [...document.querySelectorAll('ul.commits')].flatMap(ul => {
  const box = ul.closest('.panel').getBoundingClientRect();
  return [...ul.querySelectorAll('li > a.mono')].map(a => a.getBoundingClientRect().left - box.left);
})"""


def test_commit_ids_keep_off_the_left_border(world, operator_page, screenshots):
    for width in WIDTHS:
        page = operator_page(width)
        for name, tail in (("item", "/items/preferences/likes-the-sea"), ("history", "/history")):
            page.goto(owner_url(world, tail))
            insets = page.evaluate(COMMIT_ID_INSETS)
            assert insets and min(insets) >= 8, f"{name} at {width}: commit ids {insets} px from the border"
            page.screenshot(path=screenshots / f"{name}-commits-{width}.png", full_page=True)


# -- favicon --------------------------------------------------------------------

def test_favicon_is_served_and_every_page_loads_without_a_failed_request(world, operator_page):
    page = operator_page("laptop")
    icon = page.request.get(world.url + "/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"].startswith("image/")
    assert icon.body()[:4] == b"\x00\x00\x01\x00"  # an ICO file
    failed: list[str] = []
    errors: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    for tail in ("", "/diary", "/search?q=sea", "/history", f"/runs/{BAD_RUN}"):
        page.goto(owner_url(world, tail))
        for href in page.locator("link[rel=icon]").evaluate_all("links => links.map(l => l.href)"):
            linked = page.request.get(href)
            assert linked.status == 200 and linked.headers["content-type"].startswith("image/"), href
    assert failed == [] and errors == []


# -- dark scheme ----------------------------------------------------------------

DARK_PAGES = {
    "owners": "/admin/",
    "owner": f"/admin/owners/{OWNER}?file=preferences",
    "diary": f"/admin/owners/{OWNER}/diary?day=2026-07-20",
    "search": f"/admin/owners/{OWNER}/search?q=sea+beach+tea&budget=12",
    "history": f"/admin/owners/{OWNER}/history",
    "run": f"/admin/owners/{OWNER}/runs/{BAD_RUN}",
    "confirm": f"/admin/owners/{OWNER}/runs/{BAD_RUN}/rollback",
}
# Surfaces that must turn dark with the page (a hard-coded white would stay light).
SURFACES = ("body", ".panel", "input:not([type=hidden]):not([type=checkbox])", "table", ".change-head",
            ".side.gone", ".topbar", "button.secondary, .button.secondary", ".badge")
BACKGROUNDS = """selectors => selectors.flatMap(sel => [...document.querySelectorAll(sel)].slice(0, 3).map(
  el => [sel, getComputedStyle(el).backgroundColor]))"""


def test_dark_scheme_follows_the_system(world, operator_page, screenshots):
    light = operator_page("laptop", color_scheme="light")
    light.goto(world.url + "/admin/")
    assert luminance(style(light.locator("body"), "background-color")["background-color"]) > 0.8
    for width in WIDTHS:
        page = operator_page(width, color_scheme="dark")
        for name, path in DARK_PAGES.items():
            page.goto(world.url + path)
            assert luminance(style(page.locator("body"), "color")["color"]) > 0.7, f"{name}: body text is not light"
            light_ones = [(sel, bg) for sel, bg in page.evaluate(BACKGROUNDS, list(SURFACES))
                          if bg not in ("rgba(0, 0, 0, 0)", "transparent") and luminance(bg) >= 0.2]
            assert light_ones == [], f"{name}: light backgrounds in the dark scheme"
            page.screenshot(path=screenshots / f"{name}-dark-{width}.png", full_page=True)
