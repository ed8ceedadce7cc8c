"""docs/guides/characters.md, docs/explanation/characters.md and the README tour's characters step, run as written.

The guide's ``sh`` blocks run in bash (real curl, real jq, the real ``wikimem`` command), one after the other in a
reader's order, against gunicorn serving a data root whose chat model is a stand-in server on 127.0.0.1 (memorize
needs one): every printed line the guide shows is compared with what the blocks print. The README snippet runs
against ``wikimem serve --demo`` from a folder holding ``var/data``, as after ``make run``. The explanation's folder
layout is compared with the folder the real app writes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docblocks import doc_block
from fakes import FakeOpenAI
from gunicorn_env import Gunicorn
from test_docs_examples import DOC_BASE, DevServer  # noqa: E402  (``make run``'s host, as the README's tests use it)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not all(shutil.which(c) for c in ("bash", "curl", "jq")),
                                 reason="needs bash, curl and jq")]

VENV_BIN = str(Path(sys.executable).parent)  # where `wikimem` is


def bash(script: str, cwd: Path, env: dict) -> str:
    """Run ``script`` with ``set -euo pipefail``; its standard output (a failure shows its standard error)."""
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def kai_remembers(messages: list[dict]) -> str:
    """The stand-in chat model: Kai's diary entry and one fact about Ann, in the shape SPEC §11 gives."""
    return json.dumps({"diary": [{"content": "Ann told me about her new cat over an oat latte."}],
                       "facts": [{"file": "pets", "name": "cat", "content": "Ann has a cat called Miso."}]})


@pytest.fixture
def host(tmp_path):
    with FakeOpenAI() as llm:
        llm.reply_fn = kai_remembers
        with Gunicorn(tmp_path, WIKIMEM_TOKENS_FILE=str(tmp_path / "tokens.jsonl"), WIKIMEM_LLM_URL=llm.url,
                      WIKIMEM_LLM_MODEL="fake-chat") as served:
            env = {**served.env, "WIKIMEM": served.base, "TOKEN": served.token, "no_proxy": "*",
                   "PATH": f"{VENV_BIN}{os.pathsep}{served.env.get('PATH', '')}"}
            yield served, env, llm


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_the_characters_guide_runs_as_written(tmp_path, host):
    served, env, llm = host
    register = doc_block("characters-howto-register")
    prelude = register.splitlines()[0] + "\n"  # H, J and API, as a reader's shell keeps them
    assert prelude.startswith("H=") and "API=" in prelude

    made = [json.loads(line) for line in lines(bash(register, tmp_path, env))]
    assert [(m["character"]["id"], m["character"]["shared_writes"]) for m in made[:3]] == \
        [("kai", "staged"), ("mira", "direct"), ("elaina", "none")]
    assert all(m["created"] is True for m in made) and made[3]["owner"]["id"] == "user:ann"

    wrote = [json.loads(line) for line in lines(bash(prelude + doc_block("characters-howto-write"), tmp_path, env))]
    assert [w.get("commit") is not None for w in wrote[:3]] == [True, True, True]
    assert [i["content"] for i in wrote[3]["items"]] == ["Ann orders an oat latte from Kai, never tea."]
    folder = served.data / "owners" / "user_3aann"
    assert (folder / "characters" / "kai" / "wiki" / "preferences.md").is_file()
    assert (folder / "characters" / "mira" / "diary" / "2026-07-21.md").is_file()

    recalled = bash(prelude + doc_block("characters-howto-recall"), tmp_path, env)
    assert lines(recalled) == lines(doc_block("characters-howto-recalled"))

    shown = doc_block("characters-howto-writes")
    printed = bash(prelude + doc_block("characters-howto-memorize"), tmp_path, env)
    decoder = json.JSONDecoder()
    writes, end = decoder.raw_decode(printed.strip())
    expected, cut = decoder.raw_decode(shown.strip())
    assert writes == expected and printed.strip()[end:].strip() == shown.strip()[cut:].strip() == '"kai-turn-1"'
    assert len(llm.requests) == 1  # one model call for the diary entry and the fact

    def mira_recalls_the_cat() -> list[str]:
        ask = "curl -s -X POST \"$API/owners/user:ann/retrieve\" -H \"$H\" -H \"$J\" " \
              "-d '{\"query\": \"cat\", \"character\": \"mira\"}' | jq -r '.items[] | .layer + \" \" + .item.content'"
        return lines(bash(prelude + ask, tmp_path, env))

    assert mira_recalls_the_cat() == []  # Kai's fact waits as a proposal: Mira does not see it
    review = lines(bash(prelude + doc_block("characters-howto-review"), tmp_path, env))
    assert review[0] == "kai-turn-1 1 owner(s)"
    assert json.loads(review[1]) == ["added", "pets", "cat", "Ann has a cat called Miso."]
    assert re.fullmatch(r"[0-9a-f]{40}", review[2])
    assert mira_recalls_the_cat() == ["shared Ann has a cat called Miso."]  # approved: from the shared layer

    undone = lines(bash(prelude + doc_block("characters-howto-rollback"), tmp_path, env))
    assert sorted(undone[:3]) == sorted(json.dumps(c, separators=(",", ":")) for c in (
        ["removed", None, "pets", None], ["removed", "kai", None, "2026-07-22"], ["removed", "kai", "pets", None]))
    assert re.fullmatch(r"[0-9a-f]{40}", undone[3])
    total = json.loads(undone[4])  # what is left of Kai: its item of the write step
    assert (total["owners"], total["runs"], total["changes"], total["conflicts"]) == (1, 1, 1, 0)
    assert not (folder / "wiki" / "pets.md").exists() or "Miso" not in (folder / "wiki" / "pets.md").read_text()

    token = lines(bash(prelude + doc_block("characters-howto-token"), tmp_path, env))
    assert token[0] == "kai\tcharacter\tAnn orders an oat latte from Kai, never tea."
    assert token[1:] == ["forbidden", "201", "kai-bot"]
    minted = json.loads((tmp_path / "tokens.jsonl").read_text().splitlines()[-1])
    assert minted["character"] == "kai" and minted["owner_prefix"] == "user:"
    elaina = bash(prelude + "E=$(wikimem token mint elaina-bot --scope write --character elaina 2>/dev/null)\n"
                  "curl -s -X PUT \"$API/owners/user:ann/items/pets/wish\" -H \"Authorization: Bearer $E\" -H \"$J\" "
                  "-d '{\"content\": \"Ann wants a dog.\"}' -o /dev/null -w '%{http_code}'", tmp_path, env)
    assert elaina == "403"  # the guide's aside: shared_writes none refuses the shared layer

    cli = bash(doc_block("characters-howto-cli"), tmp_path, env)
    assert re.search(r"(?m)^preferences\s+1$", cli) and "(kai) preferences:order" in cli  # ls, explain as kai
    assert "memorize 1 diary entry, 1 fact in kai  [run=kai-turn-1" in cli  # log
    assert re.search(r"user:ann\s+kai-turn-1\s+admin\s+3 commits\s+\[kai\]\s+rolled back by", cli)  # runs
    assert re.search(r"(?m)^run_\w+\tkai-bot\t1 owner\(s\)", cli)  # staged: the proposal of Kai's token
    assert "user:ann: 1 change(s), 0 conflict(s)" in cli  # bulk-rollback --dry-run: Kai's item of the write step


