"""``wikimem serve --demo``, ``wikimem token mint``, ``wikimem operator add`` as real processes."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from webapp.session import check_account
from wikimem.host.access.tokens import TokenFile

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wikimem(*args, env=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "wikimem", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=60, **kwargs)


def _get(url: str, token: str | None = None):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_serve_demo_prints_url_and_token_and_serves_the_demo_owners(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_DATA=str(tmp_path / "data"), WIKIMEM_BIND=f"127.0.0.1:{port}", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "wikimem", "serve", "--demo"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(line.startswith("admin token:") for line in lines):
            lines.append(proc.stdout.readline())
        out = "".join(lines)
        assert f"http://127.0.0.1:{port}/" in out
        token = re.search(r"admin token: (\S+)", out).group(1)
        for _ in range(100):
            try:
                assert _get(f"http://127.0.0.1:{port}/healthz") == {"ok": True}
                break
            except OSError:
                time.sleep(0.1)
        owners = _get(f"http://127.0.0.1:{port}/api/v1/owners", token)["owners"]
        assert {o["id"] for o in owners} == {"user:xnne", "user:lumi", "user:sam", "char:elaina", "char:lumi"}
        runs = _get(f"http://127.0.0.1:{port}/api/v1/owners/user:xnne/history?run=run_demo_bad", token)["entries"]
        assert len(runs) == 1 and runs[0]["changes"] == 2
        # The token is kept in the data root (0600), so a restart prints the same one.
        kept = tmp_path / "data" / "admin-token"
        assert kept.read_text().strip() == token and kept.stat().st_mode & 0o077 == 0
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_token_mint_stores_only_the_hash_and_the_secret_authenticates(tmp_path):
    tokens = tmp_path / "tokens.jsonl"
    done = _wikimem("token", "mint", "worker-elaina", "--scope", "read", "--scope", "write",
                    "--owner-prefix", "user:", "--file", str(tokens))
    assert done.returncode == 0, done.stderr
    secret = done.stdout.strip()
    assert secret.startswith("wmk_") and secret not in tokens.read_text()
    principal = TokenFile(tokens).authenticate(secret)
    assert principal.name == "worker-elaina" and set(principal.scopes) == {"read", "write"}
    assert principal.owner_prefix == "user:"
    assert _wikimem("token", "mint", "x", "--scope", "root", "--file", str(tokens)).returncode == 2
    assert _wikimem("token", "mint", "x", "--scope", "read", env={"WIKIMEM_TOKENS_FILE": ""}).returncode == 2


def test_operator_add_reads_the_password_from_stdin_and_hashes_it(tmp_path):
    accounts = tmp_path / "operators.jsonl"
    done = _wikimem("operator", "add", "alice", "--owner-prefix", "user:x", "--file", str(accounts),
                    input="correct horse\n")
    assert done.returncode == 0, done.stderr
    assert "correct horse" not in accounts.read_text()
    assert check_account(str(accounts), "alice", "correct horse").owner_prefix == "user:x"
    assert check_account(str(accounts), "alice", "wrong") is None
