"""``wikimem token list|revoke`` and ``wikimem operator add|list|remove|role|passwd`` as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from webapp.session import check_account
from wikimem.host.access.tokens import TokenFile

pytestmark = pytest.mark.slow


def wikimem(*args, input: str | None = None, **env):
    return subprocess.run([sys.executable, "-m", "wikimem", *args], capture_output=True, text=True,
                          input=input, env={**os.environ, **env}, timeout=60)


@pytest.fixture
def tokens(tmp_path):
    path = tmp_path / "tokens.jsonl"
    secrets = {}
    for name, scope in (("worker-a", "write"), ("worker-b", "read"), ("worker-b", "read")):
        done = wikimem("token", "mint", name, "--scope", scope, "--file", str(path))
        assert done.returncode == 0, done.stderr
        secrets.setdefault(name, []).append(done.stdout.strip())
    return path, secrets


def listed(path, *extra) -> list[list[str]]:
    done = wikimem("token", "list", *extra, "--file", str(path))
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines()[1:]]


def test_token_list_shows_ids_names_scopes_never_secrets(tokens):
    path, secrets = tokens
    rows = listed(path)
    assert [r[1] for r in rows] == ["worker-a", "worker-b", "worker-b"]
    assert [r[2] for r in rows] == ["write", "read", "read"]
    assert all(r[-1] == "active" for r in rows)
    stored = [json.loads(line)["sha256"] for line in path.read_text().splitlines()]
    assert [r[0] for r in rows] == [h[:16] for h in stored]
    out = wikimem("token", "list", "--file", str(path)).stdout
    assert not any(s in out for group in secrets.values() for s in group)


def test_token_revoke_by_id_stops_that_token_only(tokens):
    path, secrets = tokens
    tf = TokenFile(path)
    first_b = listed(path)[1][0]
    done = wikimem("token", "revoke", first_b[:8], "--file", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"revoked {first_b} (worker-b)"
    assert tf.authenticate(secrets["worker-b"][0]) is None       # the same TokenFile object: no restart
    assert tf.authenticate(secrets["worker-b"][1]).name == "worker-b"
    assert tf.authenticate(secrets["worker-a"][0]).name == "worker-a"
    assert [r[1] for r in listed(path)] == ["worker-a", "worker-b"]
    assert [r[-2:] for r in listed(path, "--all")][1][0] == "revoked"


def test_token_revoke_by_a_shared_name_needs_all(tokens):
    path, secrets = tokens
    before = path.read_text()
    ambiguous = wikimem("token", "revoke", "worker-b", "--file", str(path))
    assert ambiguous.returncode == 2 and "matches 2 tokens" in ambiguous.stderr
    assert path.read_text() == before  # nothing was changed
    assert wikimem("token", "revoke", "worker-b", "--all", "--file", str(path)).returncode == 0
    assert [r[1] for r in listed(path)] == ["worker-a"]
    missing = wikimem("token", "revoke", "nobody", "--file", str(path))
    assert missing.returncode == 1 and "no active token" in missing.stderr


def test_token_revoke_keeps_comments_and_the_file_private(tokens):
    path, _ = tokens
    path.write_text("# managed by hand\n" + path.read_text())
    assert wikimem("token", "revoke", "worker-a", "--file", str(path)).returncode == 0
    assert path.read_text().startswith("# managed by hand\n")
    assert path.stat().st_mode & 0o077 == 0


def test_operator_lifecycle(tmp_path):
    accounts = str(tmp_path / "operators.jsonl")
    env = {"WIKIMEM_OPERATORS_FILE": accounts}
    assert wikimem("operator", "add", "alice", input="alice password\n", **env).returncode == 0
    done = wikimem("operator", "add", "bob", "--role", "operator", "--owner-prefix", "user:b",
                   input="bob password\n", **env)
    assert done.returncode == 0 and "(operator, owners user:b*)" in done.stderr
    again = wikimem("operator", "add", "alice", input="another password\n", **env)
    assert again.returncode == 2 and "exists already" in again.stderr
    short = wikimem("operator", "add", "carl", input="short\n", **env)
    assert short.returncode == 2 and "at least 8" in short.stderr

    rows = [line.split() for line in wikimem("operator", "list", **env).stdout.splitlines()]
    assert rows == [["NAME", "ROLE", "OWNERS"], ["alice", "reviewer", "*"], ["bob", "operator", "user:b*"]]

    assert wikimem("operator", "role", "alice", "admin", **env).returncode == 0
    assert check_account(accounts, "alice", "alice password").role == "admin"
    assert wikimem("operator", "role", "alice", "root", **env).returncode == 2

    assert wikimem("operator", "passwd", "alice", input="a new password\n", **env).returncode == 0
    assert check_account(accounts, "alice", "alice password") is None
    assert check_account(accounts, "alice", "a new password").role == "admin"

    assert wikimem("operator", "remove", "alice", **env).returncode == 0
    assert check_account(accounts, "alice", "a new password") is None
    assert wikimem("operator", "remove", "alice", **env).returncode == 1
    assert wikimem("operator", "passwd", "alice", input="whatever pw\n", **env).returncode == 1
    assert [line.split()[0] for line in wikimem("operator", "list", **env).stdout.splitlines()] == ["NAME", "bob"]


def test_an_account_line_without_a_role_is_an_operator(tmp_path):
    from webapp.session import hash_password

    accounts = tmp_path / "operators.jsonl"
    accounts.write_text(json.dumps({"name": "old", "password_hash": hash_password("old password")}) + "\n")
    assert check_account(str(accounts), "old", "old password").role == "operator"
    listing = wikimem("operator", "list", "--file", str(accounts)).stdout
    assert listing.splitlines()[1].split() == ["old", "operator", "*"]