def test_the_folder_layout_of_the_explanation_is_what_the_host_writes(tmp_path, host):
    served, env, _ = host
    api = f"{served.base}/api/v1"
    script = "\n".join([
        f'H="Authorization: Bearer $TOKEN"; J="Content-Type: application/json"; API="{api}"',
        'curl -sf -X PUT "$API/characters/kai" -H "$H" -H "$J" -d \'{"name": "Kai"}\'',
        'curl -sf -X PUT "$API/characters/mira" -H "$H" -H "$J" -d \'{"name": "Mira"}\'',
        'curl -sf -X PUT "$API/owners/user:ann" -H "$H"',
        *(f'curl -sf -X {method} "$API/owners/user:ann/{path}" -H "$H" -H "$J" -d \'{json.dumps(body)}\''
          for method, path, body in (
              ("PUT", "items/preferences/drink", {"content": "Ann drinks green tea."}),
              ("POST", "diary", {"content": "Ann came by.", "date": "2026-07-21", "time": "09:00"}),
              ("PUT", "items/preferences/order", {"content": "An oat latte.", "character": "kai"}),
              ("POST", "diary", {"content": "Kai made Ann a latte.", "character": "kai", "date": "2026-07-21"}),
              ("POST", "diary", {"content": "Mira lent Ann a book.", "character": "mira", "date": "2026-07-21"}))),
    ])
    bash(script, tmp_path, env)
    layout = doc_block("characters-folder-layout")
    shown = re.findall(r"[\w./-]+\.md|[\w./-]+\.json", layout)
    made = {p.relative_to(served.data).as_posix() for p in served.data.rglob("*") if p.is_file()
            and ".git" not in p.parts}
    under = {"kai": "owners/user_3aann/characters/", "mir": "owners/user_3aann/characters/", "own": ""}
    full = [under.get(path[:3], "owners/user_3aann/") + path for path in shown]
    assert len(full) == 6 and "owners/user_3aann/" in layout
    assert sorted(set(full) - made) == [], sorted(made)


def test_the_readme_snippet_runs_as_written(tmp_path):
    script = doc_block("readme-characters")
    assert DOC_BASE in script
    with DevServer(tmp_path) as served:
        env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
        out = bash(script.replace(DOC_BASE, served.base), tmp_path, {**env, "no_proxy": "*"})
    assert lines(out) == lines(doc_block("readme-characters-seen"))
