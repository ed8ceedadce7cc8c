"""The file format of a memory folder, in one place: which paths are memory files, and how they read and write.

- ``wiki/<file>.md`` ↔ :class:`~wikimem.RecallItem` list (:func:`parse_wiki`,
  :func:`render_wiki`): duplicate headings read as one item, the last wins,
  in the position of its last copy.
- ``diary/YYYY-MM-DD.md`` ↔ :class:`~wikimem.DiaryItem` list
  (:func:`parse_day`, :func:`render_day`): entries are written sorted by
  their ``HH:MM`` heading, stably (the same minute keeps insertion order).
- :func:`memory_path` / :func:`is_memory_name`: the one rule for "is this a
  memory markdown file" — used by the store, the diary, the git layer, the
  host's freshness checks and its export. A character's layer is the same
  format under ``characters/<id>/`` (:func:`layer_of`, :func:`layer_prefix`).
- ``settings.json`` (:data:`SETTINGS_PATH`) ↔ a dict (:func:`parse_settings`,
  :func:`render_settings`): the host's per-owner settings, committed like the
  memory but not memory — revert, restore, diffs per item and hand-edit
  detection look only at memory files.

The block syntax itself (headings, metadata comments, escaping) lives in
:mod:`wikimem.format.blocks`; this module turns blocks into items and files.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import overload

from wikimem.errors import InvalidValue
from wikimem.fsio import decode
from wikimem.models import DiaryItem, RecallItem
from wikimem.naming import is_character_id, is_valid_time, validate_character_id

from .blocks import Block, parse_blocks, render_blocks

__all__ = [
    "WIKI_DIR", "DIARY_DIR", "MEMORY_DIRS", "is_memory_name", "memory_path", "wiki_path", "day_path",
    "LAYERS_DIR", "layer_prefix", "layer_of", "layer_dirs",
    "parse_wiki", "render_wiki", "parse_day", "sort_day", "render_day", "same_item", "entry_key",
    "item_etag", "utc_now", "utc_instant", "read_instant", "iso_instant", "instant_epoch", "OutsideCalendar",
    "normalize_ts", "SETTINGS_PATH", "parse_settings", "render_settings",
]

WIKI_DIR = "wiki"
DIARY_DIR = "diary"
MEMORY_DIRS = (WIKI_DIR, DIARY_DIR)
_SUFFIX = ".md"


# -- which paths are memory files ---------------------------------------------

def is_memory_name(name: str) -> bool:
    """A memory file's name inside ``wiki/`` or ``diary/``: ``<stem>.md``, not hidden (temp files are), no ``/``
    or NUL (the listing of a folder goes through :class:`wikimem.store.Door`)."""
    return (name.endswith(_SUFFIX) and len(name) > len(_SUFFIX) and not name.startswith(".") and "/" not in name
            and "\0" not in name)


LAYERS_DIR = "characters"  # characters/<id>/ holds a character's layer of a person's folder (SPEC §11)


def layer_prefix(layer: str | None) -> str:
    """Where a layer's files are in the folder: ``""`` (the shared layer) or ``characters/<id>/``."""
    return "" if layer is None else f"{LAYERS_DIR}/{validate_character_id(layer)}/"


def layer_dirs(layer: str | None) -> tuple[str, str]:
    """The ``wiki`` and ``diary`` folders of a layer, relative to the folder."""
    prefix = layer_prefix(layer)
    return f"{prefix}{WIKI_DIR}", f"{prefix}{DIARY_DIR}"


def layer_of(path: str) -> tuple[str | None, str]:
    """``(layer, path within it)``: ``("kai", "wiki/x.md")`` for ``characters/kai/wiki/x.md``, ``(None, path)``
    for a path of the shared layer (or of no layer at all)."""
    if path.startswith(LAYERS_DIR + "/"):
        layer, sep, rest = path[len(LAYERS_DIR) + 1:].partition("/")
        if sep and is_character_id(layer):
            return layer, rest
    return None, path


