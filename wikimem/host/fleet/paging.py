"""The cursors of the fleet's listings (runs, per-owner counts, jobs): a page's last sort key, encoded opaque
(:func:`encode_cursor`) and read back checked (:func:`decode_cursor`: anything else is a 400)."""

from __future__ import annotations

import base64
import json
from typing import Any

from wikimem.errors import BadRequest

__all__ = ["encode_cursor", "decode_cursor"]

SQLITE_MIN_INT, SQLITE_MAX_INT = -(2**63), 2**63 - 1  # what an INTEGER column (and a bound parameter) holds


def encode_cursor(*key) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key), separators=(",", ":")).encode()).decode().rstrip("=")


def _fits(value: Any, kind: type | tuple[type, ...]) -> bool:
    """A cursor's part of the right type; an integer one within SQLite's (a cursor of ours always is)."""
    if isinstance(value, bool) or not isinstance(value, kind):
        return False
    return not isinstance(value, int) or SQLITE_MIN_INT <= value <= SQLITE_MAX_INT


def decode_cursor(cursor: str, shape: tuple[type | tuple[type, ...], ...]) -> list:
    """The key a cursor of :func:`encode_cursor` holds; anything else is a 400 ``invalid cursor``."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = json.loads(raw)
        if not (isinstance(key, list) and len(key) == len(shape) and all(map(_fits, key, shape))):
            raise ValueError
        return key
    except ValueError:
        raise BadRequest(f"invalid cursor {cursor[:40]!r}") from None
