"""Validation of everything that names a thing on disk or in a heading.

One function per kind of name, used at every edge (store writes, diary
writes, the host, the CLI). Invalid input raises ``ValueError`` (or the
:class:`InvalidName` subclass, so callers can tell a bad name from other
value errors).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date as _date

from .errors import InvalidName

__all__ = ["validate_file", "validate_character_id", "validate_channel_id", "validate_present", "OWNER_ID_RE",
           "MAX_OWNER_ID_LEN", "MAX_PRESENT", "DM_CHANNEL", "is_character_id", "MAX_CHARACTER_ID_LEN",
           "sanitize_item_name",
           "validate_date", "validate_time", "is_valid_time", "safe_stem", "validate_provenance", "unsafe_chars",
           "is_unsafe", "UNSAFE_CATEGORIES", "MAX_FILE_LEN", "MAX_ITEM_NAME_LEN", "MAX_PROVENANCE_LEN"]

FILE_RE = re.compile(r"[a-z0-9_][a-z0-9_-]*")
DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
TIME_RE = re.compile(r"(?:[01]\d|2[0-3]):[0-5]\d")

# A RecallFile becomes "<name>.md" plus a temp-file prefix/suffix while it is
# written; 255 bytes is the usual file-name limit, so leave room for both.
MAX_FILE_LEN = 128
# Item names are headings and link targets; a long one is almost certainly a
# mistake (content passed as the name), and it must fit in a git trailer.
MAX_ITEM_NAME_LEN = 200

_RESERVED = ("[[", "]]", ":", "|", "#")

# Provenance values (run, actor, source_conv, owner, a commit message) end up in commit headers,
# trailers and item metadata: one line of visible text, this long at most.
MAX_PROVENANCE_LEN = 200
# Unicode categories that may not appear in a name or a provenance value: controls (C0, DEL, C1),
# format characters (bidi overrides, zero-width joiners), line and paragraph separators, surrogates,
# private use and unassigned code points. A trailer parser, a terminal or a reader could each be fooled.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
# Scripts whose letters look like Latin ones: a name mixing them with Latin letters in one word is a spoof.
_LOOKALIKE_SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE")


def is_unsafe(char: str) -> bool:
    """Whether a character may never reach a name, a header or a trailer."""
    return unicodedata.category(char) in UNSAFE_CATEGORIES


def unsafe_chars(text: str) -> list[str]:
    """The characters of ``text`` that may not reach a name, a header or a trailer, as ``U+XXXX``."""
    return [f"U+{ord(c):04X}" for c in text if is_unsafe(c)]


def validate_provenance(value: object, what: str, *, limit: int = MAX_PROVENANCE_LEN) -> str | None:
    """A provenance value as written (stripped; None when absent or blank), or InvalidName.

    One line of visible text: no control, format or line-separator
    characters (see :data:`UNSAFE_CATEGORIES`), at most ``limit`` characters.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidName(f"{what} must be a string, got {type(value).__name__}")
    text = value.strip()
    if not text:
        return None
    bad = unsafe_chars(text)
    if bad:
        raise InvalidName(f"{what} may not contain control, format or line-separator characters "
                          f"(found {', '.join(sorted(set(bad))[:5])})")
    if len(text) > limit:
        raise InvalidName(f"{what} is longer than {limit} characters")
    return text


def _mixes_lookalike_scripts(text: str) -> bool:
    """Whether one word mixes Latin letters with Cyrillic/Greek/… ones (``pаypal`` with a Cyrillic а)."""
    for word in text.split():
        latin = other = False
        for c in word:
            if not c.isalpha():
                continue
            name = unicodedata.name(c, "")
            if name.startswith("LATIN"):
                latin = True
            elif name.startswith(_LOOKALIKE_SCRIPTS):
                other = True
        if latin and other:
            return True
    return False


def validate_file(file: str) -> str:
    """Return ``file`` if it is a valid RecallFile slug, else raise ValueError."""
    if not isinstance(file, str):
        raise InvalidName(f"a file name must be a string, got {type(file).__name__}")
    if not FILE_RE.fullmatch(file):
        raise InvalidName(f"invalid file name {file!r}: use lowercase letters a-z, digits, '_' and '-' "
                          "(not first), e.g. 'preferences' or 'daily_life'")
    if len(file) > MAX_FILE_LEN:
        raise InvalidName(f"a file name is at most {MAX_FILE_LEN} characters")
    return file


# A character's id names its layer's folder (characters/<id>/) and its profile owner (char:<id>): the RecallFile rule.
MAX_CHARACTER_ID_LEN = 64


def is_character_id(text: object) -> bool:
    """Whether ``text`` is a character id (``[a-z0-9_][a-z0-9_-]*``, at most 64 characters)."""
    return isinstance(text, str) and len(text) <= MAX_CHARACTER_ID_LEN and FILE_RE.fullmatch(text) is not None


