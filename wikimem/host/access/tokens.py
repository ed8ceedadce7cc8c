"""API tokens: scopes, owner-id prefixes, and the hashed tokens file.

The tokens file (``WIKIMEM_TOKENS_FILE``) is JSON Lines, one token a line;
blank lines and lines starting with ``#`` are ignored::

    {"name": "worker-1", "sha256": "<64 hex>", "scopes": ["read", "write"], "owner_prefix": "user:"}

- ``name``: who the token belongs to; it becomes the default ``actor`` of
  the writes made with it.
- ``sha256``: the hex SHA-256 of the token's secret (UTF-8). The secret
  itself is never stored; it is shown once, when minted. A fast hash is
  right here because secrets are 256-bit random strings, not passwords.
- ``scopes``: any of ``read``, ``write``, ``admin``. ``admin`` implies
  ``write``, ``write`` implies ``read``.
- ``owner_prefix`` (optional, default ``""``): the token only reaches owners
  whose id starts with it.
- ``created`` (set when minted, e.g. ``"2026-07-21T06:30:00+00:00"``): when
  the token was minted.
- ``revoked`` (set by ``wikimem token revoke``): the time the token was
  revoked; a revoked token authenticates nothing. The line stays, so
  ``wikimem token list --all`` can still show who had which token.

A token's **id** is the first 16 hex digits of its ``sha256``: what
``wikimem token list`` shows and ``wikimem token revoke`` accepts, and what
an admin UI session signed in with the token remembers. It tells nothing
about the secret.

The file is re-read when it changes (:class:`~wikimem.host.access.credfile.WatchedFile`),
in every worker, so a token minted or revoked while the host runs works, or
stops working, on the next request. A malformed line is skipped with a
warning rather than locking everyone out.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from wikimem.locking import FileLock
from wikimem.naming import validate_provenance

from .credfile import WatchedFile, edit_lines

__all__ = ["SCOPES", "Principal", "TokenEntry", "hash_secret", "token_id", "mint_token", "TokenFile",
           "append_token", "check_scopes", "list_tokens", "revoke_tokens"]

SCOPES = ("read", "write", "admin")
_IMPLIED = {"admin": {"admin", "write", "read"}, "write": {"write", "read"}, "read": {"read"}}
TOKEN_PREFIX = "wmk_"
ID_LEN = 16
# The id of the plain admin token of the environment (``WIKIMEM_ADMIN_TOKEN``) is its hash's too.
ENV_ADMIN_NAME = "admin"


@dataclass(frozen=True)
class Principal:
    """Who made a request: a name, scopes, and the owner ids they may reach."""

    name: str
    scopes: frozenset[str]
    owner_prefix: str = ""
    token_id: str = ""

    def has(self, scope: str) -> bool:
        """Whether the principal holds ``scope`` (directly or implied)."""
        return any(scope in _IMPLIED[s] for s in self.scopes if s in _IMPLIED)

    def may_access(self, owner_id: str) -> bool:
        return owner_id.startswith(self.owner_prefix)


@dataclass(frozen=True)
class TokenEntry:
    """One token of the file as stored: its hash, what it may do, and whether it was revoked."""

    sha256: str
    principal: Principal
    created: str = ""
    revoked: str = ""

    @property
    def id(self) -> str:
        return self.sha256[:ID_LEN]


def hash_secret(secret: str) -> str:
    """The stored form of a token secret (hex SHA-256)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def token_id(sha256: str) -> str:
    """The public id of a token: the first 16 hex digits of its hash."""
    return sha256[:ID_LEN]


def check_scopes(scopes: Iterable[str]) -> frozenset[str]:
    """A valid, non-empty set of scopes, or ValueError."""
    out = frozenset(scopes)
    bad = sorted(out - set(SCOPES))
    if bad or not out:
        raise ValueError(f"scopes must be a non-empty subset of {', '.join(SCOPES)}; got {sorted(out)}")
    return out


