"""Commit messages: a one-line summary, a readable body, and ``Wikimem-*`` trailers.

A single mutation reads like ``add preferences/likes-the-sea`` followed by
``Wikimem-Action``, ``Wikimem-File``, ``Wikimem-Item`` (or ``Wikimem-Date`` /
``Wikimem-Time``), ``Wikimem-Owner``, ``Wikimem-Source-Conv``, ``Wikimem-Run``,
``Wikimem-Actor``. Each mutation's journal line rides along as a
``Wikimem-Journal`` trailer, so ``git log`` is the whole audit trail even
though ``journal.jsonl`` itself is not versioned.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from wikimem.naming import is_unsafe
from wikimem.store import UnitInfo, parse_record

__all__ = ["build_message", "parse_trailers", "describe", "clean_value", "printable", "undo_body", "undo_trailers",
           "trailer_values", "layer_trailers", "MAX_UNDO_ITEMS", "SHARED_LAYER"]

SHARED_LAYER = "shared"  # how a trailer names the shared layer in a commit that touches a character's too

_ORDER = ("Action", "File", "Item", "Date", "Time", "Owner", "Source-Conv", "Run", "Actor", "Reverts",
          "Idempotency-Key", "Request")


def printable(text: str) -> str:
    """``text`` with every control, format or separator character written as ``\\uXXXX``.

    Values are validated where they enter; this is the second wall, at the
    sink: nothing that could end a line, hide text or drive a terminal is
    ever written into a commit message (a hand-made file name, say).
    """
    return "".join(f"\\u{ord(c):04x}" if is_unsafe(c) else c for c in text)


def clean_value(value) -> str | None:
    """A trailer value on one line of visible text, or None."""
    if value is None:
        return None
    text = printable(" ".join(str(value).split()))
    return text[:500] or None


def layer_trailers(layers: Iterable[str | None]) -> list[str]:
    """``Wikimem-Layer`` lines of a commit that touched these layers (None: the shared one): one per character's
    layer, and ``shared`` too when it is touched beside one; none for a commit of the shared layer alone."""
    found = set(layers)
    if found <= {None}:
        return []
    return [f"Wikimem-Layer: {layer or SHARED_LAYER}" for layer in sorted(found, key=lambda x: (x is not None, x))]


def describe(record: dict) -> str:
    """``add preferences/likes-the-sea`` / ``diary 2026-07-21 14:30`` for one journal record (``… in kai``
    for a character's layer)."""
    where = f" in {record['layer']}" if record.get("layer") else ""
    return _describe(record) + where


def _describe(record: dict) -> str:
    action = record.get("action", "change")
    if action == "diary":
        return f"diary {record.get('date')} {record.get('time')}"
    if record.get("file") is not None and record.get("item") is not None:
        return f"{action} {record['file']}/{record['item']}"
    if record.get("file") is not None:
        return f"{action} {record['file']}"
    if record.get("date") is not None:
        return f"{action} diary {record['date']} {record.get('time') or ''}".rstrip()
    return str(action)


def build_message(records: list[dict], info: UnitInfo) -> str:
    """The message of one commit made of ``records`` (journal lines) with the unit's ``info``."""
    trailers: dict[str, str | None] = {}
    if len(records) == 1:
        # One change: what it touched, and what the commit was (the unit's action: memorize, diary-tool,
        # batch, an undo…), else the change's own (add, update, remove, diary).
        rec = records[0]
        summary = info.message or describe(rec)
        trailers.update({
            "Action": info.action or rec.get("action"), "File": rec.get("file"), "Item": rec.get("item"),
            "Date": rec.get("date"), "Time": rec.get("time"), "Owner": rec.get("owner"),
            "Source-Conv": rec.get("source_conv"),
        })
    else:
        kind = info.action or "batch"
        summary = info.message or (f"{kind}: {len(records)} change{'s' if len(records) != 1 else ''}")
        owners = {r.get("owner") for r in records if r.get("owner")}
        files = {r.get("file") for r in records if r.get("file")}
        trailers["Action"] = kind
        trailers["File"] = next(iter(files)) if len(files) == 1 else None
        trailers["Owner"] = next(iter(owners)) if len(owners) == 1 else None
        convs = {r.get("source_conv") for r in records if r.get("source_conv")}
        trailers["Source-Conv"] = next(iter(convs)) if len(convs) == 1 else None
    if info.source_conv:
        trailers["Source-Conv"] = info.source_conv
    trailers["Run"] = info.run
    trailers["Actor"] = info.actor
    trailers["Reverts"] = info.reverts
    trailers["Idempotency-Key"] = info.idempotency_key
    trailers["Request"] = info.request  # what the key was used for: a retry must be the same request
    summary = clean_value(summary) or "change"
    lines = [summary[:200], ""]
    if len(records) > 1 and not info.undo_items:  # an undo commit names its items instead
        lines.extend(f"- {clean_value(describe(r))}" for r in records)
        lines.append("")
    lines.extend(undo_body(info))
    for key in _ORDER:
        value = clean_value(trailers.get(key))
        if value is not None:
            lines.append(f"Wikimem-{key}: {value}")
    lines.extend(undo_trailers(info))
    lines.extend(layer_trailers(r.get("layer") for r in records))
    lines.extend(f"Wikimem-{name}: {v}" for name, value in info.trailers if (v := clean_value(value)))
    for rec in records:
        # ASCII-escaped: a journal line can never carry a line break or a control character into the message.
        lines.append("Wikimem-Journal: " + json.dumps(rec, ensure_ascii=True, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def parse_trailers(message: str) -> tuple[str, dict[str, str], list[dict]]:
    """``(summary, {trailer: first value}, journal records)`` of a commit message.

    Lines end at ``\\n`` only — as git's own trailer parser reads them — never at
    U+2028, U+0085 or other characters ``str.splitlines`` would break on.
    """
    lines = message.replace("\r\n", "\n").split("\n")
    summary = lines[0].strip() if lines else ""
    trailers: dict[str, str] = {}
    journal: list[dict] = []
    for line in _last_paragraph(lines[1:]):
        key, sep, value = line.partition(": ")
        if not sep or not key.startswith("Wikimem-"):
            continue
        name = key[len("Wikimem-"):]
        if name == "Journal":
            if (rec := parse_record(value)) is not None:
                journal.append(rec)
        else:
            trailers.setdefault(name, value.strip())
    return summary, trailers, journal


def _last_paragraph(lines: Iterable[str]) -> list[str]:
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    for para in reversed(paragraphs):
        if para:
            return para
    return []


# -- undo commits: what they undid, in full ------------------------------------------------

# An undo commit names at most this many items in its body (then "… and N more").
MAX_UNDO_ITEMS = 100


def undo_body(info: UnitInfo) -> list[str]:
    """The body paragraph of an undo commit: one line per item it changes (``info.undo_items``)."""
    items = [clean_value(i) for i in info.undo_items]
    items = [i for i in items if i]
    if not items:
        return []
    lines = [f"- {i}" for i in items[:MAX_UNDO_ITEMS]]
    if len(items) > MAX_UNDO_ITEMS:
        lines.append(f"- … and {len(items) - MAX_UNDO_ITEMS} more")
    return lines + [""]


def undo_trailers(info: UnitInfo) -> list[str]:
    """``Wikimem-Reverts: <full commit id>`` per commit a rollback undid, ``Wikimem-Reverts-Run: <run>`` per run.

    One line per value, so no list is ever cut at a trailer's length limit;
    the single commit of a revert or restore (``info.reverts``) keeps its one
    ``Wikimem-Reverts`` line among the trailers of :func:`build_message`.
    """
    lines = [f"Wikimem-Reverts: {v}" for v in map(clean_value, info.reverts_commits) if v]
    lines += [f"Wikimem-Reverts-Run: {v}" for v in map(clean_value, info.reverts_runs) if v]
    return lines


def trailer_values(message: str, name: str) -> list[str]:
    """Every value of trailer ``Wikimem-<name>`` in a commit message, in order (one trailer may repeat)."""
    prefix = f"Wikimem-{name}: "
    return [line[len(prefix):].strip() for line in _last_paragraph(message.replace("\r\n", "\n").split("\n")[1:])
            if line.startswith(prefix) and line[len(prefix):].strip()]
