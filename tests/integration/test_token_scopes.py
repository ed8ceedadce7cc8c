"""Tokens with several owner prefixes and tokens bound to a character (SPEC §11 "Tokens")."""

from __future__ import annotations

import json

import pytest
from apiworld import ADMIN, auth, finished_job

from wikimem.cli import main as cli
from wikimem.errors import InvalidName
from wikimem.host.access.tokens import TokenFile, append_token, list_tokens, mint_token, rotate_token

OWNERS = ("user:ann", "team:red", "org:acme")


def _mint(capsys, path, *args) -> str:
    assert cli(["token", "mint", *args, "--file", str(path)]) == 0
    return capsys.readouterr().out.strip()


@pytest.fixture
def scoped(tmp_path, capsys):
    """The app with the admin token, a token over ``user:`` and ``team:`` (read, write, admin: ``both``), one
    over ``user:`` only (``one``), and a character's token over both (``kai``); the three owners exist."""
    from webapp import create_app

    tokens = tmp_path / "tokens.jsonl"
    secrets = {
        "both": _mint(capsys, tokens, "both", "--scope", "admin", "--owner-prefix", "user:", "--owner-prefix", "team:"),
        "one": _mint(capsys, tokens, "one", "--scope", "admin", "--owner-prefix", "user:"),
        "kai": _mint(capsys, tokens, "kai-worker", "--scope", "write", "--owner-prefix", "user:",
                     "--owner-prefix", "team:", "--character", "kai"),
    }
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens)})
    client = app.test_client()
    for owner in OWNERS:
        assert client.put(f"/api/v1/owners/{owner}", headers=auth(ADMIN)).status_code == 201
    return client, secrets, tokens


def _write(client, owner, name, token=ADMIN, **body):
    r = client.put(f"/api/v1/owners/{owner}/items/notes/{name}", headers=auth(token),
                   json={"content": f"{name} of {owner}", **body})
    assert r.status_code in (200, 201), r.get_json()
    return r


def test_minting_with_two_prefixes_keeps_both(scoped):
    _, _, tokens = scoped
    line = json.loads(tokens.read_text().splitlines()[0])
    assert line["owner_prefixes"] == ["team:", "user:"]  # both (the second one was dropped before)
    assert line["owner_prefix"] == "team:"  # what a host that predates the list reads: fewer owners, never more
    (both,) = [e.principal for e in list_tokens(tokens) if e.principal.name == "both"]
    assert both.owner_prefixes == ("team:", "user:") and both.within == ("team:", "user:")
    assert both.character is None


def test_two_prefixes_reach_both_and_not_a_third(scoped):
    client, secrets, _ = scoped
    token = secrets["both"]
    for owner in ("user:ann", "team:red"):
        _write(client, owner, "plan", token)
        assert client.get(f"/api/v1/owners/{owner}/files", headers=auth(token)).status_code == 200
    for call in (lambda: client.get("/api/v1/owners/org:acme/files", headers=auth(token)),
                 lambda: client.put("/api/v1/owners/org:acme/items/notes/x", headers=auth(token),
                                    json={"content": "x"}),
                 lambda: client.put("/api/v1/owners/org:new", headers=auth(token))):
        r = call()
        assert r.status_code == 403
        assert r.get_json()["error"]["message"].endswith("starts with 'team:' or 'user:'")
    assert client.put("/api/v1/owners/team:blue", headers=auth(token)).status_code == 201


