"""SillyTavern chat files (JSONL) read into turns: :func:`read_chat`, and when each message was sent.

A chat file is a header line (``user_name``, ``character_name``, ``create_date``, ``chat_metadata``), then one
message per line: ``name``, ``is_user``, ``mes`` (the text shown: the chosen swipe), ``send_date``, and maybe
``is_system``, ``swipes`` / ``swipe_id``, ``extra``. What becomes memory:

- system messages (``is_system``: hidden from the prompt, ``/sys``, ``/comment``; ``extra.type`` ``narrator``)
  are not memories, nor the swipes that were not chosen (they are counted, never read as turns);
- a **turn** is what the person said (one or more user messages in a row) and the character's reply; the
  character's messages before the person's first one (its greeting) are a turn of their own;
- a turn is dated by its first message's ``send_date``: ISO 8601, epoch milliseconds or seconds,
  ``June 19, 2023 2:20pm`` and ``2023-06-19 @14h 20m 10s`` (the forms SillyTavern has written), the last
  two read in the person's time zone.

Sizes are checked before parsing (:data:`~wikimem.limits.MAX_CHAT_BYTES`, a line
:data:`~wikimem.limits.MAX_CHAT_LINE_BYTES`, :data:`~wikimem.limits.MAX_CHAT_MESSAGES`); a line that is not
JSON or not a message fails the whole file with its line number (:class:`~wikimem.errors.BadImport`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from typing import Any

from wikimem.errors import BadImport, TooLarge
from wikimem.limits import MAX_CHAT_BYTES, MAX_CHAT_LINE_BYTES, MAX_CHAT_MESSAGES, MAX_TURN_CHARS

from .cards import parse_json

__all__ = ["Chat", "Message", "Turn", "read_chat", "parse_send_date"]

_MONTHS = {name: i for i, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
     ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
     ("december", "dec")), 1) for name in names}
_CLOCK = (r"(?:(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]\.?m\.?)?"  # 2:20pm, 14:20, 14:20:05
          r"|@\s?(\d{1,2})h\s?(\d{1,2})m(?:\s?(\d{1,2})s)?(?:\s?\d{1,3}ms)?)")  # @14h 20m 10s 123ms
_WORDED_RE = re.compile(rf"([a-z]+)\.? (\d{{1,2}}),? (\d{{4}}),?\s*{_CLOCK}", re.I)
_DASHED_RE = re.compile(rf"(\d{{4}})-(\d{{1,2}})-(\d{{1,2}})\s*{_CLOCK}", re.I)
_NUMBER_RE = re.compile(r"\d{9,16}(?:\.\d+)?")
SYSTEM_TYPES = ("narrator", "comment")  # extra.type of messages SillyTavern keeps out of the conversation


@dataclass(frozen=True)
class Message:
    """One message that may become memory: where it was (``line``), who said it, its text, when."""

    line: int
    name: str
    is_user: bool
    text: str
    when: datetime  # aware, UTC


@dataclass(frozen=True)
class Turn:
    """What the person said and the character's reply; ``index`` from 0, dated by its first message."""

    index: int
    messages: tuple[Message, ...]

    @property
    def when(self) -> datetime:
        return self.messages[0].when

    @property
    def line(self) -> int:
        return self.messages[0].line

    def text(self, limit: int = MAX_TURN_CHARS) -> str:
        """The turn as a transcript (``Name: text`` per message), its first ``limit`` characters."""
        return "\n".join(f"{m.name}: {m.text}" for m in self.messages)[:limit]

    def cut(self, limit: int = MAX_TURN_CHARS) -> bool:
        return len(self.text(limit + 1)) > limit


@dataclass
class Chat:
    """A chat file as read: its header, the messages kept, the turns, and what was left out."""

    header: dict[str, Any]
    messages: list[Message]
    turns: list[Turn]
    system: int = 0  # system messages left out
    swipes: int = 0  # swipes not chosen, left out
    undated: int = 0  # messages without a readable send_date (dated by the message before)
    warnings: list[str] = field(default_factory=list)

    @property
    def user_name(self) -> str:
        return str(self.header.get("user_name") or next((m.name for m in self.messages if m.is_user), "User"))

    @property
    def character_name(self) -> str:
        return str(self.header.get("character_name") or next((m.name for m in self.messages if not m.is_user),
                                                               "Character"))

    def days(self, tz: tzinfo) -> list[str]:
        """The days (in ``tz``) the turns happened on, in order, each once."""
        return list(dict.fromkeys(t.when.astimezone(tz).date().isoformat() for t in self.turns))


