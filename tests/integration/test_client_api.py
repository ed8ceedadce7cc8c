"""wikimem.client against the real app on 127.0.0.1: it covers every operation of the OpenAPI document.

The app (real data root, a fake chat endpoint for memorize) is served by
werkzeug in a thread, as ``tests/unit/test_client.py`` serves its scripted
server; a ``before_request`` hook records the route every request reached, so
each client method is checked against the operation it claims to call, not
just against a name.
"""

from __future__ import annotations

import io
import json
import re
import secrets
import threading
import zipfile
from types import SimpleNamespace

import pytest
from fakes import FakeOpenAI
from flask import request
from werkzeug.serving import make_server

from webapp import create_app
from webapp.openapi import document
from wikimem.client import Client, ConflictError, NotFoundError, Page, PreconditionFailedError
from wikimem.models import DiaryItem, RecallItem
from wikimem.recall import RetrievalResult

TOKEN = "test-admin-" + secrets.token_hex(8)
_VERBS = {"get", "put", "post", "delete", "patch"}

# The operations whose Client method has another name; None: no Client method, and why.
CLIENT_NAMES: dict[str, str | None] = {
    "healthz": "health",
    "readyz": "ready",
    "get_item": "fetch",  # and Client.get, the item alone
    "put_item": "add",  # the library's names for an item's writes
    "delete_item": "remove",
    "peer_revoked": None,  # host to host: a logout notice signed with the cluster's secret key, no bot sends it
}


_CARD = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
    "name": "Kai", "description": "A barista who surfs.", "personality": "", "character_book": {
        "extensions": {}, "entries": [{"keys": ["oat milk"], "content": "Keeps oat milk.", "extensions": {},
                                       "enabled": True, "insertion_order": 1}]}}}
_CHAT = "\n".join(json.dumps(line) for line in (
    {"user_name": "Ann", "character_name": "Kai"},
    {"name": "Ann", "is_user": True, "mes": "I switched to oat milk", "send_date": "2026-07-20T09:00:00Z"},
    {"name": "Kai", "is_user": False, "mes": "Noted!", "send_date": "2026-07-20T09:01:00Z"}))


def _template(rule: str) -> str:
    return re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule)


def operations() -> dict[str, tuple[str, str]]:
    """operationId → (METHOD, URL path template) of the document (the path item's server joined to the path)."""
    doc = document()
    out = {}
    for path, item in doc["paths"].items():
        server = (item.get("servers") or doc["servers"])[0]["url"].rstrip("/")
        for verb, op in item.items():
            if verb in _VERBS:
                out[op["operationId"]] = (verb.upper(), server + path)
    return out


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = tmp_path_factory.mktemp("client")
    llm = FakeOpenAI().start()
    # The model keeps the user's words: "user: X" → one diary entry "X".
    llm.reply_fn = lambda messages: json.dumps([{"content": messages[-1]["content"].split(": ", 1)[-1]}])
    app = create_app({"TESTING": True, "DATA_ROOT": str(root / "data"), "ADMIN_TOKEN": TOKEN,
                      "LLM_URL": llm.url, "LLM_MODEL": "fake-chat"})
    hits: list[tuple[str, str | None]] = []

    @app.before_request
    def record():
        hits.append((request.method, _template(request.url_rule.rule) if request.url_rule else None))

    srv = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{srv.server_port}"
    yield SimpleNamespace(base=base, app=app, hits=hits, llm=llm)
    srv.shutdown()
    llm.stop()


def client_for(live, owner: str) -> Client:
    return Client(live.base, TOKEN, owner=owner, timeout=30.0, retries=1, backoff=0.05, proxies={})


def test_every_operation_of_the_document_has_a_client_method():
    ops = operations()
    assert {k for k, v in CLIENT_NAMES.items() if v is None} == {"peer_revoked"}
    assert set(CLIENT_NAMES) <= set(ops), "the map names an operation the document does not have"
    missing = [op_id for op_id in ops if CLIENT_NAMES.get(op_id, op_id) is not None
               and not callable(getattr(Client, CLIENT_NAMES.get(op_id, op_id), None))]
    assert not missing, f"operations without a Client method: {missing}"


