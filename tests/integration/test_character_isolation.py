"""The isolation matrix of issue 33: 3 characters × 2 persons, a distinct secret told to each character about each
person. Over every read path (API items, item, files, diary day/window/dates, retrieve and its explain/dropped list,
history, commits, diff, export, include_staged, as_of; the MCP tools), no secret reaches another character or another
person, and a retrieve without a character sees none of them. Real app, real repositories.
"""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from apiworld import ADMIN, auth

CHARACTERS = ("kai", "mira", "elaina")
PERSONS = ("user:ann", "user:bob")
DAY = "2026-07-21"


def secret(character: str, person: str) -> str:
    """A word no other memory holds: the character and the person in it, so a leak names its source."""
    return f"zq{character}{person.split(':')[1]}secret"


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    from webapp import create_app
    from wikimem.host.access.tokens import append_token, mint_token

    tmp = tmp_path_factory.mktemp("matrix")
    tokens = tmp / "tokens.jsonl"
    bound = {}
    for character in CHARACTERS:
        key, entry = mint_token(f"bot-{character}", ["read", "write"], "", character=character)
        append_token(tokens, entry)
        bound[character] = key
    plain, entry = mint_token("plain-bot", ["read", "write"], "")
    append_token(tokens, entry)
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens)})
    client = app.test_client()
    for character in CHARACTERS:
        r = client.put(f"/api/v1/characters/{character}", headers=auth(ADMIN), json={"name": character.title()})
        assert r.status_code in (200, 201), r.get_json()
    commits: dict[tuple[str, str], str] = {}
    for person in PERSONS:
        assert client.put(f"/api/v1/owners/{person}", headers=auth(ADMIN)).status_code == 201
        client.put(f"/api/v1/owners/{person}/items/notes/shared", headers=auth(ADMIN),
                   json={"content": "A note every character shares."})
        for character in CHARACTERS:
            word = secret(character, person)
            put = client.put(f"/api/v1/owners/{person}/items/secrets/told", headers=auth(bound[character]),
                             json={"content": f"Told only {character}: {word}.", "character": character})
            assert put.status_code == 201, put.get_json()
            commits[(character, person)] = put.get_json()["commit"]
            diary = client.post(f"/api/v1/owners/{person}/diary", headers=auth(bound[character]),
                                json={"content": f"We talked about {word}.", "character": character, "date": DAY,
                                      "time": "10:00"})
            assert diary.status_code == 201, diary.get_json()
    return app, client, bound, plain, commits


def leaked(body, allowed: set[str]) -> set[str]:
    """The secrets in a response that its reader may not see."""
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    found = set(re.findall(r"zq[a-z]+secret", text))
    return found - allowed


def _without_the_query(result: dict) -> dict:
    """A retrieve's answer without the words it was asked (its terms, each hit's matched terms): what it found."""
    hits = [{k: v for k, v in hit.items() if k != "matched_terms"} for hit in result["items"] + result["dropped"]]
    return {**{k: v for k, v in result.items() if k not in ("query_terms", "items", "dropped")}, "hits": hits}


def _reads(client, token: str, person: str, character: str | None) -> list[tuple[str, object]]:
    """Every read path of one person, as one caller, addressing one layer (None: the shared one)."""
    o, q = f"/api/v1/owners/{person}", f"?character={character}" if character else ""
    amp = f"&character={character}" if character else ""
    h = auth(token)
    out = []
    for path in (f"{o}/files{q}", f"{o}/items{q}", f"{o}/items?file=secrets{amp}", f"{o}/diary/dates{q}",
                 f"{o}/diary/{DAY}{q}", f"{o}/diary?start={DAY}&end={DAY}{amp}", f"{o}/history{q}",
                 f"{o}/diff?from=HEAD~6&to=HEAD{amp}"):
        r = client.get(path, headers=h)
        out.append((path, r.get_json() if r.status_code == 200 else r.status_code))
    item = client.get(f"{o}/items/secrets/told{q}", headers=h)
    out.append(("item", item.get_json() if item.status_code == 200 else item.status_code))
    export = client.get(f"{o}/export?format=zip{amp}", headers=h)
    if export.status_code == 200:
        with zipfile.ZipFile(io.BytesIO(export.data)) as zf:
            out.append(("export", "".join(zf.read(n).decode() for n in zf.namelist())))
    for words in [secret(c, p) for c in CHARACTERS for p in PERSONS] + ["told", "talked 2026-07-21"]:
        for extra in ({}, {"explain": True, "limit": 1, "budget_tokens": 1, "diary": "all"}, {"include_staged": True},
                      {"as_of": "HEAD"}):
            body = {"query": words, **extra, **({"character": character} if character else {})}
            r = client.post(f"{o}/retrieve", headers=h, json=body)
            out.append((f"retrieve {words} {extra}", _without_the_query(r.get_json()) if r.status_code == 200
                        else r.status_code))
    return out


