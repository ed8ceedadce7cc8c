"""The app of the group-chat tests: a chat model on 127.0.0.1, the characters kai and mira, the persons user:ann and
user:bob, and tokens minted as asked (:func:`group_app`)."""

from __future__ import annotations

from pathlib import Path

from apiworld import ADMIN, auth

ANN, BOB = "user:ann", "user:bob"


def group_app(tmp_path: Path, llm, tokens: dict[str, tuple]) -> tuple:
    """``(test client, {token name: secret})``; ``tokens``: name → (owner prefix or prefixes, bound character)."""
    from webapp import create_app
    from wikimem.host.access.tokens import append_token, mint_token

    path = tmp_path / "tokens.jsonl"
    secrets = {}
    for name, (prefix, character) in tokens.items():
        secret, entry = mint_token(name, ["read", "write"], prefix, character=character)
        append_token(path, entry)
        secrets[name] = secret
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(path), "LLM_URL": llm.url, "LLM_MODEL": "fake-chat"})
    client = app.test_client()
    for character in ("kai", "mira"):
        assert client.put(f"/api/v1/characters/{character}", headers=auth(ADMIN),
                          json={"name": character.title()}).status_code == 201
    for person in (ANN, BOB):
        assert client.put(f"/api/v1/owners/{person}", headers=auth(ADMIN)).status_code == 201
    return client, secrets
