"""Time questions through the API, right after the writes (issues 23, 35).

With the production default (no embedder), with ``make run``'s default
(the bundled local model, embedding in the background) and with an
embeddings endpoint (a stand-in on 127.0.0.1): every question is asked as
soon as the writes are acknowledged — nothing waits for embedding. The
calendar of the words (昨天, 周末, "the last 3 days") is the request's
``tz``, else the owner's, else the host's ``WIKIMEM_TZ``: each is tried with
a zone a day or two away from the others.
"""

from __future__ import annotations

import json

import pytest
from apiworld import ADMIN, OWNER, auth
from fakes import FakeOpenAI
from timequestions import TZ, WIKI, check_answers, diary_entries, questions, today

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


def _write(client, zone: str = TZ) -> list:
    for file, name, content in WIKI:
        assert client.put(f"{O}/items/{file}/{name}", headers=auth(ADMIN), json={"content": content}).status_code \
            in (200, 201)
    entries = diary_entries(today(zone))
    for day, hhmm, content in entries:
        r = client.post(O + "/diary", headers=auth(ADMIN), json={"content": content, "date": day, "time": hhmm})
        assert r.status_code == 201
    return entries


FAR_EAST, FAR_WEST = "Pacific/Kiritimati", "Etc/GMT+12"  # UTC+14 and UTC−12: never the same date

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
    # The owner lives where the date is never behind TZ's (the host refuses a day after the owner's today, and
    # UTC's is behind TZ's eight hours a day); the requests' tz, TZ, draws the windows.
    assert client.put(O + "/settings", headers=auth(ADMIN), json={"tz": FAR_EAST}).status_code == 200
    day = today()
    entries = _write(client)
    answers = {}
    for question, _ in questions(day):
        r = client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": question, "tz": TZ})
        assert r.status_code == 200
        answers[question] = r.get_json()
    check_answers(answers, entries, day)


@pytest.mark.parametrize("source", ["owner", "host"])
def test_time_questions_follow_the_owner_s_zone_else_the_host_s(tmp_path, source):
    """No ``tz`` in the requests: the owner's setting, else WIKIMEM_TZ (the other one set a day away)."""
    zone = FAR_EAST if source == "owner" else FAR_WEST
    client = _app(tmp_path, TZ=FAR_WEST if source == "owner" else zone)
    if source == "owner":
        assert client.put(O + "/settings", headers=auth(ADMIN), json={"tz": zone}).status_code == 200
    day = today(zone)
    entries = _write(client, zone)
    answers = {q: client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": q}).get_json()
               for q, _ in questions(day)}
    check_answers(answers, entries, day, zone)


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
