"""The privacy matrix of issue 34: persons A and B, characters Kai and Mira, a direct chat A–Kai, a group G1 with
A, B and Kai, a group G2 with A and Mira. A's direct-chat secret is recalled by Kai in the direct chat and when A is
alone, never in G1 while B is present, never by Mira anywhere; a G1 event is recalled in G1 by Kai, never by Mira;
nothing of A's reaches B's folder. Every recall path: the API's retrieve (with explain, budgets, both diary modes,
include_staged, as_of), the Python client, the MCP tool. Real app, real repositories, served on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading

import pytest
from apiworld import ADMIN, auth

A, B = "user:a", "user:b"
DAY = "2026-07-21"
# Where each marker was said, and what it is (every entry also holds the word "violin", so one query finds all).
DM_SECRET, DM_FACT = "zqdmsecret", "zqdmfact"  # A told Kai in private (a diary entry of Kai's layer; a shared fact)
G1_EVENT, G1_SHARED = "zqgroupone", "zqgroupshared"  # in G1 (Kai's layer of A; A's shared layer)
G2_EVENT = "zqgrouptwo"  # in G2 with Mira (Mira's layer of A)
B_G1 = "zqbobgroup"  # B's own memory of G1 (Kai's layer of B)
ROOMS = {
    "dm": {"channel": "dm", "present": [A, "char:kai"]},
    "g1": {"channel": "g1", "present": [A, B, "char:kai"]},
    "g2": {"channel": "g2", "present": [A, "char:mira"]},
    "alone": {},
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from webapp import create_app
    from webapp.hosting import get_host
    from wikimem.context import WriteContext
    from wikimem.host.access.tokens import append_token, mint_token

    tmp = tmp_path_factory.mktemp("rooms")
    tokens = tmp / "tokens.jsonl"
    bound = {}
    for character in ("kai", "mira"):
        key, entry = mint_token(f"bot-{character}", ["read", "write"], "", character=character)
        append_token(tokens, entry)
        bound[character] = key
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens)})
    client = app.test_client()
    for character in ("kai", "mira"):
        assert client.put(f"/api/v1/characters/{character}", headers=auth(ADMIN),
                          json={"name": character.title(), "shared_writes": "direct"}).status_code in (200, 201)
    dm, g1, g2 = ROOMS["dm"], ROOMS["g1"], ROOMS["g2"]
    with app.app_context():
        host = get_host()
        a, _ = host.ensure_owner(A)
        b, _ = host.ensure_owner(B)
        ctx = WriteContext(actor="test", run="setup")
        a.diary_append(f"A told Kai a secret about the violin: {DM_SECRET}", character="kai", date=DAY, time="09:00",
                       ctx=ctx, **dm)
        a.add("health", "audition", f"A has a violin audition, told in private: {DM_FACT}", ctx=ctx, **dm)
        a.diary_append(f"A, B and Kai planned the violin concert: {G1_EVENT}", character="kai", date=DAY,
                       time="10:00", ctx=ctx, **g1)
        a.diary_append(f"The violin concert plan as A's own memory: {G1_SHARED}", date=DAY, time="10:05", ctx=ctx,
                       **g1)
        a.diary_append(f"A showed Mira the violin: {G2_EVENT}", character="mira", date=DAY, time="11:00", ctx=ctx,
                       **g2)
        b.diary_append(f"B heard about the violin concert: {B_G1}", character="kai", date=DAY, time="10:00", ctx=ctx,
                       **g1)
        roots = {A: a.root, B: b.root}
    return app, client, bound, roots


def markers(body) -> set[str]:
    return set(re.findall(r"zq[a-z]+", body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)))


def found(result: dict) -> set[str]:
    """The markers of what a retrieve found (its hits and what the budget dropped), not the words it was asked."""
    return markers([hit["item"] for hit in result["items"] + result["dropped"]])


# What each character recalls of A in each room: the contract of the issue.
EXPECTED = {
    ("kai", "dm"): {DM_SECRET, DM_FACT, G1_EVENT, G1_SHARED},
    ("kai", "alone"): {DM_SECRET, DM_FACT, G1_EVENT, G1_SHARED},
    ("kai", "g1"): {G1_EVENT, G1_SHARED},
    ("kai", "g2"): {G1_EVENT, G1_SHARED},  # Mira is in G2: someone else for a direct chat; G1 events Kai was at
    ("mira", "dm"): {G2_EVENT},
    ("mira", "alone"): {G2_EVENT},
    ("mira", "g1"): {G2_EVENT},
    ("mira", "g2"): {G2_EVENT},
}
VARIANTS = ({}, {"explain": True}, {"diary": "all"}, {"diary": "window", "time_range": [DAY, DAY]},
            {"budget_tokens": 1, "explain": True}, {"include_staged": True}, {"as_of": "HEAD"})


@pytest.mark.parametrize("room", sorted(ROOMS))
@pytest.mark.parametrize("character", ["kai", "mira"])
def test_the_api_recalls_in_each_room_only_what_the_rules_allow(world, character, room):
    _, client, bound, _ = world
    for query in ("violin", DM_SECRET, DM_FACT, G1_EVENT, G2_EVENT, "what did we do on 2026-07-21"):
        for extra in VARIANTS:
            r = client.post(f"/api/v1/owners/{A}/retrieve", headers=auth(bound[character]),
                            json={"query": query, "limit": 50, **ROOMS[room], **extra})
            assert r.status_code == 200, r.get_json()
            got = found(r.get_json())
            assert got <= EXPECTED[(character, room)], (character, room, query, extra)
            if query == "violin" and "budget_tokens" not in extra and extra.get("diary") != "window":
                assert got == EXPECTED[(character, room)], (character, room, extra)


def test_explain_counts_what_the_room_left_out_and_never_shows_it(world):
    _, client, bound, _ = world
    r = client.post(f"/api/v1/owners/{A}/retrieve", headers=auth(bound["kai"]),
                    json={"query": "violin", "explain": True, "limit": 50, **ROOMS["g1"]})
    body = r.get_json()
    assert body["excluded"] == {"direct_chat": 2}  # the secret (Kai's layer) and the fact (the shared layer)
    assert not markers(body) & {DM_SECRET, DM_FACT}
    mira = client.post(f"/api/v1/owners/{A}/retrieve", headers=auth(bound["mira"]),
                       json={"query": "violin", "explain": True, "limit": 50}).get_json()
    assert mira["excluded"] == {"not_present": 2}  # the shared fact and the shared G1 event: Mira was not there
    plain = client.post(f"/api/v1/owners/{A}/retrieve", headers=auth(ADMIN), json={"query": "violin"}).get_json()
    assert "excluded" not in plain


def test_the_person_may_allow_direct_chat_memories_in_front_of_others(world):
    app, client, bound, _ = world
    ask = {"query": "violin", "limit": 50, **ROOMS["g1"]}
    assert DM_SECRET not in found(client.post(f"/api/v1/owners/{A}/retrieve", headers=auth(bound["kai"]),
                                              json=ask).get_json())
    assert client.put(f"/api/v1/owners/{A}/settings", headers=auth(ADMIN),
                      json={"dm_with_others": True}).status_code == 200
    try:
        got = found(client.post(f"/api/v1/owners/{A}/retrieve", headers=auth(bound["kai"]), json=ask).get_json())
        assert {DM_SECRET, DM_FACT} <= got
        mira = client.post(f"/api/v1/owners/{A}/retrieve", headers=auth(bound["mira"]), json=ask).get_json()
        assert not found(mira) & {DM_SECRET, DM_FACT}  # the setting never lets another character hear it
    finally:
        client.put(f"/api/v1/owners/{A}/settings", headers=auth(ADMIN), json={"dm_with_others": None})


@pytest.mark.parametrize("bad", [{"channel": "g 1"}, {"present": ["user:a", "not an id"]}, {"present": "x" * 10},
                                 {"present": [f"user:{n}" for n in range(65)]}, {"present": {"a": 1}},
                                 {"present": ["char:Kai"]}, {"channel": 7}])
def test_a_malformed_room_is_refused(world, bad):
    _, client, bound, _ = world
    r = client.post(f"/api/v1/owners/{A}/retrieve", headers=auth(bound["kai"]), json={"query": "violin", **bad})
    assert r.status_code in (400, 422), (bad, r.get_json())


def test_nothing_of_as_reaches_bs_folder(world):
    _, client, _, roots = world
    a_only = {DM_SECRET, DM_FACT, G1_EVENT, G1_SHARED, G2_EVENT}
    files = "".join(p.read_text(errors="replace") for p in roots[B].rglob("*") if p.is_file() and ".git" not in p.parts)
    log = subprocess.run(["git", "-C", str(roots[B]), "log", "-p", "--all"], capture_output=True, text=True,
                         check=True).stdout
    assert not markers(files + log) & a_only
    assert B_G1 in files
    for room in ROOMS:
        r = client.post(f"/api/v1/owners/{B}/retrieve", headers=auth(ADMIN),
                        json={"query": "violin", "limit": 50, "character": "kai", **ROOMS[room]})
        assert not found(r.get_json()) & a_only


def test_the_client_and_the_mcp_tool_follow_the_same_rules(world):
    pytest.importorskip("mcp")
    from test_mcp import Served, call
    from werkzeug.serving import make_server

    from wikimem.client import Client

    app, _, bound, _ = world
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_port}"
    try:
        served = Served(f"{base}/mcp", app, {}, None)  # type: ignore[arg-type]
        for (character, room), expected in EXPECTED.items():
            client = Client(base, bound[character], owner=A, proxies={})
            result = client.retrieve("violin", limit=50, explain=True, **ROOMS[room])
            assert markers([e.item.content for e in result.items]) == expected, (character, room)
            got = call(served, bound[character], "retrieve", owner=A, query="violin", limit=50, **ROOMS[room])
            assert not got.is_error, got
            body = got.structured_content
            assert found(body["result"]) == expected, (character, room)
            assert markers(body["prompt"]) == expected, (character, room)
    finally:
        srv.shutdown()
        app.extensions["wikimem.mcp"].close()
