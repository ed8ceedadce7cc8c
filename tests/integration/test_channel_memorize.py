"""Issue 34, point 2: a group turn memorized through the real app (Flask test client, real repositories, the fake
chat model on 127.0.0.1). Each person's part lands in that person's folder only (the character's layer), with
channel and present; one run over every folder, reviewed and rolled back as one; unknown speakers are reported and
never written; a token that does not reach every person is refused before anything is asked or written; a model
that answers badly keeps nothing; retries replay."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apiworld import ADMIN, auth
from fakes import FakeOpenAI
from group_app import group_app
from gunicorn_env import stop_process, wait_for

from wikimem import MemoryStore
from wikimem.host import encode_owner_id

ANN, BOB, ZED = "user:ann", "user:bob", "user:zed"  # zed has no folder: an unknown speaker
TS = "2026-07-23T10:00:00+00:00"
DAY = "2026-07-23"
URL = "/api/v1/channels/g1/memorize"
TURN = [{"speaker": ANN, "content": "I passed my driving test today!"},
        {"speaker": "char:kai", "content": "Congratulations, Ann!"},
        {"speaker": BOB, "content": "Nice. I'm moving to Berlin next month, by the way."},
        {"speaker": ZED, "content": "My bank PIN is 4711, don't tell anyone."}]
ANN_EVENT = "Ann told me she passed her driving test."
BOB_EVENT = "Bob said he is moving to Berlin next month."


def answer(*, extra_diary=(), facts=True) -> str:
    """What the model answers for TURN: one event each for ann and bob, a fact for each, and what it may invent."""
    diary = [{"person": ANN, "content": ANN_EVENT}, {"person": BOB, "content": BOB_EVENT}, *extra_diary]
    out: dict = {"diary": diary, "facts": []}
    if facts:
        out["facts"] = [{"person": ANN, "file": "skills", "name": "driving", "content": "Ann can drive."},
                        {"person": BOB, "file": "places", "name": "home", "content": "Bob moves to Berlin."}]
    return json.dumps(out)


@pytest.fixture
def group(tmp_path, llm):
    """The app with a chat model, the character kai (facts proposed), persons ann and bob, and tokens: ``writer``
    (every owner), ``ann-only`` (prefix user:ann), ``both`` (prefixes user:ann and user:bob), ``mira-bot`` (bound
    to the character mira)."""
    client, secrets = group_app(tmp_path, llm, {"writer": ("", None), "ann-only": (ANN, None),
                                                 "both": ([ANN, BOB], None), "mira-bot": ("", "mira")})
    llm.reply_fn = lambda messages: answer()
    return client, secrets, tmp_path / "data"


def folder(data: Path, person: str) -> Path:
    return data / "owners" / encode_owner_id(person)


def heads(data: Path) -> dict[str, str]:
    """Every owner's head commit and staged refs (what "nothing written" compares)."""
    out = {}
    for repo in sorted((data / "owners").iterdir()):
        refs = subprocess.run(["git", "-C", str(repo), "for-each-ref", "--format=%(refname) %(objectname)"],
                              check=True, capture_output=True, text=True).stdout
        out[repo.name] = refs
    return out


def layer_text(data: Path, person: str, character: str = "kai") -> str:
    """Everything the character's layer of a person's folder holds on disk, and the shared layer's staged runs."""
    root = folder(data, person)
    files = [p for p in (root / "characters" / character).rglob("*.md")] + list((root / "wiki").glob("*.md"))
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def post(client, token: str, body: dict, **headers):
    return client.post(URL, headers=auth(token, **headers), json=body)


# -- the turn lands in each speaker's folder, as one run ------------------------------------------------------------

