"""``/mcp``: the memory as MCP tools (issue 24 item 17), driven by the official SDK's own client
(``mcp.client.streamable_http``) against the real app served on 127.0.0.1 by werkzeug in a thread.

The tokens are the API's, with the same scopes and owner prefixes: a read token cannot write, a token
for ``user:lu…`` cannot reach ``user:xnne``. Writes are real commits in real repositories.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from apiworld import ADMIN, OWNER, auth
from fakes import FakeOpenAI
from fresh_thread import on_fresh_thread

pytest.importorskip("mcp")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

TOOLS = {"retrieve", "diary_append", "put_item", "memorize", "history"}


@dataclass
class Served:
    url: str
    app: Any
    secrets: dict[str, str]
    llm: FakeOpenAI

    def owner(self, owner_id: str = OWNER):
        return self.app.extensions["wikimem.host"].owner(owner_id)


@pytest.fixture
def served(world):
    """The world's data root and tokens, served on 127.0.0.1 by an app whose memorize asks a fake model."""
    from werkzeug.serving import make_server

    from webapp import create_app

    with FakeOpenAI() as llm:
        config = {k: world.app.config[k] for k in ("DATA_ROOT", "ADMIN_TOKEN", "TOKENS_FILE")}
        app = create_app({"TESTING": True, "LLM_URL": llm.url, "LLM_MODEL": "fake-chat", **config})
        app.test_client().put("/api/v1/owners/user:lu1", headers=auth(ADMIN))
        srv = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=srv.serve_forever, daemon=True)
        thread.start()
        try:
            yield Served(f"http://127.0.0.1:{srv.server_port}/mcp", app, world.secrets, llm)
        finally:
            srv.shutdown()
            app.extensions["wikimem.mcp"].close()


