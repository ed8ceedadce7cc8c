"""wikimem.client's ``character=`` (SPEC §11) against the real app on 127.0.0.1.

Two registered characters (kai, mira) and one person: each method that takes
``character`` is checked twice, on the wire (a ``before_request`` hook records
where the app found ``character``: the query string of a read, the JSON body of
a write) and by what the layer then holds. A token bound to kai recalls as kai
and gets a 403 (the library's ``NotPermitted``) for mira's layer; memorize as
kai against a stand-in chat server keeps the diary entry and the fact in kai's
layer and proposes the fact to the shared layer.
"""

from __future__ import annotations

import io
import json
import secrets
import threading
import zipfile
from types import SimpleNamespace

import pytest
from docblocks import doc_block
from fakes import FakeOpenAI
from flask import request
from werkzeug.serving import make_server

from webapp import create_app
from wikimem.client import Client, ForbiddenError, NotFoundError
from wikimem.errors import NotPermitted
from wikimem.host.access.tokens import append_token, mint_token

ADMIN = "test-admin-" + secrets.token_hex(8)
DOC_BASE = "http://127.0.0.1:8000"
DAY = "2026-07-21"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = tmp_path_factory.mktemp("characters")
    tokens = root / "tokens.jsonl"
    kai_secret, entry = mint_token("kai-bot", ["read", "write"], "user:", character="kai")
    append_token(tokens, entry)
    llm = FakeOpenAI().start()
    llm.reply_fn = lambda messages: json.dumps({"diary": [{"content": "Ann told me she adopted a cat."}],
                                                "facts": [{"file": "pets", "name": "cat",
                                                           "content": "Ann has a cat called Miso."}]})
    app = create_app({"TESTING": True, "DATA_ROOT": str(root / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens), "LLM_URL": llm.url, "LLM_MODEL": "fake-chat"})
    seen: list[tuple[str, str | None, str | None]] = []

    @app.before_request
    def record():  # where the request carried `character`: (method, in the query, in the JSON body)
        body = request.get_json(silent=True) if request.is_json else None
        seen.append((request.method, request.args.get("character"),
                     body.get("character") if isinstance(body, dict) else None))

    srv = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{srv.server_port}"
    admin = Client(base, ADMIN, timeout=30.0, retries=1, backoff=0.05, proxies={})
    admin.put_character("kai", "Kai", persona="A cheerful barista.")
    admin.put_character("mira", "Mira", persona="A quiet librarian.")
    yield SimpleNamespace(base=base, seen=seen, llm=llm, kai_token=kai_secret)
    srv.shutdown()
    llm.stop()


def client(live, owner: str, token: str = ADMIN) -> Client:
    return Client(live.base, token, owner=owner, timeout=30.0, retries=1, backoff=0.05, proxies={})


def sent(live, call):
    """``call()``'s value and where its request carried ``character``: ``"query"``, ``"body"`` or None."""
    del live.seen[:]
    value = call()
    method, query, body = live.seen[0]
    where = "query" if query is not None else "body" if body is not None else None
    return value, where


def person(live, owner: str) -> Client:
    c = client(live, owner)
    c.create_owner()
    c.add("preferences", "drink", "Ann drinks green tea.")
    c.add("preferences", "drink", "Ann orders an oat latte from Kai.", character="kai")
    c.add("preferences", "drink", "Ann borrows poetry from Mira.", character="mira")
    return c


def test_reads_and_writes_go_to_the_layer_named_and_carry_it_where_the_api_reads_it(live):
    c = person(live, "user:amy")
    _, where = sent(live, lambda: c.add("people", "mia", "Ann's friend, in Kai's layer.", character="kai"))
    assert where == "body"
    value, where = sent(live, lambda: c.files(character="kai"))
    assert (value, where) == (["people", "preferences"], "query")
    assert c.files() == c.files(character="mira") == ["preferences"]
    value, where = sent(live, lambda: c.items("preferences", character="mira"))
    assert [i.content for i in value] == ["Ann borrows poetry from Mira."] and where == "query"
    value, where = sent(live, lambda: c.fetch("preferences", "drink", character="kai"))
    assert value.item.content == "Ann orders an oat latte from Kai." and value.etag and where == "query"
    assert c.get("preferences", "drink").content == "Ann drinks green tea."
    assert c.get("preferences", "drink", character="mira").content == "Ann borrows poetry from Mira."
    with pytest.raises(NotFoundError):
        c.get("people", "mia", character="mira")
    _, where = sent(live, lambda: c.remove("people", "mia", character="kai"))
    assert where == "body" and c.files(character="kai") == ["preferences"]

    _, where = sent(live, lambda: c.diary_append("Kai made Ann a latte.", date=DAY, time="09:00", character="kai"))
    assert where == "body"
    _, where = sent(live, lambda: c.diary_tool({"content": "Mira lent Ann a book."}, date=DAY, time="10:00",
                                               character="mira"))
    assert where == "body"
    value, where = sent(live, lambda: c.diary_dates(character="kai"))
    assert (value, where) == ([DAY], "query")
    assert c.diary_dates() == []
    value, where = sent(live, lambda: c.diary_day(DAY, character="mira"))
    assert [e.content for e in value] == ["Mira lent Ann a book."] and where == "query"
    value, where = sent(live, lambda: c.diary_window(DAY, DAY, character="kai"))
    assert [e.content for e in value] == ["Kai made Ann a latte."] and where == "query"

    done, where = sent(live, lambda: c.batch([{"op": "add", "file": "places", "name": "cafe",
                                               "content": "The café where Kai works."}], run="run_kb", character="kai"))
    assert where == "body" and done["commit"]
    assert c.files(character="kai") == ["places", "preferences"] and c.files() == ["preferences"]