def test_each_client_method_calls_its_operation_on_the_real_app(live):
    """Every operation (but peer_revoked) called through its Client method: the route reached is the documented one."""
    ops = operations()
    c = client_for(live, "user:walk")
    state: dict = {}

    def remember(key, value):
        state[key] = value
        return value

    def cancelled_or_started(cancel) -> bool:  # the background runner may have taken the job already: 409
        try:
            return cancel()["state"] == "cancelled"
        except ConflictError:
            return True

    steps = [
        ("healthz", lambda: c.health() is True),
        ("readyz", lambda: {k: v for k, v in c.ready().items() if k != "details"}
         == {"ready": True, "remote": "none", "disk": "ok"}),
        ("version", lambda: c.version()["api"] == 1),
        ("openapi", lambda: c.openapi()["paths"]["/runs"]["get"]["operationId"] == "runs"),
        ("replication", lambda: c.replication()["mode"] == "none"),
        ("create_owner", lambda: c.create_owner()["created"] is True),
        ("set_settings", lambda: c.set_settings(tz="Asia/Shanghai").value["tz"] == "Asia/Shanghai"),
        ("settings", lambda: c.settings() == {"tz": "Asia/Shanghai", "character": None, "dm_with_others": None}),
        ("put_item", lambda: c.add("preferences", "likes-the-sea", "Likes the sea; see [[people:mia]].",
                                   run="run_1", actor="Elaina", source_conv="conv_101").commit),
        ("get_item", lambda: remember("etag", c.fetch("preferences", "likes-the-sea").etag)),
        ("items", lambda: [i.name for i in c.items()] == ["likes-the-sea"]),
        ("files", lambda: c.files() == ["preferences"]),
        ("diary_append", lambda: c.diary_append("Went to the beach with [[people:mia]].", date="2026-07-21",
                                                time="14:30", run="run_1", actor="Elaina").commit),
        ("diary_tool", lambda: c.diary_tool({"content": "Saw the sunset."}, date="2026-07-21", time="19:00",
                                            run="run_1").value.content == "Saw the sunset."),
        ("diary_dates", lambda: c.diary_dates() == ["2026-07-21"]),
        ("diary_day", lambda: [e.time for e in c.diary_day("2026-07-21")] == ["14:30", "19:00"]),
        ("diary_window", lambda: len(c.diary_window("2026-07-20", "2026-07-22")) == 2),
        ("batch", lambda: remember("batch", c.batch([{"op": "add", "file": "people", "name": "mia",
                                                      "content": "A friend who surfs."}], run="run_2"))["commit"]),
        ("retrieve", lambda: isinstance(c.retrieve("the sea"), RetrievalResult)),
        ("memorize", lambda: [e.content for e in c.memorize("user: I started learning to surf", run="run_3").entries]
         == ["I started learning to surf"]),
        ("memorize", lambda: remember("job", c.memorize_async("user: a surf lesson"))["state"] == "queued"),
        ("job", lambda: c.job(state["job"]["id"])["kind"] == "memorize"),
        ("jobs", lambda: state["job"]["id"] in [j["id"] for j in c.jobs(kind="memorize").entries]),
        ("cancel_job", lambda: cancelled_or_started(lambda: c.cancel_job(state["job"]["id"]))),
        ("owner_stats", lambda: c.owner_stats()["items"] == 2),
        ("owners", lambda: "user:walk" in [o["id"] for o in c.owners(prefix="user:walk").entries]),
        ("history", lambda: remember("history", c.history(limit=100)).entries[0]["id"]),
        ("commit", lambda: [ch["name"] for ch in remember("commit", c.commit(state["batch"]["commit"]))["changes"]]
         == ["mia"]),
        ("diff", lambda: [ch["name"] for ch in c.diff(state["commit"]["entry"]["parents"][0],
                                                      state["batch"]["commit"])["changes"]] == ["mia"]),
        ("revert", lambda: c.revert(state["batch"]["commit"])),
        ("rollback", lambda: c.rollback("run_3")),
        ("restore", lambda: c.restore(state["batch"]["commit"])),
        ("runs", lambda: {r["run"] for r in c.runs(owner_prefix="user:walk", limit=100).entries}
         >= {"run_1", "run_2", "run_3"}),
        ("bulk_rollback", lambda: c.wait_job(c.bulk_rollback(run="run_1", owner_prefix="user:walk"),
                                             timeout=60, poll=0.05)["state"] == "done"),
        ("diary_append", lambda: c.diary_append("A staged entry.", date="2026-07-22", time="09:00", run="run_s1",
                                                staged=True).commit),
        ("owner_staged", lambda: [r["run"] for r in c.owner_staged()] == ["run_s1"]),
        ("staged_review", lambda: len(c.staged_review("run_s1")["staged"]) == 1),
        ("staged_runs", lambda: c.staged_runs(owner_prefix="user:walk")["waiting"]["runs"] == 1),
        ("staged_run", lambda: c.staged_run("run_s1")[0]["owner"] == "user:walk"),
        ("hold_staged_run", lambda: c.hold_staged_run("run_s1")["owners"] == 1),
        ("approve_staged_run", lambda: c.approve_staged_run("run_s1", preview=True)["total"]["owners"] == 1),
        ("approve_staged", lambda: c.approve_staged("run_s1")["commit"]),
        ("diary_append", lambda: c.diary_append("Staged, then discarded.", date="2026-07-22", time="10:00",
                                                run="run_s2", staged=True).commit),
        ("discard_staged", lambda: c.discard_staged("run_s2")["commit"]),
        ("diary_append", lambda: c.diary_append("Staged, discarded by a job.", date="2026-07-22", time="11:00",
                                                run="run_s3", staged=True).commit),
        ("discard_staged_run", lambda: c.wait_job(c.discard_staged_run("run_s3"), timeout=60,
                                                  poll=0.05)["state"] == "done"),
        ("export", lambda: zipfile.ZipFile(io.BytesIO(c.export())).namelist() != []),
        ("export", lambda: remember("bundle", c.export(format="bundle")).startswith(b"# v2 git bundle")),
        ("import_card", lambda: c.import_card(_CARD)["created"] is True),
        ("character_card", lambda: c.character_card("kai") == _CARD),
        ("import_chat", lambda: remember("chat", c.import_chat(_CHAT, "kai"))["job"]["kind"] == "import-chat"),
        ("job", lambda: c.wait_job(state["chat"]["job"], timeout=60, poll=0.05)["state"] == "done"),
        ("lorebook", lambda: "I switched to oat milk" in c.lorebook("kai", format="databank")),
        ("import_rollback", lambda: c.import_rollback(state["chat"]["run"])["commit"]),
        ("import_person", lambda: c.import_person(state["bundle"], owner="user:walk-copy")["replaced"] is False),
        ("forget", lambda: c.wait_job(c.forget("preferences", "likes-the-sea"), timeout=60,
                                      poll=0.05)["state"] == "done"),
        ("delete_item", lambda: c.remove("people", "mia").value is True),  # back by the restore
        ("delete_owner", lambda: c.delete_owner() is None),
        ("erase_owner", lambda: c.wait_job(c.erase_owner(), timeout=60, poll=0.05)["state"] == "done"),
        ("erasure", lambda: c.erasure()["kind"] == "erase-owner"),
        ("put_character", lambda: c.put_character("kai", "Kai", persona="A barista.").commit),
        ("characters", lambda: [ch["id"] for ch in c.characters()] == ["kai"]),
        ("character", lambda: c.character("kai")["persona"] == "A barista."),
        ("delete_character", lambda: c.delete_character("kai").value["deleted"] is True),
    ]
    called = set()
    for op_id, call in steps:
        del live.hits[:]
        assert call(), op_id
        assert live.hits and live.hits[0] == ops[op_id], (op_id, live.hits, ops[op_id])
        called.add(op_id)
    assert called == {op_id for op_id in ops if CLIENT_NAMES.get(op_id, op_id) is not None}


