"""Retrieve's second-wave options through the API.

Diary recall by topic, transcripts, the strict budget, vector counts.
"""

from __future__ import annotations

import pytest
from apiworld import ADMIN, OWNER, auth
from fakes import FakeOpenAI

from webapp import create_app

O = f"/api/v1/owners/{OWNER}"


def _diary(client, content: str, date: str = "2026-07-01") -> None:
    r = client.post(O + "/diary", headers=auth(ADMIN), json={"content": content, "date": date, "time": "10:00"})
    assert r.status_code == 201


def test_diary_all_finds_an_event_by_topic_that_window_mode_never_sees(world):
    _diary(world.client, "She started learning to surf at the beach.")
    body = {"query": "surf", "diary": "window"}
    window = world.client.post(O + "/retrieve", headers=auth(ADMIN), json=body).get_json()
    assert window["items"] == []  # the seed's behaviour: no time phrase, no diary
    # the host's default is "all" (bench/quality_diary.py): "remember the surfing?" finds the day
    found = world.client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": "surf"}).get_json()
    assert [e["item"]["file"] for e in found["items"]] == ["2026-07-01"] and found["diary"] == "all"


def test_the_host_default_diary_mode_comes_from_the_environment(tmp_path):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path), "ADMIN_TOKEN": ADMIN, "DIARY_RECALL": "window"})
    client = app.test_client()
    client.put(O, headers=auth(ADMIN))
    _diary(client, "学会了冲浪，很开心。")
    window = client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": "冲浪"}).get_json()
    assert window["items"] == []
    found = client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": "冲浪", "diary": "all"}).get_json()
    assert [e["item"]["content"] for e in found["items"]] == ["学会了冲浪，很开心。"]


def test_remember_the_hotpot_without_a_time_word(world):
    """The issue's companion question: {"query": "火锅"} finds the hotpot evening in the diary."""
    world.client.put(O + "/items/preferences/food", headers=auth(ADMIN), json={"content": "不吃香菜。"})
    _diary(world.client, "晚上一起去吃了火锅，辣得直冒汗。", date="2026-06-12")
    found = world.client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": "还记得那次火锅吗"}).get_json()
    assert found["items"][0]["item"]["file"] == "2026-06-12" and found["items"][0]["kind"] == "diary"


def test_a_transcript_is_the_query_of_its_user_turns(world):
    world.client.put(O + "/items/preferences/tea", headers=auth(ADMIN), json={"content": "Drinks oolong tea."})
    world.client.put(O + "/items/preferences/sea", headers=auth(ADMIN), json={"content": "Loves the sea."})
    messages = [{"role": "user", "content": "what about the sea?"}, {"role": "assistant", "content": "tea?"},
                {"role": "user", "content": "which tea do I drink"}]
    r = world.client.post(O + "/retrieve", headers=auth(ADMIN), json={"messages": messages, "messages_last": 1})
    assert [e["item"]["name"] for e in r.get_json()["items"]] == ["tea"]
    both = world.client.post(O + "/retrieve", headers=auth(ADMIN), json={"messages": messages}).get_json()
    assert {e["item"]["name"] for e in both["items"]} == {"tea", "sea"}


@pytest.mark.parametrize("body", [{}, {"query": "x", "messages": [{"role": "user", "content": "x"}]},
                                  {"messages": "not a list"}, {"messages": [{"content": "no role"}]}])
def test_query_xor_messages(world, body):
    r = world.client.post(O + "/retrieve", headers=auth(ADMIN), json=body)
    assert r.status_code in (400, 422) and r.get_json()["error"]["message"]


def test_the_first_entry_survives_a_small_budget_unless_the_budget_is_strict(world):
    world.client.put(O + "/items/notes/long", headers=auth(ADMIN), json={"content": "sea " * 50})
    loose = world.client.post(O + "/retrieve", headers=auth(ADMIN), json={"query": "sea", "budget_tokens": 1})
    assert len(loose.get_json()["items"]) == 1 and loose.get_json()["budget_used"] > 1
    strict = world.client.post(O + "/retrieve", headers=auth(ADMIN),
                               json={"query": "sea", "budget_tokens": 1, "budget_strict": True, "explain": True})
    body = strict.get_json()
    assert body["items"] == [] and body["budget_used"] == 0 and len(body["dropped"]) == 1


def test_owner_stats_count_vectors_only_with_an_embedder(world, tmp_path):
    assert "vectors" not in world.client.get(O, headers=auth(ADMIN)).get_json()
    with FakeOpenAI() as fake:
        app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "e"), "ADMIN_TOKEN": ADMIN,
                          "EMBED_URL": fake.url, "EMBED_MODEL": "fake-embed"})
        client = app.test_client()
        client.put(O, headers=auth(ADMIN))
        for n in range(3):
            client.put(f"{O}/items/notes/n{n}", headers=auth(ADMIN), json={"content": f"note {n}"})
        vectors = client.get(O, headers=auth(ADMIN)).get_json()["vectors"]
        assert vectors["total"] == 3 and 0 <= vectors["embedded"] <= 3
        listed = client.get("/api/v1/owners", headers=auth(ADMIN)).get_json()["owners"][0]
        assert "vectors" not in listed  # a listing never loads every owner's index
