"""An operator's edits of a staged run at approval: checked, limited to the run's own items, applied to the plan.

An approval commit carries the run's trailers (a later rollback of the run reverts it), so it may change only what
the run itself added or changed; anything else is an operator's write of its own (issue 38).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from wikimem.errors import InvalidValue, NotFound
from wikimem.format import parse_day, parse_wiki, render_day, render_wiki

from .history import ItemChange, State

__all__ = ["where", "check_edits", "own_edits", "apply_edits"]


def where(thing: dict) -> str:
    if thing.get("kind", "wiki") == "wiki" and thing.get("file"):
        return f"{thing.get('file')}/{thing.get('name')}"
    return f"diary {thing.get('date')} {thing.get('time')}"


def check_edits(edits: Sequence[dict]) -> list[dict]:
    out = []
    for e in edits or ():
        if not isinstance(e, dict) or not isinstance(e.get("content"), str) or not e["content"].strip():
            raise InvalidValue("an edit is {file, name, content} or {date, time, before, content}, content not empty")
        if e.get("file") is not None and e.get("name") is not None:
            out.append({"kind": "wiki", "file": str(e["file"]), "name": str(e["name"]), "content": e["content"]})
        elif e.get("date") is not None and e.get("time") is not None:
            out.append({"kind": "diary", "date": str(e["date"]), "time": str(e["time"]),
                        "before": e.get("before"), "content": e["content"]})
        else:
            raise InvalidValue("an edit names an item (file, name) or a diary entry (date, time)")
    return out


def own_edits(edits: list[dict], changes: Sequence[ItemChange], run: str) -> list[dict]:
    """``edits`` if each names an item or diary entry the run itself added or changed, else :class:`InvalidValue`:
    an approval commit carries the run's trailers (a rollback of the run reverts it), so it holds the run's own
    changes only — an edit of anything else is an operator's write of its own."""
    from wikimem.naming import sanitize_item_name

    own = {("wiki", c.file, c.name) if c.kind == "wiki" else ("diary", c.date, c.time)
           for c in changes if c.status != "removed"}
    for e in edits:
        key = ("wiki", e["file"], sanitize_item_name(e["name"])) if e["kind"] == "wiki" else (
            "diary", e["date"], e["time"])
        if key not in own:
            raise InvalidValue(f"{where(e)} is not among what staged run {run} changed: an approval may edit only "
                               "the run's own items (edit anything else as a write of its own)")
    return edits


def apply_edits(state: State, edits: Sequence[dict]) -> None:
    """Apply an operator's edits to the planned files (the item or entry as the plan leaves it)."""
    from wikimem.format import clean_content, day_path, wiki_path
    from wikimem.naming import sanitize_item_name, validate_date, validate_file, validate_time

    for e in edits:
        content = clean_content(e["content"])
        if e["kind"] == "wiki":
            file, name = validate_file(e["file"]), sanitize_item_name(e["name"])
            path = wiki_path(file)
            items = parse_wiki(state.get(path), file)
            found = [i for i in items if i.name == name]
            if not found:
                raise NotFound(f"no item {file}/{name} to edit in what is approved")
            state.set(path, render_wiki(file, [replace(i, content=content) if i.name == name else i for i in items]))
        else:
            date, time = validate_date(e["date"]), validate_time(e["time"])
            path = day_path(date)
            entries = parse_day(state.get(path), date)
            hits = [n for n, x in enumerate(entries) if x.time == time and e.get("before") in (None, x.content)]
            if not hits:
                raise NotFound(f"no diary entry {date} {time} to edit in what is approved")
            n = hits[-1]
            entries[n] = replace(entries[n], content=content)
            state.set(path, render_day(date, entries))
