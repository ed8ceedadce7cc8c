"""Owner ids: the one validation, and the reversible folder-name encoding.

An owner id looks like ``user:xnne``: letters, digits and ``._:@-``, 1–128
characters. On disk it becomes a folder name that is safe everywhere:

- lowercase letters, digits, ``-`` and ``@`` are kept as they are, so
  ``user:xnne`` reads as ``user_3axnne`` in a listing;
- every other character (``A``–``Z``, ``.``, ``:``, ``_``) becomes ``_`` plus
  its two lowercase hex digits, so case-insensitive file systems never fold
  two owners together and no name can start with a dot;
- an id whose readable form would be too long for a file name (many
  escapes) is stored as ``~`` plus its lowercase base32 instead.

The encoding is canonical: :func:`decode_owner_id` accepts a folder name
only if encoding the decoded id gives that exact name back, so a hand-made
folder (``owners/../x``, ``owners/User``) is never mistaken for an owner.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import TypeAlias

from wikimem.errors import InvalidName
from wikimem.naming import MAX_OWNER_ID_LEN, OWNER_ID_RE

__all__ = ["OWNER_ID_RE", "MAX_OWNER_ID_LEN", "validate_owner_id", "encode_owner_id", "decode_owner_id",
           "scope_prefix", "Within", "within_of", "prefixes_of", "reaches", "covers", "scope_prefixes", "scope_text",
           "within_json"]

# The owners a caller may reach: one owner-id prefix ("" = every owner), or several (a tuple; a token's
# ``owner_prefixes``). Jobs keep it in their JSON parameters, where a tuple comes back as a list.
Within: TypeAlias = str | tuple[str, ...]

_KEEP = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-@")
_ESCAPE_RE = re.compile(r"_([0-9a-f]{2})")
# Well under the usual 255-byte limit, leaving room for temp-folder suffixes.
_MAX_READABLE = 200
_B32_PREFIX = "~"


def validate_owner_id(owner_id: object) -> str:
    """Return ``owner_id`` if it is a valid owner id, else raise :class:`InvalidName`."""
    if not isinstance(owner_id, str):
        raise InvalidName(f"owner id must be a string, got {type(owner_id).__name__}")
    if not OWNER_ID_RE.fullmatch(owner_id):
        shown = owner_id if len(owner_id) <= 40 else owner_id[:40] + "…"
        raise InvalidName(
            f"invalid owner id {shown!r}: use 1-{MAX_OWNER_ID_LEN} letters, digits or ._:@-, starting with a "
            "letter or a digit (e.g. user:xnne)"
        )
    return owner_id


def encode_owner_id(owner_id: str) -> str:
    """The folder name of a (valid) owner id."""
    validate_owner_id(owner_id)
    readable = "".join(c if c in _KEEP else f"_{ord(c):02x}" for c in owner_id)
    if len(readable) <= _MAX_READABLE:
        return readable
    return _B32_PREFIX + base64.b32encode(owner_id.encode("ascii")).decode("ascii").rstrip("=").lower()


def decode_owner_id(folder: str) -> str | None:
    """The owner id a folder name encodes, or None if it is not a canonical encoding."""
    try:
        if folder.startswith(_B32_PREFIX):
            body = folder[1:].upper()
            owner_id = base64.b32decode(body + "=" * (-len(body) % 8)).decode("ascii")
        else:
            owner_id = _ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), folder)
        if encode_owner_id(owner_id) != folder:
            return None
    except (ValueError, UnicodeDecodeError):  # binascii.Error and InvalidName are ValueErrors
        return None
    return owner_id


def scope_prefix(allowed: str, wanted: str) -> str | None:
    """The owner-id prefix to list: the caller's scope ``allowed`` narrowed by the search ``wanted``.

    None when the search lies outside the scope (nothing may be listed).
    """
    if wanted.startswith(allowed):
        return wanted
    if allowed.startswith(wanted):
        return allowed
    return None


def prefixes_of(within: Within | list[str]) -> tuple[str, ...]:
    """The prefixes of a scope, as a tuple (``("",)``: every owner)."""
    return (within,) if isinstance(within, str) else tuple(str(p) for p in within)


def within_of(prefixes: Iterable[str] | str) -> Within:
    """A scope in its one canonical form: a single prefix as a string, several as a sorted tuple with no prefix
    that another one already covers (``["user:", "user:a", "team:"]`` → ``("team:", "user:")``)."""
    given = sorted(set(prefixes_of(prefixes if isinstance(prefixes, str) else list(prefixes))))
    kept = tuple(p for p in given if not any(q != p and p.startswith(q) for q in given))
    return kept[0] if len(kept) == 1 else kept


def reaches(within: Within | list[str], owner_id: str) -> bool:
    """Whether ``owner_id`` lies in the scope."""
    return owner_id.startswith(prefixes_of(within))


def covers(within: Within | list[str], inner: Within | list[str]) -> bool:
    """Whether every owner of scope ``inner`` lies in scope ``within`` (each prefix of ``inner`` under one of it)."""
    outer = prefixes_of(within)
    return all(p.startswith(outer) for p in prefixes_of(inner))


def scope_prefixes(within: Within | list[str], wanted: str) -> tuple[str, ...]:
    """The prefixes to list: each of the caller's narrowed by the search ``wanted`` (:func:`scope_prefix`);
    empty when the search lies outside the scope."""
    found = (scope_prefix(p, wanted) for p in prefixes_of(within))
    return prefixes_of(within_of([p for p in found if p is not None]))


def scope_text(within: Within | list[str]) -> str:
    """A scope as one string (a job's tenant, an idempotency key's scope): a single prefix as itself, several
    as a JSON list (no owner id holds ``[`` or ``"``, so the two never meet)."""
    prefixes = prefixes_of(within)
    return prefixes[0] if len(prefixes) == 1 else json.dumps(sorted(prefixes))


def within_json(within: Within | list[str]) -> str | list[str]:
    """A scope as a job's JSON parameters keep it (and give it back): a string, or a sorted list."""
    canonical = within_of(prefixes_of(within))
    return canonical if isinstance(canonical, str) else list(canonical)