# -- the new parts of the client, on the real app ------------------------------------------------

def test_retrieve_takes_every_field_the_api_accepts(live):
    c = client_for(live, "user:recall")
    c.create_owner()
    c.add("preferences", "likes-the-sea", "Likes the sea and long walks on the beach.")
    c.diary_append("Went to the beach with Mia.", date="2026-07-21", time="14:30")
    chat = [{"role": "user", "content": "shall we go to the beach?"}, {"role": "assistant", "content": "yes!"},
            {"role": "user", "content": "what about the beach?"}]
    result = c.retrieve(messages=chat, messages_last=1, diary="all", recency_half_life=30.0, explain=True)
    assert result.diary == "all" and result.query_terms == ["beach"]
    assert {i.kind for i in result.items} == {"wiki", "diary"}
    windowed = c.retrieve("beach", diary="window")
    assert windowed.diary == "window" and {i.kind for i in windowed.items} == {"wiki"}
    # budget_strict: nothing over the budget, not even the first entry.
    assert c.retrieve("beach", budget_tokens=1).items != []
    assert c.retrieve("beach", budget_tokens=1, budget_strict=True).items == []
    head = c.owner_stats()["head"]
    c.add("preferences", "likes-tea", "Likes green tea.")
    assert c.retrieve("tea").items and not c.retrieve("tea", as_of=head).items
    with pytest.raises(ValueError):
        c.retrieve("beach", messages=chat)
    with pytest.raises(ValueError):
        c.retrieve()


