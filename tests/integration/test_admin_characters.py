"""A person seen whole in the admin UI (issue 33 point 7): the layer switch on Wiki, Diary, Search and History, recall
as a character, the person's overview, the item page of a layer; hostile content escaped in every layer; a malformed
or unknown character is not found."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pytest
from apiworld import ADMIN
from markupsafe import escape

from webapp import create_app
from webapp.session import account_line
from wikimem.host import make_host

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared world of a layered person
from fakes import ScriptedLLM  # noqa: E402
from layered_world import (  # noqa: E402
    CHARACTERS,
    HOSTILE,
    MEMORIZE_REPLY,
    MEMORIZED_FACT,
    PERSON,
    SECRETS,
    memorize_as,
    seed_layers,
)

PASSWORD = "correct horse battery staple"
BASE = f"/admin/owners/{PERSON}"


@pytest.fixture
def app(tmp_path):
    root = tmp_path / "data"
    writer = make_host(root, llm=ScriptedLLM(MEMORIZE_REPLY))  # a second process of the host, with a chat model
    memorize_as(seed_layers(writer), "kai")
    operators = tmp_path / "operators.jsonl"
    operators.write_text(account_line("rita", PASSWORD, role="reviewer") + "\n", encoding="utf-8")
    return create_app({"TESTING": True, "DATA_ROOT": str(root), "ADMIN_TOKEN": ADMIN,
                       "OPERATORS_FILE": str(operators)})


def csrf(text: str) -> str:
    found = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', text)
    assert found
    return found.group(1)


def client_as(app, who: str | None = None):
    client = app.test_client()
    form = {"token": ADMIN} if who is None else {"username": who, "password": PASSWORD}
    assert client.post("/login", data={"csrf_token": csrf(client.get("/login").get_data(as_text=True)),
                                       **form}).status_code == 302
    return client


def page(client, url: str, status: int = 200, **query) -> str:
    r = client.get(url, query_string=query)
    assert r.status_code == status, r.get_data(as_text=True)[:2000]
    return r.get_data(as_text=True)


def assert_escaped(text: str, *hostile: str) -> None:
    for raw in hostile:
        assert raw not in text
        assert str(escape(raw)) in text  # shown, as text


LAYER_PAGES = {"wiki": ("", {"file": "secrets"}), "diary": ("/diary", {"day": "2026-07-20"}),
               "text search": ("/find", {"q": "code word"}), "retrieval": ("/search", {"q": "code word"}),
               "history": ("/history", {})}
SHARED_QUERY = {"wiki": {"file": "people"}, "text search": {"q": "sea"}, "retrieval": {"q": "code word sea"}}


@pytest.mark.parametrize("where", sorted(LAYER_PAGES))
def test_each_layer_page_shows_that_layer_alone_and_escapes_it(app, where):
    client = client_as(app)
    path, query = LAYER_PAGES[where]
    for character, secret in SECRETS.items():
        text = page(client, BASE + path, character=character, **query)
        others = [s for c, s in SECRETS.items() if c != character]
        if where != "history":  # (the history shows summaries, not texts)
            assert secret in text and not any(s in text for s in others), (character, where)
            assert_escaped(text, HOSTILE[character])
        assert 'class="layer-choice active"' in text and f'data-layer="{character}"' in text
    shared = page(client, BASE + path, **{**query, **SHARED_QUERY.get(where, {})})
    assert not any(s in shared for s in SECRETS.values())  # the shared layer holds none of the secrets
    if where not in ("diary", "history"):
        assert "Ann lives by the " in shared  # (text search marks the word it found)
        assert_escaped(shared, HOSTILE["shared"])


def test_the_switch_keeps_the_query_and_the_tabs_keep_the_layer(app):
    client = client_as(app)
    text = page(client, BASE + "/search", q="code word", limit="5", character="kai")
    switch = re.search(r'<nav class="layer-switch".*?</nav>', text, re.S).group(0)
    mira = html.unescape(re.search(r'href="([^"]+)" data-layer="mira"', switch).group(1))
    assert "q=code+word" in mira and "limit=5" in mira and "character=mira" in mira  # one click apart
    tabs = re.search(r'<nav class="tabs".*?</nav>', text, re.S).group(0)
    assert f'href="{BASE}/diary?character=kai"' in tabs and f'href="{BASE}/history?character=kai"' in tabs
    assert f'href="{BASE}/links"' in tabs  # the link graph is the shared layer's
    assert "Shared only" in switch  # recalling as nobody reads the shared layer alone


def test_recall_as_each_character_reads_its_layer_the_shared_one_and_its_profile(app):
    client = client_as(app)
    as_kai = page(client, BASE + "/search", q="code word harbour sea", character="kai")
    assert "BLUEFIN" in as_kai and "MAGENTA" not in as_kai and "SAFFRON" not in as_kai
    assert "Kai works at the harbour café." in as_kai  # its profile, char:kai
    assert "Ann lives by the sea." in as_kai  # the shared layer
    badges = set(re.findall(r'class="badge layer layer-(\w+)"', as_kai))
    assert badges == {"character", "shared", "profile"}
    assert 'href="/admin/owners/char:kai/items/self/who"' in as_kai  # a profile hit links to the profile
    assert f'href="{BASE}/items/secrets/code-word?character=kai"' in as_kai
    assert re.search(r'id="recalled-as">recalled as <b>Kai</b>', as_kai)
    as_mira = page(client, BASE + "/search", q="code word harbour sea", character="mira")
    assert "MAGENTA" in as_mira and "BLUEFIN" not in as_mira and "Kai works" not in as_mira
    nobody = page(client, BASE + "/search", q="code word harbour sea")
    assert not any(s in nobody for s in SECRETS.values()) and "the shared layer only" in nobody
    # Kai's memorized fact is in its layer (and proposed to the shared one): Mira does not recall it yet.
    assert MEMORIZED_FACT in page(client, BASE + "/search", q="surf", character="kai")
    assert MEMORIZED_FACT not in page(client, BASE + "/search", q="surf", character="mira")


def test_history_filters_by_layer_or_shows_every_layer(app):
    client = client_as(app)
    kai = page(client, BASE + "/history", character="kai")
    assert "add secrets/code-word in kai" in kai and "memorize 1 diary entry, 1 fact in kai" in kai
    assert " in mira" not in kai and "add people/ann" not in kai
    shared = page(client, BASE + "/history")
    assert "add people/ann" in shared and " in kai" not in shared
    every = page(client, BASE + "/history", character="*")
    assert all(f"add secrets/code-word in {c}" in every for c in SECRETS) and "add people/ann" in every
    assert 'data-layer="*"' in every  # "All layers" is History's alone
    assert "character=*" not in re.search(r'<nav class="tabs".*?</nav>', every, re.S).group(0)
    filtered = page(client, BASE + "/history", character="kai", action="memorize")
    assert "memorize 1 diary entry" in filtered and "add secrets/code-word" not in filtered
    assert 'name="character" value="kai"' in filtered  # the filter form keeps the layer


def test_the_person_overview_counts_each_layer(app):
    text = page(client_as(app), BASE)
    rows = dict(re.findall(r'<tr class="layer-row[^"]*" data-layer="([^"]+)">(.*?)</tr>', text, re.S))
    assert set(rows) == {"shared", *SECRETS}
    counts = {k: re.findall(r'<td class="num" data-label="[^"]+">(\d+)</td>', v) for k, v in rows.items()}
    assert counts["shared"] == ["1", "1", "0"]  # items, files, diary days (the proposal is not approved yet)
    assert counts["kai"] == ["2", "2", "2"]  # its secret and the memorized fact; two diary days
    assert counts["mira"] == ["1", "1", "1"]
    assert all("UTC" in rows[k] for k in rows)  # each layer's last change
    assert CHARACTERS["elaina"][0] in rows["elaina"]


def test_the_item_and_its_links_stay_in_the_layer(app):
    client = client_as(app)
    item = page(client, BASE + "/items/secrets/code-word", character="mira")
    assert "MAGENTA" in item and "characters/mira/" in item and 'id="edit-item"' not in item
    page(client, BASE + "/items/secrets/code-word", status=404)  # not in the shared layer
    wiki = page(client, BASE, character="kai", file="secrets")
    assert f'href="{BASE}/items/secrets/code-word?character=kai"' in wiki and 'id="new-item"' not in wiki


@pytest.mark.parametrize("character", ["Kai", "bad!", "../kai", "k" * 65, "nobody", " "])
@pytest.mark.parametrize("where", ["", "/diary", "/find", "/search", "/history", "/items/secrets/code-word"])
def test_a_malformed_or_unknown_character_is_not_found(app, where, character):
    client = client_as(app)
    status = 200 if not character.strip() else 404  # blank: the shared layer
    if where.startswith("/items") and status == 200:
        status = 404  # (no such item in the shared layer)
    page(client, BASE + where, status=status, character=character)


def test_a_character_page_of_a_malformed_or_unknown_id_is_not_found(app):
    client = client_as(app)
    for bad in ("Kai", "bad!", "nobody", "k" * 65):
        assert client.get(f"/admin/characters/{bad}").status_code == 404
    page(client, "/admin/characters/kai")


def test_a_reviewer_may_look_at_every_layer(app):
    client = client_as(app, "rita")
    for path, query in LAYER_PAGES.values():
        page(client, BASE + path, character="kai", **query)
    assert 'id="new-item"' not in page(client, BASE)


def test_a_deleted_characters_layer_stays_readable_and_says_so(app):
    from webapp.hosting import get_host

    with app.app_context():
        get_host().characters.delete("mira")
    client = client_as(app)
    text = page(client, BASE, character="mira", file="secrets")
    assert "MAGENTA" in text
    switch = re.search(r'<nav class="layer-switch".*?</nav>', text, re.S).group(0)
    assert re.search(r'data-layer="mira"[^>]*>Mira <span class="badge">deleted</span>', switch, re.S)
    recall = page(client, BASE + "/search", q="code word", character="mira")  # what its layer held, still
    assert "MAGENTA" in recall and '<option value="mira" selected>Mira (deleted)</option>' in recall
    assert "deleted" in page(client, "/admin/characters/mira")


def test_recall_as_a_registered_character_without_a_layer_here(app):
    from webapp.hosting import get_host
    from wikimem.context import WriteContext

    with app.app_context():
        get_host().characters.put("nova", name="Nova")
        get_host().owner("char:nova").add("self", "who", "Nova guards the lighthouse.", ctx=WriteContext(actor="t"))
    client = client_as(app)
    text = page(client, BASE + "/search", q="lighthouse sea", character="nova")
    assert "Nova guards the lighthouse." in text and "Ann lives by the sea." in text
    assert 'class="layer-choice active no-layer"' in text and not any(s in text for s in SECRETS.values())
    assert '<option value="nova"' not in page(client, BASE + "/search")  # offered where it has a layer, or asked for
    page(client, BASE, status=404, character="nova")  # no layer of it to show