def test_listings_are_scoped_to_both_prefixes(scoped):
    client, secrets, _ = scoped
    for owner in OWNERS:
        _write(client, owner, "bad", run="run_bad", actor="bad-bot")
        _write(client, owner, "maybe", staged=True, run="run_staged")
    token = secrets["both"]
    owners = client.get("/api/v1/owners", headers=auth(token)).get_json()["owners"]
    assert [o["id"] for o in owners] == ["team:red", "user:ann"]
    assert [o["id"] for o in client.get("/api/v1/owners?prefix=user:", headers=auth(token)).get_json()["owners"]] \
        == ["user:ann"]
    assert client.get("/api/v1/owners?prefix=org:", headers=auth(token)).get_json()["owners"] == []
    runs = client.get("/api/v1/runs?run=run_bad&by=owner", headers=auth(token)).get_json()
    assert sorted(o["owner"] for o in runs["owners"]) == ["team:red", "user:ann"]
    assert client.get("/api/v1/runs?run=run_bad", headers=auth(token)).get_json()["total"]["owners"] == 2
    assert client.get("/api/v1/runs?run=run_bad", headers=auth(ADMIN)).get_json()["total"]["owners"] == 3
    staged = client.get("/api/v1/staged", headers=auth(token)).get_json()
    assert [(r["run"], r["owners"]) for r in staged["runs"]] == [("run_staged", 2)]
    copies = client.get("/api/v1/staged/run_staged", headers=auth(token)).get_json()["owners"]
    assert sorted(c["owner"] for c in copies) == ["team:red", "user:ann"]


def test_a_bulk_rollback_over_both_prefixes_is_that_tokens_job(scoped):
    client, secrets, _ = scoped
    for owner in OWNERS:
        _write(client, owner, "spam", run="run_spam", actor="spam-bot")
    token = secrets["both"]
    preview = client.post("/api/v1/bulk/rollback", headers=auth(token),
                          json={"actor": "spam-bot", "preview": True}).get_json()
    assert sorted(o["owner"] for o in preview["owners"]) == ["team:red", "user:ann"]
    r = client.post("/api/v1/bulk/rollback", headers=auth(token, **{"Idempotency-Key": "k1"}),
                    json={"actor": "spam-bot"})
    assert r.status_code == 202, r.get_json()
    job = r.json
    again = client.post("/api/v1/bulk/rollback", headers=auth(token, **{"Idempotency-Key": "k1"}),
                        json={"actor": "spam-bot"})
    assert again.json["id"] == job["id"]  # the same key, the same job: the stored scope compares equal
    assert finished_job(client, job)["state"] == "done"
    assert client.get(f"/api/v1/jobs/{job['id']}", headers=auth(token)).status_code == 200
    assert job["id"] in [j["id"] for j in client.get("/api/v1/jobs", headers=auth(token)).get_json()["jobs"]]
    # A token over user: alone does not see a job that reached team: too.
    assert client.get(f"/api/v1/jobs/{job['id']}", headers=auth(secrets["one"])).status_code == 404
    assert job["id"] not in [j["id"] for j in client.get("/api/v1/jobs", headers=auth(secrets["one"])).json["jobs"]]
    left = client.get("/api/v1/owners/org:acme/items/notes/spam", headers=auth(ADMIN))
    assert left.status_code == 200  # the third prefix's owner was never selected


def test_a_character_tokens_principal_carries_the_character(scoped):
    _, secrets, tokens = scoped
    principal = TokenFile(tokens).authenticate(secrets["kai"])
    assert principal.character == "kai" and principal.owner_prefixes == ("team:", "user:")
    assert principal.name == "kai-worker" and principal.has("write") and not principal.has("admin")


def test_a_character_token_cannot_sign_in_to_the_admin_ui(tmp_path, capsys):
    from webapp import create_app

    tokens = tmp_path / "tokens.jsonl"
    secret = _mint(capsys, tokens, "kai-admin", "--scope", "admin", "--character", "kai")
    plain = _mint(capsys, tokens, "plain-admin", "--scope", "admin")
    app = create_app({"TESTING": True, "WTF_CSRF_ENABLED": False, "DATA_ROOT": str(tmp_path / "data"),
                      "TOKENS_FILE": str(tokens), "SECRET_KEY": "s" * 40})
    client = app.test_client()
    refused = client.post("/login", data={"token": secret})
    assert refused.status_code == 403 and b"speaks as a character" in refused.data
    assert client.post("/login", data={"token": plain}).status_code in (302, 303)