def test_history_commit_diff_and_export_of_one_layer(live):
    c = person(live, "user:bo")
    kai_commit = c.add("places", "cafe", "The café where Kai works.", character="kai", run="run_k").commit
    c.add("places", "library", "Mira's library.", character="mira", run="run_m")
    page, where = sent(live, lambda: c.history(character="kai"))
    assert where == "query"
    runs = [e["run"] for e in page.entries]
    assert "run_k" in runs and "run_m" not in runs
    assert next(e for e in page.entries if e["run"] == "run_k")["layers"] == "kai"
    assert "run_k" not in [e["run"] for e in c.history().entries]  # the shared layer's history
    shown, where = sent(live, lambda: c.commit(kai_commit, character="kai"))
    assert where == "query" and [(ch["name"], ch["layer"]) for ch in shown["changes"]] == [("cafe", "kai")]
    with pytest.raises(NotFoundError):  # that commit changed kai's layer only: mira's reader does not see it
        c.commit(kai_commit, character="mira")
    first = c.history(character="kai", limit=500).entries[-1]["id"]
    changed, where = sent(live, lambda: c.diff(first, "HEAD", character="kai"))
    assert where == "query" and {ch["layer"] for ch in changed["changes"]} == {"kai"}
    archive, where = sent(live, lambda: c.export(character="kai"))
    assert where == "query"
    text = " ".join(zipfile.ZipFile(io.BytesIO(archive)).read(n).decode() for n in
                    zipfile.ZipFile(io.BytesIO(archive)).namelist())
    assert "The café where Kai works." in text and "Mira's library." not in text and "green tea" not in text


def test_retrieve_as_a_character_marks_each_hit_with_its_layer(live):
    c = person(live, "user:cy")
    result, where = sent(live, lambda: c.retrieve("what does Ann drink", character="kai"))
    assert where == "body"
    found = {(h.item.content, h.layer, h.character) for h in result.items}
    assert ("Ann orders an oat latte from Kai.", "character", "kai") in found
    assert ("Ann drinks green tea.", "shared", "kai") in found
    assert not any("Mira" in h.item.content for h in [*result.items, *result.dropped])
    shared = c.retrieve("what does Ann drink")
    assert [(h.item.content, h.layer, h.character) for h in shared.items] == [("Ann drinks green tea.", None, None)]


def test_a_token_bound_to_kai_recalls_as_kai_and_may_not_reach_miras_layer(live):
    person(live, "user:di")
    kai = client(live, "user:di", live.kai_token)
    result = kai.retrieve("what does Ann drink")  # no character given: the token's
    assert {h.character for h in result.items} == {"kai"}
    assert not any("Mira" in h.item.content for h in [*result.items, *result.dropped])
    assert kai.get("preferences", "drink", character="kai").content == "Ann orders an oat latte from Kai."
    kai.diary_append("Ann came by for a latte.", date=DAY, time="08:00", character="kai")
    calls = [lambda: kai.items(character="mira"), lambda: kai.get("preferences", "drink", character="mira"),
             lambda: kai.retrieve("drink", character="mira"), lambda: kai.history(character="mira"),
             lambda: kai.diary_dates(character="mira"), lambda: kai.export(character="mira"),
             lambda: kai.add("preferences", "drink", "Overwritten by Kai.", character="mira"),
             lambda: kai.diary_append("Kai writing Mira's diary.", date=DAY, character="mira")]
    for call in calls:
        with pytest.raises(ForbiddenError) as info:
            call()
        assert info.value.status == 403 and isinstance(info.value, NotPermitted)
        assert isinstance(info.value, PermissionError)
    assert client(live, "user:di").get("preferences", "drink", character="mira").content == \
        "Ann borrows poetry from Mira."


