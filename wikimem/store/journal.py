"""The append-only audit log shared by the wiki and the diary."""

from __future__ import annotations

import json
import os
from pathlib import Path

from wikimem.format import utc_now
from wikimem.fsio import open_regular, read_regular, write_all

__all__ = ["Journal", "wiki_record", "diary_record", "parse_record", "render_lines"]


def _record(ts: str | None, action: str, fields: dict) -> dict:
    record = {"ts": ts or utc_now(), "action": action}
    record.update((k, v) for k, v in fields.items() if v is not None)
    return record


def parse_record(line: str) -> dict | None:
    """The record of one journal line (of the file or a commit's trailer); None for a torn or foreign line."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def wiki_record(action: str, file: str, name: str, owner=None, source_conv=None,
                detail=None, ts: str | None = None) -> dict:
    """The journal line of a wiki mutation (``add``, ``update``, ``remove``)."""
    return _record(ts, action, {"file": file, "item": name, "owner": owner,
                                "source_conv": source_conv, "detail": detail})


def diary_record(date: str, time: str, owner=None, source_conv=None,
                 detail=None, ts: str | None = None, channel: str | None = None, present: tuple[str, ...] = ()) -> dict:
    """The journal line of a diary append."""
    return _record(ts, "diary", {"date": date, "time": time, "owner": owner,
                                 "source_conv": source_conv, "detail": detail, "channel": channel,
                                 "present": list(present) or None})


class Journal:
    """``journal.jsonl``: one JSON object per mutation, ``tail -f``-able."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    def append(
        self,
        action: str,
        *,
        file: str,
        name: str,
        owner: str | None = None,
        source_conv: str | None = None,
        detail: str | None = None,
        ts: str | None = None,
    ) -> dict:
        """Record a wiki mutation (``add``, ``update`` or ``remove``)."""
        return self.write(wiki_record(action, file, name, owner, source_conv, detail, ts))

    def append_diary(
        self,
        *,
        date: str,
        time: str,
        owner: str | None = None,
        source_conv: str | None = None,
        detail: str | None = None,
        ts: str | None = None,
    ) -> dict:
        """Record a diary append."""
        return self.write(diary_record(date, time, owner, source_conv, detail, ts))

    def write(self, record: dict) -> dict:
        """Append one record as a line, durably; returns it."""
        self.write_many([record])
        return record

    def write_many(self, records: list[dict], *, durable: bool = True) -> None:
        """Append records as lines with one fsync (none with ``durable=False``: the caller's log is the
        durable copy); nothing for an empty list."""
        if not records:
            return
        data = render_lines(records)
        # Never through a link, never a FIFO: the journal is a regular file of the folder or nothing.
        try:
            fd = open_regular(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        except FileNotFoundError:  # (its folder is made only when missing: no mkdir call on every write)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = open_regular(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            # A crash mid-append can leave a torn last line: start on a new one.
            size = os.fstat(fd).st_size
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)

    def entries(self) -> list[dict]:
        """Every readable record, oldest first; torn or foreign lines are skipped."""
        data = read_regular(self.path)
        if data is None:
            return []
        records = (parse_record(line) for line in data.decode("utf-8", errors="replace").splitlines())
        return [record for record in records if record is not None]

    def size(self) -> int:
        try:
            return os.lstat(self.path).st_size
        except FileNotFoundError:
            return 0

    def truncate(self, size: int, *, durable: bool = True) -> None:
        """Drop lines appended after ``size`` bytes (rollback of a failed unit)."""
        if self.size() > size:
            with open(open_regular(self.path, os.O_RDWR), "r+b") as fh:
                fh.truncate(size)
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())


def render_lines(records: list[dict]) -> bytes:
    """The journal lines of ``records``, as :meth:`Journal.write_many` appends them."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