def mint_token(name: str, scopes: Iterable[str], owner_prefix: str = "") -> tuple[str, dict]:
    """A new token: ``(secret, entry)``; store the entry, show the secret once."""
    # The name is the default actor of the token's writes: a provenance value (one line of visible text).
    if validate_provenance(name, "token name", limit=100) is None:
        raise ValueError("token name must be a non-empty single line of at most 100 characters")
    if not isinstance(owner_prefix, str) or len(owner_prefix) > 128:
        raise ValueError("owner prefix must be a string of at most 128 characters")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    entry = {
        "name": name.strip(),
        "sha256": hash_secret(secret),
        "scopes": sorted(check_scopes(scopes), key=SCOPES.index),
        "owner_prefix": owner_prefix,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    return secret, entry


def append_token(path: Path | str, entry: dict) -> None:
    """Add an entry to a tokens file (created 0600 if missing), safe against concurrent minting."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(entry, ensure_ascii=False) + "\n"
    with FileLock(path.with_name(path.name + ".lock")).hold():
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)


def _parse_entry(raw: dict) -> TokenEntry | None:
    name, digest, scopes = raw.get("name"), raw.get("sha256"), raw.get("scopes")
    prefix = raw.get("owner_prefix", "") or ""
    created, revoked = raw.get("created") or "", raw.get("revoked") or ""
    if not (isinstance(name, str) and isinstance(digest, str) and isinstance(scopes, list)
            and isinstance(prefix, str) and isinstance(created, str) and isinstance(revoked, str)
            and len(digest) == 64):
        return None
    try:
        bytes.fromhex(digest)
        principal = Principal(name, check_scopes(scopes), prefix, token_id(digest.lower()))
    except ValueError:
        return None
    return TokenEntry(digest.lower(), principal, created, revoked)


class TokenFile:
    """The tokens of a file (re-read when it changes) plus an optional plain admin token."""

    def __init__(self, path: Path | str | None = None, admin_token: str | None = None):
        self._file = WatchedFile(path, _parse_entry, "token entry")
        self.path = self._file.path
        self._admin: TokenEntry | None = None
        if admin_token:
            digest = hash_secret(admin_token)
            self._admin = TokenEntry(digest, Principal(ENV_ADMIN_NAME, frozenset(SCOPES), "", token_id(digest)))

    def _active(self) -> list[TokenEntry]:
        entries = [e for e in self._file.entries() if not e.revoked]
        return [self._admin, *entries] if self._admin is not None else entries

    def authenticate(self, secret: str | None) -> Principal | None:
        """The principal of a token secret, or None. Compares every entry in constant time."""
        if not isinstance(secret, str) or not secret or len(secret) > 512:
            return None
        digest = bytes.fromhex(hash_secret(secret))
        found = None
        for entry in self._active():
            if hmac.compare_digest(digest, bytes.fromhex(entry.sha256)) and found is None:
                found = entry.principal
        return found

    def find(self, token_id_: str) -> TokenEntry | None:
        """The active (not revoked) token with this id, or None."""
        for entry in self._active():
            if hmac.compare_digest(entry.id, token_id_):
                return entry
        return None


def list_tokens(path: Path | str) -> list[TokenEntry]:
    """Every token of a file, revoked ones included, in file order."""
    return WatchedFile(path, _parse_entry, "token entry").entries()


def revoke_tokens(path: Path | str, selector: str, *, every: bool = False) -> list[TokenEntry]:
    """Revoke the token whose id starts with ``selector`` (at least 6 hex digits) or whose name it is.

    A name held by several active tokens is ambiguous: ValueError unless
    ``every``. Returns the tokens revoked (empty if none matched). The file
    is rewritten atomically; every worker sees the change on its next request.
    """
    selector = selector.strip()
    if not selector:
        raise ValueError("give a token id (from `wikimem token list`) or a token name")
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    done: list[TokenEntry] = []

    def matches(entry: TokenEntry) -> bool:
        by_id = len(selector) >= 6 and entry.id.startswith(selector.lower())
        return by_id or entry.principal.name == selector

    def edit(rows: list[dict | str]) -> list[dict | str]:
        hits = [(i, row, e) for i, row in enumerate(rows) if isinstance(row, dict)
                and (e := _parse_entry(row)) is not None and not e.revoked and matches(e)]
        if len(hits) > 1 and not every:
            ids = ", ".join(token_id(row["sha256"]) for _, row, _ in hits)
            raise ValueError(f"{selector!r} matches {len(hits)} tokens ({ids}); "
                             "give an id, or --all to revoke them all")
        for i, row, e in hits:
            rows[i] = {**row, "revoked": stamp}
            done.append(replace(e, revoked=stamp))
        return rows

    edit_lines(path, edit)
    return done
