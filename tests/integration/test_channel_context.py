"""Issue 34, point 3 (a channel's context in one call): POST /api/v1/channels/<channel>/context through the real app
(Flask test client, real repositories, memories written by the fake chat model through memorize and the group turn).
Every present person's folder is asked with the same room rules, under one limit and one budget, each item naming
whose folder it came from; A's direct-chat secret never reaches a context with B present; a character that was not
there recalls nothing of the group; persons outside the token's prefixes are refused, unknown ones reported."""

from __future__ import annotations

import json

import pytest
from apiworld import ADMIN, auth
from group_app import group_app

ANN, BOB, ZED = "user:ann", "user:bob", "user:zed"
SECRET = "Ann confided that she is secretly afraid of dogs."
G1 = ["Ann brought her dog Rex to the park meetup.", "Ann said Rex learned a new dog trick."]
G1_BOB = ["Bob said his dog chews shoes.", "Bob asked about a dog trainer."]
URL = "/api/v1/channels/g1/context"


@pytest.fixture
def room(tmp_path, llm):
    """Characters kai and mira; persons ann and bob; a direct chat ann–kai (the secret) and a group turn in g1 (ann,
    bob, kai) with two events each; tokens ``reader`` (every owner), ``ann-only`` (prefix user:ann) and ``kai-bot``
    (bound to kai)."""
    client, secrets = group_app(tmp_path, llm, {"reader": ("", None), "ann-only": (ANN, None),
                                                 "kai-bot": ("", "kai")})
    llm.reply_fn = lambda messages: json.dumps({"diary": [{"content": SECRET}]})
    r = client.post(f"/api/v1/owners/{ANN}/memorize", headers=auth(ADMIN),
                    json={"turn": "ann: promise you keep it: I'm afraid of dogs", "character": "kai",
                          "channel": "dm", "present": [ANN, "char:kai"]})
    assert r.status_code == 200 and r.get_json()["entries"], r.get_json()
    diary = [{"person": ANN, "content": c} for c in G1] + [{"person": BOB, "content": c} for c in G1_BOB]
    llm.reply_fn = lambda messages: json.dumps({"diary": diary})
    r = client.post("/api/v1/channels/g1/memorize", headers=auth(ADMIN), json={"character": "kai", "messages": [
        {"speaker": ANN, "content": "Rex learned a new trick!"}, {"speaker": BOB, "content": "Mine chews shoes."}]})
    assert r.status_code == 200 and all(p["commit"] for p in r.get_json()["persons"]), r.get_json()
    return client, secrets


def context(client, body: dict, token: str = ADMIN, url: str = URL):
    r = client.post(url, headers=auth(token), json=body)
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def texts(body: dict) -> list[tuple[str | None, str]]:
    return [(i["person"], i["item"]["content"]) for i in body["items"]]


def test_a_group_context_reads_every_present_persons_folder_and_says_whose(room):
    client, _ = room
    body = context(client, {"present": [ANN, BOB, "char:kai"], "character": "kai", "query": "dog", "limit": 20})
    assert sorted(texts(body)) == sorted([(ANN, c) for c in G1] + [(BOB, c) for c in G1_BOB])
    assert all(i["item"]["channel"] == "g1" and i["layer"] == "character" for i in body["items"])
    assert body["unknown"] == [] and body["character"] == "kai"


def test_the_direct_chat_secret_never_reaches_a_group_with_b_present(room):
    client, _ = room
    for query in ("afraid of dogs secretly", None):
        body = context(client, {"present": [ANN, BOB, "char:kai"], "character": "kai", "query": query,
                                "limit": 50, "explain": True})
        assert SECRET not in json.dumps(body), body
        if query is not None:
            assert body["excluded"] == {"direct_chat": 1}, body  # counted, never shown
    # With Ann alone in the room, Kai recalls it.
    alone = context(client, {"present": [ANN, "char:kai"], "character": "kai", "query": "afraid of dogs secretly"})
    assert (ANN, SECRET) in texts(alone)


def test_a_character_that_was_not_there_recalls_nothing_of_the_group(room, llm):
    client, _ = room
    g2 = "Ann showed Mira a photo of her dog Rex."
    llm.reply_fn = lambda messages: json.dumps({"diary": [{"person": ANN, "content": g2}]})
    r = client.post("/api/v1/channels/g2/memorize", headers=auth(ADMIN), json={"character": "mira", "messages": [
        {"speaker": ANN, "content": "Look, Rex!"}]})
    assert r.status_code == 200, r.get_json()
    body = context(client, {"present": [ANN, BOB, "char:mira"], "character": "mira", "query": "dog", "limit": 50})
    assert texts(body) == [(ANN, g2)], body  # what Mira was at; nothing of g1 (Kai's), nothing of the direct chat


