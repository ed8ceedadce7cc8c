"""Tokens at the API: an expired one is refused with a clear 401, a busy one gets 429 + Retry-After, its last use
is recorded (and shown by ``wikimem token list``), admin tokens are not counted."""

from __future__ import annotations

import json
import subprocess
import sys

from apiworld import ADMIN, OWNER, auth

from wikimem.host.access import append_token, mint_token

O = f"/api/v1/owners/{OWNER}"


def _app(tmp_path, **config):
    from webapp import create_app

    tokens = tmp_path / "tokens.jsonl"
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens), **config})
    client = app.test_client()
    assert client.put(O, headers=auth(ADMIN)).status_code in (200, 201)
    return app, client, tokens


def _mint(tokens, name, scopes, **kwargs) -> str:
    secret, entry = mint_token(name, scopes, **kwargs)
    append_token(tokens, entry)
    return secret


def test_an_expired_token_gets_401_saying_it_expired(tmp_path):
    _, client, tokens = _app(tmp_path)
    secret, entry = mint_token("old-worker", ["read"], expires_in=60)
    append_token(tokens, {**entry, "expires": "2021-05-01T00:00:00+00:00"})
    r = client.get(O, headers=auth(secret))
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
    error = r.get_json()["error"]
    assert error["code"] == "unauthorized" and "expired at 2021-05-01T00:00:00+00:00" in error["message"]
    assert client.get(O, headers=auth("wmk_not-a-token")).get_json()["error"]["message"] == "invalid token"


def test_a_token_over_its_rate_gets_429_with_retry_after_and_admin_tokens_are_exempt(tmp_path):
    _, client, tokens = _app(tmp_path, API_LIMIT="3/minute")
    busy, other = _mint(tokens, "busy", ["read"]), _mint(tokens, "other", ["read"])
    assert [client.get(O, headers=auth(busy)).status_code for _ in range(3)] == [200] * 3
    r = client.get(O, headers=auth(busy))
    assert r.status_code == 429 and 1 <= int(r.headers["Retry-After"]) <= 60
    assert r.get_json()["error"]["code"] == "rate_limited" and "3 per 1 minute" in r.get_json()["error"]["message"]
    assert client.get(O, headers=auth(other)).status_code == 200  # counted per token
    assert all(client.get(O, headers=auth(ADMIN)).status_code == 200 for _ in range(6))


def test_an_empty_limit_turns_it_off(tmp_path):
    _, client, tokens = _app(tmp_path, API_LIMIT="")
    secret = _mint(tokens, "w", ["read"])
    assert all(client.get(O, headers=auth(secret)).status_code == 200 for _ in range(20))


def test_a_tokens_last_use_is_recorded_and_listed(tmp_path):
    _, client, tokens = _app(tmp_path)
    secret = _mint(tokens, "listed", ["read"], expires_in=90 * 86400)
    assert client.get(O, headers=auth(secret)).status_code == 200
    env = {"WIKIMEM_DATA": str(tmp_path / "data"), "WIKIMEM_TOKENS_FILE": str(tokens), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "wikimem", "token", "list"], env=env, capture_output=True,
                         text=True, check=True).stdout
    header, row = out.splitlines()[0].split(), next(line for line in out.splitlines() if " listed " in line)
    assert header[-3:] == ["LAST", "USED", "STATE"] and "EXPIRES" in header
    stamps = [field for field in row.split() if field.startswith("20") and "T" in field]
    assert len(stamps) == 3  # created, expires, last used
    assert json.loads(tokens.read_text().splitlines()[0])["name"] == "listed"
