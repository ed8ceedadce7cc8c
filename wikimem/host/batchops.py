"""Ops: writes sent as data (the API's ``POST …/batch`` body), checked before any lands.

An op is a JSON object:

- ``{"op": "add", "file", "name", "content", "source_conv"?, "ts"?}``
- ``{"op": "remove", "file", "name"}``
- ``{"op": "diary", "content", "ts"?, "date"?, "time"?, "tz"?, "source_conv"?, "channel"?, "present"?, "planned"?}``
  (``present``: a list of ids, persons and ``char:<character>``; the others are strings)

:func:`parse_ops` checks the shape of every op first, so a malformed op
fails the request before anything is written; the library checks names and
values while the batch runs, and any failure there rolls the whole batch back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wikimem.errors import BadRequest, InvalidName, TooLarge
from wikimem.limits import MAX_BATCH_CHARS, MAX_OPS
from wikimem.naming import validate_channel_id, validate_present

__all__ = ["Op", "parse_ops", "check_content", "MAX_OPS"]

_FIELDS = {
    "add": ({"file", "name", "content"}, {"source_conv", "ts"}),
    "remove": ({"file", "name"}, set()),
    "diary": ({"content"}, {"ts", "date", "time", "tz", "source_conv", "channel", "present", "planned"}),
}
_LISTS = {"present"}  # fields that are lists of strings
_BOOLS = {"planned"}  # fields that are true or false


@dataclass(frozen=True)
class Op:
    """One checked op: its kind and its arguments (strings; ``present``: a list of strings)."""

    kind: str
    args: dict[str, Any] = field(default_factory=dict)


def check_content(content: Any, where: str = "content") -> str:
    """An item's content for the host: text with something in it (``ValueError`` → 422 otherwise).

    The library stores an empty item; over the API an empty PUT is almost
    always a bug in the caller, and removing an item is ``DELETE``.
    """
    if isinstance(content, str) and not content.strip():
        raise ValueError(f"{where} is empty: an item needs some text (to remove an item, DELETE it)")
    return content


def _parse_op(n: int, raw: Any) -> Op:
    if not isinstance(raw, dict):
        raise BadRequest(f"ops[{n}] must be an object")
    kind = raw.get("op")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise BadRequest(f"ops[{n}].op must be one of {', '.join(sorted(_FIELDS))}")
    required, optional = _FIELDS[kind]
    args = {k: v for k, v in raw.items() if k != "op"}
    unknown = sorted(set(args) - required - optional)
    if unknown:
        raise BadRequest(f"ops[{n}] ({kind}): unknown field(s) {', '.join(unknown)}")
    missing = sorted(required - set(args))
    if missing:
        raise BadRequest(f"ops[{n}] ({kind}): missing field(s) {', '.join(missing)}")
    for key, value in args.items():
        if value is None and key in optional:
            continue
        if key in _BOOLS:
            if not isinstance(value, bool):
                raise BadRequest(f"ops[{n}].{key} must be true or false")
        elif key in _LISTS:
            if not isinstance(value, list) or not all(isinstance(one, str) for one in value):
                raise BadRequest(f"ops[{n}].{key} must be a list of strings")
        elif not isinstance(value, str):
            raise BadRequest(f"ops[{n}].{key} must be a string")
    if kind == "add":
        check_content(args["content"], f"ops[{n}].content")
    if kind == "diary":
        _check_room(n, args)
    return Op(kind, {k: v for k, v in args.items() if v is not None})


def _check_room(n: int, args: dict[str, Any]) -> None:
    """A diary op's ``channel`` and ``present``, refused (422) before anything of the batch is written."""
    try:
        if args.get("channel") is not None:
            validate_channel_id(args["channel"])
        if args.get("present") is not None:
            validate_present(args["present"])
    except InvalidName as exc:
        raise InvalidName(f"ops[{n}]: {exc}") from None


def parse_ops(ops: Any) -> list[Op]:
    """Check a list of ops; raise :class:`BadRequest` naming the first bad one.

    A batch is one commit under the owner's lock: at most
    :data:`~wikimem.limits.MAX_OPS` ops and :data:`~wikimem.limits.MAX_BATCH_CHARS`
    characters of content in all (:class:`~wikimem.errors.TooLarge`), so it
    holds the lock for a bounded time; split a larger one into several.
    """
    if not isinstance(ops, list) or not ops:
        raise BadRequest("ops must be a non-empty list")
    if len(ops) > MAX_OPS:
        raise TooLarge(f"a batch holds at most {MAX_OPS} ops, got {len(ops)}: split it into several batches")
    checked = [_parse_op(n, raw) for n, raw in enumerate(ops)]
    total = sum(len(op.args.get("content", "")) for op in checked)
    if total > MAX_BATCH_CHARS:
        raise TooLarge(f"a batch holds at most {MAX_BATCH_CHARS:,} characters of content, got {total:,}: "
                       "split it into several batches")
    return checked