def test_a_group_turn_lands_in_each_speakers_folder_with_channel_and_present_as_one_run(group, llm):
    client, secrets, data = group
    r = post(client, secrets["writer"], {"messages": TURN, "character": "kai", "ts": TS, "source_conv": "conv-g1"})
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    present = [ANN, "char:kai", BOB, ZED]
    assert (body["channel"], body["character"], body["present"]) == ("g1", "kai", present)
    assert body["unknown_speakers"] == [ZED] and body["replayed"] is False
    by_person = {p["person"]: p for p in body["persons"]}
    assert sorted(by_person) == [ANN, BOB]
    for person, event in ((ANN, ANN_EVENT), (BOB, BOB_EVENT)):
        (entry,) = by_person[person]["entries"]
        assert (entry["content"], entry["channel"], entry["present"]) == (event, "g1", present)
        assert by_person[person]["commit"] and by_person[person]["proposal"]["run"] == body["run"]
        # The plain library reads the entry with where it was said and who was there.
        (day,) = MemoryStore(folder(data, person) / "characters" / "kai").diary.day(DAY)
        assert (day.content, day.channel, day.present) == (event, "g1", tuple(present))
    # Nothing of one person's in the other's folder, nothing of the unknown speaker anywhere.
    assert "Berlin" not in layer_text(data, ANN) and "driving" not in layer_text(data, BOB)
    assert all("4711" not in layer_text(data, p) for p in (ANN, BOB))
    # One model call; the unknown speaker's id never reached it, only its words as "unknown speaker 1".
    (messages,) = llm.chat_messages
    system, user = messages[0]["content"], messages[1]["content"]
    assert f"({ANN}, {BOB})" in system and ZED not in system + user
    assert "unknown speaker 1: My bank PIN" in user and "char:kai (Kai, you): Congratulations" in user
    # One run over both folders: the run search shows it for each, under one run id.
    runs = client.get(f"/api/v1/runs?run={body['run']}", headers=auth(ADMIN)).get_json()["runs"]
    assert sorted(row["owner"] for row in runs) == [ANN, BOB]


def test_one_bulk_rollback_of_the_run_removes_the_turn_from_every_folder(group):
    client, secrets, data = group
    body = post(client, secrets["writer"], {"messages": TURN, "character": "kai", "ts": TS}).get_json()
    run = body["run"]
    preview = client.post("/api/v1/bulk/rollback", headers=auth(ADMIN), json={"run": run, "preview": True})
    assert sorted(o["owner"] for o in preview.get_json()["owners"]) == [ANN, BOB], preview.get_json()
    job = client.post("/api/v1/bulk/rollback", headers=auth(ADMIN), json={"run": run})
    assert job.status_code == 202, job.get_json()
    done = _finished(client, job.headers["Location"])
    assert done["state"] == "done", done
    for person in (ANN, BOB):
        day = client.get(f"/api/v1/owners/{person}/diary/{DAY}?character=kai", headers=auth(ADMIN)).get_json()
        assert day["entries"] == [], (person, day)
        assert "driving" not in layer_text(data, person) and "Berlin" not in layer_text(data, person)
        staged = client.get(f"/api/v1/owners/{person}/staged", headers=auth(ADMIN)).get_json()["runs"]
        assert staged == [], (person, staged)  # its proposals to the shared layer are withdrawn too


def test_facts_are_proposed_to_each_persons_shared_layer_by_the_characters_policy(group):
    client, secrets, _ = group
    body = post(client, secrets["writer"], {"messages": TURN, "character": "kai", "ts": TS}).get_json()
    for person, name in ((ANN, "driving"), (BOB, "home")):
        staged = client.get(f"/api/v1/owners/{person}/staged", headers=auth(ADMIN)).get_json()["runs"]
        assert [s["run"] for s in staged] == [body["run"]]
        shared = client.get(f"/api/v1/owners/{person}/items", headers=auth(ADMIN)).get_json()["items"]
        assert shared == []  # a proposal, not a write of the shared layer
        mine = client.get(f"/api/v1/owners/{person}/items?character=kai", headers=auth(ADMIN)).get_json()["items"]
        assert [i["name"] for i in mine] == [name]


# -- who may send it ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("token", ["ann-only", "mira-bot"])
def test_a_turn_the_token_may_not_write_wholly_is_refused_before_anything_is_asked_or_written(group, llm, token):
    client, secrets, data = group
    before = heads(data)
    r = post(client, secrets[token], {"messages": TURN, "character": "kai", "ts": TS})
    assert r.status_code == 403, r.get_json()
    assert heads(data) == before and llm.chat_calls == 0


def test_a_token_with_several_prefixes_reaches_every_person_of_them(group):
    client, secrets, _ = group
    turn = [m for m in TURN if m["speaker"] != ZED]  # (zed lies outside both prefixes)
    assert post(client, secrets["both"], {"messages": turn, "character": "kai"}).status_code == 200
    r = post(client, secrets["both"], {"messages": TURN, "character": "kai"})
    assert r.status_code == 403 and ZED not in r.get_json()["error"]["message"] or r.status_code == 403


def test_a_token_bound_to_a_character_memorizes_as_it(group, llm):
    client, secrets, _ = group
    r = post(client, secrets["mira-bot"], {"messages": [{"speaker": ANN, "content": "Hi Mira"}]})
    assert r.status_code == 200 and r.get_json()["character"] == "mira", r.get_json()
    assert "You are Mira." in llm.chat_messages[0][0]["content"]