def test_memorize_as_a_character_keeps_the_diary_and_the_fact_and_proposes_the_fact(live):
    c = client(live, "user:eve")
    c.create_owner()
    memo, where = sent(live, lambda: c.memorize("user: I adopted a cat, she is called Miso", character="kai",
                                                run="run_mk", ts=f"{DAY}T18:00:00+00:00"))
    assert where == "body"
    assert memo.character == "kai" and memo.run == "run_mk" and memo.commit
    assert [e.content for e in memo.entries] == ["Ann told me she adopted a cat."]
    assert [(f.file, f.name, f.content) for f in memo.facts] == [("pets", "cat", "Ann has a cat called Miso.")]
    assert {(w["kind"], w["layer"], w["staged"]) for w in memo.writes} == \
        {("diary", "character", False), ("fact", "character", False), ("fact", "shared", True)}
    assert memo.proposal is not None and memo.proposal["run"] == "run_mk" and memo.dropped == []
    entries, run, commit = memo  # still unpacks as before
    assert (run, commit) == ("run_mk", memo.commit)
    assert c.get("pets", "cat", character="kai").content == "Ann has a cat called Miso."
    assert [e.content for e in c.diary_day(DAY, character="kai")] == ["Ann told me she adopted a cat."]
    with pytest.raises(NotFoundError):  # a proposal until an operator approves it
        c.get("pets", "cat")
    assert "run_mk" in [r["run"] for r in c.owner_staged()]
    assert "Miso" not in " ".join(h.item.content for h in c.retrieve("cat Miso", character="mira").items)

    kai = client(live, "user:eve", live.kai_token)
    job = kai.memorize_async("user: Miso likes tuna", run="run_mk2")  # as the token's character
    done = kai.wait_job(job, timeout=60, poll=0.05)
    assert done["state"] == "done" and done["results"][0]["result"]["character"] == "kai"


def test_runs_and_bulk_rollback_select_one_characters_runs(live):
    a, b = client(live, "user:fay"), client(live, "user:gus")
    for c in (a, b):
        c.create_owner()
        c.add("places", "home", "Shared.", run=f"shared-{c.owner}")
        c.add("places", "cafe", "Kai's café.", character="kai", run=f"kai-{c.owner}")
        c.add("places", "library", "Mira's library.", character="mira", run=f"mira-{c.owner}")
    page, where = sent(live, lambda: a.runs(character="kai", owner_prefix="user:fay"))
    assert where == "query" and [(r["run"], r["characters"]) for r in page.entries] == [("kai-user:fay", ["kai"])]
    preview, where = sent(live, lambda: a.preview_bulk_rollback(character="kai", owner_prefix="user:"))
    assert where == "body" and {o["owner"] for o in preview["owners"]} >= {"user:fay", "user:gus"}
    job, where = sent(live, lambda: a.bulk_rollback(character="kai", owner_prefix="user:fay"))
    assert where == "body"
    assert a.wait_job(job, timeout=60, poll=0.05)["state"] == "done"
    with pytest.raises(NotFoundError):
        a.get("places", "cafe", character="kai")
    assert a.get("places", "library", character="mira").content == "Mira's library."
    assert a.get("places", "home").content == "Shared."
    assert b.get("places", "cafe", character="kai").content == "Kai's café."  # outside the selection


def test_the_guides_characters_example_works_as_written(live, tmp_path, monkeypatch):
    code = doc_block("client-characters")
    assert DOC_BASE in code
    (tmp_path / "var" / "data").mkdir(parents=True)
    (tmp_path / "var" / "data" / "admin-token").write_text(ADMIN + "\n")
    monkeypatch.chdir(tmp_path)  # the example reads var/data/admin-token from the current folder
    monkeypatch.setenv("KAI_TOKEN", live.kai_token)
    monkeypatch.setenv("no_proxy", "*")
    env: dict = {}
    exec(compile(code.replace(DOC_BASE, live.base), "docs/guides/client.md", "exec"), env)
    assert [i.content for i in env["kai_items"]] == ["Ann orders an oat latte."]
    assert set(env["layers"]) == {("character", "kai"), ("shared", "kai")}
    assert env["memo"].character == "kai" and env["memo"].facts and env["memo"].proposal is not None
    assert {h.character for h in env["mine"].items} == {"kai"}
    assert "bound to the character 'kai'" in env["refused"]
    assert isinstance(env["plan"], dict) and "total" in env["plan"]


def test_one_rollback_of_a_characters_memorize_takes_its_proposal_too(live):
    c = client(live, "user:hal")
    c.create_owner()
    c.memorize("user: I adopted a cat, she is called Miso", character="kai", run="run_rb1", ts=f"{DAY}T18:00:00+00:00")
    assert "run_rb1" in [r["run"] for r in c.owner_staged()]
    c.rollback("run_rb1")
    assert c.diary_day(DAY, character="kai") == []
    with pytest.raises(NotFoundError):
        c.get("pets", "cat", character="kai")
    assert "run_rb1" not in [r["run"] for r in c.owner_staged()]  # the proposal went with the run
    with pytest.raises(NotFoundError):
        c.get("pets", "cat")
    # The same across persons: a bulk rollback of the character's runs withdraws each person's proposal.
    d = client(live, "user:ida")
    d.create_owner()
    for who in (c, d):
        who.memorize("user: Miso likes tuna", character="kai", run=f"run_rb2-{who.owner[5:]}")
    job = c.bulk_rollback(character="kai", owner_prefix="user:hal")
    assert c.wait_job(job, timeout=60, poll=0.05)["state"] == "done"
    assert [r["run"] for r in c.owner_staged()] == []
    assert [r["run"] for r in d.owner_staged()] == ["run_rb2-ida"]  # outside the selection