def test_history_filters_and_pages(live):
    c = client_for(live, "user:hist")
    c.create_owner()
    c.add("preferences", "sea", "Likes the sea.", actor="Elaina", run="run_a")
    c.diary_append("Went swimming.", date="2026-07-21", time="10:00", actor="Elaina", run="run_a")
    c.diary_append("Went running.", date="2026-07-22", time="10:00", actor="bot-b", run="run_b")
    by_actor = c.history(actor="Elaina")
    assert isinstance(by_actor, Page) and {e["actor"] for e in by_actor.entries} == {"Elaina"}
    assert len(by_actor.entries) == 2
    assert [e["run"] for e in c.history(action="diary", actor="Elaina").entries] == ["run_a"]
    everything = c.history()
    times = sorted(e["time"] for e in everything.entries)
    assert len(c.history(since=times[0], until=times[-1]).entries) == len(everything.entries)
    assert c.history(until="2000-01-01").entries == []
    first = c.history(limit=2)
    assert len(first.entries) == 2 and first.next
    older = c.history(limit=2, cursor=first.next)
    assert older.entries and older.entries[0]["id"] not in {e["id"] for e in first.entries}
    assert older.prev and c.history(limit=2, after=older.prev).entries == first.entries
    assert "reverted_by" in first.extra
    c.rollback("run_b")
    undone = c.history(run="run_b")
    assert undone.extra["reverted_by"]  # the run's commit → the rollback that undid it


def test_runs_search_and_bulk_rollback(live):
    a, b = client_for(live, "user:bulk-a"), client_for(live, "user:bulk-b")
    for c in (a, b):
        c.create_owner()
        c.add("preferences", "ok", "A good memory.", actor="good-bot", run=f"good-{c.owner}")
        c.add("preferences", "spam", "Buy now!", actor="spam-bot", run=f"spam-{c.owner}")
    runs = a.runs(actor="spam-bot", owner_prefix="user:bulk-")
    assert {(r["owner"], r["run"]) for r in runs.entries} == {("user:bulk-a", "spam-user:bulk-a"),
                                                              ("user:bulk-b", "spam-user:bulk-b")}
    assert runs.extra["total"]["runs"] == 2 and runs.extra["complete"] is True
    per_owner = a.runs(actor="spam-bot", owner_prefix="user:bulk-", by="owner")
    assert [o["owner"] for o in per_owner.entries] == ["user:bulk-a", "user:bulk-b"]
    paged = a.runs(owner_prefix="user:bulk-", limit=1)
    assert len(paged.entries) == 1 and paged.next
    assert a.runs(owner_prefix="user:bulk-", limit=1, cursor=paged.next).entries != paged.entries

    preview = a.preview_bulk_rollback(actor="spam-bot", owner_prefix="user:bulk-", limit=1)
    assert preview["total"]["owners"] == 2 and preview["total"]["changes"] == 2
    assert [o["owner"] for o in preview["owners"]] == ["user:bulk-a"] and preview["next"]
    rest = a.preview_bulk_rollback(actor="spam-bot", owner_prefix="user:bulk-", cursor=preview["next"])
    assert [o["owner"] for o in rest["owners"]] == ["user:bulk-b"]
    assert b.get("preferences", "spam").content == "Buy now!"  # a preview writes nothing

    job = a.bulk_rollback(actor="spam-bot", owner_prefix="user:bulk-", key="bulk-spam-1")
    assert job["kind"] == "bulk-rollback" and job["state"] in ("queued", "running", "done")
    assert a.bulk_rollback(actor="spam-bot", owner_prefix="user:bulk-", key="bulk-spam-1")["id"] == job["id"]
    done = a.wait_job(job, timeout=60, poll=0.05)
    assert done["state"] == "done" and done["done"] == done["total"] == 2
    for c in (a, b):
        with pytest.raises(NotFoundError):
            c.get("preferences", "spam")
        assert c.get("preferences", "ok").content == "A good memory."
    assert {r["rolled_back_by"] is not None for r in a.runs(actor="spam-bot", owner_prefix="user:bulk-").entries} \
        == {True}


