"""Diary: the event stream — one markdown file per day, append-only."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from datetime import date as _date
from datetime import datetime, timedelta, tzinfo
from pathlib import Path

from wikimem.format import (
    DIARY_DIR,
    clean_content,
    clean_meta_value,
    day_path,
    layer_prefix,
    normalize_ts,
    parse_day,
    render_day,
    sort_day,
)
from wikimem.models import DiaryItem
from wikimem.naming import DATE_RE, validate_channel_id, validate_date, validate_present, validate_time
from wikimem.timeparse import resolve_tz

from .journal import Journal, diary_record
from .writer import MutationHook, Writer

__all__ = ["Diary", "DiaryReader", "resolve_tz"]

# Beyond this many days a window is answered from the file listing instead
# of probing one file name per day.
_PROBE_DAYS = 400


class DiaryReader(ABC):
    """What every diary view shares: ``window`` over ``day`` and ``dates`` (the live folder, a past commit)."""

    @abstractmethod
    def day(self, date: str) -> list[DiaryItem]:
        """Every entry of one day, in file order."""

    @abstractmethod
    def dates(self) -> list[str]:
        """Every date that has entries, ascending."""

    def window(self, start: str, end: str) -> list[DiaryItem]:
        """Entries of the closed date range, in time order (reversed bounds are swapped)."""
        first, last = _date.fromisoformat(validate_date(start)), _date.fromisoformat(validate_date(end))
        if first > last:
            first, last = last, first
        if (last - first).days > _PROBE_DAYS:
            days = [d for d in self.dates() if first.isoformat() <= d <= last.isoformat()]
        else:
            days = [(first + timedelta(n)).isoformat() for n in range((last - first).days + 1)]
        out: list[DiaryItem] = []
        for d in days:
            out.extend(self.day(d))
        return out


class Diary(DiaryReader):
    """Append and read the diary of one memory folder (``root/diary/``; of a character's layer when ``layer`` is
    given with the folder's writer: see :class:`~wikimem.MemoryStore`)."""

    def __init__(self, root: Path | str, *, journal: Journal | None = None,
                 hook: MutationHook | None = None, _writer: Writer | None = None, layer: str | None = None):
        self.root = Path(root)
        self.layer = layer
        self._prefix = layer_prefix(layer) if _writer is not None else ""
        self.journal = journal if journal is not None else Journal(self.root / "journal.jsonl")
        self.writer = _writer if _writer is not None else Writer(self.root, self.journal, hook)

    @property
    def diary_dir(self) -> Path:
        return self.root / DIARY_DIR

    # -- writing -----------------------------------------------------------

    def append(
        self,
        content: str,
        *,
        ts: str | None = None,
        date: str | None = None,
        time: str | None = None,
        owner: str | None = None,
        source_conv: str | None = None,
        tz: tzinfo | str | None = None,
        channel: str | None = None,
        present: Iterable[str] | str | None = None,
    ) -> DiaryItem:
        """Append one event; the only write there is. ``channel`` and ``present``: where it was said (``dm`` for a
        direct chat) and who was there (owner ids, ``char:<character>``). Invalid input raises ValueError."""
        content = clean_content(content)
        if not content:
            raise ValueError("diary content is empty")
        ts = normalize_ts(ts)
        try:
            local = datetime.fromisoformat(ts).astimezone(resolve_tz(tz))
        except OverflowError:  # 0001-01-01T00:00Z west of Greenwich is before the calendar starts
            raise ValueError(f"ts {ts} has no local date in {tz}: it falls outside the calendar") from None
        date = validate_date(date) if date is not None else local.date().isoformat()
        time = validate_time(time) if time is not None else local.strftime("%H:%M")
        entry = DiaryItem(
            date=date,
            time=time,
            content=content,
            owner=clean_meta_value(owner, "owner"),
            source_conv=clean_meta_value(source_conv, "source_conv"),
            ts=ts,
            channel=validate_channel_id(channel) if channel is not None else None,
            present=validate_present(present) if present is not None else (),
        )
        rel = self._prefix + day_path(date)
        with self.writer.unit():
            old, entries = self.writer.parse(rel, lambda data: parse_day(data, date))
            # Sorted stably: the new event lands after every earlier one of its minute.
            entries = sort_day(entries + [entry])
            record = diary_record(date, time, entry.owner, entry.source_conv, channel=entry.channel,
                                  present=entry.present)
            if self.layer is not None:
                record["layer"] = self.layer
            self.writer.apply({rel: (old, render_day(date, entries))}, record, parsed={rel: entries})
        return entry

    # -- reading -----------------------------------------------------------

    def day(self, date: str) -> list[DiaryItem]:
        """Every entry of one day, in file order."""
        validate_date(date)
        return parse_day(self.writer.read(self._prefix + day_path(date)), date)

    def dates(self) -> list[str]:
        """Every date that has a diary file, ascending."""
        out = []
        for name in self.writer.door.names(self._prefix + DIARY_DIR):
            stem = name[:-3]
            if DATE_RE.fullmatch(stem):
                try:
                    _date.fromisoformat(stem)
                except ValueError:
                    continue
                out.append(stem)
        return sorted(out)
