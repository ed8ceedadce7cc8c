"""Memories handed back to a SillyTavern front end: a World Info (lorebook) JSON, and a Data Bank markdown file.

- :func:`world_info` — one World Info entry per wiki item: an item that holds a lorebook entry (a card's,
  :mod:`.lorebook`) becomes that entry again (its keys, secondary keys, comment, order, position, enabled or
  not), any other item (a fact memorized) an entry keyed by its name;
- :func:`data_bank` — one markdown file: the facts by file, then the diary day by day, for SillyTavern's
  Data Bank (its vector storage reads it in chunks).

SillyTavern's World Info fields are written as SillyTavern converts a card's ``character_book`` (its own field
names, its defaults; what the card kept in an entry's ``extensions`` under SillyTavern's names taken back).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wikimem.models import DiaryItem, RecallItem

from .lorebook import item_entry

__all__ = ["world_info", "data_bank", "wi_entry"]

# World Info field -> (the key a card's entry keeps it under in ``extensions``, its default)
_FROM_EXTENSIONS = {
    "excludeRecursion": ("exclude_recursion", False), "preventRecursion": ("prevent_recursion", False),
    "delayUntilRecursion": ("delay_until_recursion", False), "probability": ("probability", 100),
    "useProbability": ("useProbability", True), "depth": ("depth", 4), "selectiveLogic": ("selectiveLogic", 0),
    "group": ("group", ""), "groupOverride": ("group_override", False), "groupWeight": ("group_weight", 100),
    "scanDepth": ("scan_depth", None), "matchWholeWords": ("match_whole_words", None),
    "useGroupScoring": ("use_group_scoring", None), "automationId": ("automation_id", ""), "role": ("role", None),
    "vectorized": ("vectorized", False), "sticky": ("sticky", None), "cooldown": ("cooldown", None),
    "delay": ("delay", None)}


def wi_entry(uid: int, entry: dict[str, Any]) -> dict[str, Any]:
    """A card's lorebook entry (every field, as :func:`~.lorebook.item_entry` gives it) as a World Info entry."""
    ext: dict[str, Any] = entry["extensions"] if isinstance(entry.get("extensions"), dict) else {}
    comment = entry.get("comment") or entry.get("name") or ""
    position = ext.get("position", 0 if entry.get("position") == "before_char" else 1)
    out = {"uid": uid, "key": list(entry.get("keys") or []), "keysecondary": _secondary(entry.get("secondary_keys")),
           "comment": comment, "content": entry.get("content") or "", "constant": bool(entry.get("constant")),
           "selective": bool(entry.get("selective")), "order": entry.get("insertion_order", 100),
           "position": position, "disable": entry.get("enabled") is False, "addMemo": bool(comment),
           "displayIndex": ext.get("display_index", uid),
           "caseSensitive": ext.get("case_sensitive", entry.get("case_sensitive"))}
    out.update({wi: ext.get(key, default) for wi, (key, default) in _FROM_EXTENSIONS.items()})
    return out


def _secondary(value: Any) -> list[str]:
    if isinstance(value, str):
        return [k.strip() for k in value.split(",") if k.strip()]
    return list(value or [])


def _fact(uid: int, item: RecallItem, label: str) -> dict[str, Any]:
    return wi_entry(uid, {"keys": [item.name], "content": item.content, "comment": f"{label}{item.file}: {item.name}",
                          "insertion_order": 100, "enabled": True})


def world_info(sources: Sequence[tuple[str, Sequence[RecallItem]]], *, name: str = "") -> dict[str, Any]:
    """A World Info book of the items of ``sources`` (``(label, items)``: the label prefixes a fact's comment,
    e.g. ``"shared · "``)."""
    entries: dict[str, Any] = {}
    for label, items in sources:
        for item in items:
            uid = len(entries)
            found = item_entry(item.content)
            entries[str(uid)] = wi_entry(uid, found) if found is not None else _fact(uid, item, label)
    return {"name": name, "entries": entries} if name else {"entries": entries}


def data_bank(title: str, sources: Sequence[tuple[str, Sequence[RecallItem]]],
              diary: Sequence[DiaryItem] = (), *, intro: str = "") -> str:
    """One markdown document: ``# title``, the items of each source by file, then the diary day by day."""
    lines = [f"# {title}", ""]
    if intro:
        lines += [intro, ""]
    for label, items in sources:
        if not items:
            continue
        lines += [f"## {label}", ""]
        for item in items:
            found = item_entry(item.content)
            text = found["content"] if found is not None else item.content
            lines += [f"### {item.file}: {item.name}", "", text.strip() or "(empty)", ""]
    if diary:
        lines += ["## Diary", ""]
        day = None
        for entry in diary:
            if entry.date != day:
                day = entry.date
                lines += [f"### {day}", ""]
            lines.append(f"- {entry.time} {entry.content}".rstrip())
        lines.append("")
    return "\n".join(lines)
