"""What a chat model answers to memorize, read fail-open (SPEC §11).

- :func:`find_json`: the first JSON array/object of a reply (bare, fenced,
  after prose, ``<think>`` blocks removed) — the one unwrapping both parsers use;
- :func:`seed_entries` / :func:`entry_text`: the seed's shapes (a bare list,
  one ``{"content"}`` object, one key wrapping a list);
- :func:`parse_reply`: ``{"diary": [...], "facts": [...]}`` (or a seed shape)
  into a :class:`Reply` of :class:`Note` and :class:`Fact`; an element that is
  not valid is skipped and listed in ``Reply.dropped`` with the reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from wikimem.errors import WikimemError
from wikimem.limits import MAX_CONTENT_CHARS, MAX_OPS, check_length
from wikimem.naming import sanitize_item_name, validate_date, validate_file, validate_provenance, validate_time

__all__ = ["Note", "Fact", "Reply", "parse_reply", "find_json", "seed_entries", "entry_text", "json_kind",
           "MAX_REPLY_ELEMENTS"]

_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
# How many '[' / '{' positions of a prose reply are tried as the start of JSON.
_MAX_SCAN = 64
# Elements one reply may hold (diary and facts together): each becomes at least one write of one batch,
# and a batch holds at most MAX_OPS ops. The rest is dropped, and counted.
MAX_REPLY_ELEMENTS = MAX_OPS // 2


@dataclass(frozen=True)
class Note:
    """A diary entry the model proposes: its text, the day and time it names (validated), whose it is."""

    content: str
    date: str | None = None
    time: str | None = None
    person: str | None = None


@dataclass(frozen=True)
class Fact:
    """A lasting fact about a person: the wiki item ``file:name`` and its content."""

    file: str
    name: str
    content: str
    person: str | None = None


@dataclass(frozen=True)
class Reply:
    """What one memorize reply holds; ``dropped`` says what was skipped and why (one dict per element,
    ``{"kind", "reason"}`` plus ``index`` — or ``count`` for a run of elements dropped for one reason)."""

    diary: list[Note] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)

    @property
    def dropped_count(self) -> int:
        """How many elements were skipped."""
        return sum(int(d.get("count", 1)) for d in self.dropped)


# -- finding the JSON ----------------------------------------------------------------


def find_json(reply: object) -> Any:
    """The first JSON array/object in a reply (whole, in a ``` fence, or after prose), or None."""
    if not isinstance(reply, str):
        return None
    text = _THINK_RE.sub("", reply)
    for candidate in (text, *_FENCE_RE.findall(text)):
        value = _loads(candidate)
        if isinstance(value, (list, dict)):
            return value
    decoder = json.JSONDecoder()
    starts = [m.start() for m in re.finditer(r"[\[{]", text)][:_MAX_SCAN]
    for start in starts:
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, (list, dict)):
            return value
    return None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: "[[[[…" nested deeper than the decoder goes
        return None


def seed_entries(value: Any) -> list | None:
    """The seed's shapes as a list of entries: a list, one ``{"content"}`` object, one key wrapping a list."""
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        return None
    if "content" in value:
        return [value]
    lists = [v for v in value.values() if isinstance(v, list)]
    return lists[0] if len(lists) == 1 and len(value) == 1 else None


def entry_text(element: Any) -> str | None:
    """The usable text of one entry (its ``content``, or the element if it is a string), or None."""
    text = element.get("content") if isinstance(element, dict) else element
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not text:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a "\\ud800" escape
        return None
    return text


# -- the reply -------------------------------------------------------------------------


def parse_reply(text: str, *, persons: Collection[str] | None = None) -> Reply:
    """The diary entries and facts of a memorize reply; never raises.

    ``persons`` (a channel turn): every element must name one of them as
    ``"person"`` (with exactly one person, an element naming nobody is that
    person's). Without it a ``"person"`` an element names is kept as given.
    """
    value = find_json(text)
    if isinstance(value, dict) and ("diary" in value or "facts" in value):
        reader = _Reader(persons)
        reader.read("diary", value.get("diary"))
        reader.read("facts", value.get("facts"))
        return reader.reply()
    entries = seed_entries(value)
    reader = _Reader(persons)
    if entries is not None:
        reader.read("diary", entries)
    return reader.reply()


class _Reader:
    """Collects the valid elements of a reply and the reasons for the others."""

    def __init__(self, persons: Collection[str] | None):
        self.persons = None if persons is None else [p for p in persons if isinstance(p, str)]
        self.notes: list[Note] = []
        self.facts: list[Fact] = []
        self.dropped: list[dict] = []
        self.taken = 0
        self.seen: set[tuple] = set()

    def reply(self) -> Reply:
        return Reply(self.notes, self.facts, self.dropped)

    def read(self, key: str, elements: Any) -> None:
        kind = "fact" if key == "facts" else "diary"
        if elements is None:
            return
        if isinstance(elements, dict):
            elements = [elements]
        if not isinstance(elements, list):
            self.dropped.append({"kind": kind, "reason": f"{key!r} is not a list"})
            return
        room = max(0, MAX_REPLY_ELEMENTS - self.taken)
        for index, element in enumerate(elements[:room]):
            self._take(kind, index, element)
        if len(elements) > room:
            self.dropped.append({"kind": kind, "count": len(elements) - room,
                                 "reason": f"one reply holds at most {MAX_REPLY_ELEMENTS} elements"})
        self.taken += min(room, len(elements))

    def _take(self, kind: str, index: int, element: Any) -> None:
        try:
            self._keep(_fact(element, self.persons) if kind == "fact" else _note(element, self.persons))
        except (WikimemError, ValueError) as exc:
            self.dropped.append({"kind": kind, "index": index, "reason": str(exc)})

    def _keep(self, got: Note | Fact) -> None:
        """Keep an element once: a repeated entry text, or a second fact on one item, is dropped."""
        key = ("fact", got.person, got.file, got.name) if isinstance(got, Fact) else ("diary", got.person, got.content)
        if key in self.seen:
            what = f"fact {got.file}:{got.name}" if isinstance(got, Fact) else "diary entry"
            raise ValueError(f"repeats the {what} given earlier in the reply")
        self.seen.add(key)
        if isinstance(got, Fact):
            self.facts.append(got)
        else:
            self.notes.append(got)


def _note(element: Any, persons: list[str] | None) -> Note:
    if not isinstance(element, (dict, str)):
        raise ValueError(f"a diary entry must be an object with 'content', not {json_kind(element)}")
    fields = element if isinstance(element, dict) else {"content": element}
    content = _content(fields)
    date = fields.get("date")
    time = fields.get("time")
    return Note(content,
                date=None if date in (None, "") else validate_date(date),
                time=None if time in (None, "") else validate_time(time),
                person=_person(fields, persons))


def _fact(element: Any, persons: list[str] | None) -> Fact:
    if not isinstance(element, dict):
        raise ValueError(f"a fact must be an object with 'file', 'name' and 'content', not {json_kind(element)}")
    file = element.get("file")
    try:
        validate_file(file)  # type: ignore[arg-type]
    except ValueError as exc:
        raise ValueError(f"file name {file!r} is not a RecallFile name ({exc})") from None
    name = sanitize_item_name(element.get("name"))  # type: ignore[arg-type]
    return Fact(file, name, _content(element), person=_person(element, persons))  # type: ignore[arg-type]


def _content(fields: Mapping) -> str:
    text = entry_text(fields)
    if text is None:
        raise ValueError("'content' is missing, empty or not text")
    return check_length(text, MAX_CONTENT_CHARS, "content")


def _person(fields: Mapping, persons: list[str] | None) -> str | None:
    person = validate_provenance(fields.get("person"), "person")
    if persons is None:
        return person
    if person is None and len(persons) == 1:
        return persons[0]
    if person not in persons:
        named = "no person" if person is None else f"person {person!r}"
        raise ValueError(f"names {named}; a person of this turn is one of {', '.join(persons) or '(none)'}")
    return person


def json_kind(value: Any) -> str:
    """How a value looks in JSON terms, for messages a model or a person reads."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
