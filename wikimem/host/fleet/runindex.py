"""The cross-owner run index: every owner's runs in one small SQLite file at the data root.

``<data root>/index/runs.sqlite3`` (WAL) holds one row per run of an owner
(a commit without a run id is a run of its own): actor, source
conversation, first and last commit time, how many commits and changed
items, the actions seen, the newest commit, and the undo commit that rolled
it back, if any. It answers "what did actor X write between T1 and T2, for
everyone?" without opening a single owner.

It is derived and rebuildable: each owner's history index is the truth.
The host feeds it from :attr:`VersionedStore.on_commit` (inside the owner's
lock, once the owner's history index holds the commit), walking that
owner's history from the newest commit back to the last one it indexed —
so commits made outside the host (hand edits, the ``git`` CLI, a listener
that failed) are picked up by the owner's next write, or by
``wikimem index rebuild``.

A search's JSON (:meth:`RunPage.to_dict`) is ordered by one global key
(newest ``last`` first, then owner, then the run's place in the owner's
history, newest first) and its cursor is that key,
so a gatherer can ask every host of a cluster the same query with the same
cursor and merge the pages.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem.host.errors import BadRequest
from wikimem.host.instants import iso_instant, parse_instant
from wikimem.host.owner_ids import scope_prefix

if TYPE_CHECKING:
    from wikimem.host.owner import Owner

__all__ = ["RunIndex", "RunQuery", "RunRow", "RunPage", "OwnerCount", "OwnerCountPage", "INDEX_PATH", "MAX_FIELD",
           "row_cursor", "merge_pages"]

log = logging.getLogger(__name__)

INDEX_PATH = Path("index") / "runs.sqlite3"
MAX_FIELD = 200
UNDO_ACTIONS = ("revert", "rollback")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    owner TEXT NOT NULL, key TEXT NOT NULL, run TEXT, actor TEXT, source_conv TEXT,
    first INTEGER NOT NULL, last INTEGER NOT NULL, commits INTEGER NOT NULL, changes INTEGER NOT NULL,
    actions TEXT NOT NULL, head TEXT NOT NULL, seq INTEGER NOT NULL, undone_by TEXT, PRIMARY KEY (owner, key));
CREATE INDEX IF NOT EXISTS runs_last ON runs (last, owner, seq);
CREATE INDEX IF NOT EXISTS runs_actor ON runs (actor, last);
CREATE INDEX IF NOT EXISTS runs_run ON runs (run);
CREATE INDEX IF NOT EXISTS runs_conv ON runs (source_conv, last);
CREATE TABLE IF NOT EXISTS owners (owner TEXT PRIMARY KEY, head TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


def _epoch(iso: str) -> int:
    return int(datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())


def _text(value, what: str, limit: int = MAX_FIELD) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{what} must be a string")
    if len(value) > limit:
        raise BadRequest(f"{what} is longer than {limit} characters")
    return value


@dataclass(frozen=True)
class RunQuery:
    """Which runs: by run id, actor, source conversation, action, time window (overlap) and owner-id prefix."""

    run: str | None = None
    actor: str | None = None
    source_conv: str | None = None
    action: str | None = None
    since: int | None = None  # epoch seconds: runs whose last commit is at or after
    until: int | None = None  # epoch seconds: runs whose first commit is at or before
    owner_prefix: str = ""

    @classmethod
    def parse(cls, *, run=None, actor=None, source_conv=None, action=None, since=None, until=None,
              owner_prefix=None) -> RunQuery:
        """A query from request values (strings; times as a date or ISO-8601); a bad one raises :class:`BadRequest`."""
        return cls(_text(run, "run"), _text(actor, "actor"), _text(source_conv, "source_conv"),
                   _text(action, "action", 64), parse_instant(_text(since, "since", 64), "since"),
                   parse_instant(_text(until, "until", 64), "until", end_of_day=True),
                   _text(owner_prefix, "owner_prefix", 128) or "")

    def selective(self) -> bool:
        """Whether anything besides the owner prefix narrows the runs (a bulk action needs it)."""
        return any(v is not None for v in (self.run, self.actor, self.source_conv, self.action, self.since,
                                           self.until))

    def to_dict(self) -> dict:
        out = asdict(self)
        out["since"], out["until"] = iso_instant(self.since), iso_instant(self.until)
        return {k: v for k, v in out.items() if v not in (None, "")}

    def where(self, within: str = "") -> tuple[str, list] | None:
        """The SQL condition and arguments; None when the prefix falls outside ``within`` (nothing to see)."""
        prefix = scope_prefix(within, self.owner_prefix)
        if prefix is None:
            return None
        where, args = [], []
        for column, value in (("run", self.run), ("actor", self.actor), ("source_conv", self.source_conv)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if self.action is not None:
            where.append("instr(actions, ?) > 0")
            args.append(f",{self.action},")
        if self.since is not None:
            where.append("last >= ?")
            args.append(self.since)
        if self.until is not None:
            where.append("first <= ?")
            args.append(self.until)
        if prefix:
            where.append("substr(owner, 1, ?) = ?")
            args += [len(prefix), prefix]
        return (" AND ".join(where) or "1"), args


@dataclass
class RunRow:
    """One run of one owner (``run`` None: a single commit without a run id, named by ``commit``)."""

    owner: str
    run: str | None
    commit: str  # the run's newest commit
    actor: str | None
    source_conv: str | None
    first: str
    last: str
    commits: int
    changes: int
    actions: list[str]
    seq: int  # where the run's newest commit stands in the owner's history (1 = its first commit)
    rolled_back_by: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


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

    def to_dict(self) -> dict:
        out = {"runs": [r.to_dict() for r in self.runs], "next": self.next, "total": self.total,
               "complete": self.complete}
        if self.unreachable:
            out["unreachable"] = list(self.unreachable)
        return out

    @classmethod
    def merged(cls, pages: list[dict], limit: int, unreachable: list[str] = ()) -> RunPage:
        """The page of a whole cluster from every host's page (their JSON) of the same search and cursor."""
        page = merge_pages(pages, limit)
        return cls([RunRow(**{k: r.get(k) for k in RunRow.__dataclass_fields__}) for r in page["runs"]],
                   page["next"], page["total"], all(p.get("complete", True) for p in pages), list(unreachable))


