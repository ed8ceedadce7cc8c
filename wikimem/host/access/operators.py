"""Operator accounts of the admin UI: the accounts file, roles, and the edits the CLI makes.

Design notes: docs/explanation/access.md (``wikimem/host/access/operators.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from wikimem.naming import validate_provenance

from .credfile import WatchedFile, edit_lines

__all__ = ["ROLES", "DEFAULT_ROLE", "LEGACY_ROLE", "Account", "OperatorsFile", "check_role", "role_at_least",
           "check_name", "add_account", "remove_account", "update_account", "list_accounts"]

ROLES = ("reviewer", "operator", "admin")
DEFAULT_ROLE = "reviewer"   # what `wikimem operator add` gives unless told: least privilege
LEGACY_ROLE = "operator"    # a line written before roles existed
MAX_NAME = 64


@dataclass(frozen=True)
class Account:
    """One operator account as stored."""

    name: str
    password_hash: str
    role: str = LEGACY_ROLE
    owner_prefix: str = ""

    def row(self) -> dict:
        return {"name": self.name, "password_hash": self.password_hash, "role": self.role,
                "owner_prefix": self.owner_prefix}


def check_role(role: str) -> str:
    """A valid role, or ValueError."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    return role


def role_at_least(role: str, needed: str) -> bool:
    """Whether ``role`` includes what ``needed`` may do (reviewer < operator < admin)."""
    return role in ROLES and ROLES.index(role) >= ROLES.index(check_role(needed))


def check_name(name: str) -> str:
    """A valid account name, or ValueError: it is the actor of the operator's commits, so a provenance value."""
    if not isinstance(name, str) or not name or name != name.strip():
        raise ValueError(f"an operator name is 1-{MAX_NAME} printable characters without surrounding spaces; "
                         f"got {name!r}")
    validate_provenance(name, "an operator name", limit=MAX_NAME)
    return name


def _parse(row: dict) -> Account | None:
    name, digest = row.get("name"), row.get("password_hash")
    role, prefix = row.get("role", LEGACY_ROLE), row.get("owner_prefix") or ""
    if not (isinstance(name, str) and name and isinstance(digest, str) and digest
            and role in ROLES and isinstance(prefix, str)):
        return None
    return Account(name, digest, role, prefix)


class OperatorsFile:
    """The accounts of a file by name, re-read when the file changes (a later line of a name wins)."""

    def __init__(self, path: Path | str | None):
        self._file = WatchedFile(path, _parse, "operator account")
        self.path = self._file.path
        self._source: list[Account] | None = None
        self._by_name: dict[str, Account] = {}

    def get(self, name: str) -> Account | None:
        entries = self._file.entries()
        if entries is not self._source:  # the file changed: index it again
            self._by_name, self._source = {a.name: a for a in entries}, entries
        return self._by_name.get(name)

    def __bool__(self) -> bool:
        return self.path is not None


def list_accounts(path: Path | str) -> list[Account]:
    """The accounts of a file, one per name, in file order."""
    by_name: dict[str, Account] = {}
    for account in WatchedFile(path, _parse, "operator account").entries():
        by_name.pop(account.name, None)
        by_name[account.name] = account
    return list(by_name.values())


def _named(rows: list, name: str) -> list[int]:
    return [i for i, row in enumerate(rows) if isinstance(row, dict) and row.get("name") == name]


def add_account(path: Path | str, account: Account) -> None:
    """Add an account; ValueError if the name is taken (change it with :func:`update_account`)."""
    check_name(account.name)
    check_role(account.role)

    def edit(rows: list) -> list:
        if _named(rows, account.name):
            raise ValueError(f"operator {account.name!r} exists already (change it with `wikimem operator "
                             "role` or `passwd`, or remove it first)")
        return [*rows, account.row()]

    edit_lines(path, edit)


def remove_account(path: Path | str, name: str) -> bool:
    """Remove every line of the account; False if there was none."""
    found: list[int] = []

    def edit(rows: list) -> list:
        found.extend(_named(rows, name))
        return [row for i, row in enumerate(rows) if i not in set(found)]

    edit_lines(path, edit)
    return bool(found)


def update_account(path: Path | str, name: str, *, role: str | None = None,
                   password_hash: str | None = None) -> Account:
    """Change an account's role and/or password hash; LookupError if there is no such account."""
    if role is not None:
        check_role(role)
    result: list[Account] = []

    def edit(rows: list) -> list:
        parsed = [(i, old) for i in _named(rows, name) if (old := _parse(rows[i])) is not None]
        if not parsed:
            raise LookupError(f"no operator {name!r}")
        old = parsed[-1][1]  # the line that counts
        new = replace(old, role=role or old.role, password_hash=password_hash or old.password_hash)
        result.append(new)
        hits = {i for i, _ in parsed}
        keep = [row for i, row in enumerate(rows) if i not in hits]
        return [*keep, new.row()]

    edit_lines(path, edit)
    return result[0]