def validate_character_id(value: object) -> str:
    """Return ``value`` if it is a character id (it names a folder: the RecallFile rule, 64 characters at most),
    else :class:`InvalidName`."""
    if not is_character_id(value):
        shown = repr(value)[:80] if isinstance(value, str) else type(value).__name__
        raise InvalidName(f"invalid character id {shown}: use 1-{MAX_CHARACTER_ID_LEN} lowercase letters a-z, digits, "
                          "'_' and '-' (not first), e.g. 'kai' or 'elaina_v2'")
    assert isinstance(value, str)
    return value


# Owner ids (``user:xnne``) and channel ids (``g1``, ``discord:1234``): letters, digits and ``._:@-``, 1-128
# characters, the first a letter or a digit (an id like "--help" or ".x" reads as an option or a hidden file).
# The host's owner ids (:mod:`wikimem.host.owner_ids`) use this rule.
MAX_OWNER_ID_LEN = 128
OWNER_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
# Who was in the room when a diary entry was said: at most this many ids (persons and ``char:`` characters).
MAX_PRESENT = 64
# The channel of a direct chat (one person, one character).
DM_CHANNEL = "dm"


def _shown(value: object) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "…")
    return type(value).__name__


def validate_channel_id(value: object) -> str:
    """Return ``value`` if it is a channel id (validated like an owner id; ``dm`` is a direct chat), else
    :class:`InvalidName`."""
    if not isinstance(value, str) or not OWNER_ID_RE.fullmatch(value):
        raise InvalidName(f"invalid channel id {_shown(value)}: use 1-{MAX_OWNER_ID_LEN} letters, digits or ._:@-, "
                          f"starting with a letter or a digit (e.g. g1, discord:1234, or {DM_CHANNEL} for a direct "
                          "chat)")
    return value


def validate_present(value: object) -> tuple[str, ...]:
    """Who was (or is) in the room: a list of ids (persons' owner ids and ``char:<character>``), or one string of
    them separated by commas; as a tuple in the given order, repeats dropped, or :class:`InvalidName`. At most
    :data:`MAX_PRESENT` ids."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, (list, tuple)):
        raise InvalidName(f"present must be a list of ids, got {type(value).__name__}")
    if len(value) > MAX_PRESENT:
        raise InvalidName(f"present names {len(value)} ids; at most {MAX_PRESENT}")
    out: dict[str, None] = {}
    for one in value:
        if not isinstance(one, str) or not OWNER_ID_RE.fullmatch(one):
            raise InvalidName(f"invalid id in present {_shown(one)}: a person's owner id (user:ann) or a character "
                              "as char:<character>")
        if one.startswith("char:"):
            validate_character_id(one[5:])
        out[one] = None
    return tuple(out)


def sanitize_item_name(name: str) -> str:
    """Collapse whitespace in an item name and reject reserved characters."""
    if not isinstance(name, str):
        raise InvalidName(f"item name must be a string, got {type(name).__name__}")
    clean = " ".join(name.split())
    if not clean:
        raise InvalidName("item name is empty")
    for bad in _RESERVED:
        if bad in clean:
            raise InvalidName(f"invalid item name {clean!r}: may not contain {bad!r}")
    if len(clean) > MAX_ITEM_NAME_LEN:
        raise InvalidName(f"item name longer than {MAX_ITEM_NAME_LEN} characters")
    unsafe = unsafe_chars(clean)
    if unsafe:
        raise InvalidName(f"item name {clean!r} contains control, format or bidi characters "
                          f"({', '.join(sorted(set(unsafe))[:5])})")
    if _mixes_lookalike_scripts(clean):
        raise InvalidName(f"item name {clean!r} mixes Latin letters with look-alike letters of another "
                          "script in one word")
    check_encodable(clean, "item name")
    return clean


def check_encodable(text: str, what: str) -> None:
    """Raise ValueError if ``text`` cannot be written as UTF-8 (lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} is not valid Unicode text: {exc.reason}") from None


def validate_date(value: str) -> str:
    """Return ``value`` if it is a real calendar date ``YYYY-MM-DD``."""
    if not isinstance(value, str) or not DATE_RE.fullmatch(value):
        raise InvalidName(f"invalid date {value!r}: expected YYYY-MM-DD")
    try:
        _date.fromisoformat(value)
    except ValueError:
        raise InvalidName(f"invalid date {value!r}: no such day") from None
    return value


def is_valid_time(value: object) -> bool:
    return isinstance(value, str) and TIME_RE.fullmatch(value) is not None


def validate_time(value: str) -> str:
    """Return ``value`` if it is a 24-hour wall-clock time ``HH:MM``."""
    if not is_valid_time(value):
        raise InvalidName(f"invalid time {value!r}: expected HH:MM (00:00-23:59)")
    return value


def safe_stem(stem: str) -> str:
    """Validate a file stem for *reading*.

    Reads are tolerant of hand-made file names (``wiki/My Notes.md``) but must
    never leave their folder, so anything with a path separator, a NUL, or a
    leading dot is refused.
    """
    if (
        not isinstance(stem, str)
        or not stem
        or stem.startswith(".")
        or any(c in stem for c in "/\\\0")
        or len(stem) > MAX_FILE_LEN * 2
    ):
        raise InvalidName(f"invalid file name {stem!r}")
    return stem
