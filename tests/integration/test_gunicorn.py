"""The host under a real gunicorn (deploy/gunicorn.conf.py, 3 workers), driven by wikimem.client.

The `git` command line is the independent witness: the owner's repository
must hold exactly one commit per write and pass `git fsck`, however the
writes were spread over the worker processes.
"""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fakes import FakeOpenAI
from gunicorn_env import Gunicorn, access_pids

from wikimem.client import Client, ClientError, NotFoundError, PreconditionFailedError, TooLargeError
from wikimem.host.owner_ids import encode_owner_id

pytestmark = pytest.mark.slow

OWNER = "user:gunicorn"


@pytest.fixture(scope="module")
def llm():
    """A chat-completions server on 127.0.0.1 standing in for the LLM of memorize."""
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def host(tmp_path_factory, llm):
    """A running gunicorn of three workers: its ``base`` URL, admin ``token``, ``data`` root and ``log``."""
    with Gunicorn(tmp_path_factory.mktemp("gunicorn"), WIKIMEM_WORKERS="3", WIKIMEM_LLM_URL=llm.url,
                  WIKIMEM_LLM_MODEL="fake-chat") as server:
        yield server


@pytest.fixture(scope="module")
def client(host):
    base, token = host.base, host.token
    c = Client(base, token, owner=OWNER, timeout=30.0, proxies={})
    c.create_owner()
    return c


def _git(data: Path, owner: str, *args: str) -> str:
    repo = data / "owners" / encode_owner_id(owner)
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _commits(data: Path, owner: str) -> int:
    return int(_git(data, owner, "rev-list", "--count", "main"))


def _raw(base: str, method: str, path: str, *, token: str | None, body: bytes | None = None,
         headers: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(base + path, data=body, method=method, headers=dict(headers or {}))
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.load(exc)


def _worker_pids(log: Path, needle: str) -> set[str]:
    """Pids of the workers whose access-log lines contain ``needle`` (JSON or text lines)."""
    return access_pids(log.read_text(errors="replace"), needle)


def test_version_answers(host):
    base, token = host.base, host.token
    assert Client(base, token, proxies={}).version()["api"] == 1


def test_create_owner_is_idempotent(client, host):
    again = client.create_owner()
    assert again["created"] is False
    assert again["owner"]["id"] == OWNER
    assert OWNER in [o["id"] for o in client.owners(prefix="user:").entries]


def test_add_get_etag_and_retrieve_chinese(client):
    written = client.add("preferences", "likes-the-sea", "她喜欢大海，也喜欢 the sea at dawn.", source_conv="conv-1")
    assert written.commit and written.etag and not written.replayed
    fetched = client.fetch("preferences", "likes-the-sea")
    assert fetched.item.content == "她喜欢大海，也喜欢 the sea at dawn."
    assert fetched.item.source_conv == "conv-1"
    assert fetched.etag == written.etag
    result = client.retrieve("大海")
    assert [e.item.name for e in result.items] == ["likes-the-sea"]
    assert result.items[0].source == "hit"


def test_name_with_slash_and_cjk_round_trips(client):
    client.add("places", "海边/南岸", "去过一次。")
    assert client.get("places", "海边/南岸").content == "去过一次。"
    assert "海边/南岸" in [i.name for i in client.items("places")]


def test_if_match_refuses_a_lost_update(client):
    first = client.add("preferences", "tea", "green tea")
    client.add("preferences", "tea", "oolong", if_match=first.etag)
    with pytest.raises(PreconditionFailedError) as info:
        client.add("preferences", "tea", "black tea", if_match=first.etag)
    assert info.value.status == 412 and info.value.current
    assert client.get("preferences", "tea").content == "oolong"


def test_diary_append_replayed_with_the_same_key_writes_one_event(host, client):
    base, token, data = host.base, host.token, host.data
    before = _commits(data, OWNER)
    path = f"/api/v1/owners/{OWNER.replace(':', '%3A')}/diary"
    body = json.dumps({"content": "在海边散步，捡到一只贝壳。", "date": "2026-07-21", "time": "09:15"}).encode()
    key = {"Idempotency-Key": f"retry-{secrets.token_hex(8)}", "Content-Type": "application/json"}
    status1, first = _raw(base, "POST", path, token=token, body=body, headers=key)
    status2, second = _raw(base, "POST", path, token=token, body=body, headers=key)
    assert (status1, status2) == (201, 201)
    assert first["replayed"] is False and second["replayed"] is True
    assert second["commit"] == first["commit"] and second["entry"] == first["entry"]
    assert [e.content for e in client.diary_day("2026-07-21")] == ["在海边散步，捡到一只贝壳。"]
    assert _commits(data, OWNER) == before + 1


def test_same_key_sent_in_parallel_to_several_workers_writes_once(host, client):
    base, token, data = host.base, host.token, host.data
    owner = "user:parallel-key"
    client.create_owner(owner)
    before = _commits(data, owner)
    body = json.dumps({"content": "同一个事件", "date": "2026-07-22", "time": "08:00"}).encode()
    headers = {"Idempotency-Key": f"dup-{secrets.token_hex(8)}", "Content-Type": "application/json"}
    path = f"/api/v1/owners/{owner.replace(':', '%3A')}/diary"
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: _raw(base, "POST", path, token=token, body=body, headers=headers),
                                range(6)))
    assert [status for status, _ in answers] == [201] * 6
    assert sorted(a["replayed"] for _, a in answers) == [False] + [True] * 5
    assert len({a["commit"] for _, a in answers}) == 1
    assert len(client.diary_day("2026-07-22", owner=owner)) == 1
    assert _commits(data, owner) == before + 1


