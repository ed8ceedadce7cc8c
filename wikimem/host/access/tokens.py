"""API tokens: scopes, owner-id prefixes, and the hashed tokens file.

Design notes: docs/explanation/access.md (``wikimem/host/access/tokens.py``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from wikimem.locking import FileLock
from wikimem.naming import validate_character_id, validate_provenance

from ..owner_ids import Within, prefixes_of, scope_text, within_of
from .credfile import WatchedFile, edit_lines

__all__ = ["SCOPES", "Principal", "TokenEntry", "hash_secret", "token_id", "mint_token", "TokenFile",
           "append_token", "check_scopes", "list_tokens", "revoke_tokens", "rotate_token", "parse_duration",
           "Rotation", "expires_in_words", "check_prefixes", "MAX_PREFIXES"]

SCOPES = ("read", "write", "admin")
_IMPLIED = {"admin": {"admin", "write", "read"}, "write": {"write", "read"}, "read": {"read"}}
TOKEN_PREFIX = "wmk_"
ID_LEN = 16
# The id of the plain admin token of the environment (``WIKIMEM_ADMIN_TOKEN``) is its hash's too.
ENV_ADMIN_NAME = "admin"
# Owner prefixes one token may hold: each is a condition of every listing query it makes.
MAX_PREFIXES = 16


@dataclass(frozen=True)
class Principal:
    """Who made a request: a name, scopes, the owner-id prefixes they may reach (``("",)``: every owner), and
    the character a token speaks as (None: none)."""

    name: str
    scopes: frozenset[str]
    owner_prefixes: tuple[str, ...] = ("",)
    token_id: str = ""
    character: str | None = None

    def __post_init__(self) -> None:  # one canonical form: sorted, none covered by another
        prefixes = prefixes_of(within_of(self.owner_prefixes))
        if not prefixes:
            raise ValueError("a principal reaches at least one owner prefix ('' for every owner)")
        object.__setattr__(self, "owner_prefixes", prefixes)

    @property
    def within(self) -> Within:
        """The scope to list and search with (``within=``): the prefix, or a tuple of them."""
        return within_of(self.owner_prefixes)

    @property
    def owner_prefix(self) -> str:
        """The one owner prefix (``""``: every owner); with several, the first (narrower, never wider: scope
        listings with :attr:`within`)."""
        return self.owner_prefixes[0]

    @property
    def tenant(self) -> str:
        """Whose quota the principal's jobs count against: its scope as one string."""
        return scope_text(self.owner_prefixes)

    def has(self, scope: str) -> bool:
        """Whether the principal holds ``scope`` (directly or implied)."""
        return any(scope in _IMPLIED[s] for s in self.scopes if s in _IMPLIED)

    def may_access(self, owner_id: str) -> bool:
        """Whether ``owner_id`` starts with one of the principal's prefixes."""
        return owner_id.startswith(self.owner_prefixes)

    def prefix_for(self, owner_id: str) -> str | None:
        """The principal's prefix that ``owner_id`` falls under (the longest), or None when it reaches none."""
        under = [p for p in self.owner_prefixes if owner_id.startswith(p)]
        return max(under, key=len) if under else None

    def reach(self) -> str:
        """The owners it reaches, in words (``owners user:* or team:*``, ``every owner``)."""
        if self.owner_prefixes == ("",):
            return "every owner"
        return "owners " + " or ".join(f"{p}*" for p in self.owner_prefixes)


@dataclass(frozen=True)
class TokenEntry:
    """One token of the file as stored: its hash, what it may do, and whether it was revoked."""

    sha256: str
    principal: Principal
    created: str = ""
    revoked: str = ""
    expires: str = ""  # UTC ISO-8601; "" = never
    rotated: str = ""  # id of the token that replaced this one
    expires_at: float | None = None  # ``expires`` as a POSIX time (parsed once, when the file is read)

    @property
    def id(self) -> str:
        return self.sha256[:ID_LEN]

    def expired(self, now: float | None = None) -> bool:
        """Whether the token's expiry has passed."""
        return self.expires_at is not None and (time.time() if now is None else now) >= self.expires_at


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