def memory_path(path: str) -> tuple[str, str] | None:
    """``("wiki", file)`` / ``("diary", date)`` of a memory file's relative path (in any layer: the layer is
    :func:`layer_of`'s), else None."""
    folder, _, name = layer_of(path)[1].partition("/")
    if folder in MEMORY_DIRS and is_memory_name(name):
        return folder, name[: -len(_SUFFIX)]
    return None


def wiki_path(file: str) -> str:
    return f"{WIKI_DIR}/{file}{_SUFFIX}"


def day_path(date: str) -> str:
    return f"{DIARY_DIR}/{date}{_SUFFIX}"


# -- wiki files ----------------------------------------------------------------

def parse_wiki(data: bytes | None, file: str) -> list[RecallItem]:
    """The items of a wiki file (None = no file): for duplicate headings the last one wins."""
    if data is None:
        return []
    items: dict[str, RecallItem] = {}
    for b in parse_blocks(decode(data)):
        items.pop(b.heading, None)  # the winner takes the position of the last copy
        items[b.heading] = RecallItem(file, b.heading, b.content, b.owner, b.source_conv, b.ts, b.channel, b.present)
    return list(items.values())


def render_wiki(file: str, items: list[RecallItem]) -> bytes | None:
    """The bytes of a wiki file holding ``items``; None when there are none (the file goes)."""
    if not items:
        return None
    blocks = [Block(i.name, i.content, i.owner, i.source_conv, i.ts, i.channel, i.present) for i in items]
    return render_blocks(file, blocks).encode("utf-8")


def same_item(a: RecallItem | None, b: RecallItem | None) -> bool:
    """Whether two versions of an item hold the same content and provenance (None = absent)."""
    if a is None or b is None:
        return a is b
    return (a.content, a.owner, a.source_conv, a.ts, a.channel, a.present) == (
        b.content, b.owner, b.source_conv, b.ts, b.channel, b.present)


def item_etag(item: RecallItem) -> str:
    """A stable tag of an item's content and provenance (what ``If-Match`` carries)."""
    fields = [item.file, item.name, item.content, item.owner, item.source_conv, item.ts]
    if item.channel is not None or item.present:  # (an item without a room keeps the tag it always had)
        fields += [item.channel, ",".join(item.present)]
    text = "\0".join(str(v) for v in fields)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


# -- diary days ------------------------------------------------------------------

def parse_day(data: bytes | None, date: str) -> list[DiaryItem]:
    """The entries of a day file (None = no file), in file order."""
    if data is None:
        return []
    return [DiaryItem(date, b.heading, b.content, b.owner, b.source_conv, b.ts, b.channel, b.present)
            for b in parse_blocks(decode(data))]


def _sort_keys(entries: list[DiaryItem]) -> list[str]:
    """Sort keys for a day: HH:MM; a hand-written odd heading sticks to its predecessor."""
    keys, last = [], "00:00"
    for e in entries:
        if is_valid_time(e.time):
            last = e.time
        keys.append(last)
    return keys


def sort_day(entries: list[DiaryItem]) -> list[DiaryItem]:
    """Entries in the order a day file keeps them: by ``HH:MM``, stable (the same minute keeps insertion order)."""
    keys = _sort_keys(entries)
    return [entries[i] for i in sorted(range(len(entries)), key=keys.__getitem__)]


def render_day(date: str, entries: list[DiaryItem]) -> bytes | None:
    """The bytes of a day file holding ``entries`` sorted by time (stable); None when there are none."""
    if not entries:
        return None
    blocks = [Block(e.time, e.content, e.owner, e.source_conv, e.ts, e.channel, e.present) for e in sort_day(entries)]
    return render_blocks(date, blocks).encode("utf-8")