def test_concurrent_writes_over_three_workers_lose_nothing(host, client):
    data, log = host.data, host.log
    owner = "user:concurrent"
    client.create_owner(owner)
    before = _commits(data, owner)
    threads, per_thread = 4, 25

    base, token = host.base, host.token

    def write(t: int) -> list[str]:
        # A new client (so a new connection) per write: a kept-alive connection stays with the worker
        # that accepted it, and with threaded workers four connections can all land on one process.
        return [Client(base, token, timeout=30.0, proxies={}).add(f"t{t}", f"item-{i}", f"thread {t} write {i}",
                                                                  owner=owner).commit
                for i in range(per_thread)]

    with ThreadPoolExecutor(threads) as pool:
        commits = [c for batch in pool.map(write, range(threads)) for c in batch]
    assert len(set(commits)) == threads * per_thread
    names = {(i.file, i.name) for i in client.items(owner=owner)}
    assert names == {(f"t{t}", f"item-{i}") for t in range(threads) for i in range(per_thread)}
    assert _commits(data, owner) == before + threads * per_thread
    assert set(_git(data, owner, "rev-list", "main").split()) >= set(commits)
    _git(data, owner, "fsck", "--strict")
    assert _git(data, owner, "status", "--porcelain", "--", "wiki", "diary") == ""
    time.sleep(0.2)  # the access log is written after the response
    assert len(_worker_pids(log, "/owners/user%3Aconcurrent/items/")) >= 2  # really several processes


def test_retrieve_as_of_an_older_commit(client):
    old = client.add("moods", "today", "calm like the sea").commit
    client.add("moods", "today", "stormy")
    assert [e.item.content for e in client.retrieve("calm").items] == []
    past = client.retrieve("calm", as_of=old)
    assert [e.item.content for e in past.items] == ["calm like the sea"]


def test_history_diff_and_revert(client):
    done = client.add("moods", "later", "to be reverted")
    assert client.history(limit=1).entries[0]["id"] == done.commit
    changes = client.commit(done.commit)["changes"]
    assert [(c["status"], c["name"]) for c in changes] == [("added", "later")]
    client.revert(done.commit)
    with pytest.raises(NotFoundError):
        client.get("moods", "later")


def test_oversized_body_is_413_json(host, client):  # client: the owner exists
    base, token = host.base, host.token
    body = json.dumps({"content": "x" * (1024 * 1024 + 10)}).encode()
    status, answer = _raw(base, "PUT", f"/api/v1/owners/{OWNER}/items/big/one", token=token, body=body,
                          headers={"Content-Type": "application/json"})
    assert status == 413 and answer["error"]["code"] == "too_large"