def read_chat(raw: bytes, tz: tzinfo) -> Chat:
    """The chat in ``raw`` (a SillyTavern JSONL file); a local ``send_date`` is read in ``tz``."""
    if not isinstance(raw, (bytes, bytearray)):
        raise BadImport("a chat is the bytes of a JSONL file")
    if len(raw) > MAX_CHAT_BYTES:
        raise TooLarge(f"the chat file is {len(raw):,} bytes; at most {MAX_CHAT_BYTES:,} are read")
    header: dict[str, Any] = {}
    chat = Chat(header, [], [])
    last: datetime | None = None
    for number, line in enumerate(bytes(raw).split(b"\n"), 1):
        if not line.strip():
            continue
        if len(line) > MAX_CHAT_LINE_BYTES:
            raise TooLarge(f"line {number} of the chat is {len(line):,} bytes; a line may have at most "
                           f"{MAX_CHAT_LINE_BYTES:,}")
        value = parse_json(line, "the line", MAX_CHAT_LINE_BYTES, number)
        if not isinstance(value, dict):
            raise BadImport("not a chat line: a JSONL chat has one JSON object per line", number)
        if not chat.messages and not chat.system and not header and "mes" not in value:
            header.update(value)  # the header line
            last = _header_date(header, tz)
            continue
        last = _message(chat, value, number, tz, last)
    if not chat.messages:
        raise BadImport("the chat holds no message to import (a header line, then one message per line)")
    chat.turns = _turns(chat.messages)
    if chat.undated:
        chat.warnings.append(f"{chat.undated} message(s) had no readable send_date: each is dated as the message "
                             "before it")
    return chat


def _header_date(header: dict[str, Any], tz: tzinfo) -> datetime | None:
    try:
        return parse_send_date(header.get("create_date"), tz)
    except ValueError:
        return None


def _message(chat: Chat, value: dict[str, Any], number: int, tz: tzinfo, last: datetime | None) -> datetime | None:
    """Add the message of one line to ``chat`` (or count it as left out); the time it was sent."""
    text, is_user = value.get("mes"), value.get("is_user")
    if not isinstance(text, str) or not isinstance(is_user, bool):
        raise BadImport("not a message: a chat line needs mes (text) and is_user (true or false)", number)
    name = value.get("name", "")
    if not isinstance(name, str) or len(name) > 200:
        raise BadImport("not a message: name must be a text of at most 200 characters", number)
    swipes = value.get("swipes")
    if isinstance(swipes, list) and len(swipes) > 1:
        chat.swipes += len(swipes) - 1  # mes is the chosen one (swipes[swipe_id]); the others are not memories
    extra = value["extra"] if isinstance(value.get("extra"), dict) else {}
    if value.get("is_system") is True or extra.get("type") in SYSTEM_TYPES:
        chat.system += 1
        return last
    if len(chat.messages) >= MAX_CHAT_MESSAGES:
        raise TooLarge(f"the chat has more than {MAX_CHAT_MESSAGES:,} messages; split it", number)
    try:
        when = parse_send_date(value.get("send_date"), tz)
    except ValueError:
        when = None
    if when is None:
        if last is None:
            raise BadImport(f"send_date {str(value.get('send_date'))[:60]!r} is not a date this host reads "
                            "(ISO 8601, epoch milliseconds, 'June 19, 2023 2:20pm'), and no message before it "
                            "has one", number)
        chat.undated += 1
        when = last
    if text.strip():
        chat.messages.append(Message(number, name.strip() or ("User" if is_user else "Character"), is_user,
                                     text.strip(), when))
    return when


def _turns(messages: list[Message]) -> list[Turn]:
    """Turns: a run of user messages with the replies after it (leading replies: a turn of their own)."""
    groups: list[list[Message]] = []
    for message in messages:
        if not groups or (message.is_user and not groups[-1][-1].is_user):
            groups.append([message])
        else:
            groups[-1].append(message)
    return [Turn(i, tuple(g)) for i, g in enumerate(groups)]


def parse_send_date(value: Any, tz: tzinfo) -> datetime | None:
    """When a message was sent, as an aware UTC time; None when there is no date; ValueError when it is not one
    of the forms this host reads (see the module docstring). A time without an offset is read in ``tz``."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError("a send_date is not true or false")
    if isinstance(value, (int, float)) or (isinstance(value, str) and _NUMBER_RE.fullmatch(value.strip())):
        number = float(value)
        seconds = number / 1000 if number > 1e11 else number
        try:
            return datetime.fromtimestamp(seconds, timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"send_date {value!r} is out of range") from None
    if not isinstance(value, str) or len(value) > 80:
        raise ValueError("a send_date is a text or a number")
    text = value.strip()
    found = _worded(text) or _dashed(text) or _iso(text)
    if found is None:
        raise ValueError(f"unreadable send_date {text!r}")
    if found.tzinfo is None:
        found = found.replace(tzinfo=tz)
    return found.astimezone(timezone.utc)


def _iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "zZ" else text)
    except ValueError:
        return None


def _worded(text: str) -> datetime | None:
    match = _WORDED_RE.fullmatch(text)
    if match is None or match.group(1).lower() not in _MONTHS:
        return None
    return _at(int(match.group(3)), _MONTHS[match.group(1).lower()], int(match.group(2)), match.groups()[3:])


def _dashed(text: str) -> datetime | None:
    match = _DASHED_RE.fullmatch(text)
    if match is None:
        return None
    return _at(int(match.group(1)), int(match.group(2)), int(match.group(3)), match.groups()[3:])


def _at(year: int, month: int, day: int, clock: tuple[str | None, ...]) -> datetime:
    hour, minute, second, meridiem, at_h, at_m, at_s = clock
    h, m, s = (int(at_h), int(at_m or 0), int(at_s or 0)) if at_h is not None else \
        (int(hour or 0), int(minute or 0), int(second or 0))
    if meridiem:
        if not 1 <= h <= 12:
            raise ValueError("an hour past 12 with am/pm")
        h = h % 12 + (12 if meridiem.lower().startswith("p") else 0)
    return datetime(year, month, day, h, m, s)
