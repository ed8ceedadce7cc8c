"""The documentation's examples (README.md, docs/), run as written against the host `make run` starts.

Each block is taken by its marker (:mod:`docblocks`). Shell blocks run in bash (real
curl, the ``wikimem`` command of this environment) from a folder holding ``var/data``,
against ``wikimem serve --demo`` with ``WIKIMEM_DATA=var/data``: what ``make run`` runs.
The only change to the text is the port (tests never bind 8000), and for the blocks that
name system paths (``/etc/wikimem``, ``/srv/backup``) those paths, moved under the test's
folder. Python blocks run the same way; memorize's chat endpoint is a fake OpenAI server
on 127.0.0.1 (memorize needs one; the guides say so).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from docblocks import doc_block
from fakes import FakeOpenAI
from fresh_thread import on_fresh_thread
from gunicorn_env import free_port, stop_process

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DOC_BASE = "http://127.0.0.1:8000"
VENV_BIN = str(Path(sys.executable).parent)  # where `wikimem` is, as .venv/bin after `make run`


def last_wednesday(tz: str = "Asia/Shanghai") -> str:
    today = datetime.now(ZoneInfo(tz)).date()
    monday = today - timedelta(days=today.weekday())
    return (monday - timedelta(days=7) + timedelta(days=2)).isoformat()


class DevServer:
    """``wikimem serve --demo`` with ``WIKIMEM_DATA=var/data`` under ``folder`` (what ``make run`` runs)."""

    def __init__(self, folder: Path, **env: str):
        self.folder = folder
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        clean = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
        self.env = {**clean, "WIKIMEM_DATA": "var/data", **env}
        self.log = folder / "serve.log"

    def __enter__(self) -> DevServer:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "wikimem", "serve", "--demo", "--bind",
                                          f"127.0.0.1:{self.port}"], cwd=self.folder, env=self.env,
                                         stdout=out, stderr=subprocess.STDOUT)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                with opener.open(self.base + "/healthz", timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"the host did not start:\n{self.log.read_text()}")

    def __exit__(self, *exc) -> None:
        stop_process(self.proc)


NEEDS_SHELL = pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None,
                                 reason="needs bash and curl")


def bash(script: str, folder: Path, base: str, stdin: str = "", **env: str) -> str:
    """Run a shell block as written (only the port differs) with ``set -e``; its output.

    A wrapper prints each curl's status after its body, between ``@@`` marks.
    """
    wrapped = "curl() { command curl \"$@\" -w '\\n@@%{http_code}@@\\n'; }\nset -e\n"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    done = subprocess.run(["bash", "-c", wrapped + script.replace(DOC_BASE, base)], cwd=folder, capture_output=True,
                          text=True, timeout=300, input=stdin,
                          env={**clean, "PATH": f"{VENV_BIN}:{clean.get('PATH', '')}", "no_proxy": "*", **env})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def run_sh(script: str, folder: Path, base: str, **env: str) -> list[tuple[object, int]]:
    """Each curl's (body, status) of a shell block run as written, in order (a body not JSON stays text)."""
    out = []
    for body, status in re.findall(r"(.*?)\n@@(\d{3})@@\n", bash(script, folder, base, **env), re.S):
        try:
            out.append((json.loads(body), int(status)))
        except ValueError:
            out.append((body, int(status)))
    return out


@NEEDS_SHELL
def test_the_curl_examples_work_as_written(tmp_path):
    script = doc_block("api-curl")
    assert DOC_BASE in script
    with DevServer(tmp_path) as host:
        answers = run_sh(script, tmp_path, host.base)
    assert len(answers) == script.count("curl -s"), answers
    statuses = [status for _, status in answers]
    assert statuses == [201, 200, 201, 201, 201, 200, 200, 200], answers
    owner, settings, item, diary, tool, retrieve, history, preview = (body for body, _ in answers)
    assert owner["created"] is True and settings["settings"]["tz"] == "Asia/Shanghai" and settings["commit"]
    assert item["item"]["content"] == "喜欢海边。" and item["commit"]
    assert diary["entry"]["content"] == "下午去了海边。"
    assert tool["entry"]["date"] == last_wednesday()  # an event filed on the day it happened
    # "上周三去海边了吗": last Wednesday's event and the preference for the sea, the wiki never time-gated.
    assert retrieve["time_range"] == [last_wednesday(), last_wednesday()]
    found = {(i["item"]["file"], i["item"]["content"]) for i in retrieve["items"]}
    assert (last_wednesday(), "上周三去了海边，看了日落。") in found and ("preferences", "喜欢海边。") in found
    assert [e["run"] for e in history["entries"]] == ["run_1"]
    assert [c["status"] for c in preview["plan"]["changes"]] == ["removed"]