def test_old_token_files_still_read(tmp_path):
    path = tmp_path / "tokens.jsonl"
    old = {"name": "w", "sha256": "a" * 64, "scopes": ["read"], "owner_prefix": "user:", "created": ""}
    older = {"name": "v", "sha256": "b" * 64, "scopes": ["write"]}  # no prefix at all: every owner
    path.write_text(json.dumps(old) + "\n" + json.dumps(older) + "\n")
    w, v = (e.principal for e in list_tokens(path))
    assert (w.owner_prefixes, w.owner_prefix, w.character) == (("user:",), "user:", None)
    assert (v.owner_prefixes, v.owner_prefix, v.within) == (("",), "", "")
    assert w.may_access("user:x") and not w.may_access("team:x") and v.may_access("team:x")


@pytest.mark.parametrize("bad", [
    {"character": "Kai"}, {"character": ""}, {"character": "k" * 65}, {"character": 5}, {"character": "-kai"},
    {"owner_prefixes": []}, {"owner_prefixes": "user:"}, {"owner_prefixes": ["user:", 3]},
    {"owner_prefixes": ["x" * 129]},
])
def test_a_line_with_a_malformed_character_or_prefixes_is_skipped(tmp_path, bad):
    path = tmp_path / "tokens.jsonl"
    line = {"name": "w", "sha256": "c" * 64, "scopes": ["read"], **bad}
    path.write_text(json.dumps(line) + "\n")
    assert list_tokens(path) == []  # never a token without the limits its line meant to set


@pytest.mark.parametrize("character", ["Kai", "kai mira", "-kai", "k" * 65, "../kai", ""])
def test_a_malformed_character_id_is_refused_at_mint(tmp_path, capsys, character):
    path = tmp_path / "tokens.jsonl"
    with pytest.raises(InvalidName, match="character id"):
        mint_token("w", ["read"], character=character)
    assert cli(["token", "mint", "w", "--scope", "read", f"--character={character}", "--file", str(path)]) == 2
    assert "invalid character id" in capsys.readouterr().err
    assert not path.exists() or path.read_text() == ""


def test_rotation_keeps_the_prefixes_and_the_character(tmp_path):
    path = tmp_path / "tokens.jsonl"
    _, entry = mint_token("kai-worker", ["write"], ["user:", "team:"], character="kai")
    append_token(path, entry)
    done = rotate_token(path, "kai-worker")
    assert done.new.principal.owner_prefixes == ("team:", "user:") and done.new.principal.character == "kai"


def test_token_list_shows_the_prefixes_and_the_character(scoped, capsys):
    _, _, tokens = scoped
    assert cli(["token", "list", "--file", str(tokens)]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[:5] == ["ID", "NAME", "SCOPES", "OWNERS", "CHARACTER"]
    shown = {r.split()[1]: r.split()[3:5] for r in rows}
    assert shown == {"both": ["team:*,user:*", "-"], "one": ["user:*", "-"], "kai-worker": ["team:*,user:*", "kai"]}


def test_mint_prints_what_the_token_reaches(tmp_path, capsys):
    path = tmp_path / "tokens.jsonl"
    assert cli(["token", "mint", "w", "--scope", "read", "--owner-prefix", "user:", "--owner-prefix", "team:",
                "--character", "mira", "--file", str(path)]) == 0
    err = capsys.readouterr().err
    assert "owners team:* or user:*" in err and "as character mira" in err


def test_a_peer_listing_carries_both_prefixes(scoped):
    """Behind a cluster, the peers list for the caller's scope, signed into a header: both prefixes travel."""
    from webapp.peering import PEER_HEADER, forward_for, listing_scope

    client, secrets, _ = scoped
    app = client.application
    app.config["PEER_SET"] = ("http://127.0.0.1:1",)  # any peers: forward_for signs only when there are some
    with app.test_request_context("/api/v1/owners", headers=auth(secrets["both"])):
        headers = forward_for(listing_scope())
    with app.test_request_context("/api/v1/owners", headers=headers):
        assert listing_scope() == ("team:", "user:")  # what the peer lists for: both, from the signed header
    with app.test_request_context("/api/v1/owners", headers=auth(secrets["one"])):
        with app.test_request_context("/api/v1/owners", headers=forward_for(listing_scope())):
            assert listing_scope() == "user:"
    assert PEER_HEADER in headers
