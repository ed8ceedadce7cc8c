"""docs/guides/characters-registry.md, run as written: its ``sh`` blocks in bash (real curl, the real
``wikimem`` command) against ``wikimem serve`` on a free port, and its ``json`` block compared with what
``wikimem token mint`` writes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docblocks import doc_block
from gunicorn_env import json_call, wikimem_serve

pytestmark = pytest.mark.slow

TOKEN = "guide-admin-token-0123456789"


def bash(script: str, folder: Path, env: dict) -> str:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def served(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_DATA=str(tmp_path / "data"), WIKIMEM_ADMIN_TOKEN=TOKEN,
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    with wikimem_serve(tmp_path, env) as port:
        yield tmp_path, {**env, "WIKIMEM": f"http://127.0.0.1:{port}", "TOKEN": TOKEN}, port


def test_the_guide_runs_as_written(served):
    folder, env, port = served
    register, api, delete = doc_block("characters-put"), doc_block("characters-api"), doc_block("characters-delete")
    tokens, migrate, shown = doc_block("characters-tokens"), doc_block("characters-migrate"), \
        doc_block("characters-token-line")
    out = bash(register, folder, env)
    assert out.startswith("registered kai (Kai, shared_writes=staged) in char:kai at ")
    assert "kai\tKai\tstaged\tactive" in out and "mira\tMira\tdirect\tactive" in out
    assert '"persona": "A cheerful barista who remembers every order."' in out

    answers = [json.loads(line) for line in bash(api, folder, env).splitlines()]
    assert answers[0]["created"] is True and answers[0]["character"]["name"] == "Elaina"
    assert [c["id"] for c in answers[1]["characters"]] == ["elaina", "kai", "mira"]
    assert answers[2]["character"]["persona"] == "A travelling witch."

    assert bash(delete, folder, env).startswith("deleted mira (Mira) at ")

    listing = bash(tokens, folder, env)
    assert re.search(r"kai-worker\s+write\s+team:\*,user:\*\s+kai\s", listing)
    written = json.loads((folder / "tokens.jsonl").read_text().splitlines()[0])
    assert set(json.loads(shown)) == set(written)
    assert {k: written[k] for k in ("owner_prefix", "owner_prefixes", "character")} == \
        {k: json.loads(shown)[k] for k in ("owner_prefix", "owner_prefixes", "character")}

    # An owner whose settings still name its character by a free-text name, as before the registry.
    assert json_call(port, "PUT", "/api/v1/owners/user:ann", TOKEN)[0] == 201
    assert json_call(port, "PUT", "/api/v1/owners/user:ann/settings", TOKEN, {"character": "Elaina the Witch"})[0] \
        == 200
    out = bash(migrate, folder, env)
    assert out.splitlines()[:2] == ["would register elaina-the-witch ('Elaina the Witch')",
                                    "  user:ann: would set character 'Elaina the Witch' -> elaina-the-witch"]
    assert "  user:ann: set character 'Elaina the Witch' -> elaina-the-witch at " in out
    status, body = json_call(port, "GET", "/api/v1/owners/user:ann/settings", TOKEN)
    assert status == 200 and body["settings"]["character"] == "elaina-the-witch"
