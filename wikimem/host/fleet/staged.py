"""The staged-run index: every owner's runs on probation, beside the run index (``index/staged.sqlite3``).

One row per staged run of an owner (``owner``, ``run``): its actor, source
conversation, first and last commit time, commits, items changed, the
branch's tip, and its **state** — ``staged`` (waiting), ``approved``,
``discarded`` or ``expired`` (settled by a commit on ``main``: who settled
it, and that commit), or ``gone`` (the branch went without a settling
commit here, e.g. removed by hand) — plus ``held`` (an operator keeps it
from auto-approval and expiry). In a cluster it lives in the shared
PostgreSQL database with the run index and the jobs.

Derived and rebuildable, like the run index: each owner's branches
(``refs/heads/staged/*``) and its approve/discard commits are the truth.
:meth:`StagedIndex.sync` records one owner from them; the host calls it
whenever a staged branch moves or goes (:attr:`Staging.on_change`), and a
sweep (:meth:`Probation.sweep`) finds the owners whose branches on disk
differ from the index (a clone or a fetch brought them). ``held`` is an
operator's mark, kept across syncs.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wikimem.format import instant_epoch, iso_instant
from wikimem.host.owner_ids import Within, scope_prefixes

from .runtypes import StagedRow
from .sql import Database, prefix_match

__all__ = ["StagedIndex", "STAGED_PATH", "STATES"]

STAGED_PATH = Path("index") / "staged.sqlite3"
STATES = ("staged", "approved", "discarded", "expired", "gone")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS staged_runs (
    owner {text_c} NOT NULL, run {text_c} NOT NULL, actor TEXT, source_conv TEXT, first BIGINT NOT NULL,
    last BIGINT NOT NULL, commits INTEGER NOT NULL, changes INTEGER NOT NULL, tip TEXT NOT NULL,
    state TEXT NOT NULL, held INTEGER NOT NULL DEFAULT 0, settled_by TEXT, settled_commit TEXT,
    settled_at BIGINT, PRIMARY KEY (owner, run));
CREATE INDEX IF NOT EXISTS staged_state ON staged_runs (state, first);
CREATE INDEX IF NOT EXISTS staged_run ON staged_runs (run)
"""
_COLUMNS = ("owner, run, actor, source_conv, first, last, commits, changes, tip, state, held, settled_by, "
            "settled_commit, settled_at")




def _row(r: tuple) -> StagedRow:
    return StagedRow(r[0], r[1], r[2], r[3], iso_instant(r[4]) or "", iso_instant(r[5]) or "", int(r[6]), int(r[7]),
                     r[8], r[9], bool(r[10]), r[11], r[12], iso_instant(r[13]))


