"""The cross-owner run index: every owner's runs, in one small SQLite file at the data root or a cluster's database.

Design notes: docs/explanation/operations.md (``wikimem/host/fleet/runindex.py``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem.format import instant_epoch, iso_instant
from wikimem.host.owner_ids import Within
from wikimem.store import MAX_ROUND

from .paging import decode_cursor, encode_cursor
from .runtypes import OwnerCount, OwnerCountPage, RunPage, RunQuery, RunRow, contains_pattern
from .sql import Database, Tx

if TYPE_CHECKING:
    from wikimem.host.owner import Owner

__all__ = ["RunIndex", "INDEX_PATH", "SCHEMA_VERSION"]

log = logging.getLogger(__name__)

INDEX_PATH = Path("index") / "runs.sqlite3"
UNDO_ACTIONS = ("revert", "rollback")
# 1: the first wave's runs.sqlite3 (no user_version); 2: owners.host, per-host completeness; 3: runs.characters
SCHEMA_VERSION = 3
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    owner {text_c} NOT NULL, key TEXT NOT NULL, run TEXT, actor TEXT, source_conv TEXT,
    first BIGINT NOT NULL, last BIGINT NOT NULL, commits INTEGER NOT NULL, changes INTEGER NOT NULL,
    actions TEXT NOT NULL, head TEXT NOT NULL, seq INTEGER NOT NULL, undone_by TEXT,
    characters TEXT NOT NULL DEFAULT ',', PRIMARY KEY (owner, key));
CREATE INDEX IF NOT EXISTS runs_last ON runs (last, owner, seq);
CREATE INDEX IF NOT EXISTS runs_actor ON runs (actor, last);
CREATE INDEX IF NOT EXISTS runs_run ON runs (run);
CREATE INDEX IF NOT EXISTS runs_conv ON runs (source_conv, last);
CREATE TABLE IF NOT EXISTS owners (owner {text_c} PRIMARY KEY, head TEXT NOT NULL, seq INTEGER NOT NULL, host TEXT);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)
"""




# Owners a host gives its per-owner totals for (to a gatherer); beyond, the gathered totals are summed over hosts.
OWNER_TOTALS_CAP = 20_000
_ROW = "owner, key, run, head, actor, source_conv, first, last, commits, changes, actions, seq, undone_by, characters"


def _row(r) -> RunRow:
    return RunRow(r[0], r[2], r[4], r[5], iso_instant(r[6]), iso_instant(r[7]), r[8], r[9], r[3],
                  [a for a in r[10].split(",") if a], r[11], r[12], [c for c in (r[13] or "").split(",") if c])