def test_the_python_client_example_works_as_written(tmp_path):
    code = doc_block("client-example")
    assert DOC_BASE in code
    with FakeOpenAI() as llm:
        llm.reply_fn = lambda messages: json.dumps([{"content": messages[-1]["content"].split(": ", 1)[1]}],
                                                   ensure_ascii=False)
        with DevServer(tmp_path, WIKIMEM_LLM_URL=llm.url, WIKIMEM_LLM_MODEL="fake-chat") as host:
            env: dict = {}
            cwd = os.getcwd()
            os.chdir(tmp_path)  # the example reads var/data/admin-token from the current folder
            try:
                exec(compile(code.replace(DOC_BASE, host.base), "docs/guides/client.md", "exec"), env)
            finally:
                os.chdir(cwd)
                env["mem"].close()
    ctx, entries, done = env["ctx"], env["entries"], env["done"]
    assert {(i.item.file, i.item.content) for i in ctx.items} >= {(last_wednesday(), "上周三去了海边，看了日落。"),
                                                                   ("preferences", "喜欢海边。")}
    assert [e.content for e in entries] == ["我开始学冲浪了"] and env["commit"]
    assert done["state"] == "done"
    (entry,) = done["results"][0]["result"]["entries"]
    assert entry["date"] == last_wednesday()
    assert env["run"].startswith("run_")
    # The operators' lines: the spam bot's write was found and undone, the etag write went through.
    assert env["plan"]["total"]["owners"] == 1 and env["plan"]["total"]["changes"] == 1
    assert env["undone"]["state"] == "done" and env["undone"]["results"][0]["result"]["status"] == "done"
    assert env["seen"].etag and env["seen"].item.content == "会冲浪的朋友。"


def test_the_mcp_example_works_as_written(tmp_path, capsys):
    code = doc_block("mcp-example")
    assert DOC_BASE + "/mcp" in code
    with DevServer(tmp_path) as host:
        token = (tmp_path / "var" / "data" / "admin-token").read_text().strip()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        opener.open(urllib.request.Request(f"{host.base}/api/v1/owners/user:ann", method="PUT",
                                           headers={"Authorization": f"Bearer {token}"})).close()
        # Ann lives in Shanghai (as in the curl example): "上周三" is her last Wednesday, whatever the host's zone
        opener.open(urllib.request.Request(f"{host.base}/api/v1/owners/user:ann/settings", method="PUT",
                                           data=json.dumps({"tz": "Asia/Shanghai"}).encode(),
                                           headers={"Authorization": f"Bearer {token}",
                                                    "Content-Type": "application/json"})).close()
        request = urllib.request.Request(f"{host.base}/api/v1/owners/user:ann/diary", method="POST",
                                         data=json.dumps({"content": "上周三去了海边，看了日落。",
                                                          "date": last_wednesday()}).encode(),
                                         headers={"Authorization": f"Bearer {token}",
                                                  "Content-Type": "application/json"})
        with opener.open(request) as answer:
            assert answer.status == 201
        cwd = os.getcwd()
        os.chdir(tmp_path)  # the example reads var/data/admin-token from the current folder
        try:
            example = compile(code.replace(DOC_BASE, host.base), "docs/guides/mcp.md", "exec")
            on_fresh_thread(lambda: exec(example, {}))  # its asyncio.run needs a thread without a loop
        finally:
            os.chdir(cwd)
    assert f"- [diary {last_wednesday()} " in capsys.readouterr().out


def test_the_mcp_guide_shows_the_hosts_message_for_a_wrong_token(tmp_path, capsys):
    """The SDK says only "Server returned an error response"; the guide's hook and curl show the host's words."""
    hook = doc_block("mcp-say-why")
    example = doc_block("mcp-example").replace(
        'httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})',
        'httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, event_hooks={"response": [say_why]})')
    assert "event_hooks" in example and "event_hooks={\"response\": [say_why]}" in hook
    with DevServer(tmp_path) as host:
        code = hook.split("\n\n")[0] + "\n\n" + example.replace("open(\"var/data/admin-token\").read().strip()",
                                                                 "\"not-a-token\"")
        compiled = compile(code.replace(DOC_BASE, host.base), "docs/guides/mcp.md", "exec")
        with pytest.raises(Exception, match="unhandled errors"):  # the SDK's nested group, nothing more
            on_fresh_thread(lambda: exec(compiled, {}))
        assert "401 invalid token" in capsys.readouterr().out
        ((body, status),) = run_sh(doc_block("mcp-curl-why"), tmp_path, host.base, TOKEN="not-a-token")
    assert status == 401 and body["error"]["message"] == "invalid token"


