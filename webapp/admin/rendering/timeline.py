"""History entries grouped into runs, for the timeline page.

A memorize run is usually one commit, but a run id may span several
commits (a worker writing item by item with the same ``run``); consecutive
entries of one run are shown together, everything else stands alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunGroup", "group_by_run", "change_count"]


def change_count(entry: Any) -> int:
    """How many items a history entry changed (``changes`` is a list or a count)."""
    changes = getattr(entry, "changes", None)
    if changes is None:
        return 0
    if isinstance(changes, int):
        return changes
    return len(changes)


@dataclass
class RunGroup:
    run: str | None
    entries: list = field(default_factory=list)

    @property
    def first(self):
        """The newest entry (history is newest first)."""
        return self.entries[0]

    @property
    def actors(self) -> list[str]:
        return _distinct(getattr(e, "actor", None) for e in self.entries)

    @property
    def source_convs(self) -> list[str]:
        return _distinct(getattr(e, "source_conv", None) for e in self.entries)

    @property
    def changes(self) -> int:
        return sum(change_count(e) for e in self.entries)

    @property
    def start(self):
        return getattr(self.entries[-1], "time", None)

    @property
    def end(self):
        return getattr(self.entries[0], "time", None)


def _distinct(values) -> list[str]:
    out: list[str] = []
    for v in values:
        if v and v not in out:
            out.append(v)
    return out


def group_by_run(entries: list) -> list[RunGroup]:
    """Consecutive entries with the same non-empty run become one group."""
    groups: list[RunGroup] = []
    for entry in entries:
        run = getattr(entry, "run", None) or None
        if run is not None and groups and groups[-1].run == run:
            groups[-1].entries.append(entry)
        else:
            groups.append(RunGroup(run, [entry]))
    return groups