_DURATION_RE = re.compile(r"(\d+)\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """Seconds of a duration like ``90d``, ``12h``, ``30m``, ``2w``, ``45s`` (ValueError otherwise)."""
    match = _DURATION_RE.fullmatch(str(text).strip().lower())
    if match is None:
        raise ValueError(f"a duration is a number and a unit (s, m, h, d, w), like 90d or 12h; got {text!r}")
    return float(int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def _instant(text: str) -> float | None:
    """A stored ISO-8601 time as a POSIX time (naive = UTC), or None when it is not one."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def check_prefixes(prefixes: str | Iterable[str]) -> tuple[str, ...]:
    """Owner prefixes as a token holds them (canonical; ``("",)`` when none is given), or ValueError."""
    given = [prefixes] if isinstance(prefixes, str) else list(prefixes)
    if len(given) > MAX_PREFIXES:
        raise ValueError(f"a token holds at most {MAX_PREFIXES} owner prefixes")
    for prefix in given:
        if not isinstance(prefix, str) or len(prefix) > 128:
            raise ValueError("an owner prefix must be a string of at most 128 characters")
    return prefixes_of(within_of(given)) if given else ("",)


def mint_token(name: str, scopes: Iterable[str], owner_prefix: str | Iterable[str] = "", *,
               expires_in: float | None = None, character: str | None = None) -> tuple[str, dict]:
    """A new token: ``(secret, entry)``; store the entry, show the secret once.

    ``owner_prefix``: one prefix or several (the token reaches owners under any
    of them). ``expires_in`` (seconds) gives it an ``expires`` time; None: it
    never expires. ``character``: the character id it speaks as (InvalidName
    when malformed).
    """
    # The name is the default actor of the token's writes: a provenance value (one line of visible text).
    if validate_provenance(name, "token name", limit=100) is None:
        raise ValueError("token name must be a non-empty single line of at most 100 characters")
    prefixes = check_prefixes(owner_prefix)
    if character is not None:
        validate_character_id(character)
    if expires_in is not None and (isinstance(expires_in, bool) or not isinstance(expires_in, (int, float))
                                   or not 0 < expires_in < 100 * 365 * 86400):
        raise ValueError(f"a token's lifetime must be a positive duration below 100 years, got {expires_in!r}")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = time.time()
    entry = {
        "name": name.strip(),
        "sha256": hash_secret(secret),
        "scopes": sorted(check_scopes(scopes), key=SCOPES.index),
        "owner_prefix": prefixes[0],  # a host that predates owner_prefixes reaches the first one only
        "created": _stamp(now),
    }
    if len(prefixes) > 1:
        entry["owner_prefixes"] = list(prefixes)
    if character is not None:
        entry["character"] = character
    if expires_in is not None:
        entry["expires"] = _stamp(now + expires_in)
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


def _read_prefixes(raw: dict) -> tuple[str, ...] | None:
    """A line's owner prefixes (``owner_prefixes`` when present, else ``owner_prefix``), None when malformed."""
    many = raw.get("owner_prefixes")
    if many is None:
        many = raw.get("owner_prefix", "") or ""
    elif not isinstance(many, list) or not many:
        return None
    try:
        return check_prefixes(many)
    except ValueError:
        return None


def _read_character(raw: dict) -> tuple[bool, str | None]:
    """``(ok, character)`` of a line: a missing one is None; a malformed one is not ok."""
    character = raw.get("character")
    if character is None:
        return True, None
    try:
        return True, validate_character_id(character)
    except ValueError:
        return False, None


def _parse_entry(raw: dict) -> TokenEntry | None:
    name, digest, scopes = raw.get("name"), raw.get("sha256"), raw.get("scopes")
    prefixes = _read_prefixes(raw)
    ok, character = _read_character(raw)
    if prefixes is None or not ok:
        return None
    created, revoked = raw.get("created") or "", raw.get("revoked") or ""
    expires, rotated = raw.get("expires") or "", raw.get("rotated") or ""
    if not (isinstance(name, str) and isinstance(digest, str) and isinstance(scopes, list)
            and all(isinstance(v, str) for v in (created, revoked, expires, rotated))
            and len(digest) == 64):
        return None
    expires_at = _instant(expires) if expires else None
    if expires and expires_at is None:
        return None  # an expiry we cannot read: the token must not live for ever because of a typo
    try:
        bytes.fromhex(digest)
        principal = Principal(name, check_scopes(scopes), prefixes, token_id(digest.lower()), character)
    except ValueError:
        return None
    return TokenEntry(digest.lower(), principal, created, revoked, expires, rotated, expires_at)


class TokenFile:
    """The tokens of a file (re-read when it changes) plus an optional plain admin token."""

    def __init__(self, path: Path | str | None = None, admin_token: str | None = None):
        self._file = WatchedFile(path, _parse_entry, "token entry")
        self.path = self._file.path
        self._index: tuple[list[TokenEntry], dict[bytes, TokenEntry]] | None = None
        self._admin: TokenEntry | None = None
        if admin_token:
            digest = hash_secret(admin_token)
            self._admin = TokenEntry(digest, Principal(ENV_ADMIN_NAME, frozenset(SCOPES), ("",), token_id(digest)))

    def _unrevoked(self) -> list[TokenEntry]:
        return self._unrevoked_of(self._file.entries())

    def _by_digest(self) -> dict[bytes, TokenEntry]:
        """The unrevoked entries by their secret's SHA-256 (the first of a digest wins), remade whenever the
        file is read again (a mint, a revocation, a rotation: the watched file hands out a new list)."""
        entries = self._file.entries()
        known = self._index
        if known is None or known[0] is not entries:
            index: dict[bytes, TokenEntry] = {}
            for entry in self._unrevoked_of(entries):
                index.setdefault(bytes.fromhex(entry.sha256), entry)
            self._index = known = (entries, index)
        return known[1]

    def _unrevoked_of(self, entries: list[TokenEntry]) -> list[TokenEntry]:
        alive = [e for e in entries if not e.revoked]
        return [self._admin, *alive] if self._admin is not None else alive

    def identify(self, secret: str | None) -> TokenEntry | None:
        """The unrevoked entry of a token secret, expired or not (the caller says which), or None.

        Looked up by the secret's SHA-256 (a hash lookup reveals nothing of a secret), then compared in constant
        time: one request costs the same with one token or thousands.
        """
        if not isinstance(secret, str) or not secret or len(secret) > 512:
            return None
        digest = bytes.fromhex(hash_secret(secret))
        found = self._by_digest().get(digest)
        if found is None or not hmac.compare_digest(digest, bytes.fromhex(found.sha256)):
            return None
        return found

    def authenticate(self, secret: str | None) -> Principal | None:
        """The principal of a token secret, or None (unknown, revoked or expired)."""
        entry = self.identify(secret)
        return None if entry is None or entry.expired() else entry.principal

    def find(self, token_id_: str) -> TokenEntry | None:
        """The active (neither revoked nor expired) token with this id, or None."""
        for entry in self._unrevoked():
            if hmac.compare_digest(entry.id, token_id_):
                return None if entry.expired() else entry
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

    def edit(rows: list[dict | str]) -> list[dict | str]:
        hits = _matching(rows, selector)
        if len(hits) > 1 and not every:
            ids = ", ".join(token_id(_row(rows, i)["sha256"]) for i in hits)
            raise ValueError(f"{selector!r} matches {len(hits)} tokens ({ids}); "
                             "give an id, or --all to revoke them all")
        for i in hits:
            rows[i] = revoked = {**_row(rows, i), "revoked": stamp}
            entry = _parse_entry(revoked)
            assert entry is not None
            done.append(entry)
        return rows

    edit_lines(path, edit)
    return done


def _matching(rows: list[dict | str], selector: str, *, replaced_by_name: bool = True) -> list[int]:
    """Indexes of the unrevoked tokens ``selector`` names: an id prefix (6+ hex digits) or a name
    (a token already rotated away only when ``replaced_by_name``)."""
    def matches(entry: TokenEntry) -> bool:
        by_id = len(selector) >= 6 and entry.id.startswith(selector.lower())
        return by_id or (entry.principal.name == selector and (replaced_by_name or not entry.rotated))

    return [i for i, row in enumerate(rows) if isinstance(row, dict)
            and (e := _parse_entry(row)) is not None and not e.revoked and matches(e)]


def _row(rows: list[dict | str], i: int) -> dict:
    """The JSON object at index ``i`` (one :func:`_matching` found)."""
    row = rows[i]
    assert isinstance(row, dict)
    return row


@dataclass(frozen=True)
class Rotation:
    """What :func:`rotate_token` did: the new token (its secret shown once) and the old one, until when it works."""

    secret: str
    new: TokenEntry
    old: TokenEntry


def rotate_token(path: Path | str, selector: str, *, grace: float = 86400.0) -> Rotation | None:
    """Replace one token by a new secret with the same name, scopes and prefix; the old one expires after ``grace``.

    ``selector`` is an id prefix (6+ hex digits) or a name held by exactly
    one unrevoked token not rotated yet (ValueError when it names several). The new token
    gets the old one's lifetime when it had an expiry. Returns None when
    nothing matched. One atomic rewrite of the file, under its lock.
    """
    selector = selector.strip()
    if not selector:
        raise ValueError("give a token id (from `wikimem token list`) or a token name")
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
        raise ValueError(f"the grace period must be a duration of 0 or more, got {grace!r}")
    done: list[Rotation] = []

    def edit(rows: list[dict | str]) -> list[dict | str]:
        hits = _matching(rows, selector, replaced_by_name=False)  # by name: the token in use, not one on its way out
        if len(hits) > 1:
            ids = ", ".join(token_id(_row(rows, i)["sha256"]) for i in hits)
            raise ValueError(f"{selector!r} matches {len(hits)} tokens ({ids}); give the id of the one to rotate")
        if not hits:
            return rows
        row = _row(rows, hits[0])
        old = _parse_entry(row)
        assert old is not None
        now = time.time()
        created = _instant(old.created) if old.created else None
        lifetime = old.expires_at - created if old.expires_at is not None and created is not None else None
        secret, entry = mint_token(old.principal.name, old.principal.scopes, old.principal.owner_prefixes,
                                   expires_in=lifetime if lifetime and lifetime > 0 else None,
                                   character=old.principal.character)
        until = now + grace if old.expires_at is None else min(old.expires_at, now + grace)
        rows[hits[0]] = replaced = {**row, "expires": _stamp(until), "rotated": token_id(entry["sha256"])}
        new, changed = _parse_entry(entry), _parse_entry(replaced)
        assert new is not None and changed is not None
        done.append(Rotation(secret, new, changed))
        return [*rows, entry]

    edit_lines(path, edit)
    return done[0] if done else None


def expires_in_words(entry: TokenEntry, now: float | None = None) -> str:
    """``never``, ``expired <time>`` or ``<time>``: what a listing shows of a token's expiry."""
    if entry.expires_at is None:
        return "never"
    return f"expired {entry.expires}" if entry.expired(now) else entry.expires
