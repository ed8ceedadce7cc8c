"""The code blocks of issue 35's pages run as written (docs/guides/time-questions.md,
docs/guides/upstream-compatibility.md, docs/reference/memorize-retries.md).

``python`` blocks run in order in one fresh folder per page; ``console`` blocks
run each ``$ wikimem …`` line there and compare its output with the text that
follows; the ``json`` error and the ``text`` banner line are compared with
what the host really answers and prints.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ["guides/time-questions.md", "guides/upstream-compatibility.md", "reference/memorize-retries.md"]


def blocks(page: str) -> list[tuple[str, str]]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return re.findall(r"^```(\w+)\n(.*?)^```$", text, re.S | re.M)


def run_console(block: str, cwd: Path) -> None:
    command, expected = None, []
    for line in block.splitlines() + ["$ "]:
        if line.startswith("$ "):
            if command is not None:
                argv = shlex.split(command)
                assert argv[0] == "wikimem"
                out = subprocess.run([sys.executable, "-m", "wikimem", *argv[1:]], cwd=cwd, capture_output=True,
                                     text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(DOCS.parent)})
                assert out.stdout.splitlines() == expected, (command, out.stderr)
            command, expected = line[2:], []
        else:
            expected.append(line)


@pytest.mark.parametrize("page", PAGES)
def test_the_code_blocks_of_the_page_run_as_written(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = blocks(page)
    assert found, f"{page} has no code block"
    for lang, code in found:
        if lang == "python":
            exec(compile(code, f"{page} (python block)", "exec"), {"__name__": "__doc_example__"})
        elif lang == "console":
            run_console(code, tmp_path)
        else:
            assert lang in ("json", "text"), f"{page}: a {lang} block nothing checks"


def test_the_duplicate_answer_is_what_the_host_sends(tmp_path):
    from apiworld import ADMIN, auth
    from fakes import FakeOpenAI

    from webapp import create_app

    documented = json.loads(next(code for lang, code in blocks(PAGES[2]) if lang == "json"))["error"]
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

    documented = next(code for lang, code in blocks(PAGES[2]) if lang == "text").strip()
    assert documented in service_lines(load_config({"TZ": "Asia/Shanghai"}))