# -- bad requests and bad answers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("body, status, words", [
    ({"messages": "ann: hi", "character": "kai"}, 400, "list of"),
    ({"messages": [{"speaker": ANN}], "character": "kai"}, 400, "list of"),
    ({"messages": [{"speaker": ANN, "content": "hi", "x": 1}], "character": "kai"}, 400, "list of"),
    ({"messages": [], "character": "kai"}, 422, "empty"),
    ({"messages": [{"speaker": ANN, "content": "  "}], "character": "kai"}, 422, "content is empty"),
    ({"messages": [{"speaker": "-rf", "content": "hi"}], "character": "kai"}, 422, "owner id"),
    ({"messages": [{"speaker": "char:Kai", "content": "hi"}], "character": "kai"}, 422, "character"),
    ({"messages": [{"speaker": ANN, "content": "hi"}], "character": "nobody"}, 404, "register"),
    ({"messages": [{"speaker": ANN, "content": "hi"}]}, 400, "character"),
    ({"messages": [{"speaker": ANN, "content": "hi"}] * 201, "character": "kai"}, 413, "at most 200"),
    ({"messages": [{"speaker": ANN, "content": "x" * 20_000}] * 2, "character": "kai"}, 413, "32,000"),
    ({"messages": [{"speaker": f"user:p{i}", "content": "hi"} for i in range(64)], "character": "kai"}, 422,
     "at most 64"),
    ({"messages": [{"speaker": ANN, "content": "hi"}], "character": "kai", "tz": "Mars/Base"}, 422, "Mars"),
    ({"messages": [{"speaker": ANN, "content": "hi"}], "character": "kai", "nope": 1}, 400, "unknown field"),
])
def test_a_bad_turn_is_refused_and_nothing_is_asked_or_written(group, llm, body, status, words):
    client, secrets, data = group
    before = heads(data)
    r = post(client, secrets["writer"], body)
    assert r.status_code == status, r.get_json()
    assert words in r.get_json()["error"]["message"], r.get_json()
    assert heads(data) == before and llm.chat_calls == 0


def test_a_bad_channel_id_is_refused(group, llm):
    client, secrets, _ = group
    r = client.post("/api/v1/channels/.hidden/memorize", headers=auth(secrets["writer"]),
                    json={"messages": TURN, "character": "kai"})
    assert r.status_code == 422 and "channel id" in r.get_json()["error"]["message"]
    assert llm.chat_calls == 0


@pytest.mark.parametrize("reply", [
    "I could not find anything.",
    "[]",
    '{"diary": "Ann passed"}',
    '{"diary": [{"content": "nobody named"}], "facts": [{"person": "user:ann"}]}',
    json.dumps([{"content": "a seed-shaped list names no person"}]),
    json.dumps({"diary": [{"person": "user:eve", "content": "Eve was there."},
                          {"person": ZED, "content": "Zed's PIN is 4711."}]}),
])
def test_a_malformed_or_foreign_answer_keeps_nothing_and_says_what_it_dropped(group, llm, reply):
    client, secrets, data = group
    llm.reply_fn = lambda messages: reply
    before = heads(data)
    r = post(client, secrets["writer"], {"messages": TURN, "character": "kai"})
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert all(p["entries"] == [] and p["commit"] is None for p in body["persons"])
    assert heads(data) == before
    if "person" in reply or "content" in reply:
        assert body["dropped"], body
    if "eve" in reply:
        assert all("a person of this turn is one of user:ann, user:bob" in d["reason"] for d in body["dropped"])


def test_with_one_known_person_an_element_naming_nobody_is_theirs(group, llm):
    client, secrets, data = group
    llm.reply_fn = lambda messages: json.dumps([{"content": "Ann said hi."}])
    r = post(client, secrets["writer"], {"messages": [TURN[0], TURN[3]], "character": "kai", "ts": TS})
    (ann,) = r.get_json()["persons"]
    assert [e["content"] for e in ann["entries"]] == ["Ann said hi."]
    assert ann["entries"][0]["present"] == [ANN, ZED, "char:kai"]


def test_a_turn_of_unknown_speakers_only_asks_nothing(group, llm):
    client, secrets, _ = group
    r = post(client, secrets["writer"], {"messages": [TURN[3], {"speaker": "char:nobody", "content": "hm"}],
                                         "character": "kai"})
    assert r.status_code == 200 and r.get_json()["unknown_speakers"] == [ZED, "char:nobody"]
    assert r.get_json()["persons"] == [] and llm.chat_calls == 0


