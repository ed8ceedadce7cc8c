"""API tokens: scopes, owner-id prefixes, and the hashed tokens file.

The tokens file (``WIKIMEM_TOKENS_FILE``) is JSON Lines, one token a line;
blank lines and lines starting with ``#`` are ignored::

    {"name": "worker-1", "sha256": "<64 hex>", "scopes": ["read", "write"], "owner_prefix": "user:", "created": "2026-07-21T06:30:00+00:00"}

- ``name``: who the token belongs to; it becomes the default ``actor`` of
  the writes made with it.
- ``sha256``: the hex SHA-256 of the token's secret (UTF-8). The secret
  itself is never stored; it is shown once, when minted. A fast hash is
  right here because secrets are 256-bit random strings, not passwords.
- ``scopes``: any of ``read``, ``write``, ``admin``. ``admin`` implies
  ``write``, ``write`` implies ``read``.
- ``owner_prefix`` (optional, default ``""``): the token only reaches owners
  whose id starts with it.

The file is re-read when it changes, so a token minted while the host runs
(``wikimem token``) works at once. A malformed line is skipped with a warning
rather than locking everyone out.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from ..locking import FileLock

__all__ = ["SCOPES", "Principal", "hash_secret", "mint_token", "TokenFile", "append_token", "check_scopes"]

log = logging.getLogger(__name__)

SCOPES = ("read", "write", "admin")
_IMPLIED = {"admin": {"admin", "write", "read"}, "write": {"write", "read"}, "read": {"read"}}
TOKEN_PREFIX = "wmk_"


@dataclass(frozen=True)
class Principal:
    """Who made a request: a name, scopes, and the owner ids they may reach."""

    name: str
    scopes: frozenset[str]
    owner_prefix: str = ""

    def has(self, scope: str) -> bool:
        """Whether the principal holds ``scope`` (directly or implied)."""
        return any(scope in _IMPLIED[s] for s in self.scopes if s in _IMPLIED)

    def may_access(self, owner_id: str) -> bool:
        return owner_id.startswith(self.owner_prefix)


def hash_secret(secret: str) -> str:
    """The stored form of a token secret (hex SHA-256)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def check_scopes(scopes: Iterable[str]) -> frozenset[str]:
    """A valid, non-empty set of scopes, or ValueError."""
    out = frozenset(scopes)
    bad = sorted(out - set(SCOPES))
    if bad or not out:
        raise ValueError(f"scopes must be a non-empty subset of {', '.join(SCOPES)}; got {sorted(out)}")
    return out


def mint_token(name: str, scopes: Iterable[str], owner_prefix: str = "") -> tuple[str, dict]:
    """A new token: ``(secret, entry)``; store the entry, show the secret once."""
    if not isinstance(name, str) or not name.strip() or len(name) > 100 or "\n" in name:
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


def _parse_entry(raw: object) -> tuple[bytes, Principal] | None:
    if not isinstance(raw, dict):
        return None
    name, digest, scopes = raw.get("name"), raw.get("sha256"), raw.get("scopes")
    prefix = raw.get("owner_prefix", "") or ""
    if not (isinstance(name, str) and isinstance(digest, str) and isinstance(scopes, list)
            and isinstance(prefix, str) and len(digest) == 64):
        return None
    try:
        return bytes.fromhex(digest), Principal(name, check_scopes(scopes), prefix)
    except ValueError:
        return None


class TokenFile:
    """The tokens of a file (re-read when it changes) plus an optional plain admin token."""

    def __init__(self, path: Path | str | None = None, admin_token: str | None = None):
        self.path = Path(path) if path else None
        self._admin = bytes.fromhex(hash_secret(admin_token)) if admin_token else None
        self._entries: list[tuple[bytes, Principal]] = []
        self._stamp: tuple | None = None
        self._lock = threading.Lock()

    def _load(self) -> list[tuple[bytes, Principal]]:
        if self.path is None:
            return []
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return []
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            if stamp != self._stamp:
                self._entries, self._stamp = self._read(), stamp
            return self._entries

    def _read(self) -> list[tuple[bytes, Principal]]:
        out = []
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("cannot read tokens file %s: %s", self.path, exc)
            return out
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                parsed = _parse_entry(json.loads(line))
            except ValueError:
                parsed = None
            if parsed is None:
                log.warning("tokens file %s line %d is not a valid token entry; skipped", self.path, n)
            else:
                out.append(parsed)
        return out

    def authenticate(self, secret: str | None) -> Principal | None:
        """The principal of a token secret, or None. Compares every entry in constant time."""
        if not isinstance(secret, str) or not secret or len(secret) > 512:
            return None
        digest = bytes.fromhex(hash_secret(secret))
        found = None
        if self._admin is not None and hmac.compare_digest(digest, self._admin):
            found = Principal("admin", frozenset(SCOPES), "")
        for stored, principal in self._load():
            if hmac.compare_digest(digest, stored) and found is None:
                found = principal
        return found