def test_without_a_query_the_channels_recent_events_newest_first(room):
    client, _ = room
    body = context(client, {"present": [ANN, BOB, "char:kai"], "character": "kai"})
    assert sorted(texts(body)) == sorted([(ANN, c) for c in G1] + [(BOB, c) for c in G1_BOB])
    stamps = [(i["item"]["date"], i["item"]["time"]) for i in body["items"]]
    assert stamps == sorted(stamps, reverse=True)
    # Another channel's context holds none of g1's events.
    assert context(client, {"present": [ANN, BOB, "char:kai"], "character": "kai"},
                   url="/api/v1/channels/g2/context")["items"] == []


@pytest.mark.parametrize("query", ["dog", None])
def test_one_limit_and_one_budget_over_all_the_persons(room, query):
    client, _ = room
    body = {"present": [ANN, BOB, "char:kai"], "character": "kai", "query": query}
    everything = context(client, {**body, "limit": 50})["items"]
    assert {i["person"] for i in everything} == {ANN, BOB}
    assert len(context(client, {**body, "limit": 1})["items"]) == 1  # one limit, not one per person
    first, second = everything[0]["tokens_est"], everything[1]["tokens_est"]
    cut = context(client, {**body, "limit": 50, "budget_tokens": first + second, "explain": True})
    assert cut["budget_used"] <= first + second and len(cut["items"]) == 2
    assert texts(cut) == texts({"items": everything[:2]}) and len(cut["dropped"]) == len(everything) - 2


def test_persons_outside_the_tokens_prefixes_are_refused_and_unknown_ones_reported(room):
    client, secrets = room
    r = client.post(URL, headers=auth(secrets["ann-only"]),
                    json={"present": [ANN, BOB, "char:kai"], "character": "kai", "query": "dog"})
    assert r.status_code == 403, r.get_json()
    alone = context(client, {"present": [ANN, "char:kai"], "character": "kai", "query": "dog"}, secrets["ann-only"])
    assert {p for p, _ in texts(alone)} == {ANN}
    body = context(client, {"present": [ANN, ZED, "char:kai"], "character": "kai", "query": "dog"},
                   secrets["reader"])
    assert body["unknown"] == [ZED] and {p for p, _ in texts(body)} == {ANN}


def test_a_token_bound_to_a_character_recalls_as_it_and_never_as_another(room):
    client, secrets = room
    body = context(client, {"present": [ANN, BOB, "char:kai"], "query": "dog", "limit": 50}, secrets["kai-bot"])
    assert body["character"] == "kai" and len(body["items"]) == 4
    r = client.post(URL, headers=auth(secrets["kai-bot"]), json={"present": [ANN], "character": "mira"})
    assert r.status_code == 403, r.get_json()


@pytest.mark.parametrize("url, body, status, words", [
    ("/api/v1/channels/.bad/context", {"present": [ANN]}, 422, "channel id"),
    (URL, {"character": "kai"}, 400, "present"),
    (URL, {"present": "user:ann"}, 400, "present"),
    (URL, {"present": ["-rf"]}, 422, "id"),
    (URL, {"present": [ANN], "character": "nobody"}, 404, "register"),
    (URL, {"present": [ANN], "limit": 0}, 422, "limit"),
    (URL, {"present": [ANN], "days": 0}, 422, "days"),
    (URL, {"present": [ANN], "query": "x" * 5000}, 413, "query"),
    (URL, {"present": [ANN], "nope": 1}, 400, "unknown field"),
])
def test_a_bad_request_is_refused(room, url, body, status, words):
    client, _ = room
    r = client.post(url, headers=auth(ADMIN), json=body)
    assert r.status_code == status, r.get_json()
    assert words in r.get_json()["error"]["message"], r.get_json()


def test_the_client_memorizes_a_group_turn_and_asks_for_the_context(room, llm):
    """The Python client against the app served on 127.0.0.1: a group turn as a background job, then the context."""
    import threading

    from werkzeug.serving import make_server

    from wikimem.client import Client, ForbiddenError

    client, secrets = room
    srv = make_server("127.0.0.1", 0, client.application, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        api = Client(f"http://127.0.0.1:{srv.server_port}", token=ADMIN)
        llm.reply_fn = lambda messages: json.dumps({"diary": [{"person": BOB, "content": "Bob's dog won a prize."}]})
        job = api.channel_memorize("g1", [(BOB, "Rex? Mine won a prize!"), ("char:kai", "Wow")], character="kai",
                                   background=True)
        done = api.wait_job(job["id"], timeout=30)
        assert done["state"] == "done", done
        body = api.channel_context("g1", [ANN, BOB, "char:kai"], character="kai", query="dog prize", limit=2)
        assert len(body["items"]) == 2 and body["items"][0]["person"] == BOB
        assert body["items"][0]["item"]["content"] == "Bob's dog won a prize."
        with pytest.raises(ForbiddenError):
            Client(api.base_url, token=secrets["ann-only"]).channel_context("g1", [ANN, BOB], character="kai")
    finally:
        srv.shutdown()
