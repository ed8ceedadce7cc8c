"""What tests of the real app share: tokens, request headers, the ``World`` of one test."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

ADMIN = "test-admin-token-0123456789"
OWNER = "user:xnne"


def auth(token: str, **extra) -> dict:
    """Request headers carrying a bearer token (plus any ``extra`` headers)."""
    return {"Authorization": f"Bearer {token}", **extra}


@dataclass
class World:
    """One test's app: the Flask app, its test client, the minted token secrets, the test's tmp folder."""

    app: object
    client: object
    tmp_path: Path
    secrets: dict[str, str] = field(default_factory=dict)
