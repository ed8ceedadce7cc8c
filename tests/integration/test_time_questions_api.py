"""Time questions through the API, right after the writes (issue 23).

With the production default (no embedder), with ``make run``'s default
(the bundled local model, embedding in the background) and with an
embeddings endpoint (a stand-in on 127.0.0.1): every question is asked as
soon as the writes are acknowledged — nothing waits for embedding.
"""

from __future__ import annotations

import json

import pytest
from apiworld import ADMIN, OWNER, auth
from fakes import FakeOpenAI
from timequestions import QUESTIONS, TZ, WIKI, check_answers, diary_entries, today

from webapp import create_app

O = f"/api/v1/owners/{OWNER}"


@pytest.fixture(scope="module")
def fake():
    with FakeOpenAI() as server:
        yield server


def _app(tmp_path, **config):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN, **config})
    client = app.test_client()
    assert client.put(O, headers=auth(ADMIN)).status_code in (200, 201)
    return client


def _write(client) -> list:
    for file, name, content in WIKI:
        assert client.put(f"{O}/items/{file}/{name}", headers=auth(ADMIN), json={"content": content}).status_code \
            in (200, 201)
    entries = diary_entries(today())
    for day, hhmm, content in entries:
        r = client.post(O + "/diary", headers=auth(ADMIN), json={"content": content, "date": day, "time": hhmm})
        assert r.status_code == 201
    return entries


CONFIGS = {
    "production default": {},
    "make run (local model)": {"EMBEDDER": "local"},
    "endpoint": "fake",
    "endpoint, background": "fake background",
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_time_questions_through_the_api_right_after_the_writes(tmp_path, fake, name):
    config = CONFIGS[name]
    if isinstance(config, str):
        config = {"EMBED_URL": fake.url, "EMBED_MODEL": "fake-embed",
                  "EMBED_BACKGROUND": config.endswith("background")}
    client = _app(tmp_path, **config)
    day = today()
    entries = _write(client)
    answers = {}
    for question, _ in QUESTIONS:
        r = client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": question, "tz": TZ})
        assert r.status_code == 200
        answers[question] = r.get_json()
    check_answers(answers, entries, day)


def test_a_memorized_event_is_found_by_the_day_it_happened(tmp_path, fake):
    """The issue's walk: memorize files "上周三去了海边" on that Wednesday; "上周三去哪了" finds it."""
    fake.reply_fn = lambda messages: json.dumps([{"content": "上周三和朋友去了海边，捡了贝壳。"}], ensure_ascii=False)
    try:
        client = _app(tmp_path, LLM_URL=fake.url, LLM_MODEL="fake-chat")
        r = client.post(O + "/memorize", headers=auth(ADMIN),
                        json={"turn": "user: 上周三我们去海边了，好开心", "tz": TZ})
        assert r.status_code == 200, r.get_json()
        for question in ("上周三去哪了", "上周三做了什么"):
            body = client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": question, "tz": TZ}).get_json()
            assert [e["item"]["content"] for e in body["items"]] == ["上周三和朋友去了海边，捡了贝壳。"], question
    finally:
        fake.reply_fn = None