# -- retries ------------------------------------------------------------------------------------------------------

def test_the_same_key_again_replays_without_asking_or_writing(group, llm):
    client, secrets, data = group
    key = {"Idempotency-Key": "turn-g1-1"}
    first = post(client, secrets["writer"], {"messages": TURN, "character": "kai", "ts": TS}, **key).get_json()
    after = heads(data)
    llm.reply_fn = lambda messages: answer(extra_diary=[{"person": ANN, "content": "A second reading."}])
    again = post(client, secrets["writer"], {"messages": TURN, "character": "kai", "ts": TS}, **key).get_json()
    assert again["replayed"] is True and llm.chat_calls == 1 and heads(data) == after
    assert [p["commit"] for p in again["persons"]] == [p["commit"] for p in first["persons"]]
    other = post(client, secrets["writer"], {"messages": TURN[:2], "character": "kai"}, **key)
    assert other.status_code == 422 and "another request" in other.get_json()["error"]["message"]


def test_a_retry_after_a_turn_half_written_writes_only_the_folders_the_first_answer_had_not_reached(group, llm):
    """A keyed turn that failed after ann's folder (bob's lock held past its wait): the retry replays ann's, asks
    again for bob's, and writes nobody else — not even a person the second answer names for the first time."""
    from webapp.hosting import get_host

    client, secrets, data = group
    key = {"Idempotency-Key": "turn-g1-2"}
    with client.application.app_context():
        get_host().owner(BOB).vstore._lock.timeout = 0.2  # (the owner lock's wait, 60 s in the product)
    from wikimem.locking import FileLock
    from wikimem.store import LOCK_NAME

    with FileLock(folder(data, BOB) / LOCK_NAME).hold():  # another process holds bob's folder
        r = post(client, secrets["writer"], {"messages": TURN, "character": "kai", "ts": TS}, **key)
    assert r.status_code == 503, r.get_json()
    assert len(layer_text(data, ANN)) > 0 and "Berlin" not in layer_text(data, BOB)
    llm.reply_fn = lambda messages: answer(facts=False)
    again = post(client, secrets["writer"], {"messages": TURN, "character": "kai", "ts": TS}, **key).get_json()
    by = {p["person"]: p for p in again["persons"]}
    assert by[ANN]["replayed"] is True and by[BOB]["replayed"] is False and by[BOB]["entries"]
    assert llm.chat_calls == 2


def test_the_same_turn_again_without_a_key_is_a_probable_duplicate(group, llm):
    client, secrets, data = group
    assert post(client, secrets["writer"], {"messages": TURN, "character": "kai"}).status_code == 200
    before = heads(data)
    r = post(client, secrets["writer"], {"messages": TURN, "character": "kai"})
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "probable_duplicate"
    assert heads(data) == before and llm.chat_calls == 1


# -- the async form -----------------------------------------------------------------------------------------------

