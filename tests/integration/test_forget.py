"""Forgetting one item or diary entry with its history (issue 27).

After the forget job, ``git log -p --all``, ``git fsck --lost-found``, every
object of the local and the file:// remote repositories, the history and
run indexes, the jobs database and the vector caches hold no trace of the
item's text (:mod:`traces` searches every byte, git objects decompressed),
while the owner's other items, their history and provenance, a rollback of
a later run and the idempotency keys of rewritten commits still work.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
from apiworld import ADMIN, auth, finished_job
from fakes import FakeOpenAI
from traces import repositories, traces

from webapp import create_app

OWNER = "user:fern"
O = f"/api/v1/owners/{OWNER}"
SECRET = ["FERNSECRET-first-version", "FERNSECRET-second-version"]
DIARY = ["FERNDIARY-the-one-to-forget", "FERNDIARY-the-one-to-keep"]


def _git(repo, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def world(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    with FakeOpenAI(dim=16) as fake:
        app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                          "REMOTE": f"file://{remote}/{{owner}}.git", "EMBED_URL": fake.url,
                          "EMBED_MODEL": "fake-embed", "LLM_URL": fake.url, "LLM_MODEL": "fake-chat"})
        client = app.test_client()
        client.put(O, headers=auth(ADMIN))
        yield app, client, tmp_path, fake


def _history(client, **query) -> list[dict]:
    q = "&".join(f"{k}={v}" for k, v in query.items())
    return client.get(f"{O}/history?limit=500&{q}", headers=auth(ADMIN)).get_json()["entries"]


def test_forgetting_an_item_leaves_no_trace_while_the_rest_of_the_history_works(world):
    app, client, tmp, fake = world
    h = auth(ADMIN)
    put = lambda name, content, **kw: client.put(f"{O}/items/prefs/{name}", headers=auth(ADMIN, **kw.pop("hdr", {})),  # noqa: E731
                                                 json={"content": content, **kw})
    assert put("secret", SECRET[0], run="run_a", actor="bot", hdr={"Idempotency-Key": "fk-1"}).status_code == 201
    assert put("sea", "likes the sea", run="run_a", actor="bot").status_code == 201
    assert put("secret", SECRET[1], run="run_b", actor="bot2").status_code == 200
    client.post(f"{O}/retrieve", headers=h, json={"query": "sea"})  # vector caches made (fake embedder)
    client.post(f"{O}/retrieve", headers=h, json={"query": "version", "as_of": "HEAD~1"})
    assert put("sea", "likes the sea very much", run="run_c", actor="bot").status_code == 200
    client.post(f"{O}/diary", headers=h, json={"content": "went swimming", "date": "2026-07-01", "time": "08:00",
                                               "run": "run_c", "actor": "bot"})
    sea_history = [(e["actor"], e["run"], e["summary"]) for e in _history(client, file="prefs", item="sea")]
    local, far = tmp / "data", tmp / "remote"
    assert traces([local, far], SECRET), "the texts are there before"

    r = client.post(f"{O}/forget", headers=h, json={"file": "prefs", "name": "secret"})
    assert r.status_code == 202
    job = finished_job(client, r.get_json())
    assert job["state"] == "done", job
    receipt = job["results"][0]["result"]
    assert not any(s in json.dumps(job) for s in SECRET) and "secret" not in json.dumps(job["params"])

    # no trace: every byte of both folders, every object of both repositories
    assert traces([local, far], SECRET) == []
    for repo in repositories(local) + repositories(far):
        assert not any(s in _git(repo, "log", "-p", "--all") for s in SECRET)
        subprocess.run(["git", "--git-dir", str(repo), "fsck", "--strict", "--no-dangling"], check=True,
                       capture_output=True)
        lost = subprocess.run(["git", "--git-dir", str(repo), "fsck", "--lost-found", "--unreachable"],
                              capture_output=True, text=True)
        assert "unreachable" not in lost.stdout and "dangling" not in lost.stdout, lost.stdout
    history_place = next(p for p in receipt["places"] if p["place"] == "history")
    assert history_place["commits_rewritten"] >= 3 and history_place["versions"] == 2
    assert next(p for p in receipt["places"] if p["place"] == "remote objects")["state"].startswith("pruned")

    # the rest works: other items, their history and provenance, a later run's rollback, the key's replay
    assert client.get(f"{O}/items/prefs/secret", headers=h).status_code == 404
    assert client.get(f"{O}/items/prefs/sea", headers=h).get_json()["item"]["content"] == "likes the sea very much"
    assert [(e["actor"], e["run"], e["summary"]) for e in _history(client, file="prefs", item="sea")] == sea_history
    marker = _history(client)[0]
    assert marker["action"] == "forget" and marker["actor"] == "admin" and "secret" not in marker["summary"]
    assert client.post(f"{O}/rollback", headers=h, json={"run": "run_c"}).status_code == 200
    assert client.get(f"{O}/items/prefs/sea", headers=h).get_json()["item"]["content"] == "likes the sea"
    again = put("secret", SECRET[0], run="run_a", actor="bot", hdr={"Idempotency-Key": "fk-1"})
    assert again.status_code in (200, 201) and again.get_json()["replayed"] is True
    assert client.get(f"{O}/items/prefs/secret", headers=h).status_code == 404  # a replay writes nothing
    found = client.post(f"{O}/retrieve", headers=h, json={"query": "version sea"}).get_json()["items"]
    assert [i["item"]["name"] for i in found] == ["sea"]
    runs = client.get(f"/api/v1/runs?owner_prefix={OWNER}", headers=h).get_json()["runs"]
    assert {r["run"] for r in runs} >= {"run_a", "run_b", "run_c"}


def test_forgetting_one_diary_entry_of_a_minute_drops_its_turn_and_keeps_the_other(world):
    app, client, tmp, fake = world
    h = auth(ADMIN)
    fake.replies.append(json.dumps([{"content": DIARY[0]}]))
    job = client.post(f"{O}/memorize", headers=auth(ADMIN, Prefer="respond-async"),
                      json={"turn": "user: FERNTURN-told-the-bot-a-secret", "run": "run_m",
                            "ts": "2026-07-02T10:00:00+00:00"}).get_json()
    done = finished_job(client, job)
    entry = done["results"][0]["result"]["entries"][0]
    client.post(f"{O}/diary", headers=h, json={"content": DIARY[1], "date": entry["date"], "time": entry["time"]})
    r = client.post(f"{O}/forget", headers=h, json={"date": entry["date"], "time": entry["time"]})
    assert r.status_code == 202 and finished_job(client, r.get_json())["state"] == "failed"  # two entries: which one?
    r = client.post(f"{O}/forget", headers=h, json={"date": entry["date"], "time": entry["time"], "index": 0})
    assert finished_job(client, r.get_json())["state"] == "done"
    day = client.get(f"{O}/diary/{entry['date']}", headers=h).get_json()["entries"]
    assert [e["content"] for e in day] == [DIARY[1]]
    assert traces([tmp / "data", tmp / "remote"], [DIARY[0], "FERNTURN-told-the-bot-a-secret"]) == []
    assert traces([tmp / "data"], [DIARY[1]]), "the other entry stays"


def test_writes_wait_for_the_rewrite_and_none_acknowledged_is_lost(world):
    app, client, tmp, fake = world
    h = auth(ADMIN)
    for i in range(30):
        client.put(f"{O}/items/prefs/n{i}", headers=h, json={"content": f"note {i}"})
    client.put(f"{O}/items/prefs/secret", headers=h, json={"content": SECRET[0]})
    acknowledged, stop = [], threading.Event()

    def write() -> None:
        c, i = app.test_client(), 0
        while not stop.is_set():
            r = c.put(f"{O}/items/busy/w{i}", headers=h, json={"content": f"written {i}"})
            if r.status_code in (200, 201):
                acknowledged.append(f"w{i}")
            i += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        job = finished_job(client, client.post(f"{O}/forget", headers=h,
                                               json={"file": "prefs", "name": "secret"}).get_json())
    finally:
        time.sleep(0.2)
        stop.set()
        writer.join()
    assert job["state"] == "done" and acknowledged
    names = {i["name"] for i in client.get(f"{O}/items?file=busy", headers=h).get_json()["items"]}
    assert set(acknowledged) <= names
    assert traces([tmp / "data", tmp / "remote"], [SECRET[0]]) == []


def test_a_host_holding_the_old_history_follows_the_rewrite_and_prunes_it(tmp_path):
    """Two hosts share a remote: the one that did not forget finds the history replaced on its next look."""
    from wikimem.host import Host, load_config
    from wikimem.host.config import build_host

    remote = tmp_path / "remote"
    remote.mkdir()
    hosts = [build_host(load_config({"DATA_ROOT": str(tmp_path / name), "REMOTE": f"file://{remote}/{{owner}}.git",
                                     "REMOTE_FRESHNESS": 0.0})) for name in ("a", "b")]
    a, b = hosts
    owner = a.create_owner(OWNER)
    owner.add("prefs", "secret", SECRET[0])
    owner.add("prefs", "sea", "likes the sea")
    assert b.owner(OWNER).item("prefs", "secret").content == SECRET[0]  # b cloned it
    job, _ = a.forget(OWNER, {"file": "prefs", "name": "secret"})
    deadline = time.monotonic() + 60
    while a.jobs.get(job.id).state not in ("done", "failed") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert a.jobs.get(job.id).state == "done"
    seen = b.owner(OWNER)  # a look: b fetches the replaced history and follows it
    assert [i.name for i in seen.items()] == ["sea"]
    assert seen.head() == a.owner(OWNER).head()
    assert traces([tmp_path / "b", remote], [SECRET[0]]) == []
    seen.add("prefs", "tide", "b writes on top of the new history")
    assert a.owner(OWNER).item("prefs", "tide").content.startswith("b writes")
    assert isinstance(a, Host)


def test_the_cli_forgets_an_item(tmp_path, capsys):
    from wikimem.cli import main
    from wikimem.host import make_host

    make_host(tmp_path).create_owner(OWNER).add("prefs", "secret", SECRET[0])
    assert main(["forget", OWNER, "prefs/secret", "--data", str(tmp_path)]) == 0
    receipt = json.loads(capsys.readouterr().out)
    assert receipt["kind"] == "forget" and receipt["target"] == {"kind": "wiki", "file": "prefs"}
    assert traces([tmp_path], [SECRET[0]]) == []


def test_every_ref_is_rewritten_and_a_revert_still_names_the_commit_it_undid(tmp_path):
    """A branch besides main (a run on probation) loses the text too; Wikimem-Reverts follows the new ids."""
    from dulwich.repo import Repo

    from wikimem.context import WriteContext
    from wikimem.versioned import VersionedStore

    vs = VersionedStore(tmp_path / "o")
    vs.add("prefs", "secret", SECRET[0])
    bad = vs.add("prefs", "sea", "a wrong fact", ctx=WriteContext(run="run_bad")).commit
    repo = Repo(str(tmp_path / "o"))
    repo.refs[b"refs/heads/probation/run_x"] = vs.git.head()
    repo.close()
    vs.undo.apply("revert", bad)
    done = vs.forget("wiki", file="prefs", name="secret", actor="op")
    assert done.found and traces([tmp_path / "o"], [SECRET[0]]) == []
    log = subprocess.run(["git", "-C", str(tmp_path / "o"), "log", "--all", "--format=%H %s%n%b"],
                         capture_output=True, text=True, check=True).stdout
    reverted = [line.split(": ")[1] for line in log.splitlines() if line.startswith("Wikimem-Reverts: ")]
    new_bad = vs.history(run="run_bad").entries[0].id
    assert reverted == [new_bad] and bad not in log
    branch = subprocess.run(["git", "-C", str(tmp_path / "o"), "rev-parse", "probation/run_x"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert branch in log
    vs.close()


def test_the_intent_log_keeps_no_byte_of_a_forgotten_text(tmp_path):
    """The intent log holds each round's objects (zlib) and its replay results (plain JSON): a forget wipes it."""
    from traces import inflated

    from wikimem.context import WriteContext
    from wikimem.versioned import VersionedStore
    from wikimem.versioned.intent import LOG_NAME

    vs = VersionedStore(tmp_path / "o")
    vs.add("prefs", "secret", SECRET[0], ctx=WriteContext(idempotency_key="k-secret"))  # the text in its result
    vs.add("prefs", "sea", "likes the sea")
    vs.add("prefs", "secret", SECRET[1])
    log = tmp_path / "o" / ".git" / LOG_NAME
    data = log.read_bytes()
    assert SECRET[0].encode() in data and SECRET[1].encode() in inflated(data), "the texts are there before"

    assert vs.forget("wiki", file="prefs", name="secret", actor="op").found
    data = log.read_bytes()
    assert not any(s.encode() in data or s.encode() in inflated(data) for s in SECRET)
    assert traces([tmp_path / "o"], SECRET) == []
    vs.add("prefs", "tide", "the log works after the wipe")  # a round is recorded and lands as before
    assert vs.intent.in_flight() is None
    vs.close()
    again = VersionedStore(tmp_path / "o")  # a new process reads the wiped log: nothing to reconcile
    assert again.recover() is None and again.store.get("prefs", "tide").content.startswith("the log works")
    assert [i.name for i in again.store.items("prefs")] == ["sea", "tide"]
    again.close()
