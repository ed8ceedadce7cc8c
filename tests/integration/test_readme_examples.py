"""The README's API examples, run as written against the host `make run` starts.

The ``sh`` block of "JSON API" runs in bash (with real curl) from a folder
holding ``var/data``, against ``wikimem serve --demo`` with
``WIKIMEM_DATA=var/data`` — what ``make run`` runs. The only change to the
text is the port (tests never bind 8000). The ``python`` block of "Python
client" runs the same way against a host whose chat endpoint is a fake
OpenAI server on 127.0.0.1 (memorize needs one; the README says so).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from fakes import FakeOpenAI
from fresh_thread import on_fresh_thread
from gunicorn_env import free_port, stop_process

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOC_BASE = "http://127.0.0.1:8000"


def block(section: str, lang: str) -> str:
    """The first ``lang`` code block after the heading ``section``."""
    start = README.index(section)
    found = re.compile(rf"```{lang}\n(.*?)```", re.S).search(README, start)
    assert found is not None, f"no {lang} block under {section}"
    return found.group(1)


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


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None, reason="needs bash and curl")
def test_the_curl_examples_work_as_written(tmp_path):
    script = block("### JSON API (`/api/v1`)", "sh")
    assert DOC_BASE in script
    with DevServer(tmp_path) as host:
        # Only the port differs; a wrapper records each curl's status after its body.
        wrapped = "curl() { command curl \"$@\" -w '\\n@@%{http_code}@@\\n'; }\nset -e\n"
        done = subprocess.run(["bash", "-c", wrapped + script.replace(DOC_BASE, host.base)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env={**os.environ, "no_proxy": "*"})
    assert done.returncode == 0, done.stderr
    answers = [(json.loads(body), int(status)) for body, status in
               re.findall(r"(.*?)\n@@(\d{3})@@\n", done.stdout, re.S)]
    assert len(answers) == script.count("curl -s"), done.stdout
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
    code = block("### Python client (bot workers)", "python")
    assert DOC_BASE in code
    with FakeOpenAI() as llm:
        llm.reply_fn = lambda messages: json.dumps([{"content": messages[-1]["content"].split(": ", 1)[1]}],
                                                   ensure_ascii=False)
        with DevServer(tmp_path, WIKIMEM_LLM_URL=llm.url, WIKIMEM_LLM_MODEL="fake-chat") as host:
            env: dict = {}
            cwd = os.getcwd()
            os.chdir(tmp_path)  # the example reads var/data/admin-token from the current folder
            try:
                exec(compile(code.replace(DOC_BASE, host.base), "README.md (Python client)", "exec"), env)
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
    code = block("### MCP tools (`/mcp`)", "python")
    assert DOC_BASE + "/mcp" in code
    with DevServer(tmp_path) as host:
        token = (tmp_path / "var" / "data" / "admin-token").read_text().strip()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        opener.open(urllib.request.Request(f"{host.base}/api/v1/owners/user:ann", method="PUT",
                                           headers={"Authorization": f"Bearer {token}"})).close()
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
            example = compile(code.replace(DOC_BASE, host.base), "README.md (MCP tools)", "exec")
            on_fresh_thread(lambda: exec(example, {}))  # its asyncio.run needs a thread without a loop
        finally:
            os.chdir(cwd)
    assert f"- [diary {last_wednesday()} " in capsys.readouterr().out