class RunIndex:
    """The cross-owner run index (safe to share between threads and processes, and, on PostgreSQL, hosts).

    ``target`` is the SQLite file of one data root or the ``postgresql://``
    URL a cluster's hosts share; ``host`` names this host in the shared rows
    (who indexed an owner last: the host holding it).
    """

    def __init__(self, target: Path | str, *, host: str = ""):
        self.db = Database(target, "runs")
        self.host = host

    def __repr__(self) -> str:
        return f"RunIndex({self.db.shown!r})"

    @property
    def path(self) -> Path | str:
        return self.db.target

    @property
    def shared(self) -> bool:
        """Whether several hosts share it (a cluster's PostgreSQL database)."""
        return self.db.postgres

    # -- connection ------------------------------------------------------------

    def _db(self) -> Database:
        """The database, its schema checked once per connection (the file may have been replaced meanwhile)."""
        return self.db.prepared(self._open)

    def _open(self) -> None:
        try:
            self._migrate()
        except self.db.errors:
            if self.db.postgres:
                raise
            # damaged: it is only derived, start it again (a sweep or a rebuild refills it)
            self.db.close()
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(str(self.db.target) + suffix)
                except FileNotFoundError:
                    pass
            self._migrate()

    def _migrate(self) -> None:
        """Create the tables, or bring an older index to :data:`SCHEMA_VERSION` (it is derived: columns are added,
        the next catch-up fills them)."""
        db = self.db
        if db.version() >= SCHEMA_VERSION:
            return
        db.script(_SCHEMA)
        with db.write(schema=True) as tx:
            if "host" not in db.columns("owners"):
                tx.execute("ALTER TABLE owners ADD COLUMN host TEXT")
            if "characters" not in db.columns("runs"):  # (a run indexed before layers wrote the shared one)
                tx.execute("ALTER TABLE runs ADD COLUMN characters TEXT NOT NULL DEFAULT ','")
            db.set_version(tx, SCHEMA_VERSION)

    def start(self, has_owners: bool) -> None:
        """At a host's start: until this host's owners are known to be indexed (its first sweep, see
        :meth:`Fleet.sweep_run_index`), answers say ``complete: false``."""
        failures: tuple[type[BaseException], ...] = (OSError, *self.db.errors)
        try:
            known = self._db().one("SELECT value FROM meta WHERE key = ?", (self._complete_key,))
            if known is None:
                self.set_complete(not has_owners)
        except failures:  # a read-only data root: searches work on what is there
            log.warning("run index: could not open %s", self.db.shown, exc_info=True)

    @property
    def _complete_key(self) -> str:
        return f"complete:{self.host}"

    def set_complete(self, complete: bool) -> None:
        """Record whether every owner of this host is indexed (set by a sweep or a rebuild)."""
        with self._db().write() as tx:
            tx.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                       "excluded.value", (self._complete_key, "1" if complete else "0"))
            if complete:
                tx.execute("DELETE FROM meta WHERE key = 'complete'")  # the flag of an index before version 2

    def complete(self) -> bool:
        """Whether every host that uses the index has it complete (its owners swept since it started)."""
        row = self._db().one("SELECT count(*) FROM meta WHERE key LIKE 'complete%' AND value = '0'")
        return row is None or row[0] == 0

    def close(self) -> None:
        self.db.close()

    # -- feeding ---------------------------------------------------------------

    def listener(self, owner: Owner) -> Callable[[str], None]:
        """What :attr:`VersionedStore.on_commit` calls for ``owner``: index its new commits."""
        def on_commit(_commit: str) -> None:
            self.catch_up(owner)
        return on_commit

    def indexed_head(self, owner_id: str) -> str | None:
        row = self._db().one("SELECT head FROM owners WHERE owner = ?", (owner_id,))
        return row[0] if row else None

    def heads(self, prefix: str = "") -> dict[str, str]:
        """``{owner: the newest commit indexed}`` of the owners under ``prefix``."""
        sql, args = "SELECT owner, head FROM owners", []
        if prefix:
            sql += " WHERE substr(owner, 1, ?) = ?"
            args = [len(prefix), prefix]
        return {o: h for o, h in self._db().rows(sql, args)}

    def catch_up(self, owner: Owner) -> int:
        """Index the owner's commits newer than the last one indexed; how many were new (the first one,
        ``init``, is not a run and not counted).

        The index only moves forward: when this host's copy is behind what
        the index holds (another host of a cluster wrote later; this copy
        has not caught up with the remote yet), nothing changes. When the
        last indexed commit is no longer in the owner's history at all (the
        history was rewritten here, or commits were replayed on top of the
        remote), the owner is indexed again from scratch.
        """
        while True:
            db = self._db()
            row = db.one("SELECT head, host FROM owners WHERE owner = ?", (owner.id,))
            known, by = (row[0], row[1]) if row else (None, None)
            head = owner.head()
            if known is not None and known == head:
                return 0
            # A quick look: usually the commits of the round just landed (up to MAX_ROUND of them), the one
            # before them included — else the slow path below (the copy's relation to the index's head).
            new, reached = _newer_than(owner, known, limit=MAX_ROUND + 1)
            if known is not None and not reached:
                if self._behind(owner, known, by):
                    return 0
                new, reached = _newer_than(owner, known)
            if not new and (reached or known is None):
                return 0  # nothing to write: no write lock taken
            with db.write() as tx:
                row = tx.one("SELECT head, seq FROM owners WHERE owner = ?", (owner.id,))
                if (row[0] if row else None) != known:
                    continue  # a rebuild or another listener moved it meanwhile: look again
                seq = max(row[1], 0) if row and reached else 0
                if known is not None and not reached:
                    tx.execute("DELETE FROM runs WHERE owner = ?", (owner.id,))
                added = self._add_all(tx, owner, new, seq)
            return added

    def _behind(self, owner: Owner, known: str, by: str | None) -> bool:
        """Whether this copy of ``owner`` is behind the commit the index holds (then it must not be indexed)."""
        where = owner.vstore.relation(known)
        if where == "descendant":  # the index has commits this copy has not fetched yet
            return True
        return where == "unknown" and self.shared and by not in (None, self.host)

    def _set_head(self, tx: Tx, owner_id: str, head: str, seq: int) -> None:
        tx.execute("INSERT INTO owners (owner, head, seq, host) VALUES (?, ?, ?, ?) ON CONFLICT (owner) DO UPDATE "
                   "SET head = excluded.head, seq = excluded.seq, host = excluded.host",
                   (owner_id, head, seq, self.host or None))

    def reindex(self, owner: Owner) -> int:
        """Index one owner from scratch (its rows are replaced in one transaction); how many commits."""
        new, _ = _newer_than(owner, None)
        with self._db().write() as tx:
            tx.execute("DELETE FROM runs WHERE owner = ?", (owner.id,))
            tx.execute("DELETE FROM owners WHERE owner = ?", (owner.id,))
            return self._add_all(tx, owner, new, 0)

    def forget(self, owner_id: str) -> None:
        """Drop a deleted owner's rows (logged, never raised: ``refresh`` drops them later)."""
        try:
            with self._db().write() as tx:
                tx.execute("DELETE FROM runs WHERE owner = ?", (owner_id,))
                tx.execute("DELETE FROM owners WHERE owner = ?", (owner_id,))
        except self.db.errors:
            log.exception("run index: could not drop the rows of deleted owner %s", owner_id)

    def bury(self, owner_id: str, head: str | None) -> None:
        """A deleted owner: its runs go. On a shared index the owner keeps a row at ``head`` (the commit that
        deleted it everywhere, ``seq`` -1), so a host still holding an older copy never indexes it back."""
        if not self.shared or not head:
            self.forget(owner_id)
            return
        with self._db().write() as tx:
            tx.execute("DELETE FROM runs WHERE owner = ?", (owner_id,))
            tx.execute("INSERT INTO owners (owner, head, seq, host) VALUES (?, ?, -1, ?) ON CONFLICT (owner) DO "
                       "UPDATE SET head = excluded.head, seq = -1, host = excluded.host", (owner_id, head, self.host))

    def forget_copy(self, owner_id: str) -> None:
        """This host dropped its copy of an owner that lives on (elsewhere): its rows go only if the index is
        this host's alone."""
        if not self.shared:
            self.forget(owner_id)

    def forget_others(self, keep: set[str]) -> int:
        """Drop the rows of every owner not in ``keep`` (deleted meanwhile); how many owners were dropped.

        On a shared index only the owners this host indexed last are
        considered (the others are other hosts' to keep).
        """
        sql = "SELECT owner, host FROM owners WHERE seq >= 0"  # (a buried owner keeps its row)
        known = {o for o, by in self._db().rows(sql) if not self.shared or by in (None, self.host)}
        if not self.shared:
            known |= {r[0] for r in self._db().rows("SELECT DISTINCT owner FROM runs")}
        gone = sorted(known - keep)
        for owner_id in gone:
            self.forget(owner_id)
        return len(gone)

    def _add_all(self, tx: Tx, owner: Owner, new: list, seq: int) -> int:
        """Index ``new`` (newest first) after position ``seq`` and record the owner's newest indexed commit;
        how many commits were indexed (the first one, ``init``, is not a run and not counted)."""
        for entry in reversed(new):
            seq = self._add(tx, owner, entry, seq)
        if new:
            self._set_head(tx, owner.id, new[0].id, seq)
        return sum(1 for e in new if e.action != "init")

    def _add(self, tx: Tx, owner: Owner, entry, seq: int) -> int:
        """Index one commit (oldest first) at position ``seq + 1``; the position reached."""
        if entry.action == "init":
            return seq
        seq += 1
        key = entry.run or "@" + entry.id
        when = instant_epoch(entry.time)
        action = entry.action or "change"
        layers = [c for c in (getattr(entry, "layers", None) or "").split(",") if c]
        tx.execute(
            "INSERT INTO runs (owner, key, run, actor, source_conv, first, last, commits, changes, actions, head, seq,"
            " characters) VALUES (?,?,?,?,?,?,?,1,?,?,?,?,?) ON CONFLICT (owner, key) DO UPDATE SET"
            " first = CASE WHEN excluded.first < runs.first THEN excluded.first ELSE runs.first END,"
            " last = CASE WHEN excluded.last > runs.last THEN excluded.last ELSE runs.last END,"
            " commits = runs.commits + 1, changes = runs.changes + excluded.changes, head = excluded.head,"
            " seq = excluded.seq, source_conv = coalesce(runs.source_conv, excluded.source_conv),"
            " actions = CASE WHEN runs.actions LIKE ? ESCAPE '\\' THEN runs.actions"
            " ELSE runs.actions || substr(excluded.actions, 2) END",
            (owner.id, key, entry.run, entry.actor, entry.source_conv, when, when, int(entry.changes or 0),
             f",{action},", entry.id, seq, "," + "".join(f"{c}," for c in layers), contains_pattern(action)))
        for character in layers:  # (a run's characters: every layer any of its commits wrote)
            tx.execute("UPDATE runs SET characters = characters || ? WHERE owner = ? AND key = ? AND characters "
                       "NOT LIKE ? ESCAPE '\\'", (f"{character},", owner.id, key, contains_pattern(character)))
        if entry.action in UNDO_ACTIONS:
            self._mark(tx, owner, entry.id)
        return seq

    @staticmethod
    def _mark(tx: Tx, owner: Owner, undo: str) -> None:
        """An undo commit: its targets are rolled back by it; whatever it undid is live again."""
        info = owner.review.undo_of(undo)
        for target in info.reverts:
            # Undoing an undo: what that undo had rolled back stands again.
            tx.execute("UPDATE runs SET undone_by = NULL WHERE owner = ? AND substr(undone_by, 1, ?) = ?",
                       (owner.id, len(target), target))
        for run in info.runs:
            tx.execute("UPDATE runs SET undone_by = ? WHERE owner = ? AND run = ?", (undo, owner.id, run))
        for target in info.reverts:
            # A loose commit, or a run of one commit, undone by a revert of that commit.
            tx.execute("UPDATE runs SET undone_by = ? WHERE owner = ? AND commits = 1 AND substr(head, 1, ?) = ?",
                       (undo, owner.id, len(target), target))

    # -- searching ---------------------------------------------------------------

    def search(self, query: RunQuery, *, within: Within = "", limit: int = 50, cursor: str | None = None,
               by_owner: bool = False) -> RunPage:
        """Matching runs, newest first (by their last commit), with the totals of the whole match (``by_owner``:
        also per owner, for a gatherer that counts each owner once)."""
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
        rows = db.rows(f"SELECT {_ROW} FROM runs WHERE {page_where} ORDER BY last DESC, owner, seq DESC LIMIT ?",
                       [*page_args, limit + 1])
        more, rows = len(rows) > limit, rows[:limit]
        totals = db.one(f"SELECT count(*), count(DISTINCT owner), coalesce(sum(commits), 0) FROM runs WHERE {where}",
                        args)
        runs, owners, commits = totals if totals is not None else (0, 0, 0)
        nxt = encode_cursor(rows[-1][7], rows[-1][0], rows[-1][11]) if more and rows else None
        page = RunPage([_row(r) for r in rows], nxt, {"runs": int(runs), "owners": int(owners),
                                                      "commits": int(commits)}, self.complete())
        if by_owner and int(owners) <= OWNER_TOTALS_CAP:
            page.by_owner = {o: [int(n), int(c), int(q)] for o, n, c, q in db.rows(
                f"SELECT owner, count(*), coalesce(sum(commits), 0), max(seq) FROM runs WHERE {where} GROUP BY owner",
                args)}
        return page

    def per_owner(self, query: RunQuery, *, within: Within = "", limit: int = 50,
                  cursor: str | None = None) -> OwnerCountPage:
        """Matching runs counted per owner (owners in id order), and the next page's cursor."""
        cond = query.where(within)
        if cond is None:
            return OwnerCountPage()
        where, args = cond
        if cursor:
            where += " AND owner > ?"
            args = [*args, decode_cursor(cursor, (str,))[0]]
        rows = self._db().rows(
            f"SELECT owner, count(*), sum(commits), min(first), max(last) FROM runs WHERE {where}"
            " GROUP BY owner ORDER BY owner LIMIT ?", [*args, limit + 1])
        more, rows = len(rows) > limit, rows[:limit]
        counts = [OwnerCount(o, int(n), int(c), iso_instant(f), iso_instant(la)) for o, n, c, f, la in rows]
        return OwnerCountPage(counts, encode_cursor(rows[-1][0]) if more and rows else None)

    def owners_by_last_change(self, *, within: Within = "", prefix: str = "", limit: int = 50,
                              cursor: str | None = None) -> tuple[list[tuple[str, str]], str | None]:
        """``(owner, its last commit's time)``, newest change first (ties by id), and the next page's cursor."""
        cond = RunQuery(owner_prefix=prefix).where(within)
        if cond is None:
            return [], None
        where, args = cond
        having, more_args = "", []
        if cursor:
            last, owner = decode_cursor(cursor, (int, str))
            having, more_args = " HAVING max(last) < ? OR (max(last) = ? AND owner > ?)", [last, last, owner]
        rows = self._db().rows(f"SELECT owner, max(last) FROM runs WHERE {where} GROUP BY owner{having}"
                               " ORDER BY max(last) DESC, owner LIMIT ?", [*args, *more_args, limit + 1])
        more, rows = len(rows) > limit, rows[:limit]
        page = [(owner, iso_instant(last)) for owner, last in rows]
        return page, (encode_cursor(int(rows[-1][1]), rows[-1][0]) if more and rows else None)

    def selection(self, query: RunQuery, *, within: Within = "", limit: int | None = None
                  ) -> dict[str, list[RunRow]]:
        """Every matching run grouped by owner (owners in id order), up to ``limit`` owners."""
        cond = query.where(within)
        if cond is None:
            return {}
        where, args = cond
        out: dict[str, list[RunRow]] = {}
        for r in self._db().rows(f"SELECT {_ROW} FROM runs WHERE {where} ORDER BY owner, seq DESC", args):
            if r[0] not in out and limit is not None and len(out) >= limit:
                break
            out.setdefault(r[0], []).append(_row(r))
        return out

    def holders(self, owner_ids: list[str]) -> dict[str, str]:
        """``{owner: the host that indexed it last}`` (the host holding it) of the owners a shared index knows."""
        out: dict[str, str] = {}
        for i in range(0, len(owner_ids), 500):
            chunk = owner_ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            out.update({o: h for o, h in self._db().rows(
                f"SELECT owner, host FROM owners WHERE owner IN ({marks}) AND host IS NOT NULL", chunk)})
        return out

    def dump(self) -> list[tuple]:
        """Every row, in one order (a test compares the index with a rebuild from git)."""
        return self._db().rows(f"SELECT {_ROW} FROM runs ORDER BY owner, key")


def _newer_than(owner: Owner, known: str | None, limit: int | None = None) -> tuple[list, bool]:
    """``(entries newer than known, newest first; whether known was reached)``: the owner's history walked back
    (``limit``: at most that many entries), of every layer: a run that wrote a character's layer is a run too."""
    new: list = []
    cursor, size = None, 8  # usually only the commit just made is new: start small
    while True:
        page = owner.history(limit=size if limit is None else min(size, limit), cursor=cursor, layers=None)
        for entry in page.entries:
            if entry.id == known:
                return new, True
            new.append(entry)
        if page.next is None or (limit is not None and len(new) >= limit):
            return new, False
        cursor, size = page.next, 500
