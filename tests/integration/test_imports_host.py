"""Imports through the host (``host.imports``), over real git folders and a stand-in chat server on 127.0.0.1.

Cards become characters in one commit of one run; a chat becomes a person's memory in the character's layer,
each turn on its day, one job and one run, rolled back whole; without a model the transcript is kept; a person
moves to another host with the same heads, ``git fsck`` clean, the same answers; an erasure's receipt names the
exports made before it.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from cardfiles import chat_file, lore_entry, stand_in_reply, v2_card, v3_card

from wikimem.context import WriteContext
from wikimem.errors import BadImport, Conflict, InvalidName, LLMNotConfigured, NotFound
from wikimem.host import RunQuery, make_host
from wikimem.llm import ChatClient

TZ = "Europe/Berlin"


@pytest.fixture
def host(tmp_path, llm):
    llm.reply_fn = stand_in_reply
    return make_host(tmp_path / "data", llm=ChatClient(llm.url, "fake-chat", timeout=30))


def card_bytes(card) -> bytes:
    return json.dumps(card).encode()


def wait(host, job_id: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        job = host.imports.chat_job(job_id)
        if job.state not in ("queued", "running"):
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job.state}"
        time.sleep(0.05)


# -- cards ---------------------------------------------------------------------------------------------

def test_a_card_becomes_a_character_with_its_lorebook_in_one_commit_of_one_run(host):
    done = host.imports.import_card(card_bytes(v2_card()))
    kai = host.characters.get("kai")
    assert (kai.name, kai.persona, kai.shared_writes) == ("Kai", "A cheerful <i>barista</i>.\n\nWarm; **curious**.",
                                                          "staged")
    profile = host.owner("char:kai")
    lore = profile.items("lorebook")
    assert [i.name for i in lore] == ["Dragons", "Elaina the witch", "Old war (off)", "entry 3", "tea"]
    assert '"enabled": false' in lore[2].content and "<b>gold</b>" in lore[0].content  # kept as text
    assert profile.files() == ["lorebook"]  # what a retrieve as kai reads: the lorebook, never the greetings
    assert {i.name for i in profile.items("card", character="card")} >= {"card spec", "first_mes", "mes_example",
                                                                         "tags", "extensions"}
    commits = profile.history(run=done.run).entries
    assert len(commits) == 1 and commits[0].id == done.commit and commits[0].actor == "import"
    assert commits[0].action == "import" and profile.head() == done.commit


def test_importing_the_same_card_again_changes_nothing(host):
    raw = card_bytes(v2_card())
    host.imports.import_card(raw)
    head = host.owner("char:kai").head()
    again = host.imports.preview_card(raw)
    assert not again.changes and again.puts == [] and again.removes == [] and again.unchanged >= 5
    assert host.imports.import_card(raw).commit is None and host.owner("char:kai").head() == head


def test_a_changed_card_is_previewed_then_updated_as_one_run(host):
    host.imports.import_card(card_bytes(v2_card()))
    card = v2_card(description="A sleepy barista.")
    entries = card["data"]["character_book"]["entries"]
    entries[0]["content"] = "Dragons hoard silver now."
    del entries[2]
    entries.append(lore_entry(["harbor"], "The harbor opens at dawn.", comment="Harbor"))
    plan = host.imports.preview_card(card_bytes(card)).to_dict()
    assert plan["created"] is False and plan["definition"]["after"]["persona"].startswith("A sleepy barista.")
    assert [i["name"] for i in plan["items"]["added"]] == ["Harbor"]
    assert {i["name"] for i in plan["items"]["changed"]} == {"Dragons", "description", "card top level"}
    assert plan["items"]["removed"] == [{"file": "lorebook", "name": "Old war (off)"}]
    assert {i.get("layer") for i in plan["items"]["changed"]} == {None, "card"}
    head = host.owner("char:kai").head()
    assert host.owner("char:kai").head() == head  # a preview writes nothing
    done = host.imports.import_card(card_bytes(card))
    profile = host.owner("char:kai")
    assert len(profile.history(run=done.run).entries) == 1
    assert profile.item("lorebook", "Dragons").content.startswith("Dragons hoard silver now.")
    assert "Old war (off)" not in [i.name for i in profile.items("lorebook")]
    assert host.characters.get("kai").persona.startswith("A sleepy barista.")
    assert host.imports.card_of("kai") == card


def test_a_card_name_becomes_an_id_through_the_id_rules(host):
    host.characters.put("kai", name="Someone else")
    assert host.imports.import_card(card_bytes(v2_card("Kai"))).plan.character == "kai-2"
    assert host.imports.preview_card(card_bytes(v2_card("Kai"))).character == "kai-2"  # the same one again
    assert host.imports.import_card(card_bytes(v2_card("Kai", lorebook=False))).plan.created is False
    assert host.imports.preview_card(card_bytes(v2_card("小艾"))).character == "character"
    assert host.imports.preview_card(card_bytes(v2_card("Dr. Jekyll & Mr. Hyde!"))).character == "dr-jekyll-mr-hyde"
    assert host.imports.preview_card(card_bytes(v2_card("../../etc"))).character == "etc"
    with pytest.raises(InvalidName):
        host.imports.preview_card(card_bytes(v2_card()), character="Bad Id")
    assert host.imports.preview_card(card_bytes(v2_card()), character="barista").character == "barista"


@pytest.mark.parametrize("make", [v2_card, v3_card], ids=["v2", "v3"])
def test_card_to_character_to_lorebook_keeps_every_entry(host, make):
    card = make()
    done = host.imports.import_card(card_bytes(card))
    character = done.plan.character
    book = host.imports.world_info(host.owner(f"char:{character}"))
    entries = list(book["entries"].values())
    original = card["data"]["character_book"]["entries"]
    assert [(e["key"], e["content"], e["disable"]) for e in entries] == \
        [(o["keys"], o["content"], not o["enabled"]) for o in original]
    assert [e["keysecondary"] for e in entries] == [o.get("secondary_keys", []) for o in original]
    assert host.imports.card_of(character) == card  # and the whole card back, field for field


# -- chats ----------------------------------------------------------------------------------------------

@pytest.fixture
def ann(host):
    host.imports.import_card(card_bytes(v2_card()))
    return host.create_owner("user:ann")


def test_a_chat_is_memorized_turn_by_turn_on_its_days_in_the_characters_layer_as_one_run(host, ann, llm):
    preview = host.imports.preview_chat(ann, "kai", chat_file(), tz=TZ).to_dict()
    assert (preview["turns"], preview["system"], preview["swipes"], preview["llm_calls"]) == (4, 2, 3, 4)
    assert preview["days"] == ["2024-05-12", "2024-05-13", "2024-05-15"] and preview["tokens"]["input"] > 0
    assert llm.chat_calls == 0  # the preview asks nothing
    job, created, _ = host.imports.import_chat(ann, "kai", chat_file(), tz=TZ)
    done = wait(host, job.id)
    assert done.state == "done" and created and llm.chat_calls == 4
    run = job.params["run"]
    assert done.results[0]["result"] == {"turns": 4, "done": 4, "entries": 4, "facts": 1, "replayed": 0, "run": run,
                                         "proposal": True}
    days = {d: [(e.time, e.content) for e in ann.diary_day(d, "kai")] for d in ann.diary_dates("kai")}
    assert days == {"2024-05-12": [("19:31", "Ann told me: I switched to oat milk, and I got a cat named Mia.")],
                    "2024-05-13": [("10:05", "Ann told me: Today I start my new job at the library.")],
                    "2024-05-15": [("11:00", "Ann told me: Mia knocked my tea over this morning."),
                                   ("11:00", "Ann told me: Twice!")]}
    assert ann.diary_dates() == [] and ann.files() == []  # the shared layer: a proposal only
    assert [i.name for i in ann.items(character="kai")] == ["mia"]
    commits = ann.history(run=run, layers=None).entries
    assert len(commits) == 3 and {c.actor for c in commits} == {"import"} and {c.run for c in commits} == {run}
    assert [s.run for s in ann.staged_runs()] == [run]
    found = host.fleet.find_runs(RunQuery(run=run))
    assert [(r.owner, r.run) for r in found.runs] == [("user:ann", run)]


def test_rolling_the_import_back_empties_it(host, ann):
    ann.add("preferences", "tea", "Drinks green tea.", ctx=WriteContext(actor="op"))
    job, _, _ = host.imports.import_chat(ann, "kai", chat_file(), tz=TZ)
    run = wait(host, job.id).params["run"]
    undone = host.imports.roll_back(ann, run, ctx=WriteContext(actor="op"))
    assert undone["commit"] and undone["discarded"]
    assert ann.diary_dates("kai") == [] and ann.items(character="kai") == [] and ann.staged_runs() == []
    assert [i.name for i in ann.items()] == ["tea"]  # what was there before stays
    with pytest.raises(NotFound, match="wrote nothing"):
        host.imports.roll_back(ann, run)


def test_importing_the_same_chat_twice_with_a_key_is_one_job(host, ann):
    ctx = WriteContext(idempotency_key="import-chat-1")
    first, created, _ = host.imports.import_chat(ann, "kai", chat_file(), tz=TZ, ctx=ctx)
    again, created_again, _ = host.imports.import_chat(ann, "kai", chat_file(), tz=TZ, ctx=ctx)
    assert created and not created_again and again.id == first.id


def test_an_unknown_character_is_404_with_how_to_register_it(host, ann):
    with pytest.raises(NotFound, match="register it"):
        host.imports.preview_chat(ann, "nobody", chat_file())


def test_without_a_model_the_import_says_so_and_offers_the_transcript(tmp_path):
    host = make_host(tmp_path / "data")
    host.imports.import_card(card_bytes(v2_card()))
    ann = host.create_owner("user:ann")
    preview = host.imports.preview_chat(ann, "kai", chat_file(), tz=TZ).to_dict()
    assert preview["model"] is False and preview["llm_calls"] == 0 and "transcript" in preview["offer"]
    with pytest.raises(LLMNotConfigured, match="transcript"):
        host.imports.import_chat(ann, "kai", chat_file(), tz=TZ)
    kept = host.imports.keep_transcript(ann, "kai", chat_file(), tz=TZ)
    assert kept["items"] == 4 and kept["files"] == ["chat-2024-05-12"]
    items = ann.items("chat-2024-05-12", character="kai")
    assert [i.name for i in items][0] == "turn 1 (2024-05-12 19.30)" and items[1].ts == "2024-05-12T17:31:00+00:00"
    assert "Oat milk, noted." not in "\n".join(i.content for i in items)
    assert len(ann.history(run=kept["run"], layers=None).entries) == 1
    again = host.imports.keep_transcript(ann, "kai", chat_file(), tz=TZ)
    assert again["unchanged"] == 4 and again["commit"] is None
    host.imports.roll_back(ann, kept["run"])
    assert ann.files("kai") == []


def test_a_bad_chat_writes_nothing(host, ann):
    with pytest.raises(BadImport, match="line 2"):
        host.imports.import_chat(ann, "kai", b'{"user_name": "Ann"}\n{"oops": 1}\n')
    assert host.jobs.list().jobs == [] and ann.layers() == []


# -- one person, portable ------------------------------------------------------------------------------

def _fill(host, ann):
    """A person with something in every place: the shared layer, kai's layer (a chat), a staged proposal."""
    ann.add("preferences", "tea", "Drinks green tea.", ctx=WriteContext(actor="op"))
    ann.diary_append("Went to the beach.", date="2024-05-01", time="10:00", ctx=WriteContext(actor="op"))
    job, _, _ = host.imports.import_chat(ann, "kai", chat_file(), tz=TZ)
    wait(host, job.id)