@dataclass
class OwnerCountPage:
    """A page of per-owner counts (owners in id order), the next page's cursor, and the peers that did not answer."""

    owners: list[OwnerCount] = field(default_factory=list)
    next: str | None = None
    unreachable: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {"owners": [c.to_dict() for c in self.owners], "next": self.next}
        if self.unreachable:
            out["unreachable"] = list(self.unreachable)
        return out

    @classmethod
    def merged(cls, pages: list[dict], limit: int, unreachable: list[str] = ()) -> OwnerCountPage:
        """One page from every host's page: owners in id order (one host's copy each: the newest), cut at ``limit``."""
        best: dict[str, dict] = {}
        more = False
        for p in pages:
            more = more or bool(p.get("next"))
            for row in p.get("owners", []):
                seen = best.get(row["owner"])
                if seen is None or _epoch(row["last"]) > _epoch(seen["last"]):
                    best[row["owner"]] = row
        ids = sorted(best)
        kept, more = ids[:limit], more or len(ids) > limit
        return cls([OwnerCount(**{k: best[i].get(k) for k in OwnerCount.__dataclass_fields__}) for i in kept],
                   encode_cursor(kept[-1]) if more and kept else None, list(unreachable))


_ROW = "owner, key, run, head, actor, source_conv, first, last, commits, changes, actions, seq, undone_by"


def _row(r) -> RunRow:
    return RunRow(r[0], r[2], r[3], r[4], r[5], iso_instant(r[6]), iso_instant(r[7]), r[8], r[9],
                  [a for a in r[10].split(",") if a], r[11], r[12])


