"""Reading API requests: the JSON body, query parameters, and the write headers.

The rule of :mod:`webapp.errors`: a request of the wrong *shape* (not JSON,
a field missing, unknown or of the wrong JSON type, a header or cursor not of
its syntax) raises :class:`BadRequest` (400); a value of the right type that
is refused (out of its range, too long, not a commit point) raises
:class:`~wikimem.errors.InvalidValue` (422). Names, dates and times are the
library's to judge (:class:`~wikimem.errors.InvalidName`, 422 too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any, overload

from flask import request

from wikimem.errors import InvalidValue
from wikimem.host import Ask, BadRequest
from wikimem.naming import validate_channel_id, validate_present

__all__ = ["json_body", "opt_str", "opt_bool", "opt_int", "opt_number", "opt_str_list", "query_int", "query_str",
           "int_in_range", "offset_cursor", "if_match", "if_none_match", "etag_value", "idempotency_key", "point",
           "ask_of", "opt_room", "WRITE_FIELDS", "ROOM_FIELDS"]

WRITE_FIELDS = {"run", "actor", "source_conv"}
# Where a diary entry was said and who was there (SPEC §11, "Channels").
ROOM_FIELDS = {"channel", "present"}
_KEY_RE = re.compile(r"[\x21-\x7e]{1,200}")
_ETAG_RE = re.compile(r'^(?:W/)?"?([^"]*)"?$')
_OFFSET_RE = re.compile(r"[0-9]{1,10}")
_POINT_RE = re.compile(r"[0-9A-Za-z:+.\-_~^ ]{1,64}")
MAX_FIELD_CHARS = 200


def json_body(allowed: set[str], required: Collection[str] = frozenset(), *, optional_body: bool = False,
              one_of: tuple[str, ...] = ()) -> dict[str, Any]:
    """The request's JSON object, with only ``allowed`` keys, every ``required`` one, and exactly one of ``one_of``."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        if optional_body and not required:
            return {}
        raise BadRequest("the request body must be a JSON object")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the request body is not valid JSON: {getattr(exc, 'msg', 'undecodable')}") from None
    except RecursionError:  # [[[[… a thousand levels deep: no request of ours nests like that
        raise BadRequest("the request body is nested too deeply") from None
    if not isinstance(data, dict):
        raise BadRequest("the request body must be a JSON object")
    unknown = sorted(set(data) - allowed)
    missing = sorted(k for k in required if k not in data)
    given = [k for k in one_of if data.get(k) is not None]
    if one_of and not given:
        missing.append(f"{one_of[0]} (or {' or '.join(one_of[1:])})")
    problems = [f"unknown field(s): {', '.join(unknown)}"] * bool(unknown)
    if len(given) > 1:
        problems.append(f"give only one of {', '.join(one_of)}")
    problems += [f"missing field(s): {', '.join(missing)}"] * bool(missing)
    if problems:  # both at once: a misspelt field ("q") is usually the missing one ("query")
        raise BadRequest("; ".join(problems) + f" (allowed: {', '.join(sorted(allowed))})")
    return data


