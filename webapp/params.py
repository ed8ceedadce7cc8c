"""Reading API requests: the JSON body, query parameters, and the write headers.

Everything here checks *shape* (a field is missing, unknown, or of the wrong
JSON type → :class:`BadRequest`, 400). Values are the library's to judge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any, overload

from flask import request

from wikimem.context import WriteContext
from wikimem.host import BadRequest

__all__ = ["json_body", "opt_str", "opt_bool", "opt_int", "opt_number", "opt_str_list", "query_int", "query_str",
           "int_in_range", "if_match", "idempotency_key", "point", "write_context", "WRITE_FIELDS"]

WRITE_FIELDS = {"run", "actor", "source_conv"}
_KEY_RE = re.compile(r"[\x21-\x7e]{1,200}")
_ETAG_RE = re.compile(r'^(?:W/)?"?([^"]*)"?$')
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
        raise BadRequest(f"{key} is longer than {limit} characters")
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


def opt_int(data: dict, key: str, *, minimum: int | None = None) -> int | None:
    """An integer field (None when absent or null), at least ``minimum`` when given (as the OpenAPI schema says)."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{key} must be an integer")
    if minimum is not None and value < minimum:
        raise BadRequest(f"{key} must be at least {minimum}, got {value}")
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


def query_str(name: str, *, limit: int = MAX_FIELD_CHARS) -> str | None:
    value = request.args.get(name)
    if value is None or value == "":
        return None
    if len(value) > limit:
        raise BadRequest(f"query parameter {name} is longer than {limit} characters")
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
        raise BadRequest(f"{name} must be a whole number from {lo} to {hi}, got {number}")
    return number


def point(value: str | None, what: str) -> str:
    """A commit id, prefix, ISO time or ``HEAD`` as sent (the git layer resolves it)."""
    if value is None or not _POINT_RE.fullmatch(value):
        raise BadRequest(f"{what} must be a commit id, an ISO-8601 time or HEAD")
    return value


def write_context(data: dict, *, default_actor: str | None = None) -> WriteContext:
    """The context of a write request: ``run``, ``actor``, ``source_conv`` of its body, ``Idempotency-Key``
    and ``If-Match`` of its headers. ``default_actor`` stands in when the body names none."""
    run, actor, conv = (opt_str(data, k, limit=MAX_FIELD_CHARS) for k in ("run", "actor", "source_conv"))
    return WriteContext(run=run, actor=actor or default_actor, source_conv=conv,
                        idempotency_key=idempotency_key(), if_match=if_match())


def if_match() -> str | None:
    """The ``If-Match`` precondition (an item etag or a commit id), unquoted; ``*`` is none."""
    raw = request.headers.get("If-Match")
    if raw is None or raw.strip() in ("", "*"):
        return None
    m = _ETAG_RE.match(raw.strip())
    if m is None or not m.group(1) or len(m.group(1)) > 128:
        raise BadRequest("If-Match must be one etag or commit id")
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