def encode_cursor(*key) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key), separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, shape: tuple[type, ...]) -> list:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = json.loads(raw)
        if not (isinstance(key, list) and len(key) == len(shape)
                and all(isinstance(v, t) and not isinstance(v, bool) for v, t in zip(key, shape))):
            raise ValueError
        return key
    except ValueError:
        raise BadRequest(f"invalid cursor {cursor[:40]!r}") from None


def row_cursor(row: dict) -> str:
    """The cursor that continues a search after ``row`` (a run as :meth:`RunRow.to_dict` gives it).

    The same cursor is valid on every host: a gatherer merging the pages of
    several hosts continues each of them from the last row it kept.
    """
    return encode_cursor(_epoch(row["last"]), row["owner"], int(row["seq"]))


def _order(row: dict) -> tuple:
    return (-_epoch(row["last"]), row["owner"], -int(row["seq"]))


def merge_pages(pages: list[dict], limit: int) -> dict:
    """One page from the pages several hosts answered to the same search and cursor (their JSON).

    Rows are merged in the search's global order and cut at ``limit``;
    totals are summed (owners live on one host each). ``next`` continues
    every host after the last row kept.
    """
    rows = sorted((r for p in pages for r in p.get("runs", [])), key=_order)
    more = len(rows) > limit or any(p.get("next") for p in pages)
    kept = rows[:limit]
    total = {k: sum(p.get("total", {}).get(k, 0) for p in pages) for k in ("runs", "owners", "commits")}
    return {"runs": kept, "next": row_cursor(kept[-1]) if more and kept else None, "total": total}


