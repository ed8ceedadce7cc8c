"""The values of the run index (:mod:`wikimem.host.fleet.runindex`): a search (:class:`RunQuery`), a run
(:class:`RunRow`), per-owner counts, their pages, and the merging of several hosts' pages of the same search
(ordered by one global key — newest ``last`` first, then owner, then the run's place in the owner's history —
whose cursor is that key, so a gatherer asks every host the same query and cursor)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from wikimem.errors import BadRequest, InvalidValue
from wikimem.format import instant_epoch, iso_instant
from wikimem.host.instants import parse_instant
from wikimem.host.owner_ids import Within, scope_prefixes
from wikimem.naming import validate_character_id

from .paging import encode_cursor
from .sql import prefix_match

__all__ = ["RunQuery", "RunSpan", "RunRow", "StagedRow", "RunPage", "OwnerCount", "OwnerCountPage", "MAX_FIELD",
           "row_cursor", "merge_pages", "contains_pattern"]

MAX_FIELD = 200


def _text(value, what: str, limit: int = MAX_FIELD) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{what} must be a string")
    if len(value) > limit:
        raise InvalidValue(f"{what} is longer than {limit} characters")
    return value


@dataclass(frozen=True)
class RunQuery:
    """Which runs: by run id, actor, source conversation, action, time window (overlap), owner-id prefix, and the
    character whose layer of a person's folder they wrote (``character``)."""

    run: str | None = None
    actor: str | None = None
    source_conv: str | None = None
    action: str | None = None
    since: int | None = None  # epoch seconds: runs whose last commit is at or after
    until: int | None = None  # epoch seconds: runs whose first commit is at or before
    owner_prefix: str = ""
    character: str | None = None

    @classmethod
    def parse(cls, *, run=None, actor=None, source_conv=None, action=None, since=None, until=None,
              owner_prefix=None, character=None) -> RunQuery:
        """A query from request values (strings; times as a date or ISO-8601); a bad one raises :class:`BadRequest`
        (a malformed character id :class:`~wikimem.errors.InvalidName`)."""
        chosen = _text(character, "character", 64)
        return cls(_text(run, "run"), _text(actor, "actor"), _text(source_conv, "source_conv"),
                   _text(action, "action", 64), parse_instant(_text(since, "since", 64), "since"),
                   parse_instant(_text(until, "until", 64), "until", end_of_day=True),
                   _text(owner_prefix, "owner_prefix", 128) or "",
                   validate_character_id(chosen) if chosen is not None else None)

    def selective(self) -> bool:
        """Whether anything besides the owner prefix narrows the runs (a bulk action needs it)."""
        return any(v is not None for v in (self.run, self.actor, self.source_conv, self.action, self.since,
                                           self.until, self.character))

    def to_dict(self) -> dict:
        out = asdict(self)
        out["since"], out["until"] = iso_instant(self.since), iso_instant(self.until)
        return {k: v for k, v in out.items() if v not in (None, "")}

    def where(self, within: Within = "") -> tuple[str, list] | None:
        """The SQL condition and arguments; None when the prefix falls outside ``within`` (nothing to see)."""
        prefixes = scope_prefixes(within, self.owner_prefix)
        if not prefixes:
            return None
        where: list[str] = []
        args: list[Any] = []
        for column, value in (("run", self.run), ("actor", self.actor), ("source_conv", self.source_conv)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if self.action is not None:
            where.append("actions LIKE ? ESCAPE '\\'")
            args.append(contains_pattern(self.action))
        if self.character is not None:
            where.append("characters LIKE ? ESCAPE '\\'")
            args.append(contains_pattern(self.character))
        if self.since is not None:
            where.append("last >= ?")
            args.append(self.since)
        if self.until is not None:
            where.append("first <= ?")
            args.append(self.until)
        if "" not in prefixes:
            cond, more = prefix_match("owner", prefixes)
            where.append(cond)
            args += more
        return (" AND ".join(where) or "1"), args


@dataclass
class RunSpan:
    """What the run index and the staged-run index both keep of one run of one owner: who wrote it, from which
    conversation, its first and last commit time, how many commits and changed items."""

    owner: str
    run: str | None
    actor: str | None
    source_conv: str | None
    first: str
    last: str
    commits: int
    changes: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunRow(RunSpan):
    """One run of one owner in the run index (``run`` None: a single commit without a run id, named by
    ``commit``)."""

    commit: str  # the run's newest commit
    actions: list[str]
    seq: int  # where the run's newest commit stands in the owner's history (1 = its first commit)
    rolled_back_by: str | None = None
    characters: list[str] = field(default_factory=list)  # whose layers of the folder the run wrote


@dataclass
class StagedRow(RunSpan):
    """One staged run of one owner as the staged-run index holds it (``state``: staged, approved, discarded,
    expired or gone; ``held``: an operator keeps it from auto-approval and expiry)."""

    tip: str
    state: str
    held: bool
    settled_by: str | None = None
    settled_commit: str | None = None
    settled_at: str | None = None


@dataclass
class OwnerCount:
    """How many of the matching runs (and their commits) one owner has."""

    owner: str
    runs: int
    commits: int
    first: str
    last: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class RunPage:
    """A page of matching runs, the cursor of the next one, and the totals of the whole match."""

    runs: list[RunRow] = field(default_factory=list)
    next: str | None = None
    total: dict = field(default_factory=lambda: {"runs": 0, "owners": 0, "commits": 0})
    complete: bool = True  # False: owners older than the index may be missing until `wikimem index rebuild`
    unreachable: list[str] = field(default_factory=list)  # peers of a cluster that did not answer (a partial page)
    # For a gatherer: the totals of the whole match per owner, {owner: [runs, commits, furthest seq]} (None: not
    # asked, or more owners than OWNER_TOTALS_CAP)
    by_owner: dict[str, list[int]] | None = None

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"runs": [r.to_dict() for r in self.runs], "next": self.next, "total": self.total,
                               "complete": self.complete}
        if self.unreachable:
            out["unreachable"] = list(self.unreachable)
        if self.by_owner is not None:
            out["by_owner"] = self.by_owner
        return out

    @classmethod
    def merged(cls, pages: list[dict], limit: int, unreachable: Sequence[str] = ()) -> RunPage:
        """The page of a whole cluster from every host's page (their JSON) of the same search and cursor."""
        page = merge_pages(pages, limit)
        return cls([RunRow(**{k: r.get(k) for k in RunRow.__dataclass_fields__}) for r in page["runs"]],
                   page["next"], page["total"], page["complete"], list(unreachable))