@pytest.mark.parametrize("reader", CHARACTERS)
@pytest.mark.parametrize("person", PERSONS)
def test_a_character_reads_its_own_secret_of_a_person_and_nothing_else(matrix, reader, person):
    _, client, bound, _, _ = matrix
    allowed = {secret(reader, person)}
    seen: set[str] = set()
    for layer in (None, reader):
        for path, body in _reads(client, bound[reader], person, layer):
            assert leaked(body, allowed) == set(), (reader, person, layer, path)
            seen |= set(re.findall(r"zq[a-z]+secret", json.dumps(body, ensure_ascii=False)))
    assert allowed <= seen  # (the reads did reach its own layer: the matrix is not vacuous)


@pytest.mark.parametrize("person", PERSONS)
def test_without_a_character_no_read_sees_any_secret(matrix, person):
    _, client, _, plain, _ = matrix
    for token in (plain, ADMIN):
        for path, body in _reads(client, token, person, None):
            assert leaked(body, set()) == set(), (path, body)


@pytest.mark.parametrize("reader", CHARACTERS)
def test_a_character_token_is_refused_another_characters_layer_on_every_path(matrix, reader):
    _, client, bound, _, commits = matrix
    other = next(c for c in CHARACTERS if c != reader)
    for path, body in _reads(client, bound[reader], "user:ann", other):
        assert body == 403, (path, body)
    # A commit of another character's layer alone is not shown to it, even by id.
    r = client.get(f"/api/v1/owners/user:ann/commits/{commits[(other, 'user:ann')]}", headers=auth(bound[reader]))
    assert r.status_code == 404 and leaked(r.get_json(), set()) == set()
    write = client.put("/api/v1/owners/user:ann/items/secrets/told", headers=auth(bound[reader]),
                       json={"content": "overwrite", "character": other})
    assert write.status_code == 403
    bundle = client.get("/api/v1/owners/user:ann/export?format=bundle", headers=auth(bound[reader]))
    assert bundle.status_code == 403


def test_an_operator_reads_any_layer_when_it_asks_for_it(matrix):
    _, client, _, _, _ = matrix
    for character in CHARACTERS:
        r = client.get(f"/api/v1/owners/user:bob/items?character={character}", headers=auth(ADMIN))
        assert leaked(r.get_json(), {secret(character, "user:bob")}) == set()
        assert secret(character, "user:bob") in json.dumps(r.get_json())


def test_a_character_writing_the_shared_layer_proposes(matrix):
    _, client, bound, _, _ = matrix
    r = client.put("/api/v1/owners/user:ann/items/notes/from-kai", headers=auth(bound["kai"]),
                   json={"content": "Kai thinks Ann likes tea."})
    assert r.status_code in (200, 201) and r.get_json()["staged"] is True, r.get_json()  # the answer says so
    assert client.get("/api/v1/owners/user:ann/items/notes/from-kai", headers=auth(ADMIN)).status_code == 404
    own = client.put("/api/v1/owners/user:ann/items/notes/kai-own", headers=auth(bound["kai"]),
                     json={"content": "In Kai's layer.", "character": "kai"})
    assert own.status_code == 201 and "staged" not in own.get_json()  # its own layer: written, not proposed
    staged = client.get("/api/v1/owners/user:ann/staged", headers=auth(ADMIN)).get_json()["runs"]
    assert any(run["actor"] == "bot-kai" for run in staged)
    refused = client.put("/api/v1/owners/user:ann/items/notes/direct", headers=auth(bound["kai"]),
                         json={"content": "x", "staged": False})
    assert refused.status_code == 403


def test_the_mcp_tools_read_as_the_tokens_character_and_refuse_another_layer(matrix):
    pytest.importorskip("mcp")
    import threading

    from test_mcp import Served, call
    from werkzeug.serving import make_server

    app, _, bound, plain, _ = matrix
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        served = Served(f"http://127.0.0.1:{srv.server_port}/mcp", app, {}, None)  # type: ignore[arg-type]
        for reader in CHARACTERS:
            allowed = {secret(reader, "user:ann")}
            for word in [secret(c, "user:ann") for c in CHARACTERS] + ["told"]:
                got = call(served, bound[reader], "retrieve", owner="user:ann", query=word, limit=50)
                assert not got.is_error, got
                body = got.structured_content
                assert leaked(_without_the_query(body["result"]), allowed) == set(), (reader, word)
                assert leaked(body["prompt"], allowed) == set(), (reader, word)
            history = call(served, bound[reader], "history", owner="user:ann", character=reader)
            assert leaked(history.structured_content, allowed) == set()
            other = next(c for c in CHARACTERS if c != reader)
            assert call(served, bound[reader], "history", owner="user:ann", character=other).is_error
            assert call(served, bound[reader], "retrieve", owner="user:ann", query="told", character=other).is_error
        blind = call(served, plain, "retrieve", owner="user:ann", query="told", limit=50).structured_content
        assert leaked(_without_the_query(blind["result"]), set()) == set()
    finally:
        srv.shutdown()
        app.extensions["wikimem.mcp"].close()
