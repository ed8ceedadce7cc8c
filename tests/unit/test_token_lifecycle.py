"""A token's life: minted with an expiry, rotated with a grace period, refused once expired."""

from __future__ import annotations

import json
import time

import pytest

from wikimem.host.access import (
    TokenFile,
    append_token,
    list_tokens,
    mint_token,
    parse_duration,
    revoke_tokens,
    rotate_token,
)


@pytest.mark.parametrize("text, seconds", [("90d", 90 * 86400), ("12h", 43200), ("30m", 1800), ("2w", 1209600),
                                           ("45s", 45), (" 1D ", 86400)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "d", "90", "1.5d", "-3d", "3y", "90 days"])
def test_a_duration_without_a_number_and_a_unit_is_refused(text):
    with pytest.raises(ValueError, match="like 90d"):
        parse_duration(text)


def test_an_expired_token_is_known_but_authenticates_nothing(tmp_path):
    path = tmp_path / "tokens"
    secret, entry = mint_token("w", ["read"], expires_in=3600)
    append_token(path, entry)
    tokens = TokenFile(path)
    assert tokens.authenticate(secret).name == "w"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["expires"] = "2020-01-01T00:00:00+00:00"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tokens = TokenFile(path)
    assert tokens.authenticate(secret) is None
    found = tokens.identify(secret)
    assert found is not None and found.expired() and found.expires.startswith("2020-01-01")
    assert tokens.find(found.id) is None  # an admin session signed in with it ends too


def test_an_unreadable_expiry_is_not_a_token_for_ever(tmp_path):
    path = tmp_path / "tokens"
    secret, entry = mint_token("w", ["read"])
    append_token(path, {**entry, "expires": "soon"})
    assert TokenFile(path).identify(secret) is None


def test_rotation_keeps_name_scopes_prefix_and_lifetime_and_the_old_secret_works_until_the_grace_ends(tmp_path):
    path = tmp_path / "tokens"
    old_secret, entry = mint_token("worker-1", ["read", "write"], "user:acme:", expires_in=90 * 86400)
    append_token(path, entry)
    before = time.time()
    done = rotate_token(path, "worker-1", grace=3600)
    assert done is not None and done.secret != old_secret
    new = done.new.principal
    assert (new.name, new.scopes, new.owner_prefix) == ("worker-1", frozenset({"read", "write"}), "user:acme:")
    assert done.new.expires_at == pytest.approx(before + 90 * 86400, abs=5)
    assert done.old.expires_at == pytest.approx(before + 3600, abs=5) and done.old.rotated == done.new.id
    tokens = TokenFile(path)
    assert tokens.authenticate(old_secret).name == tokens.authenticate(done.secret).name == "worker-1"
    assert [e.id for e in list_tokens(path)] == [done.old.id, done.new.id]
    # By name, rotation picks the token in use, not the one on its way out.
    again = rotate_token(path, "worker-1", grace=0)
    assert again is not None and again.old.id == done.new.id
    assert TokenFile(path).authenticate(done.secret) is None  # grace 0: refused at once


def test_rotating_an_unknown_or_revoked_token_changes_nothing(tmp_path):
    path = tmp_path / "tokens"
    _, entry = mint_token("w", ["read"])
    append_token(path, entry)
    revoke_tokens(path, "w")
    text = path.read_text()
    assert rotate_token(path, "w") is None and rotate_token(path, "nobody") is None
    assert path.read_text() == text


def test_a_name_held_by_two_tokens_in_use_must_be_rotated_by_id(tmp_path):
    path = tmp_path / "tokens"
    for _ in range(2):
        append_token(path, mint_token("w", ["read"])[1])
    with pytest.raises(ValueError, match="matches 2 tokens"):
        rotate_token(path, "w")


def test_the_token_lookup_follows_every_change_of_the_file(tmp_path):
    """Tokens are found by their digest (issue 39); the map is remade when the file changes: a new token is
    known at once, a revoked or rotated-out one is refused on the next request, the admin token always wins."""
    path = tmp_path / "tokens"
    first, entry = mint_token("bot-a", ["read"])
    append_token(path, entry)
    tokens = TokenFile(path, "admin-secret")
    assert tokens.identify(first).principal.name == "bot-a"
    assert tokens.identify("admin-secret").principal.has("admin")
    second, entry = mint_token("bot-b", ["read", "write"])
    append_token(path, entry)
    assert tokens.identify(second).principal.name == "bot-b"
    assert revoke_tokens(path, "bot-a")
    assert tokens.identify(first) is None
    assert tokens.identify(second).principal.name == "bot-b"
    assert tokens.identify("wrong") is None and tokens.identify(first + "x") is None
    path.unlink()
    assert tokens.identify(second) is None
    assert tokens.identify("admin-secret").principal.has("admin")