def _finished(client, location: str, token: str = ADMIN, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(location, headers=auth(token)).get_json()
        if job["state"] in ("done", "failed"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {location} did not finish")


@pytest.mark.parametrize("how", [{"Prefer": "respond-async"}, {}])
def test_the_async_form_is_a_job_its_submitter_can_follow(group, llm, how):
    client, secrets, _ = group
    body = {"messages": TURN, "character": "kai", "ts": TS, **({} if how else {"async": True})}
    r = post(client, secrets["writer"], body, **how, **{"Idempotency-Key": "job-g1"})
    assert r.status_code == 202, r.get_json()
    job = r.get_json()
    assert job["kind"] == "channel-memorize" and job["params"]["persons"] == [ANN, BOB, ZED]
    done = _finished(client, r.headers["Location"], secrets["writer"])
    assert done["state"] == "done", done
    result = done["results"][0]["result"]
    assert result["run"] == job["params"]["run"] and result["unknown_speakers"] == [ZED]
    assert sorted(p["person"] for p in result["persons"] if p["entries"]) == [ANN, BOB]
    # The same key: the same job. A token that does not reach every person of it does not see it.
    again = post(client, secrets["writer"], body, **how, **{"Idempotency-Key": "job-g1"})
    assert again.status_code == 202 and again.get_json()["id"] == job["id"]
    assert client.get(r.headers["Location"], headers=auth(secrets["ann-only"])).status_code == 404
    assert llm.chat_calls == 1


def test_a_finished_jobs_conversation_is_dropped_after_a_while(group, llm):
    from webapp.hosting import get_host

    client, secrets, _ = group
    r = post(client, secrets["writer"], {"messages": TURN, "character": "kai", "async": True})
    assert _finished(client, r.headers["Location"])["state"] == "done"
    with client.application.app_context():
        store = get_host().jobs
        assert store.forget_turns(now=time.time() + 3600) == 1
        (params,) = [json.loads(p) for (p,) in store.db.rows("SELECT params FROM steps")]
    assert "messages" not in params and "reply" not in params and params["messages_dropped"] is True


# -- a worker killed mid-job ----------------------------------------------------------------------------------------

WORKER = Path(__file__).resolve().parents[1] / "jobworker.py"


def _git_subjects(data: Path, person: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(folder(data, person)), "log", "--format=%s"], check=True,
                         capture_output=True, text=True).stdout
    return out.splitlines()


@pytest.mark.slow
def test_a_group_turn_job_killed_between_two_folders_is_finished_by_the_next_process_without_duplicates(tmp_path):
    """The worker dies right after the first person's folder is written: the next process runs the step again from
    the answer the job kept (no second model call), replays the written folder and writes the other, once each."""
    from wikimem.host import make_host
    from wikimem.host.fleet import JobStore, submit_channel_memorize

    data = tmp_path / "data"
    host = make_host(data)
    host.characters.put("kai", name="Kai")
    for person in (ANN, BOB):
        host.create_owner(person)
    jobs = JobStore.at(data)
    with FakeOpenAI() as llm:
        llm.reply_fn = lambda messages: answer()
        job, _ = submit_channel_memorize(jobs, {"channel": "g1", "character": "kai", "messages": TURN},
                                         persons=[ANN, BOB, ZED], key="turn-killed", ts=TS)
        env = dict(os.environ, WIKIMEM_LLM_URL=llm.url)
        first = subprocess.Popen([sys.executable, str(WORKER), str(data), "--lease", "30", "--die-after-folder"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert first.wait(timeout=60) == -signal.SIGKILL, first.stderr.read() if first.stderr else ""
        finally:
            stop_process(first)
        assert jobs.get(job.id).state == "running" and llm.chat_calls == 1
        (written,) = [line.split()[1] for line in (data / "effects.log").read_text().splitlines()]
        other = BOB if written == ANN else ANN
        assert any("memorize" in s for s in _git_subjects(data, written))
        assert not any("memorize" in s for s in _git_subjects(data, other))  # the kill came between the folders
        second = subprocess.Popen([sys.executable, str(WORKER), str(data), "--lease", "30"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert second.stdout is not None and second.stdout.readline().strip() == "ready"
            done = wait_for(lambda: (j := jobs.get(job.id)).state in ("done", "failed") and j, 60, "the job")
        finally:
            stop_process(second)
        assert llm.chat_calls == 1  # the second run wrote from the answer the job kept
    assert done.state == "done", done.results
    result = done.results[0]["result"]
    by = {p["person"]: p for p in result["persons"]}
    assert by[written]["replayed"] is True and by[other]["replayed"] is False and by[other]["entries"]
    assert result["run"] == done.params["run"] and result["unknown_speakers"] == [ZED]
    for person, event in ((ANN, ANN_EVENT), (BOB, BOB_EVENT)):
        assert sum("memorize" in s for s in _git_subjects(data, person)) == 1, _git_subjects(data, person)
        (entry,) = MemoryStore(folder(data, person) / "characters" / "kai").diary.day(DAY)
        assert (entry.content, entry.channel) == (event, "g1")


# -- erasure ------------------------------------------------------------------------------------------------------

def test_erasing_a_person_takes_the_group_turn_jobs_they_spoke_in(group):
    """A group turn's job keeps the person's words (its messages, the model's answer, the result): erasing the
    person deletes the job, as it deletes the person's own memorize jobs."""
    client, secrets, data = group
    r = post(client, secrets["writer"], {"messages": TURN, "character": "kai", "async": True})
    assert _finished(client, r.headers["Location"])["state"] == "done"
    erase = client.post(f"/api/v1/owners/{ANN}/erase", headers=auth(ADMIN), json={"confirm": ANN})
    assert erase.status_code == 202, erase.get_json()
    assert _finished(client, erase.headers["Location"])["state"] == "done"
    with client.application.app_context():
        from webapp.hosting import get_host

        rows = get_host().jobs.db.rows("SELECT params, result FROM steps")
        jobs = get_host().jobs.db.rows("SELECT params FROM jobs")
    stored = json.dumps([*rows, *jobs])
    assert "driving test" not in stored and ANN not in stored, stored[:500]
