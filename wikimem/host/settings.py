"""Per-owner settings: what a bot sets once per user instead of on every call.

Stored in the owner's repository as ``settings.json`` (:mod:`wikimem.format.codec`),
so every change is a commit in the owner's history. A value left unset falls
back to the host's default.

==============  ===========================================================================
``tz``          IANA time zone (``Asia/Shanghai``): the calendar of diary writes, memorize
                and time words in retrieval (昨天, 上周三) when a request gives no ``tz``
``character``   who writes the diary in memorize when a request names no ``character``
``dm_with_others``  true: what this person said in a direct chat may be recalled when others
                are in the room (SPEC §11; default false)
``definition``  only on a character's own owner (``char:<id>``), written by the registry
                (:mod:`wikimem.host.characters`): ``name``, ``persona``, ``shared_writes``,
                ``deleted``, ``updated`` — so a definition change is a commit there
==============  ===========================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from wikimem.errors import BadRequest, InvalidValue
from wikimem.format import utc_now
from wikimem.limits import MAX_PERSONA_CHARS
from wikimem.store import resolve_tz

__all__ = ["OwnerSettings", "SETTINGS_FIELDS", "DEFINITION", "SHARED_WRITES", "CHARACTER_PREFIX", "check_settings",
           "check_definition", "settings_record", "settings_summary"]

SETTINGS_FIELDS = ("tz", "character", "dm_with_others")  # what a settings request may set
DEFINITION = "definition"  # the registry's own field, on char:<id> owners only
# How a character's facts reach the shared layer: as a proposal (a staged run), directly, or never.
SHARED_WRITES = ("staged", "direct", "none")
CHARACTER_PREFIX = "char:"  # the owner of a character's own profile and definition: char:<id>
_DEFINITION_KEYS = ("name", "persona", "shared_writes", "deleted", "updated")
MAX_CHARACTER = 200
SHOWN_CHARS = 60  # of a value in the commit summary: both settings fit the 200 characters of a message


@dataclass(frozen=True)
class OwnerSettings:
    """An owner's settings (None: not set, the host's default applies)."""

    tz: str | None = None
    character: str | None = None
    dm_with_others: bool | None = None  # recall direct-chat memories with others in the room (None: no)
    definition: dict[str, Any] | None = None  # a character's, on its char:<id> owner

    @classmethod
    def from_file(cls, values: Mapping[str, Any]) -> OwnerSettings:
        """The settings in a file, tolerantly: a hand-written value that is not valid counts as unset."""
        kept = {}
        for key in (*SETTINGS_FIELDS, DEFINITION):
            try:
                kept[key] = _check(key, values.get(key))
            except ValueError:
                kept[key] = None
        return cls(**kept)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if out[DEFINITION] is None:  # a person's settings read as they always did
            del out[DEFINITION]
        return out


def _check(key: str, value: Any) -> Any:
    if value is None:
        return None
    if key == DEFINITION:
        return check_definition(value)
    if key == "tz":
        if not isinstance(value, str):
            raise BadRequest("tz must be a string, an IANA time zone name such as Asia/Shanghai")
        resolve_tz(value)  # ValueError: unknown time zone
        return value
    if key == "dm_with_others":
        if not isinstance(value, bool):
            raise BadRequest("dm_with_others must be true or false (or null to unset)")
        return value
    if not isinstance(value, str):
        raise BadRequest(f"character must be a string, a one-line name of 1 to {MAX_CHARACTER} characters")
    return _one_line(value, "character")


def _one_line(value: str, what: str) -> str:
    if not value.strip() or len(value) > MAX_CHARACTER or "\n" in value or "\r" in value:
        raise InvalidValue(f"{what} must be a one-line name of 1 to {MAX_CHARACTER} characters")
    return value


def check_definition(value: Any) -> dict[str, Any]:
    """A character's definition as its owner's settings keep it: ``name`` (one line), ``persona`` (text or
    null, at most :data:`~wikimem.limits.MAX_PERSONA_CHARS`), ``shared_writes`` (:data:`SHARED_WRITES`),
    ``deleted`` (bool), ``updated`` (when it last changed)."""
    if not isinstance(value, Mapping):
        raise BadRequest("a character definition must be an object")
    unknown = sorted(set(value) - set(_DEFINITION_KEYS))
    if unknown:
        raise BadRequest(f"unknown definition field(s): {', '.join(unknown)} (known: {', '.join(_DEFINITION_KEYS)})")
    name, persona = value.get("name"), value.get("persona")
    if not isinstance(name, str):
        raise BadRequest(f"name must be a string, a one-line name of 1 to {MAX_CHARACTER} characters")
    if persona is not None and not isinstance(persona, str):
        raise BadRequest("persona must be a string (or null)")
    if persona is not None and len(persona) > MAX_PERSONA_CHARS:
        raise InvalidValue(f"persona is {len(persona):,} characters long; at most {MAX_PERSONA_CHARS:,} are kept")
    policy = value.get("shared_writes", "staged")
    if policy not in SHARED_WRITES:
        raise InvalidValue(f"shared_writes must be one of {', '.join(SHARED_WRITES)}, got {policy!r}")
    deleted, updated = value.get("deleted", False), value.get("updated")
    if not isinstance(deleted, bool) or (updated is not None and not isinstance(updated, str)):
        raise BadRequest("deleted must be a boolean and updated a time")
    return {"name": _one_line(name, "name"), "persona": persona or None, "shared_writes": policy,
            "deleted": deleted, "updated": updated}


def check_settings(changes: Mapping[str, Any], *, owner_id: str | None = None) -> dict[str, Any]:
    """The validated changes of a settings write (``None`` unsets a key); unknown keys are refused, and a
    ``definition`` on an owner (``owner_id``, when given) that is not a character's ``char:<id>``."""
    if not isinstance(changes, Mapping):
        raise BadRequest("settings must be an object")
    unknown = sorted(set(changes) - {*SETTINGS_FIELDS, DEFINITION})
    if unknown:
        raise BadRequest(f"unknown setting(s): {', '.join(unknown)} (known: {', '.join(SETTINGS_FIELDS)})")
    if DEFINITION in changes and owner_id is not None and not owner_id.startswith(CHARACTER_PREFIX):
        raise InvalidValue(f"a character definition is kept only on a character's own owner ({CHARACTER_PREFIX}<id>),"
                           f" not on {owner_id!r}")
    return {key: _check(key, value) for key, value in changes.items()}


def settings_summary(changes: Mapping[str, Any]) -> str:
    """The commit summary of a settings write: each value cut to :data:`SHOWN_CHARS` characters.

    A commit message holds at most 200 characters; a 200-character
    ``character`` is kept whole in ``settings.json`` and the journal line.
    """
    def shown(value: Any) -> str:
        text = "unset" if value is None else _described(value)
        return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"

    return "settings: " + (", ".join(f"{k}={shown(v)}" for k, v in sorted(changes.items())) or "unchanged")


def settings_record(changes: Mapping[str, Any]) -> dict[str, Any]:
    """The journal line of a settings write (carried in the commit as ``Wikimem-Journal``)."""
    detail = ", ".join(f"{k}={'unset' if v is None else _described(v)}" for k, v in sorted(changes.items()))
    return {"ts": utc_now(), "action": "settings", "detail": detail}


def _described(value: Any) -> str:
    """A value as a commit message or journal line names it: a definition by its name and state, not its persona."""
    if isinstance(value, Mapping):
        state = "deleted" if value.get("deleted") else f"shared_writes={value.get('shared_writes')}"
        return f"{value.get('name')} ({state})"
    return str(value)