class StagedIndex:
    """The staged-run index (thread- and process-safe; shared by a cluster's hosts on PostgreSQL)."""

    def __init__(self, target: Path | str):
        self.db = Database(target, "staged")

    def __repr__(self) -> str:
        return f"StagedIndex({self.db.shown!r})"

    @property
    def shared(self) -> bool:
        return self.db.postgres

    def _db(self) -> Database:
        return self.db.prepared(lambda: self.db.script(_SCHEMA))

    def close(self) -> None:
        self.db.close()

    # -- feeding -----------------------------------------------------------------

    def sync(self, owner_id: str, runs: Iterable[Any], settled: dict[str, dict[str, str]]) -> None:
        """Record one owner: ``runs`` (its :class:`~wikimem.versioned.StagedRun` s) are staged; any other run
        the index holds as staged is settled as ``settled[run]`` (the trailers of its approve or discard
        commit) tells, else ``gone``."""
        runs = list(runs)
        with self._db().write() as tx:
            for r in runs:
                tx.execute(
                    f"INSERT INTO staged_runs ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,'staged',0,NULL,NULL,NULL) "
                    "ON CONFLICT (owner, run) DO UPDATE SET actor = excluded.actor, source_conv = "
                    "excluded.source_conv, first = excluded.first, last = excluded.last, commits = excluded.commits,"
                    " changes = excluded.changes, tip = excluded.tip, state = 'staged', settled_by = NULL, "
                    "settled_commit = NULL, settled_at = NULL, held = CASE WHEN staged_runs.state = 'staged' "
                    "THEN staged_runs.held ELSE 0 END",
                    (owner_id, r.run, r.actor, r.source_conv, instant_epoch(r.first), instant_epoch(r.last), r.commits,
                     r.changes, r.tip))
            here = {r.run for r in runs}
            for (run,) in tx.rows("SELECT run FROM staged_runs WHERE owner = ? AND state = 'staged'", (owner_id,)):
                if run in here:
                    continue
                done = settled.get(run)
                if done is None:
                    tx.execute("UPDATE staged_runs SET state = 'gone' WHERE owner = ? AND run = ?", (owner_id, run))
                    continue
                state = ("approved" if done.get("Action") == "approve"
                         else "expired" if done.get("Reason") == "expired" else "discarded")
                by = done.get("Approved-By") if state == "approved" else done.get("Actor")
                when = done.get("time")
                tx.execute("UPDATE staged_runs SET state = ?, held = 0, settled_by = ?, settled_commit = ?, "
                           "settled_at = ? WHERE owner = ? AND run = ?",
                           (state, by, done.get("commit"), instant_epoch(when) if when else None, owner_id, run))

    def known(self, owner_ids: Iterable[str]) -> dict[str, dict[str, str]]:
        """``{owner: {run: tip}}`` of the staged rows of these owners (what a sweep compares with the disk)."""
        ids = list(owner_ids)
        out: dict[str, dict[str, str]] = {o: {} for o in ids}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for owner, run, tip in self._db().rows(
                    f"SELECT owner, run, tip FROM staged_runs WHERE state = 'staged' AND owner IN ({marks})", chunk):
                out[owner][run] = tip
        return out

    def forget(self, owner_id: str) -> None:
        with self._db().write() as tx:
            tx.execute("DELETE FROM staged_runs WHERE owner = ?", (owner_id,))

    def hold(self, run: str, held: bool, *, within: Within = "", owners: Iterable[str] | None = None) -> int:
        """Mark a run's staged rows (under ``within``; only ``owners`` when given) held or not; how many."""
        where, args = self._where(run=run, state="staged", within=within)
        if where is None:
            return 0
        chosen = list(owners) if owners is not None else None
        if chosen is not None:
            where += f" AND owner IN ({','.join('?' * len(chosen))})" if chosen else " AND 0 = 1"
            args += chosen
        with self._db().write() as tx:
            return int(tx.execute(f"UPDATE staged_runs SET held = ? WHERE {where}", [1 if held else 0, *args]).rowcount)

    # -- reading ---------------------------------------------------------------------

    @staticmethod
    def _where(*, run: str | None = None, actor: str | None = None, state: str | None = None,
               within: Within = "", owner_prefix: str = "", held: bool | None = None) -> tuple[str | None, list]:
        prefixes = scope_prefixes(within, owner_prefix or "")
        if not prefixes:
            return None, []
        where: list[str] = ["1 = 1"]
        args: list[Any] = []
        for column, value in (("run", run), ("actor", actor), ("state", state)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if held is not None:
            where.append("held = ?")
            args.append(1 if held else 0)
        if "" not in prefixes:
            cond, more = prefix_match("owner", prefixes)
            where.append(cond)
            args += more
        return " AND ".join(where), args

    def rows(self, *, run: str | None = None, actor: str | None = None, state: str | None = "staged",
             within: Within = "", owner_prefix: str = "", held: bool | None = None,
             limit: int = 100_000) -> list[StagedRow]:
        """Matching rows, oldest first."""
        where, args = self._where(run=run, actor=actor, state=state, within=within, owner_prefix=owner_prefix,
                                  held=held)
        if where is None:
            return []
        return [_row(r) for r in self._db().rows(
            f"SELECT {_COLUMNS} FROM staged_runs WHERE {where} ORDER BY first, run, owner LIMIT ?", [*args, limit])]

    def summary(self, *, within: Within = "", state: str | None = "staged", run: str | None = None,
                actor: str | None = None, owner_prefix: str = "") -> list[dict[str, Any]]:
        """One line per run: its actor(s), owners, first and last time, commits, changes, held owners, states."""
        where, args = self._where(run=run, actor=actor, state=state, within=within, owner_prefix=owner_prefix)
        if where is None:
            return []
        rows = self._db().rows(
            f"SELECT run, min(actor), max(actor), count(*), min(first), max(last), sum(commits), sum(changes), "
            f"sum(held), min(state), max(state) FROM staged_runs WHERE {where} GROUP BY run ORDER BY min(first), run",
            args)
        return [{"run": r[0], "actor": r[1] if r[1] == r[2] else None, "actors": sorted({r[1], r[2]} - {None}),
                 "owners": int(r[3]), "first": iso_instant(r[4]), "last": iso_instant(r[5]), "commits": int(r[6]),
                 "changes": int(r[7]), "held": int(r[8] or 0), "state": r[9] if r[9] == r[10] else "mixed"}
                for r in rows]

    def waiting(self, *, within: Within = "") -> dict[str, Any]:
        """How many staged runs (and owners' copies of them) wait, and the oldest one's first commit time."""
        where, args = self._where(state="staged", within=within)
        if where is None:
            return {"runs": 0, "owners": 0, "oldest": None}
        row = self._db().one(f"SELECT count(DISTINCT run), count(*), min(first) FROM staged_runs WHERE {where}", args)
        runs, owners, oldest = row if row is not None else (0, 0, None)
        return {"runs": int(runs or 0), "owners": int(owners or 0), "oldest": iso_instant(oldest)}

    def due(self, older_than: int) -> list[str]:
        """Runs with an unheld staged copy whose first commit is at or before ``older_than`` (epoch seconds)."""
        return [r[0] for r in self._db().rows(
            "SELECT DISTINCT run FROM staged_runs WHERE state = 'staged' AND held = 0 AND first <= ? ORDER BY run",
            (older_than,))]
