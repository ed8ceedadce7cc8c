"""The code blocks of issue 35's pages run as written (docs/guides/time-questions.md,
docs/guides/upstream-compatibility.md, docs/reference/memorize-retries.md).

``python`` blocks run as they are; the ``console`` block runs each ``$ wikimem …``
line in the folder the page's python made and compares its output with the
text that follows; the ``json`` error and the ``text`` banner line are compared
with what the host really answers and prints.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from docblocks import doc_block

REPO = Path(__file__).resolve().parents[2]


def run_python(name: str) -> None:
    exec(compile(doc_block(name), f"docs block {name}", "exec"), {"__name__": "__doc_example__"})


def run_console(block: str, cwd: Path) -> None:
    command, expected = None, []
    for line in block.splitlines() + ["$ "]:
        if line.startswith("$ "):
            if command is not None:
                argv = shlex.split(command)
                assert argv[0] == "wikimem"
                out = subprocess.run([sys.executable, "-m", "wikimem", *argv[1:]], cwd=cwd, capture_output=True,
                                     text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
                assert out.stdout.splitlines() == expected, (command, out.stderr)
            command, expected = line[2:], []
        else:
            expected.append(line)


def test_the_time_phrasings_page_says_what_the_parser_does():
    run_python("time-phrasings")
    run_python("time-refused")


def test_the_upstream_page_s_faces_and_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_python("upstream-faces")
    run_python("upstream-memory")  # writes ./memory, which the commands read
    run_console(doc_block("upstream-cli"), tmp_path)


def test_the_retry_limits_are_the_defaults():
    run_python("memorize-retry-limits")


def test_the_duplicate_answer_is_what_the_host_sends(tmp_path):
    from apiworld import ADMIN, auth
    from fakes import FakeOpenAI

    from webapp import create_app

    documented = json.loads(doc_block("duplicate-answer"))["error"]
    with FakeOpenAI() as llm:
        app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                          "LLM_URL": llm.url, "LLM_MODEL": "fake"})
        client = app.test_client()
        client.put("/api/v1/owners/user:xnne", headers=auth(ADMIN))
        for _ in range(2):
            r = client.post("/api/v1/owners/user:xnne/memorize", headers=auth(ADMIN), json={"turn": "user: hi"})
    real = r.get_json()["error"]
    assert r.status_code == 409 and set(real) == set(documented) and real["code"] == documented["code"]
    pattern = re.escape(documented["message"]).replace(re.escape("'run_20260724T063000Z_1a2b3c'"), r"'run_\w+'")
    pattern = pattern.replace(re.escape(" 3 s ago"), r"\ \d+\ s\ ago")
    assert re.fullmatch(pattern, real["message"]) and list(real["conflicts"][0]) == ["run"]


def test_the_banner_line_is_what_serve_prints():
    from wikimem.cli.hostcmd import service_lines
    from wikimem.host import load_config

    documented = doc_block("tz-banner").strip()
    assert documented in service_lines(load_config({"TZ": "Asia/Shanghai"}))