def test_the_mcp_guide_asks_for_the_sdk_the_host_is_built_with():
    from importlib.metadata import version

    import tomllib
    from packaging.requirements import Requirement

    (line,) = doc_block("mcp-install").strip().splitlines()
    wanted = Requirement(line.split("pip install ", 1)[1].strip("'\""))
    host = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["host"]
    (pinned,) = [Requirement(r) for r in host if Requirement(r).name == "mcp"]
    assert wanted.name == "mcp" and str(wanted.specifier) in str(pinned.specifier)  # the host's lower bound
    assert version("mcp") in wanted.specifier  # and the SDK the tests run satisfies it


@NEEDS_SHELL
def test_the_readme_tour_recalls_the_demo_with_curl(tmp_path):
    with DevServer(tmp_path) as host:
        ((body, status),) = run_sh(doc_block("readme-retrieve"), tmp_path, host.base)
    assert status == 200 and body["budget_used"] <= 200 and body["diary"] == "all"  # diary ranked with the wiki
    assert body["items"] and {i["kind"] for i in body["items"]} <= {"wiki", "diary"}
    assert any("海边" in i["item"]["content"] for i in body["items"])


def fake_llm(llm: FakeOpenAI) -> FakeOpenAI:
    """A chat model that keeps the user's words of the turn as one diary entry."""
    llm.reply_fn = lambda messages: json.dumps([{"content": messages[-1]["content"].split(": ", 1)[1]}],
                                               ensure_ascii=False)
    return llm


@NEEDS_SHELL
def test_the_operator_guides_run_as_written(tmp_path):
    """Rollback, memorize, probation, repair, metrics token, forget and erase, on one host, in a reader's order."""
    api = doc_block("api-curl")
    with FakeOpenAI() as llm, DevServer(tmp_path, WIKIMEM_LLM_URL=fake_llm(llm).url,
                                        WIKIMEM_LLM_MODEL="fake-chat") as host:
        run_sh(api, tmp_path, host.base)  # the JSON API guide: user:ann, its run_1, A and U
        prelude = api.splitlines()[0] + "\n"
        cli = bash(doc_block("rollback-cli"), tmp_path, host.base)
        assert "- preferences/likes-the-sea" in cli and re.search(r"(?m)^commit [0-9a-f]{40}$", cli), cli
        one = run_sh(prelude + doc_block("rollback-one"), tmp_path, host.base)  # (run_1 is undone already)
        assert [s for _, s in one] == [200, 200], one
        # No run of Elaina-v12 in July: each `wikimem runs` says so with exit 1 ("no match"), never 2 (usage).
        exits = 'wikimem() { local rc=0; command wikimem "$@" || rc=$?; echo "@@exit $rc@@"; [ $rc -le 1 ]; }\n'
        bulk = bash(prelude + exits + doc_block("rollback-bulk"), tmp_path, host.base)
        assert re.findall(r"@@exit (\d)@@", bulk) == ["1", "1", "1"] and bulk.count("@@200@@") == 3, bulk
        assert "0 owner(s), 0 change(s)" in bulk and '"selection":{"actor":"Elaina-v12"' in bulk, bulk
        memorized = run_sh(doc_block("memorize-curl"), tmp_path, host.base)
        assert [s for _, s in memorized] == [200, 200, 202], memorized
        assert memorized[1][0]["entries"][0]["content"] == "上周三我去海边学冲浪了"
        assert "Location: /api/v1/jobs/" in memorized[2][0]
        bob = ('curl -s -X PUT -H "$A" $U/owners/user:bob\ncurl -s -X POST -H "$A" -H "Content-Type: application/json" '
               '-d \'{"content": "surfing too", "run": "run_v7_0721", "staged": true}\' $U/owners/user:bob/diary\n')
        run_sh(prelude + bob, tmp_path, host.base)  # the run on a second owner, whom the guide leaves out
        staged = bash(prelude + exits + doc_block("probation-curl"), tmp_path, host.base)
        statuses = [int(s) for s in re.findall(r"@@(\d{3})@@", staged)]
        assert statuses == [200, 200, 200, 200, 200, 202, 200], staged
        assert re.findall(r"@@exit (\d)@@", staged) == ["0", "0"], staged
        assert "1 staged run(s) waiting on 2 owner(s)" in staged, staged
        assert bash(doc_block("repair-cli"), tmp_path, host.base, WIKIMEM_DATA="var/data")
        tokens = tmp_path / "tokens.jsonl"
        minted = bash(doc_block("monitor-mint"), tmp_path, host.base, WIKIMEM_TOKENS_FILE=str(tokens))
        assert "admin" in json.loads(tokens.read_text().splitlines()[-1])["scopes"], minted
        run_sh(prelude + 'curl -s -X POST -H "$A" -H "Content-Type: application/json" -d \'{"content": "x", '
               '"date": "2026-07-21", "time": "14:30"}\' $U/owners/user:ann/diary\n', tmp_path, host.base)
        erased = bash(doc_block("erase-cli"), tmp_path, host.base, WIKIMEM_DATA="var/data")
        assert erased.count('"kind": "forget"') == 2 and '"erase' in erased, erased
        assert not (tmp_path / "var" / "data" / "owners" / "user_3aann").exists()