def entry_key(entry: DiaryItem) -> tuple:
    """What tells two diary entries apart when a day is compared (heading, content, provenance)."""
    return (entry.time, entry.content, entry.owner, entry.source_conv, entry.ts, entry.channel, entry.present)


# -- settings ----------------------------------------------------------------------

SETTINGS_PATH = "settings.json"


def parse_settings(data: bytes | None) -> dict:
    """The settings in a ``settings.json`` (None or empty = no settings); ValueError when it is not a JSON
    object (a syntax error, nesting too deep to read, a list…)."""
    if not data or not data.strip():
        return {}
    try:
        value = json.loads(decode(data))
    except RecursionError:
        raise ValueError("settings.json is nested too deeply to be read") from None
    except ValueError as exc:
        raise ValueError(f"settings.json is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"settings.json holds a JSON {type(value).__name__}, not an object")
    return value


def render_settings(values: dict) -> bytes:
    """``settings.json`` as written: one key per line, sorted, readable in any editor and in ``git diff``."""
    return (json.dumps(values, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode("utf-8")


# -- time stamps -------------------------------------------------------------------

def utc_now() -> str:
    """Now as every ``ts`` is written: UTC ISO-8601 with seconds."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class OutsideCalendar(ValueError):
    """An instant that falls before year 1 or after year 9999 once converted to UTC."""


def utc_instant(text: str) -> datetime:
    """An ISO-8601 date or time as an aware UTC datetime: the one parser of instants.

    No offset means UTC; a trailing ``z`` is ``Z``. Raises ValueError when
    the text is not ISO-8601, :class:`OutsideCalendar` (a ValueError) when
    the instant leaves the calendar once converted to UTC (e.g.
    ``9999-12-31T23:59:59-14:00``), so nothing downstream can overflow.
    """
    raw = text.strip()
    if raw.endswith("z"):
        raw = raw[:-1] + "Z"
    moment = datetime.fromisoformat(raw)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:
        raise OutsideCalendar(f"{text!r} is outside the calendar once converted to UTC") from None


def read_instant(text: str, what: str, expected: str) -> datetime:
    """:func:`utc_instant` of a value someone gave (``what`` names it in the error): :class:`InvalidValue` when
    it is not ``expected`` (e.g. "a date (YYYY-MM-DD) or an ISO-8601 time") or leaves the calendar in UTC."""
    try:
        return utc_instant(text)
    except OutsideCalendar:
        raise InvalidValue(f"{what} falls outside the years 1 to 9999 once converted to UTC") from None
    except ValueError:
        raise InvalidValue(f"{what} is not {expected}") from None


@overload
def iso_instant(ts: int | float) -> str: ...
@overload
def iso_instant(ts: None) -> None: ...
def iso_instant(ts: int | float | None) -> str | None:
    """Epoch seconds as ``YYYY-MM-DDTHH:MM:SSZ`` (how the history, the run index and the staged runs show a
    time); None stays None."""
    if ts is None:
        return None
    return datetime.fromtimestamp(int(ts), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def instant_epoch(iso: str) -> int:
    """:func:`iso_instant`'s text back as epoch seconds."""
    return int(datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())


def normalize_ts(ts: str | None) -> str:
    """An ISO-8601 instant as UTC with seconds; None means now.

    A timestamp without an offset is taken to be UTC. Anything unparsable
    raises ValueError — never a silent fallback to "now".
    """
    if ts is None:
        return utc_now()
    if not isinstance(ts, str):
        raise ValueError(f"ts must be an ISO-8601 string, got {type(ts).__name__}")
    try:
        return utc_instant(ts).isoformat(timespec="seconds")
    except OutsideCalendar:  # e.g. 9999-12-31T23:59:59-14:00 is past the end of the calendar in UTC
        raise ValueError(f"invalid ts {ts!r}: outside the calendar once converted to UTC") from None
    except ValueError:
        raise ValueError(f"invalid ts {ts!r}: expected ISO-8601, e.g. 2026-07-21T06:30:00+00:00") from None
