"""Fixtures of the integration tests: the real app over a real data root."""

from __future__ import annotations

import pytest
from apiworld import ADMIN, OWNER, World, auth


@pytest.fixture
def world(tmp_path) -> World:
    """The app over ``tmp_path/data`` with an admin token, three minted tokens, and the owner ``user:xnne``.

    Tokens: ``reader`` (read), ``writer`` (read, write), ``scoped`` (read, write, owners ``user:lu…``).
    """
    from webapp import create_app
    from wikimem.host.access.tokens import append_token, mint_token

    tokens = tmp_path / "tokens.jsonl"
    secrets = {}
    for name, scopes, prefix in (("reader", ["read"], ""), ("writer", ["read", "write"], ""),
                                 ("scoped", ["read", "write"], "user:lu")):
        secret, entry = mint_token(name, scopes, prefix)
        append_token(tokens, entry)
        secrets[name] = secret
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens), "MAX_CONTENT_LENGTH": 64 * 1024})
    client = app.test_client()
    client.put(f"/api/v1/owners/{OWNER}", headers=auth(ADMIN))
    return World(app, client, tmp_path, secrets)
