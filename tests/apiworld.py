"""What tests of the real app share: tokens, request headers, the ``World`` of one test."""

from __future__ import annotations

import time
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


def finished_job(client, job: dict, timeout: float = 60.0) -> dict:
    """The job (as ``GET /api/v1/jobs/<id>`` shows it to the admin) once done or failed, or as it is at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        found = client.get(f"/api/v1/jobs/{job['id']}", headers=auth(ADMIN)).get_json()
        if found["state"] in ("done", "failed") or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def app_with_accounts(tmp_path, admin_token: str, accounts: dict[str, str], password: str):
    """The real Flask app over ``tmp_path/data`` with an admin token and one operator account per
    ``{name: role}``, all with ``password``."""
    from webapp import create_app
    from webapp.session import account_line

    operators = tmp_path / "operators.jsonl"
    operators.write_text("".join(account_line(n, password, "", role) + "\n" for n, role in accounts.items()),
                         encoding="utf-8")
    return create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": admin_token,
                       "OPERATORS_FILE": str(operators)})