def _branches(folder) -> dict[str, str]:
    out = subprocess.run(["git", "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"], cwd=folder,
                         capture_output=True, text=True, check=True).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def test_a_person_moves_to_another_host_with_the_same_heads_and_answers(host, ann, tmp_path, llm):
    _fill(host, ann)
    data = host.imports.export_person("user:ann", by="op")
    other = make_host(tmp_path / "other", llm=ChatClient(llm.url, "fake-chat", timeout=30))
    other.imports.import_card(card_bytes(v2_card()))  # the character's own profile, on the other host too
    path = tmp_path / host.export_name("user:ann", "bundle")
    path.write_bytes(data)
    moved = other.imports.import_person("user:ann", path)
    assert moved.refs == _branches(ann.root) and len(moved.refs) == 2  # main and the staged proposal
    assert moved.layers == ["kai"] and moved.unregistered == [] and moved.replaced is False
    copy = other.owner("user:ann")
    assert copy.head() == ann.head() and _branches(copy.root) == _branches(ann.root)
    fsck = subprocess.run(["git", "fsck", "--full", "--strict"], cwd=copy.root, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    for query, character in (("tea", None), ("library job", "kai"), ("Mia the cat", "kai")):
        here = [(i.item.file, i.item.name) for i in ann.retrieve(query, character=character, diary="all").items]
        there = [(i.item.file, i.item.name) for i in copy.retrieve(query, character=character, diary="all").items]
        assert here == there and here
    assert [r.run for r in copy.staged_runs()] == [r.run for r in ann.staged_runs()]
    assert other.fleet.find_runs(RunQuery(owner_prefix="user:ann")).total["runs"] >= 2  # the run index knows it


def test_an_existing_person_is_replaced_only_when_asked(host, ann, tmp_path):
    ann.add("preferences", "tea", "Drinks green tea.")
    path = tmp_path / "ann.bundle"
    path.write_bytes(host.imports.export_person("user:ann"))
    ann.add("preferences", "coffee", "Now drinks coffee.")
    head = ann.head()
    with pytest.raises(Conflict, match="replace"):
        host.imports.import_person("user:ann", path)
    assert host.owner("user:ann").head() == head
    moved = host.imports.import_person("user:ann", path, replace=True)
    assert moved.replaced and host.owner("user:ann").head() != head
    assert [i.name for i in host.owner("user:ann").items()] == ["tea"]


def test_a_hostile_file_is_refused_and_leaves_nothing(host, ann, tmp_path):
    ann.add("preferences", "tea", "Drinks green tea.")
    (tmp_path / "junk.bundle").write_bytes(b"# v2 git bundle\nnot really\n")
    with pytest.raises(BadImport):
        host.imports.import_person("user:bob", tmp_path / "junk.bundle")
    evil = tmp_path / "evil"
    subprocess.run(["git", "clone", "-q", str(ann.root), str(evil)], check=True)
    subprocess.run(["git", "branch", "evil"], cwd=evil, check=True)
    subprocess.run(["git", "bundle", "create", "-q", str(tmp_path / "evil.bundle"), "--all"], cwd=evil, check=True)
    with pytest.raises(BadImport, match="only main and staged"):
        host.imports.import_person("user:bob", tmp_path / "evil.bundle")
    assert not host.exists("user:bob")
    assert [p.name for p in (host.root / "staging").iterdir()] == []


def test_an_erasure_receipt_names_the_exports_made_before(host, ann):
    ann.add("preferences", "tea", "Drinks green tea.")
    host.export_owner("user:ann", "zip", by="alice")
    host.imports.export_person("user:ann", by="bob")
    job, _ = host.erase_owner("user:ann", actor="op")
    host.start_jobs()
    deadline = time.monotonic() + 60
    while host.jobs.get(job.id).state in ("queued", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    receipt = host.erasure_receipt("user:ann")
    place = next(p for p in receipt["places"] if p["place"] == "exports")
    assert [(e["format"], e["by"]) for e in place["exports"]] == [("zip", "alice"), ("bundle", "bob")]
    assert "delete them" in place["remains"] and any(r.startswith("exports:") for r in receipt["remains"])
    assert host.erasure.register.exports(host.erasure.digest("user:ann")) == []