def test_jobs_settings_replication_and_probes(live):
    c = client_for(live, "user:jobs")
    c.create_owner()
    assert c.settings() == {"tz": None, "character": None, "dm_with_others": None}
    written = c.set_settings(tz="Asia/Shanghai", character="Elaina")
    assert written.commit and c.settings() == {"tz": "Asia/Shanghai", "character": "Elaina", "dm_with_others": None}
    assert c.set_settings(character=None).value == {"tz": "Asia/Shanghai", "character": None, "dm_with_others": None}
    job = c.memorize_async("user: I adopted a cat", run="run_cat")
    assert c.job(job["id"])["id"] == job["id"]
    done = c.wait_job(job["id"], timeout=60, poll=0.05)
    assert done["state"] == "done"
    assert [e.content for e in c.diary_day(done["results"][0]["result"]["entries"][0]["date"])] == ["I adopted a cat"]
    assert c.replication() == {"mode": "none"}
    assert c.health() is True and c.ready()["ready"] is True
    assert c.openapi() == document()


def test_request_takes_a_path_relative_to_the_api_or_the_prefixed_one(live):
    c = client_for(live, "user:paths")
    c.create_owner()
    c.add("preferences", "sea", "Likes the sea.")
    relative, _ = c.request("GET", "/owners/user:paths/files")
    prefixed, _ = c.request("GET", "/api/v1/owners/user:paths/files")
    assert relative == prefixed == {"files": ["preferences"]}
    assert c.request("GET", "/owners", query={"prefix": "user:paths"})[0]["owners"][0]["id"] == "user:paths"
    assert c.request("GET", "/owners?prefix=user:paths", query={"limit": 1})[0]["owners"][0]["id"] == "user:paths"
    assert c.request("GET", "/healthz")[0] == {"ok": True}
    assert c.request("GET", "/readyz")[0]["ready"] is True
    job = c.memorize_async("user: hello")
    location = f"/api/v1/jobs/{job['id']}"  # what the 202's Location header says
    assert c.request("GET", location)[0]["id"] == job["id"]
    c.wait_job(job, timeout=60, poll=0.05)
    assert c.api_url == live.base + "/api/v1"
    with pytest.raises(ValueError):
        c.request("GET", "owners")
    with pytest.raises(ValueError):
        c.request("GET", live.base + "/api/v1/version")


@pytest.mark.parametrize("spelling", ["{tag}", '"{tag}"', ' "{tag}" ', 'W/"{tag}"'])
def test_if_match_takes_the_etag_quoted_or_not(live, spelling):
    c = client_for(live, "user:etag")
    c.create_owner()
    etag = c.add("preferences", "sea", "Likes the sea.").etag
    assert etag and etag == c.fetch("preferences", "sea").etag
    written = c.add("preferences", "sea", "Loves the sea.", if_match=spelling.format(tag=etag))
    assert written.value == RecallItem("preferences", "sea", "Loves the sea.", owner="user:etag",
                                       ts=written.value.ts)
    with pytest.raises(PreconditionFailedError) as info:  # the etag it had is stale now
        c.add("preferences", "sea", "Hates the sea.", if_match=spelling.format(tag=etag))
    assert info.value.current == written.etag
    removed = c.remove("preferences", "sea", if_match=spelling.format(tag=written.etag))
    assert removed.value is True