def session(served: Served, token: str | None, script: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """Run ``script`` in one MCP session opened with ``token`` (the SDK's client, streamable HTTP)."""
    import httpx2

    async def main():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with streamable_http_client(served.url, http_client=http) as (read, write, *_):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    return await script(s)

    return on_fresh_thread(lambda: asyncio.run(main()))


def call(served: Served, token: str, tool: str, **arguments) -> Any:
    return session(served, token, lambda s: s.call_tool(tool, arguments))


def _leaves(exc: BaseException) -> set[type]:
    """The exception types inside an exception group (anyio's task groups wrap what they raise)."""
    inner = getattr(exc, "exceptions", None)
    return {type(exc)} if inner is None else set().union(*(_leaves(e) for e in inner))


def refusal(result) -> dict:
    """The API's error document a refused tool call carries."""
    assert result.is_error
    text = result.content[0].text
    return json.loads(text[text.index("{"):])


def test_the_five_tools_are_listed_with_their_schemas(served):
    tools = session(served, served.secrets["reader"], lambda s: s.list_tools()).tools
    assert {t.name for t in tools} == TOOLS
    by_name = {t.name: t for t in tools}
    assert by_name["retrieve"].input_schema["required"] == ["owner", "query"]
    assert by_name["retrieve"].input_schema["properties"]["limit"]["maximum"] == 200
    assert "ctx" not in by_name["put_item"].input_schema["properties"]
    assert by_name["retrieve"].annotations.read_only_hint and not by_name["put_item"].annotations.read_only_hint


def test_a_bot_writes_recalls_and_reads_history_through_the_tools(served):
    writer = served.secrets["writer"]

    async def script(s: ClientSession):
        put = await s.call_tool("put_item", {"owner": OWNER, "file": "preferences", "name": "tea",
                                             "content": "Oolong, no sugar.", "source_conv": "conv_7"})
        entry = await s.call_tool("diary_append", {"owner": OWNER, "content": "Went to the beach with Mia.",
                                                   "date": "2026-12-03", "time": "20:30"})
        found = await s.call_tool("retrieve", {"owner": OWNER, "query": "beach tea", "diary": "all"})
        log = await s.call_tool("history", {"owner": OWNER, "limit": 2})
        return put, entry, found, log

    put, entry, found, log = session(served, writer, script)
    assert not (put.is_error or entry.is_error or found.is_error or log.is_error)
    assert put.structured_content["created"] is True and put.structured_content["etag"]
    assert entry.structured_content["entry"] == {**entry.structured_content["entry"], "date": "2026-12-03",
                                                 "time": "20:30", "content": "Went to the beach with Mia."}
    # the same Owner calls the API makes: the commits are in the owner's history, by the token's name
    assert [e["id"] for e in log.structured_content["entries"]] == [entry.structured_content["commit"],
                                                                    put.structured_content["commit"]]
    assert {e["actor"] for e in log.structured_content["entries"]} == {"writer"}
    prompt = found.structured_content["prompt"].splitlines()
    assert "- [preferences/tea] Oolong, no sugar." in prompt
    assert "- [diary 2026-12-03 20:30] Went to the beach with Mia." in prompt
    hits = found.structured_content["result"]["items"]
    assert {(h["kind"], h["item"].get("date")) for h in hits} == {("wiki", None), ("diary", "2026-12-03")}
    assert served.owner().item("preferences", "tea").source_conv == "conv_7"


def test_memorize_runs_the_hosts_model_as_one_run(served):
    served.llm.reply_fn = lambda messages: json.dumps([{"content": "Started learning to surf."}])
    result = call(served, served.secrets["writer"], "memorize", owner=OWNER,
                  turn="user: I started learning to surf\nassistant: How exciting!", run="run_mcp")
    assert not result.is_error, result.content
    body = result.structured_content
    assert body["run"] == "run_mcp" and [e["content"] for e in body["entries"]] == ["Started learning to surf."]
    assert served.owner().history(run="run_mcp").entries[0].actor == "writer"


def test_a_read_token_cannot_write_and_a_prefix_cannot_reach_other_owners(served):
    head = served.owner().head()
    refused = call(served, served.secrets["reader"], "diary_append", owner=OWNER, content="x")
    assert refusal(refused) == {**refusal(refused), "status": 403, "code": "forbidden"}
    assert "'write' scope" in refusal(refused)["message"]
    assert not call(served, served.secrets["reader"], "retrieve", owner=OWNER, query="x").is_error
    other = call(served, served.secrets["scoped"], "put_item", owner=OWNER, file="notes", name="a", content="x")
    assert refusal(other)["status"] == 403 and "user:lu" in refusal(other)["message"]
    assert refusal(call(served, served.secrets["scoped"], "history", owner=OWNER))["status"] == 403
    own = call(served, served.secrets["scoped"], "put_item", owner="user:lu1", file="notes", name="a", content="x")
    assert not own.is_error
    assert served.owner().head() == head  # nothing written to the owner out of reach


def test_no_token_or_a_wrong_one_is_401_before_the_sdk(served):
    for token in (None, "not-a-token"):
        with pytest.raises(BaseException) as info:
            session(served, token, lambda s: s.list_tools())
        assert MCPError in _leaves(info.value)  # the SDK's client reports the refused initialize
    client = served.app.test_client()
    r = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 401 and r.get_json()["error"]["code"] == "unauthorized"
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


def test_refused_values_and_preconditions_come_back_as_the_apis_errors(served):
    writer = served.secrets["writer"]
    bad_date = refusal(call(served, writer, "diary_append", owner=OWNER, content="x", date="2026-13-45"))
    assert (bad_date["status"], bad_date["code"]) == (422, "invalid_name")
    unknown = refusal(call(served, writer, "retrieve", owner="user:nobody", query="x"))
    assert unknown["status"] == 404
    first = call(served, writer, "put_item", owner=OWNER, file="notes", name="a", content="one", if_none_match=True)
    again = refusal(call(served, writer, "put_item", owner=OWNER, file="notes", name="a", content="two",
                         if_none_match=True))
    assert (again["status"], again["current"]) == (412, first.structured_content["etag"])
    stale = refusal(call(served, writer, "put_item", owner=OWNER, file="notes", name="a", content="two",
                         if_match='"0000"'))
    assert stale["status"] == 412
    schema = call(served, writer, "retrieve", owner=OWNER, query="x", limit=0)  # the SDK checks the schema
    assert schema.is_error and "limit" in schema.content[0].text
    assert served.owner().item("notes", "a").content == "one"


def test_a_retry_with_its_key_writes_once(served):
    writer = served.secrets["writer"]
    args = {"owner": OWNER, "content": "Rained all day.", "idempotency_key": "turn-42"}
    one, two = (call(served, writer, "diary_append", **args) for _ in range(2))
    assert two.structured_content["replayed"] is True
    assert two.structured_content["commit"] == one.structured_content["commit"]
    assert len(served.owner().diary_day(one.structured_content["entry"]["date"])) == 1


def test_diary_append_takes_the_room_and_history_filters_by_it(served):
    """Issue 34: the tool keeps where an entry was said and who was there; a refused id is the API's 422."""
    writer = served.secrets["writer"]
    said = call(served, writer, "diary_append", owner=OWNER, content="Bob told a joke.", date="2026-03-01",
                time="20:00", channel="g1", present=["user:xnne", "user:bob", "char:kai"])
    assert not said.is_error, said.content
    entry = said.structured_content["entry"]
    assert (entry["channel"], entry["present"]) == ("g1", ["user:xnne", "user:bob", "char:kai"])
    call(served, writer, "diary_append", owner=OWNER, content="Alone.", date="2026-03-01", time="21:00")
    log = call(served, writer, "history", owner=OWNER, channel="g1").structured_content["entries"]
    assert [e["id"] for e in log] == [said.structured_content["commit"]]
    bad = refusal(call(served, writer, "diary_append", owner=OWNER, content="x", present=["user:xnne", "a b"]))
    assert (bad["status"], bad["code"]) == (422, "invalid_name") and "invalid id in present 'a b'" in bad["message"]
    [kept, _] = served.owner().diary_day("2026-03-01")
    assert (kept.channel, kept.present) == ("g1", ("user:xnne", "user:bob", "char:kai"))


def test_get_and_delete_are_405_with_allow_post(served):
    client = served.app.test_client()
    for method in ("GET", "DELETE"):
        r = client.open("/mcp", method=method, headers=auth(ADMIN))
        assert r.status_code == 405 and r.mimetype == "application/json" and "POST" in r.headers["Allow"]


@pytest.mark.slow
def test_mcp_under_gunicorn_with_several_workers(tmp_path):
    """deploy/gunicorn.conf.py with three workers: each worker starts its own SDK loop after the fork, and
    stateless JSON exchanges land on any of them; twelve sessions at once append twelve entries."""
    import httpx2
    from gunicorn_env import Gunicorn

    with Gunicorn(tmp_path, WIKIMEM_WORKERS="3", WIKIMEM_THREADS="4") as g:
        r = httpx2.put(f"{g.base}/api/v1/owners/{OWNER}", headers=auth(g.token), trust_env=False)
        assert r.status_code == 201

        async def one(n: int, http) -> Any:
            async with streamable_http_client(g.base + "/mcp", http_client=http) as (read, write, *_):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    return await s.call_tool("diary_append", {"owner": OWNER, "content": f"event {n}",
                                                              "date": "2026-12-03"})

        async def main():
            async with httpx2.AsyncClient(headers=auth(g.token), timeout=60, trust_env=False) as http:
                return await asyncio.gather(*(one(n, http) for n in range(12)))

        results = on_fresh_thread(lambda: asyncio.run(main()))
        assert [r.is_error for r in results] == [False] * 12
        day = httpx2.get(f"{g.base}/api/v1/owners/{OWNER}/diary/2026-12-03", headers=auth(g.token),
                         trust_env=False).json()["entries"]
        assert sorted(e["content"] for e in day) == sorted(f"event {n}" for n in range(12))
        assert "Traceback" not in g.output()