@dataclass
class OwnerCountPage:
    """A page of per-owner counts (owners in id order), the next page's cursor, and the peers that did not answer."""

    owners: list[OwnerCount] = field(default_factory=list)
    next: str | None = None
    unreachable: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"owners": [c.to_dict() for c in self.owners], "next": self.next}
        if self.unreachable:
            out["unreachable"] = list(self.unreachable)
        return out

    @classmethod
    def merged(cls, pages: list[dict], limit: int, unreachable: Sequence[str] = ()) -> OwnerCountPage:
        """One page from every host's page: owners in id order (one host's copy each: the newest), cut at ``limit``."""
        best: dict[str, dict] = {}
        more = False
        for p in pages:
            more = more or bool(p.get("next"))
            for row in p.get("owners", []):
                seen = best.get(row["owner"])
                if seen is None or instant_epoch(row["last"]) > instant_epoch(seen["last"]):
                    best[row["owner"]] = row
        ids = sorted(best)
        kept, more = ids[:limit], more or len(ids) > limit
        rows: list[dict[str, Any]] = [{k: best[i].get(k) for k in OwnerCount.__dataclass_fields__} for i in kept]
        return cls([OwnerCount(**row) for row in rows],
                   encode_cursor(kept[-1]) if more and kept else None, list(unreachable))


def row_cursor(row: dict) -> str:
    """The cursor that continues a search after ``row`` (a run as :meth:`RunRow.to_dict` gives it).

    The same cursor is valid on every host: a gatherer merging the pages of
    several hosts continues each of them from the last row it kept.
    """
    return encode_cursor(instant_epoch(row["last"]), row["owner"], int(row["seq"]))


def _order(row: dict) -> tuple:
    return (-instant_epoch(row["last"]), row["owner"], -int(row["seq"]))


def merge_pages(pages: list[dict], limit: int) -> dict:
    """One page from the pages several hosts answered to the same search and cursor (their JSON).

    Rows are merged in the search's global order and cut at ``limit``;
    ``next`` continues every host after the last row kept. This is the
    gathering of a cluster *without* a shared database: each host indexes the
    owners it holds, so an owner that moved between hosts may be known to
    two of them. A run seen twice is kept once (the copy indexed further),
    and the totals count each owner once too: from every host's ``by_owner``
    (the match's totals per owner), the copy indexed furthest. When a host
    could not give them (more than ``OWNER_TOTALS_CAP`` owners match) the
    totals are summed over hosts, and then, if a run was seen twice,
    ``complete`` is False. (A cluster that shares ``WIKIMEM_DATABASE_URL``
    needs no gathering.)
    """
    best: dict[tuple, dict] = {}
    for row in (r for p in pages for r in p.get("runs", [])):
        key = (row["owner"], row.get("run") or "@" + str(row.get("commit")))
        seen = best.get(key)
        if seen is None or int(row["seq"]) > int(seen["seq"]):
            best[key] = row
    twice = sum(len(p.get("runs", [])) for p in pages) - len(best)
    rows = sorted(best.values(), key=_order)
    more = len(rows) > limit or any(p.get("next") for p in pages)
    kept = rows[:limit]
    total = _owner_totals(pages)
    if total is None:
        total = {k: sum(p.get("total", {}).get(k, 0) for p in pages) for k in ("runs", "owners", "commits")}
    else:
        twice = 0  # the totals count each owner once: exact
    return {"runs": kept, "next": row_cursor(kept[-1]) if more and kept else None, "total": total,
            "complete": twice == 0 and all(p.get("complete", True) for p in pages)}


def _owner_totals(pages: list[dict]) -> dict | None:
    """The totals of the whole match counted once per owner (the copy indexed furthest), or None when a page lacks
    its ``by_owner``."""
    best: dict[str, list[int]] = {}
    for p in pages:
        found = p.get("by_owner")
        if not isinstance(found, dict):
            return None
        for owner, (runs, commits, seq) in found.items():
            if owner not in best or seq > best[owner][2]:
                best[owner] = [int(runs), int(commits), int(seq)]
    return {"runs": sum(v[0] for v in best.values()), "owners": len(best),
            "commits": sum(v[1] for v in best.values())}


def contains_pattern(word: str) -> str:
    """The LIKE pattern of a list ``,a,b,`` that holds ``,word,``."""
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%,{escaped},%"
