"""docs/guides/imports.md, run as written: its ``sh`` blocks in bash (the real ``wikimem`` command, real curl and
jq) against ``wikimem serve`` on a free port with a stand-in chat model, and its lorebook item compared with what
an import writes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cardfiles import card_png, chat_file, stand_in_reply, v2_card
from docblocks import doc_block
from gunicorn_env import json_call, wikimem_serve

pytestmark = pytest.mark.slow

TOKEN = "guide-admin-token-0123456789"


def bash(script: str, folder: Path, env: dict) -> str:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def served(tmp_path, llm):
    llm.reply_fn = stand_in_reply
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_DATA=str(tmp_path / "data"), WIKIMEM_ADMIN_TOKEN=TOKEN, WIKIMEM_LLM_URL=llm.url,
               WIKIMEM_LLM_MODEL="fake-chat", WIKIMEM_TZ="Europe/Berlin",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    with wikimem_serve(tmp_path, env) as port:
        yield tmp_path, {**env, "WIKIMEM": f"http://127.0.0.1:{port}", "TOKEN": TOKEN}, port


def _objects(text: str) -> list:
    """Every JSON value printed one after the other (pretty or not)."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        value, i = decoder.raw_decode(text, i)
        out.append(value)
    return out


def test_the_guide_runs_as_written(served):
    folder, env, port = served
    card = v2_card()
    (folder / "kai.png").write_bytes(card_png(card))
    (folder / "ann.jsonl").write_bytes(chat_file())

    preview, done = _objects(bash(doc_block("imports-card"), folder, env))
    assert preview["created"] is True and done["character"] == "kai" and done["commit"]
    assert json.loads((folder / "kai-back.json").read_text()) == card

    assert json_call(port, "PUT", "/api/v1/owners/user:ann", TOKEN)[0] == 201
    preview, result = _objects(bash(doc_block("imports-chat"), folder, env))
    assert preview["turns"] == 4 and preview["days"] == ["2024-05-12", "2024-05-13", "2024-05-15"]
    assert result["done"] == 4 and result["entries"] == 4
    status, dates = json_call(port, "GET", "/api/v1/owners/user:ann/diary/dates?character=kai", TOKEN)
    assert dates["dates"] == ["2024-05-12", "2024-05-13", "2024-05-15"]

    undone = _objects(bash(doc_block("imports-rollback"), folder, {**env, "RUN": result["run"]}))[0]
    assert undone["commit"] and undone["run"] == result["run"]
    assert json_call(port, "GET", "/api/v1/owners/user:ann/diary/dates?character=kai", TOKEN)[1]["dates"] == []

    kept = _objects(bash(doc_block("imports-transcript"), folder, env))[0]
    assert kept["items"] == 4 and kept["files"] == ["chat-2024-05-12"]

    bash(doc_block("imports-lorebook"), folder, env)
    book = json.loads((folder / "ann-kai.json").read_text())
    assert [e["key"] for e in book["entries"].values()][0] == ["turn 1 (2024-05-12 19.30)"]
    assert (folder / "ann-kai.md").read_text().startswith("# What Kai knows of user:ann")

    moved = _objects(bash(doc_block("imports-person"), folder, env))[0]
    head = json_call(port, "GET", "/api/v1/owners/user:ann", TOKEN)[1]["head"]
    assert moved["owner"] == "user:ann" and moved["head"] == head and moved["unregistered"] == ["kai"]
    copy = _objects(bash(doc_block("imports-person-api"), folder, env))[0]
    assert copy["person"]["head"] == head

    card_preview, chat_preview = _objects(bash(doc_block("imports-api"), folder, env))
    assert card_preview["preview"]["created"] is False and card_preview["preview"]["changes"] is False
    assert chat_preview["preview"]["turns"] == 4 and chat_preview["preview"]["llm_calls"] == 4


def test_the_lorebook_item_shown_is_what_an_import_writes(tmp_path):
    from wikimem.host import make_host

    entry = {"keys": ["dragon", "wyrm"], "secondary_keys": ["cave"], "enabled": False, "insertion_order": 10,
             "extensions": {}, "comment": "Dragons", "content": "Dragons hoard gold."}
    host = make_host(tmp_path / "data")
    host.imports.import_card(json.dumps(v2_card(character_book={"extensions": {}, "entries": [entry]})).encode())
    text = (host.owner_path("char:kai") / "wiki" / "lorebook.md").read_text()
    block = text[text.index("## Dragons"):].rstrip("\n")
    assert re.sub(r"ts=[^ ]+", "ts=…", block) == doc_block("imports-lorebook-item").rstrip("\n")