def opt_str(data: dict, key: str, *, limit: int | None = None) -> str | None:
    """A string field (None when absent or null)."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{key} must be a string")
    if limit is not None and len(value) > limit:
        raise InvalidValue(f"{key} is longer than {limit} characters")
    return value


def req_str(data: dict, key: str) -> str:
    value = opt_str(data, key)
    if value is None:
        raise BadRequest(f"{key} must be a string")
    return value


def opt_bool(data: dict, key: str, default: bool) -> bool:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BadRequest(f"{key} must be true or false")
    return value


def opt_int(data: dict, key: str, *, minimum: int | None = None, maximum: int | None = None) -> int | None:
    """An integer field (None when absent or null), within ``[minimum, maximum]`` (as the OpenAPI schema says)."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{key} must be an integer")
    if minimum is not None and value < minimum:
        raise InvalidValue(f"{key} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InvalidValue(f"{key} must be at most {maximum}, got {value}")
    return value


def opt_number(data: dict, key: str) -> float | None:
    """A number field (None when absent or null)."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"{key} must be a number")
    return float(value)


def opt_str_list(data: dict, key: str, length: int) -> list[str] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != length or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"{key} must be a list of {length} strings")
    return value


def opt_room(data: dict) -> dict[str, Any]:
    """A body's ``channel`` (a string) and ``present`` (a list of strings) as keyword arguments, when given; the
    ids are the library's to judge (:func:`wikimem.naming.validate_channel_id`, ``validate_present``: 422)."""
    out: dict[str, Any] = {}
    channel, present = data.get("channel"), data.get("present")
    if channel is not None:
        if not isinstance(channel, str):
            raise BadRequest("channel must be a string: a channel id, or dm for a direct chat")
        out["channel"] = validate_channel_id(channel)
    if present is not None:
        if not isinstance(present, list) or not all(isinstance(one, str) for one in present):
            raise BadRequest("present must be a list of ids (owner ids, char:<character>)")
        out["present"] = validate_present(present)
    return out


def query_str(name: str, *, limit: int = MAX_FIELD_CHARS) -> str | None:
    value = request.args.get(name)
    if value is None or value == "":
        return None
    if len(value) > limit:
        raise InvalidValue(f"query parameter {name} is longer than {limit} characters")
    return value


def query_int(name: str, default: int, lo: int, hi: int) -> int:
    """An integer query parameter within ``[lo, hi]`` (the default when absent)."""
    return int_in_range(request.args.get(name), name, default, lo, hi)


@overload
def int_in_range(raw: str | None, name: str, default: int, lo: int, hi: int) -> int: ...
@overload
def int_in_range(raw: str | None, name: str, default: None, lo: int, hi: int) -> int | None: ...
def int_in_range(raw: str | None, name: str, default: int | None, lo: int, hi: int) -> int | None:
    """A whole number from ``lo`` to ``hi`` given as text (a query or form field); blank → ``default``."""
    text = (raw or "").strip()
    if not text:
        return default
    try:
        number = int(text)
    except ValueError:
        raise BadRequest(f"{name} must be a whole number from {lo} to {hi}, got {text[:40]!r}") from None
    if not lo <= number <= hi:
        raise InvalidValue(f"{name} must be a whole number from {lo} to {hi}, got {number}")
    return number


def offset_cursor(raw: str | None) -> int:
    """A page cursor that is an offset (what a previous page gave as ``next``); anything else is malformed."""
    text = (raw or "").strip()
    if not text:
        return 0
    if not _OFFSET_RE.fullmatch(text):
        raise BadRequest(f"invalid cursor {text[:40]!r}: give the next of a previous page")
    return int(text)


def point(value: str | None, what: str) -> str:
    """A commit id, prefix, ISO time or ``HEAD`` as sent (the git layer resolves it)."""
    if value is None:
        raise BadRequest(f"{what} must be a commit id, an ISO-8601 time or HEAD")
    if not _POINT_RE.fullmatch(value):
        raise InvalidValue(f"{what} must be a commit id, an ISO-8601 time or HEAD")
    return value


def ask_of(data: dict, *, create_only: bool = False, layered: bool = False) -> Ask:
    """What a write request says of itself: ``run``, ``actor``, ``source_conv`` and ``staged`` of its body,
    ``Idempotency-Key`` and ``If-Match`` of its headers (and ``If-None-Match: *`` with ``create_only``, the routes
    that take it), and with ``layered`` the character's layer it writes (its ``character``: a memory write). The
    host's gate makes the write context of it (:meth:`wikimem.host.Gate.act`)."""
    run, actor, conv = (opt_str(data, k, limit=MAX_FIELD_CHARS) for k in ("run", "actor", "source_conv"))
    match, none_match = if_match(), create_only and if_none_match()
    if match is not None and none_match:
        raise BadRequest("give If-Match (the item as you saw it) or If-None-Match: * (it must not exist), not both")
    staged = opt_bool(data, "staged", False) if "staged" in data else None
    return Ask(run=run, actor=actor, source_conv=conv, idempotency_key=idempotency_key(), if_match=match,
               if_none_match=none_match, staged=staged, layer=character_asked(data) if layered else None)


def character_asked(data: dict | None = None) -> str | None:
    """The character's layer a call addresses: the body's ``character``, else the query parameter (the host's gate
    judges the id and whether the caller may reach it)."""
    body = opt_str(data, "character", limit=100) if data else None
    return body if body is not None else query_str("character", limit=100)


def if_none_match() -> bool:
    """Create-only: ``If-None-Match: *`` (the item must not exist yet); any other value is malformed here."""
    raw = request.headers.get("If-None-Match")
    if raw is None:
        return False
    if raw.strip() != "*":
        raise BadRequest("If-None-Match on a write takes only * (create the item only if it does not exist)")
    return True


def if_match() -> str | None:
    """The ``If-Match`` precondition (an item etag or a commit id), unquoted; ``*`` is none."""
    return etag_value(request.headers.get("If-Match"), "If-Match")


def etag_value(raw: str | None, what: str = "if_match") -> str | None:
    """An etag or commit id as sent (``"abc"``, ``abc`` or ``W/"abc"``), unquoted; blank or ``*`` is none."""
    if raw is None or raw.strip() in ("", "*"):
        return None
    m = _ETAG_RE.match(raw.strip())
    if m is None or not m.group(1) or len(m.group(1)) > 128:
        raise BadRequest(f"{what} must be one etag or commit id")
    return m.group(1)


def idempotency_key() -> str | None:
    """The ``Idempotency-Key`` header: 1-200 printable ASCII characters, or absent."""
    raw = request.headers.get("Idempotency-Key")
    if raw is None:
        return None
    if not _KEY_RE.fullmatch(raw):
        raise BadRequest("Idempotency-Key must be 1-200 printable ASCII characters without spaces")
    return raw


def prefers(preference: str) -> bool:
    """Whether the request's ``Prefer`` header (RFC 7240) asks for ``preference`` (e.g. ``respond-async``)."""
    for header in request.headers.getlist("Prefer"):
        for part in header.split(","):
            if part.split(";", 1)[0].split("=", 1)[0].strip().lower() == preference:
                return True
    return False