@pytest.mark.parametrize("bad", ['"a", "b"', 'a"b', "a b", '""', "W/"])
def test_if_match_that_is_not_one_etag_is_refused_before_sending(live, bad):
    c = client_for(live, "user:etag-bad")
    del live.hits[:]
    with pytest.raises(ValueError):
        c.add("preferences", "sea", "x", if_match=bad)
    assert live.hits == []


def test_the_client_rebuilds_the_diary_mode_of_a_result(live):
    c = client_for(live, "user:mode")
    c.create_owner()
    c.diary_append("Went to the beach.", date="2026-07-21", time="14:30")
    result = c.retrieve("beach", diary="all")
    assert result.diary == "all" and isinstance(result.items[0].item, RecallItem)
    assert c.diary_day("2026-07-21")[0] == DiaryItem("2026-07-21", "14:30", "Went to the beach.", owner="user:mode",
                                                     ts=c.diary_day("2026-07-21")[0].ts)


def test_a_diary_hit_comes_back_with_its_date_and_time_and_as_prompt_text(live):
    """Issue 24 item 15: the API's diary hits name ``date`` and ``time`` as the diary routes do."""
    c = client_for(live, "user:prompt")
    c.create_owner()
    c.add("pets", "biscuit", "Our dog Biscuit, a beagle.")
    c.diary_append("Took Biscuit to the vet.", date="2026-12-03", time="20:30")
    body, _ = c.request("POST", "/owners/user:prompt/retrieve", body={"query": "Biscuit vet", "diary": "all"})
    diary = next(e["item"] for e in body["items"] if e["kind"] == "diary")
    assert (diary["date"], diary["time"]) == (diary["file"], diary["name"]) == ("2026-12-03", "20:30")
    result = c.retrieve("Biscuit vet", diary="all", budget_tokens=100)
    hit = next(e for e in result.items if e.kind == "diary")
    assert (hit.date, hit.time) == ("2026-12-03", "20:30")
    text = result.to_prompt(heading="Memories:")
    assert "- [diary 2026-12-03 20:30] Took Biscuit to the vet." in text.splitlines()
    assert "- [pets/biscuit] Our dog Biscuit, a beagle." in text.splitlines()


def test_a_conflicting_rollback_raises_with_its_conflicts(live):
    c = client_for(live, "user:conflict")
    c.create_owner()
    c.add("preferences", "sea", "Likes the sea.", run="run_x")
    c.add("preferences", "sea", "Loves the sea.", run="run_y")
    with pytest.raises(ConflictError) as info:
        c.rollback("run_x")
    assert info.value.conflicts


def test_diary_entries_carry_their_room_both_ways(live):
    """Issue 34: ``channel`` and ``present`` go out with a diary write and come back on every entry the client reads
    (the write's answer, a day, a window, the diary tool, a retrieval hit), and history filters by channel."""
    from wikimem.client import InvalidNameError

    c = client_for(live, "user:room")
    c.create_owner()
    said = c.diary_append("Bob told a joke in the group.", date="2026-03-01", time="20:00", channel="g1",
                          present=("user:room", "user:bob", "char:kai"))
    assert (said.value.channel, said.value.present) == ("g1", ("user:room", "user:bob", "char:kai"))
    tool = c.diary_tool({"content": "Kai listened."}, date="2026-03-01", time="21:00", channel="dm",
                        present="user:room,char:kai")
    assert (tool.value.channel, tool.value.present) == ("dm", ("user:room", "char:kai"))
    assert c.diary_day("2026-03-01") == [said.value, tool.value]
    assert c.diary_window("2026-03-01", "2026-03-01") == [said.value, tool.value]
    hit = next(h for h in c.retrieve("joke group", diary="all").items if h.kind == "diary")
    assert (hit.item.channel, hit.item.present) == ("g1", ("user:room", "user:bob", "char:kai"))
    assert [e["id"] for e in c.history(channel="dm").entries] == [tool.commit]
    with pytest.raises(InvalidNameError) as info:
        c.diary_append("x", present=["user:room", "not ok"])
    assert "invalid id in present" in str(info.value)
    assert len(c.diary_day("2026-03-01")) == 2
