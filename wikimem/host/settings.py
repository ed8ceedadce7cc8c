"""Per-owner settings: what a bot sets once per user instead of on every call.

Stored in the owner's repository as ``settings.json`` (:mod:`wikimem.format.codec`),
so every change is a commit in the owner's history. A value left unset falls
back to the host's default.

============  ===========================================================================
``tz``        IANA time zone (``Asia/Shanghai``): the calendar of diary writes, memorize
              and time words in retrieval (昨天, 上周三) when a request gives no ``tz``
``character`` who writes the diary in memorize when a request names no ``character``
============  ===========================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from wikimem.errors import BadRequest, InvalidValue
from wikimem.format import utc_now
from wikimem.store import resolve_tz

__all__ = ["OwnerSettings", "SETTINGS_FIELDS", "check_settings", "settings_record", "settings_summary"]

SETTINGS_FIELDS = ("tz", "character")
MAX_CHARACTER = 200
SHOWN_CHARS = 60  # of a value in the commit summary: both settings fit the 200 characters of a message


@dataclass(frozen=True)
class OwnerSettings:
    """An owner's settings (None: not set, the host's default applies)."""

    tz: str | None = None
    character: str | None = None

    @classmethod
    def from_file(cls, values: Mapping[str, Any]) -> OwnerSettings:
        """The settings in a file, tolerantly: a hand-written value that is not valid counts as unset."""
        kept = {}
        for key in SETTINGS_FIELDS:
            try:
                kept[key] = _check(key, values.get(key))
            except ValueError:
                kept[key] = None
        return cls(**kept)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check(key: str, value: Any) -> Any:
    if value is None:
        return None
    if key == "tz":
        if not isinstance(value, str):
            raise BadRequest("tz must be a string, an IANA time zone name such as Asia/Shanghai")
        resolve_tz(value)  # ValueError: unknown time zone
        return value
    if not isinstance(value, str):
        raise BadRequest(f"character must be a string, a one-line name of 1 to {MAX_CHARACTER} characters")
    if not value.strip() or len(value) > MAX_CHARACTER or "\n" in value:
        raise InvalidValue(f"character must be a one-line name of 1 to {MAX_CHARACTER} characters")
    return value


def check_settings(changes: Mapping[str, Any]) -> dict[str, Any]:
    """The validated changes of a settings write (``None`` unsets a key); unknown keys are refused."""
    if not isinstance(changes, Mapping):
        raise BadRequest("settings must be an object")
    unknown = sorted(set(changes) - set(SETTINGS_FIELDS))
    if unknown:
        raise BadRequest(f"unknown setting(s): {', '.join(unknown)} (known: {', '.join(SETTINGS_FIELDS)})")
    return {key: _check(key, value) for key, value in changes.items()}


def settings_summary(changes: Mapping[str, Any]) -> str:
    """The commit summary of a settings write: each value cut to :data:`SHOWN_CHARS` characters.

    A commit message holds at most 200 characters; a 200-character
    ``character`` is kept whole in ``settings.json`` and the journal line.
    """
    def shown(value: Any) -> str:
        text = "unset" if value is None else str(value)
        return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"

    return "settings: " + (", ".join(f"{k}={shown(v)}" for k, v in sorted(changes.items())) or "unchanged")


def settings_record(changes: Mapping[str, Any]) -> dict[str, Any]:
    """The journal line of a settings write (carried in the commit as ``Wikimem-Journal``)."""
    detail = ", ".join(f"{k}={'unset' if v is None else v}" for k, v in sorted(changes.items()))
    return {"ts": utc_now(), "action": "settings", "detail": detail}