def test_a_refused_body_still_sent_gets_the_413_not_a_reset(host, client):
    """A client still sending an oversized body when the app refuses it (Connection: close, as urllib sends) reads
    the 413: the body is read and dropped first. Closing with its bytes unread reset the connection, and the
    client got a broken pipe instead (seen once in a full CI run of the test above)."""
    port = int(host.base.rsplit(":", 1)[1])
    body = json.dumps({"content": "x" * (1024 * 1024 + 10)}).encode()
    head = (f"PUT /api/v1/owners/{OWNER.replace(':', '%3A')}/items/big/two HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {host.token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + body[:64 * 1024])
        time.sleep(0.5)  # (the app has refused it by now)
        sock.sendall(body[64 * 1024:])
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 413"), answer[:300]
    assert json.loads(rest.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "too_large"


def test_client_raises_too_large(client):
    with pytest.raises(TooLargeError):
        client.add("big", "one", "大" * (400 * 1024))  # 1.2 MB of UTF-8


def test_no_token_is_a_401_json_error(host):
    base = host.base
    status, answer = _raw(base, "GET", "/api/v1/owners", token=None)
    assert status == 401 and answer["error"]["code"] == "unauthorized"
    with pytest.raises(ClientError) as info:
        Client(base, "wrong-token", owner=OWNER, proxies={}).files()
    assert info.value.status == 401


def test_unknown_item_and_owner_raise_not_found(client):
    with pytest.raises(NotFoundError) as info:
        client.get("preferences", "never-written")
    assert info.value.status == 404 and info.value.code == "not_found"
    with pytest.raises(NotFoundError):
        client.files(owner="user:nobody")


def _concurrently(client: Client, word: str, owner: str, n: int = 8) -> list[list[str]]:
    """The hits of ``n`` simultaneous retrieves, each from a new client (a new connection)."""
    def one(_):
        with Client(client.base_url, client.token, timeout=30.0, proxies={}) as c:
            return [e.item.name for e in c.retrieve(word, owner=owner).items]

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


def test_every_worker_sees_each_write_at_once(host, client):
    log = host.log
    owner = "user:fresh"
    client.create_owner(owner)
    for n in range(5):
        word = f"zebra{n}x"
        client.add("notes", f"fresh-{n}", f"saw a {word} today", owner=owner)
        # Concurrent retrieves, each on its own connection (a client keeps one alive otherwise):
        # threaded workers that are all awake share them out, each worker with its own index.
        assert _concurrently(client, word, owner) == [[f"fresh-{n}"]] * 8
        client.remove("notes", f"fresh-{n}", owner=owner)
        assert _concurrently(client, word, owner) == [[]] * 8
    time.sleep(0.2)
    assert len(_worker_pids(log, "/owners/user%3Afresh/retrieve")) >= 2


def test_memorize_through_gunicorn_is_one_run_and_one_commit(host, client, llm):
    token, data = host.token, host.data
    owner = "user:memorize"
    client.create_owner(owner)
    before = _commits(data, owner)
    llm.reset_records()
    llm.replies.append(json.dumps([{"content": "傍晚去海边散步。"}, {"content": "想八月去青岛。"}], ensure_ascii=False))
    body = json.dumps({"turn": "user: 今天去海边了", "run": "run_g"}).encode()
    headers = {"Content-Type": "application/json", "Idempotency-Key": "memo-1"}
    path = f"/api/v1/owners/{owner}/memorize"
    status, first = _raw(host.base, "POST", path, token=token, body=body, headers=headers)
    assert status == 200 and first["run"] == "run_g" and len(first["entries"]) == 2
    status, again = _raw(host.base, "POST", path, token=token, body=body, headers=headers)  # a retry
    assert status == 200 and again["commit"] == first["commit"]
    assert llm.chat_calls == 1 and "the assistant" in llm.chat_messages[0][0]["content"]
    assert _commits(data, owner) == before + 1
    history = client.history(owner=owner, run="run_g").entries
    assert [h["id"] for h in history] == [first["commit"]] and history[0]["actor"] == "admin"  # the token's name
    assert [e.content for e in client.diary_window("2000-01-01", "2100-01-01", owner=owner)] == \
        ["傍晚去海边散步。", "想八月去青岛。"]