class RunIndex:
    """The cross-owner run index of one data root (safe to share between threads and processes)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"RunIndex({str(self.path)!r})"

    # -- connection ------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) != os.getpid():
            conn = None  # made before a fork: SQLite handles must not cross it
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = self._connect()
            except sqlite3.DatabaseError:  # damaged: it is only derived, start it again (a rebuild refills it)
                for suffix in ("", "-wal", "-shm"):
                    try:
                        os.unlink(str(self.path) + suffix)
                    except FileNotFoundError:
                        pass
                conn = self._connect()
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def start(self, has_owners: bool) -> None:
        """At a host's start: a new index over a data root that already has owners is incomplete until a rebuild
        (each owner is indexed whole at its next write; the others only by ``wikimem index rebuild``)."""
        if self.path.exists():
            return
        try:
            self.set_complete(not has_owners)
        except (OSError, sqlite3.Error):  # a read-only data root: searches work on what is there
            log.warning("run index: could not create %s", self.path, exc_info=True)

    def set_complete(self, complete: bool) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('complete', ?)", ("1" if complete else "0",))

    def complete(self) -> bool:
        row = self._db().execute("SELECT value FROM meta WHERE key='complete'").fetchone()
        return row is None or row[0] == "1"

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- feeding ---------------------------------------------------------------

    def listener(self, owner: Owner) -> Callable[[str], None]:
        """What :attr:`VersionedStore.on_commit` calls for ``owner``: index its new commits."""
        def on_commit(_commit: str) -> None:
            self.catch_up(owner)
        return on_commit

    def indexed_head(self, owner_id: str) -> str | None:
        row = self._db().execute("SELECT head FROM owners WHERE owner=?", (owner_id,)).fetchone()
        return row[0] if row else None

    def catch_up(self, owner: Owner) -> int:
        """Index the owner's commits newer than the last one indexed; how many were new (the first one,
        ``init``, is not a run and not counted).

        If the last indexed commit is no longer in the owner's history (the
        history index was rebuilt from another history), the owner is
        indexed again from scratch.
        """
        while True:
            known = self.indexed_head(owner.id)
            new, reached = _newer_than(owner, known)
            if not new and (reached or known is None):
                return 0  # nothing to write: no write lock taken
            with self._write() as db:
                row = db.execute("SELECT head, seq FROM owners WHERE owner=?", (owner.id,)).fetchone()
                if (row[0] if row else None) != known:
                    continue  # a rebuild or another listener moved it meanwhile: look again
                seq = row[1] if row and reached else 0
                if known is not None and not reached:
                    db.execute("DELETE FROM runs WHERE owner=?", (owner.id,))
                for entry in reversed(new):
                    seq = self._add(db, owner, entry, seq)
                if new:
                    db.execute("INSERT OR REPLACE INTO owners VALUES (?, ?, ?)", (owner.id, new[0].id, seq))
            return sum(1 for e in new if e.action != "init")

    def reindex(self, owner: Owner) -> int:
        """Index one owner from scratch (its rows are replaced in one transaction); how many commits."""
        with self._write() as db:
            db.execute("DELETE FROM runs WHERE owner=?", (owner.id,))
            db.execute("DELETE FROM owners WHERE owner=?", (owner.id,))
            new, _ = _newer_than(owner, None)
            seq = 0
            for entry in reversed(new):
                seq = self._add(db, owner, entry, seq)
            if new:
                db.execute("INSERT INTO owners VALUES (?, ?, ?)", (owner.id, new[0].id, seq))
        return sum(1 for e in new if e.action != "init")

    def forget(self, owner_id: str) -> None:
        """Drop a deleted owner's rows (logged, never raised: ``refresh`` drops them later)."""
        try:
            with self._write() as db:
                db.execute("DELETE FROM runs WHERE owner=?", (owner_id,))
                db.execute("DELETE FROM owners WHERE owner=?", (owner_id,))
        except sqlite3.Error:
            log.exception("run index: could not drop the rows of deleted owner %s", owner_id)

    def forget_others(self, keep: set[str]) -> int:
        """Drop the rows of every owner not in ``keep`` (deleted meanwhile); how many owners were dropped."""
        known = {r[0] for r in self._db().execute("SELECT owner FROM owners UNION SELECT DISTINCT owner FROM runs")}
        gone = sorted(known - keep)
        for owner_id in gone:
            self.forget(owner_id)
        return len(gone)

    def _add(self, db: sqlite3.Connection, owner: Owner, entry, seq: int) -> int:
        """Index one commit (oldest first) at position ``seq + 1``; the position reached."""
        if entry.action == "init":
            return seq
        seq += 1
        key = entry.run or "@" + entry.id
        when = _epoch(entry.time)
        action = entry.action or "change"
        db.execute(
            "INSERT INTO runs (owner, key, run, actor, source_conv, first, last, commits, changes, actions, head, seq)"
            " VALUES (?,?,?,?,?,?,?,1,?,?,?,?) ON CONFLICT (owner, key) DO UPDATE SET"
            " first = min(first, excluded.first), last = max(last, excluded.last), commits = commits + 1,"
            " changes = changes + excluded.changes, head = excluded.head, seq = excluded.seq,"
            " source_conv = coalesce(source_conv, excluded.source_conv),"
            " actions = CASE WHEN instr(actions, excluded.actions) > 0 THEN actions"
            " ELSE actions || substr(excluded.actions, 2) END",
            (owner.id, key, entry.run, entry.actor, entry.source_conv, when, when, int(entry.changes or 0),
             f",{action},", entry.id, seq))
        if entry.action in UNDO_ACTIONS:
            self._mark(db, owner, entry.id)
        return seq

    @staticmethod
    def _mark(db: sqlite3.Connection, owner: Owner, undo: str) -> None:
        """An undo commit: its targets are rolled back by it; whatever it undid is live again."""
        info = owner.review.undo_of(undo)
        for target in info.reverts:
            # Undoing an undo: what that undo had rolled back stands again.
            db.execute("UPDATE runs SET undone_by = NULL WHERE owner=? AND substr(undone_by, 1, ?) = ?",
                       (owner.id, len(target), target))
        for run in info.runs:
            db.execute("UPDATE runs SET undone_by=? WHERE owner=? AND run=?", (undo, owner.id, run))
        for target in info.reverts:
            # A loose commit, or a run of one commit, undone by a revert of that commit.
            db.execute("UPDATE runs SET undone_by=? WHERE owner=? AND commits=1 AND substr(head, 1, ?) = ?",
                       (undo, owner.id, len(target), target))

    # -- searching ---------------------------------------------------------------

    def search(self, query: RunQuery, *, within: str = "", limit: int = 50, cursor: str | None = None) -> RunPage:
        """Matching runs, newest first (by their last commit), with the totals of the whole match."""
        cond = query.where(within)
        if cond is None:
            return RunPage()
        where, args = cond
        page_where, page_args = where, list(args)
        if cursor:
            last, owner, seq = decode_cursor(cursor, (int, str, int))
            page_where += " AND (last < ? OR (last = ? AND (owner > ? OR (owner = ? AND seq < ?))))"
            page_args += [last, last, owner, owner, seq]
        db = self._db()
        rows = db.execute(f"SELECT {_ROW} FROM runs WHERE {page_where} ORDER BY last DESC, owner, seq DESC LIMIT ?",
                          [*page_args, limit + 1]).fetchall()
        more, rows = len(rows) > limit, rows[:limit]
        runs, owners, commits = db.execute(
            f"SELECT count(*), count(DISTINCT owner), coalesce(sum(commits), 0) FROM runs WHERE {where}", args
        ).fetchone()
        nxt = encode_cursor(rows[-1][7], rows[-1][0], rows[-1][11]) if more and rows else None
        return RunPage([_row(r) for r in rows], nxt, {"runs": runs, "owners": owners, "commits": commits},
                       self.complete())

    def per_owner(self, query: RunQuery, *, within: str = "", limit: int = 50,
                  cursor: str | None = None) -> OwnerCountPage:
        """Matching runs counted per owner (owners in id order), and the next page's cursor."""
        cond = query.where(within)
        if cond is None:
            return OwnerCountPage()
        where, args = cond
        if cursor:
            where += " AND owner > ?"
            args = [*args, decode_cursor(cursor, (str,))[0]]
        rows = self._db().execute(
            f"SELECT owner, count(*), sum(commits), min(first), max(last) FROM runs WHERE {where}"
            " GROUP BY owner ORDER BY owner LIMIT ?", [*args, limit + 1]).fetchall()
        more, rows = len(rows) > limit, rows[:limit]
        counts = [OwnerCount(o, n, c, iso_instant(f), iso_instant(la)) for o, n, c, f, la in rows]
        return OwnerCountPage(counts, encode_cursor(rows[-1][0]) if more and rows else None)

    def selection(self, query: RunQuery, *, within: str = "", limit: int | None = None) -> dict[str, list[RunRow]]:
        """Every matching run grouped by owner (owners in id order), up to ``limit`` owners."""
        cond = query.where(within)
        if cond is None:
            return {}
        where, args = cond
        out: dict[str, list[RunRow]] = {}
        for r in self._db().execute(f"SELECT {_ROW} FROM runs WHERE {where} ORDER BY owner, seq DESC", args):
            if r[0] not in out and limit is not None and len(out) >= limit:
                break
            out.setdefault(r[0], []).append(_row(r))
        return out


def _newer_than(owner: Owner, known: str | None) -> tuple[list, bool]:
    """``(entries newer than known, newest first; whether known was reached)``: the owner's history walked back."""
    new: list = []
    cursor, size = None, 8  # usually only the commit just made is new: start small
    while True:
        page = owner.history(limit=size, cursor=cursor)
        for entry in page.entries:
            if entry.id == known:
                return new, True
            new.append(entry)
        if page.next is None:
            return new, False
        cursor, size = page.next, 500