@NEEDS_SHELL
def test_the_token_and_operator_commands_run_as_written(tmp_path):
    etc = tmp_path / "etc" / "wikimem"
    etc.mkdir(parents=True)
    script = doc_block("security-tokens").replace("/etc/wikimem/", f"{etc}/")
    out = bash(script, tmp_path, DOC_BASE)
    assert "worker-elaina" in out and "revoked" in (etc / "tokens.jsonl").read_text()
    lines = [json.loads(line) for line in (etc / "tokens.jsonl").read_text().splitlines()]
    assert [e["name"] for e in lines] == ["worker-elaina"] * 2 and all("expires" in e for e in lines)
    ops = doc_block("security-operators")
    for line in ops.strip().splitlines():  # each reads its password from stdin when it asks for one
        bash(line, tmp_path, DOC_BASE, stdin="correct horse battery staple\n" * 2,
             WIKIMEM_OPERATORS_FILE=str(etc / "operators.jsonl"))
    assert (etc / "operators.jsonl").read_text().strip() == ""  # added, listed, changed, removed


@NEEDS_SHELL
def test_the_backup_commands_run_as_written(tmp_path):
    with DevServer(tmp_path) as host:
        script = doc_block("backup-cli").replace("/srv/backup/wikimem", str(tmp_path / "backup")) \
            .replace("/var/lib/wikimem-new", str(tmp_path / "restored"))
        bash(script, tmp_path, host.base)
    assert sorted(p.name for p in (tmp_path / "restored" / "owners").iterdir()) == \
        sorted(p.name for p in (tmp_path / "var" / "data" / "owners").iterdir())


def test_the_library_examples_run_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store: dict = {}
    exec(compile(doc_block("library-store"), "docs/guides/library.md", "exec"), store)
    assert store["result"].items and (tmp_path / "memory" / "wiki" / "preferences.md").exists()
    versioned: dict = {}
    exec(compile(doc_block("library-versioned"), "docs/guides/library.md", "exec"), versioned)
    log = subprocess.run(["git", "-C", "owners/u1", "log", "--format=%B%x00"], capture_output=True, text=True,
                         check=True).stdout.split("\0")
    messages = {m.strip().splitlines()[0]: m.strip() for m in log if m.strip()}

    def shape(message: str) -> tuple[str, list[str]]:
        """The subject and the trailer names, in order: what the documented message shows."""
        return message.splitlines()[0], re.findall(r"(?m)^(Wikimem-[A-Za-z-]+):", message)

    for name, subject in (("library-commit-message", "add preferences/likes-the-sea"),
                          ("library-undo-message", "roll back run run_43")):
        assert shape(doc_block(name).strip()) == shape(messages[subject]), messages[subject]


def test_the_error_shape_is_the_apis(tmp_path):
    with DevServer(tmp_path) as host:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            opener.open(urllib.request.Request(f"{host.base}/api/v1/owners/user:nobody"))
        except urllib.error.HTTPError as refused:
            body = json.loads(refused.read())
    documented = json.loads(doc_block("error-shape"))
    assert set(body) == set(documented) and set(body["error"]) >= set(documented["error"])
