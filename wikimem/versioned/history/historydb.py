"""The history index: a derived, deletable SQLite file inside ``.git/``.

Git is the truth; this file only makes history queries fast (an item's
history never walks the whole log). It is fed from the commits themselves —
trailers plus a per-item diff against the first parent — whenever the
branch is ahead of it: right after our own commits (under the owner lock),
or lazily before a query (after a commit made with the ``git`` CLI, or when
the file was deleted). Several processes may catch up at once; SQLite's
write lock and ``INSERT OR IGNORE`` make that harmless.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from pathlib import Path

from wikimem.format import iso_instant
from wikimem.locking import while_locked

from ..messages import parse_trailers
from ..objects import GitRepo
from ..walk import parents_first
from .entries import HistoryEntry, HistoryPage
from .itemdiff import path_changes

__all__ = ["HistoryDB", "DB_NAME", "iso"]

log = logging.getLogger(__name__)

DB_NAME = "wikimem-history.sqlite3"
# WAL pages between checkpoints (1 MiB, some 30 writes): each costs three syncs, so most writes have none.
WAL_PAGES = 256
_SCHEMA = """
CREATE TABLE IF NOT EXISTS commits (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, parents TEXT NOT NULL, time INTEGER NOT NULL,
    actor TEXT, run TEXT, action TEXT, file TEXT, item TEXT, date TEXT, tod TEXT, owner TEXT,
    source_conv TEXT, summary TEXT, changes INTEGER NOT NULL, idem TEXT, layers TEXT);
CREATE TABLE IF NOT EXISTS touches (seq INTEGER NOT NULL, kind TEXT, file TEXT, name TEXT, date TEXT, time TEXT,
    layer TEXT, channel TEXT);
CREATE INDEX IF NOT EXISTS touches_item ON touches (file, name, seq);
CREATE INDEX IF NOT EXISTS touches_date ON touches (date, seq);
CREATE INDEX IF NOT EXISTS touches_name ON touches (name, seq);
CREATE INDEX IF NOT EXISTS commits_run ON commits (run, seq);
CREATE INDEX IF NOT EXISTS commits_time ON commits (time, seq);
CREATE TABLE IF NOT EXISTS idem (key TEXT PRIMARY KEY, commit_id TEXT NOT NULL, result TEXT, request TEXT);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


iso = iso_instant  # (what the history's callers name it)


_COLUMNS = ("id, parents, time, actor, run, action, file, item, date, tod, owner, source_conv, summary, changes, "
            "layers")


def _entry(row) -> HistoryEntry:
    return HistoryEntry(row[0], json.loads(row[1]), iso(row[2]), row[3], row[4], row[5], row[6], row[7], row[8],
                        row[9], row[10], row[11], row[12], row[13], row[14])


class HistoryDB:
    def __init__(self, git: GitRepo):
        self.git = git
        self.path = Path(git.root) / ".git" / DB_NAME
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._conn_id: tuple[int, int] | None = None  # (device, inode) of the file the connection has open
        self._synced: bytes | None = None
        self.counted: int | None = None  # commits since the last pack, as the last catch-up of this process left it

    # -- connection ----------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is not None and self._file_id() != self._conn_id:
            # Deleted or replaced by someone (an operator, another worker's repair): a connection to an
            # unlinked file would go on answering from it alone. Start again from the file on disk.
            self._conn.close()
            self._conn, self._synced = None, None
        if self._conn is None:
            try:
                self._conn = self._connect()
            except sqlite3.DatabaseError:
                # A damaged index is only a cache: start it again.
                for suffix in ("", "-wal", "-shm"):
                    try:
                        os.unlink(str(self.path) + suffix)
                    except FileNotFoundError:
                        pass
                self._conn = self._connect()
            self._conn_id = self._file_id()
        return self._conn

    def _file_id(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return st.st_dev, st.st_ino

    def _connect(self) -> sqlite3.Connection:
        new = not self.path.exists()
        conn = sqlite3.connect(str(self.path), timeout=60, isolation_level=None, check_same_thread=False)
        while_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"), 60.0)  # (another process may switch it too)
        # Derived state, off the sync path: a commit never syncs (NORMAL in WAL mode syncs only at a
        # checkpoint), and a checkpoint (three syncs) comes once per WAL_PAGES pages (some 30 writes), not per
        # write. A power loss may cost the last transactions, never consistency: the index catches up from git.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
        conn.execute("PRAGMA journal_size_limit=32768")  # the WAL cut back to 32 KiB after each checkpoint
        conn.executescript(_SCHEMA)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(idem)")}
        if "request" not in columns:  # an index made before requests were bound to their keys
            conn.execute("ALTER TABLE idem ADD COLUMN request TEXT")
        if "layer" not in {row[1] for row in conn.execute("PRAGMA table_info(touches)")}:
            conn.execute("ALTER TABLE touches ADD COLUMN layer TEXT")  # (made before layers: every touch is shared)
        if "layers" not in {row[1] for row in conn.execute("PRAGMA table_info(commits)")}:
            conn.execute("ALTER TABLE commits ADD COLUMN layers TEXT")
        self._add_channels(conn)
        conn.execute("SELECT count(*) FROM commits").fetchone()
        if new:  # the schema's pages into the file at once: a new owner's WAL starts small
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return conn

    def _add_channels(self, conn: sqlite3.Connection) -> None:
        """The ``channel`` of the diary touches (issue 34), in an index made before: the column added, and the diary
        touches of the commits indexed so far taken again from their diffs (once, in one transaction)."""
        if "channel" not in {row[1] for row in conn.execute("PRAGMA table_info(touches)")}:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if "channel" not in {row[1] for row in conn.execute("PRAGMA table_info(touches)")}:
                    conn.execute("ALTER TABLE touches ADD COLUMN channel TEXT")
                    self._rediff_diary(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        conn.execute("CREATE INDEX IF NOT EXISTS touches_channel ON touches (channel, seq)")

    def _rediff_diary(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute("SELECT DISTINCT c.seq, c.id FROM commits c JOIN touches t ON t.seq = c.seq "
                            "WHERE t.kind = 'diary'").fetchall()
        for seq, cid in rows:
            try:
                touches = [t for t in self._touches(self.git.commit(cid.encode())) if t[0] == "diary"]
            except Exception:  # noqa: BLE001 - a commit git cannot read keeps its touches, without channels
                log.warning("history index: commit %s not read again for its channels", cid)
                continue
            conn.execute("DELETE FROM touches WHERE seq = ? AND kind = 'diary'", (seq,))
            conn.executemany("INSERT INTO touches VALUES (?,?,?,?,?,?,?,?)", [(seq, *t) for t in touches])

    def close(self) -> None:
        """Close the connection, folding the WAL back into the file (a small owner stays small on disk)."""
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error:  # another process is reading: it folds it later
                    pass
                self._conn.close()
                self._conn = None

    # -- catching up with the branch -----------------------------------------

    def sync(self, hints: dict[bytes, list[tuple]] | None = None,
             results: dict[str, tuple[str, object, str | None]] | None = None,
             chain: tuple[bytes | None, list[bytes]] | None = None) -> None:
        """Index every commit reachable from the branch that is not indexed yet.

        ``hints`` maps a commit we just made to its touches (taken from its
        journal records), which saves re-parsing the files it changed;
        ``results`` maps it to ``(idempotency key, result, request)``, stored
        in the same transaction, so a replay never finds the key without it;
        ``chain`` is ``(base, the commits of a round in order)`` as a writer
        just landed them: when the index stands at ``base`` and the branch at
        the last of them, they are indexed without walking the history.
        """
        head = self.git.head()
        if head is None:
            return
        with self._lock:
            db = self._db()  # first: a deleted file resets what this connection had synced
            if head == self._synced and not results:
                return
            if not results and self._meta(db, "head") == head.decode():
                self._synced = head
                return
            self.counted = None
            db.execute("BEGIN IMMEDIATE")
            try:
                meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('head', 'since_pack')").fetchall())
                if meta.get("head") != head.decode():
                    self._catch_up(db, head, hints or {}, meta, chain)
                for cid, (key, result, request) in (results or {}).items():
                    db.execute("INSERT OR REPLACE INTO idem VALUES (?,?,?,?)",
                               (key, cid, json.dumps(result, ensure_ascii=False, default=str), request))
                db.execute("COMMIT")
            except BaseException:
                self.counted = None
                if db.in_transaction:  # SQLite may have rolled back already (a full disk): keep the real error
                    db.execute("ROLLBACK")
                raise
            self._synced = head

    def _meta(self, db, key: str) -> str | None:
        row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def _known(self, db, cid: bytes) -> bool:
        return db.execute("SELECT 1 FROM commits WHERE id=?", (cid.decode(),)).fetchone() is not None

    def _catch_up(self, db, head: bytes, hints: dict, meta: dict, chain: tuple | None = None) -> None:
        indexed_head = meta.get("head")
        if chain is not None and chain[1] and chain[1][-1] == head and indexed_head is not None \
                and chain[0] is not None and indexed_head == chain[0].decode():
            order = list(chain[1])  # a round on top of what is indexed: no walk (each commit is in memory)
        else:
            order = self._walk(db, head)
        for cid in order:
            self._index_commit(db, cid, hints.get(cid))
        self.counted = int(meta.get("since_pack") or 0) + len(order)
        db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                       [("since_pack", str(self.counted)), ("head", head.decode())])

    def _walk(self, db, head: bytes) -> list[bytes]:
        """The commits to index, parents first, from the head down to those indexed already (the rows of a
        history the branch no longer holds deleted)."""
        known: list[bytes] = []

        def indexed(cid: bytes) -> bool:
            if self._known(db, cid):
                known.append(cid)
                return True
            return False

        order = parents_first(self.git, [head], stop=indexed)
        reached_known = bool(known)
        has_rows = db.execute("SELECT 1 FROM commits LIMIT 1").fetchone() is not None
        if has_rows and not reached_known:
            # The branch was rewritten under us: the old rows describe another history.
            db.execute("DELETE FROM commits")
            db.execute("DELETE FROM touches")
            db.execute("DELETE FROM idem")
        return order

    def _index_commit(self, db, cid: bytes, touches: list[tuple] | None = None) -> None:
        commit = self.git.commit(cid)
        summary, trailers, journal = parse_trailers(commit.message.decode("utf-8", "replace"))
        if touches is None:
            touches = self._touches(commit)
        actor = trailers.get("Actor") or commit.author.decode("utf-8", "replace").split(" <")[0]
        action = trailers.get("Action") or ("external-edit" if not trailers else None)
        layers = ",".join(sorted({t[5] for t in touches if len(t) > 5 and t[5]})) or None
        cur = db.execute(
            "INSERT OR IGNORE INTO commits (id, parents, time, actor, run, action, file, item, date, tod, owner,"
            " source_conv, summary, changes, idem, layers) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (cid.decode(), json.dumps([p.decode() for p in commit.parents]), commit.commit_time, actor,
             trailers.get("Run"), action, trailers.get("File"), trailers.get("Item"), trailers.get("Date"),
             trailers.get("Time"), trailers.get("Owner"), trailers.get("Source-Conv"), summary, len(touches),
             trailers.get("Idempotency-Key"), layers))
        if cur.rowcount == 0:
            return
        seq = cur.lastrowid
        # (a touch recorded before layers has five fields: its layer is the shared one; before channels, six)
        db.executemany("INSERT INTO touches VALUES (?,?,?,?,?,?,?,?)", [(seq, *t, *(None,) * (7 - len(t)))
                                                                       for t in touches])
        key = trailers.get("Idempotency-Key")
        if key:
            db.execute("INSERT OR IGNORE INTO idem VALUES (?,?,NULL,?)", (key, cid.decode(), trailers.get("Request")))

    def _touches(self, commit) -> list[tuple]:
        """``(kind, file, name, date, time, layer, channel)`` of every item or entry the commit changed."""
        parent_tree = self.git.commit_tree(commit.parents[0]) if commit.parents else None
        touches = []
        for path in sorted(self.git.changed_paths(parent_tree, commit.tree)):
            old, new = self.git.blob_at(parent_tree, path), self.git.blob_at(commit.tree, path)
            for ch in path_changes(path, old, new):
                touches.append((ch.kind, ch.file, ch.name, ch.date, ch.time, ch.layer, ch.channel))
        return touches

    # -- queries -------------------------------------------------------------

    def page(self, *, file=None, item=None, run=None, date=None, limit=50, cursor=None,
             layers: tuple[str | None, ...] | None = None) -> HistoryPage:
        """A page of commits, newest first, of one file, item, run or day; ``layers``: only commits that touched
        one of these layers (None: the shared one) or no item at all (None: every commit)."""
        self.sync()
        where, args = _where(file=file, item=item, run=run, date=date, layers=layers)
        if cursor is not None:
            try:
                where.append("c.seq < ?")
                args.append(int(cursor))
            except ValueError:
                raise ValueError(f"invalid history cursor {cursor!r}") from None
        sql = f"SELECT {', '.join('c.' + c for c in _COLUMNS.split(', '))}, c.seq FROM commits c"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY c.seq DESC LIMIT ?"
        args.append(int(limit) + 1)
        with self._lock:
            rows = self._db().execute(sql, args).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        return HistoryPage([_entry(r) for r in rows], str(rows[-1][-1]) if more and rows else None)

    def entry(self, cid: str) -> HistoryEntry | None:
        self.sync()
        with self._lock:
            row = self._db().execute(f"SELECT {_COLUMNS} FROM commits WHERE id=?", (cid,)).fetchone()
        return _entry(row) if row else None

    def run_commits(self, run: str) -> list[str]:
        """Commit ids carrying ``Wikimem-Run: run``, newest first."""
        self.sync()
        with self._lock:
            rows = self._db().execute("SELECT id FROM commits WHERE run=? ORDER BY seq DESC", (run,)).fetchall()
        return [r[0] for r in rows]

    def runs(self, limit: int = 50) -> list[dict]:
        self.sync()
        sql = ("SELECT run, MAX(seq) AS last, COUNT(*), SUM(changes), MAX(time) FROM commits"
               " WHERE run IS NOT NULL GROUP BY run ORDER BY last DESC LIMIT ?")
        out = []
        with self._lock:
            db = self._db()
            for run, last, n, changes, when in db.execute(sql, (int(limit),)).fetchall():
                actor, conv = db.execute("SELECT actor, source_conv FROM commits WHERE seq=?", (last,)).fetchone()
                out.append({"run": run, "actor": actor, "source_conv": conv, "time": iso(when),
                            "commits": n, "changes": changes or 0})
        return out

    def by_prefix(self, prefix: str) -> list[str]:
        self.sync()
        with self._lock:
            rows = self._db().execute("SELECT id FROM commits WHERE id >= ? AND id < ? LIMIT 2",
                                      (prefix, prefix + "g")).fetchall()
        return [r[0] for r in rows]

    def at_or_before(self, ts: int) -> str | None:
        self.sync()
        with self._lock:
            row = self._db().execute("SELECT id FROM commits WHERE time <= ? ORDER BY seq DESC LIMIT 1",
                                     (ts,)).fetchone()
        return row[0] if row else None

    def idem(self, key: str, since: int | None = None) -> tuple[str, dict | None, str | None] | None:
        """``(commit, stored result or None, request hash or None)`` of an applied request with this key (made at
        or after ``since``, epoch seconds, when given: an older key is past its retention, as if never seen)."""
        self.sync()
        with self._lock:
            row = self._db().execute("SELECT i.commit_id, i.result, i.request, c.time FROM idem i LEFT JOIN commits c"
                                     " ON c.id = i.commit_id WHERE i.key=?", (key,)).fetchone()
        if row is None or (since is not None and row[3] is not None and row[3] < since):
            return None
        return row[0], (json.loads(row[1]) if row[1] else None), row[2]

    def forget(self, commits: list[str]) -> None:
        """Drop commits that left the branch (replayed on top of the remote's as new ones).

        An idempotency key of a dropped commit is pointed at the replayed commit
        carrying the same ``Wikimem-Idempotency-Key`` (its stored result kept).
        Call after :meth:`sync` has indexed the replayed commits.
        """
        if not commits:
            return
        self.sync()
        with self._lock:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                for cid in commits:
                    row = db.execute("SELECT seq FROM commits WHERE id=?", (cid,)).fetchone()
                    if row is not None:
                        db.execute("DELETE FROM touches WHERE seq=?", (row[0],))
                        db.execute("DELETE FROM commits WHERE seq=?", (row[0],))
                    db.execute("DELETE FROM idem WHERE commit_id=? AND NOT EXISTS "
                               "(SELECT 1 FROM commits c WHERE c.idem = idem.key)", (cid,))
                    db.execute("UPDATE idem SET commit_id = (SELECT c.id FROM commits c WHERE c.idem = idem.key "
                               "ORDER BY c.seq DESC LIMIT 1) WHERE commit_id=?", (cid,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def touches_by_commit(self) -> dict[str, list[tuple]]:
        """``{commit id: [(kind, file, name, date, time, layer, channel), …]}`` of every indexed commit (what a rebuild
        after a rewrite may reuse instead of diffing every commit again)."""
        self.sync()
        out: dict[str, list[tuple]] = {}
        with self._lock:
            db = self._db()
            ids = dict(db.execute("SELECT seq, id FROM commits").fetchall())
            for cid in ids.values():
                out[cid] = []
            for seq, *touch in db.execute("SELECT seq, kind, file, name, date, time, layer, channel FROM touches "
                                          "ORDER BY rowid"):
                if seq in ids:
                    out[ids[seq]].append(tuple(touch))
        return out

    def expire_results(self, before: int) -> int:
        """Drop the keys (and stored results) of requests committed before ``before`` (epoch seconds); how many."""
        with self._lock:
            return self._db().execute("DELETE FROM idem WHERE commit_id IN (SELECT id FROM commits WHERE time < ?)",
                                      (int(before),)).rowcount

    def since_pack(self) -> int:
        with self._lock:
            return int(self._meta(self._db(), "since_pack") or 0)

    def reset_since_pack(self) -> None:
        with self._lock:
            self._db().execute("INSERT OR REPLACE INTO meta VALUES ('since_pack', '0')")

    def count(self) -> int:
        self.sync()
        with self._lock:
            return self._db().execute("SELECT count(*) FROM commits").fetchone()[0]


    # -- repair (``wikimem repair``) ----------------------------------------------------------------

    def known_heads(self, limit: int = 200) -> list[bytes]:
        """Commits the index saw on the branch, newest first (its last head first), without syncing: where
        a repair looks for the last good commit when the branch itself is damaged. [] if it cannot be read."""
        try:
            with self._lock:
                db = self._db()
                head = self._meta(db, "head")
                rows = db.execute("SELECT id FROM commits ORDER BY seq DESC LIMIT ?", (int(limit),)).fetchall()
        except sqlite3.Error:
            return []
        ids = ([head] if head else []) + [r[0] for r in rows]
        return [i.encode() for i in dict.fromkeys(ids) if isinstance(i, str)]

    def healthy(self) -> bool:
        """Whether the file passes SQLite's quick check."""
        try:
            with self._lock:
                return self._db().execute("PRAGMA quick_check").fetchone()[0] == "ok"
        except sqlite3.Error:
            return False

    def rebuild(self) -> None:
        """Delete the file and index the branch again (it is derived from git; other processes reopen it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn, self._synced = None, None
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(str(self.path) + suffix)
                except FileNotFoundError:
                    pass
        self.sync()

    # -- operator queries: more filters, newer/older paging, undo commits -------------------------

    def query(self, *, limit: int = 50, before: int | None = None, after: int | None = None,
              **filters) -> HistoryPage:
        """A page of commits matching ``filters`` (file, item, run, date, actor, action, since, until, channel), newest
        first.

        ``before`` (a seq) pages to older commits, ``after`` to newer ones; the
        page's ``next`` / ``prev`` are the cursors of the older / newer page.
        """
        self.sync()
        base, base_args = _where(**filters)
        where, args = list(base), list(base_args)
        _bounded(where, args, ("c.seq < ?", before), ("c.seq > ?", after))
        sql = f"SELECT {', '.join('c.' + c for c in _COLUMNS.split(', '))}, c.seq FROM commits c"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY c.seq {'ASC' if after is not None else 'DESC'} LIMIT ?"
        with self._lock:
            db = self._db()
            rows = db.execute(sql, [*args, int(limit)]).fetchall()
            if after is not None:
                rows.reverse()
            if not rows:
                return HistoryPage([], None, None)
            newest, oldest = rows[0][-1], rows[-1][-1]
            older = _exists(db, base, base_args, "c.seq < ?", oldest)
            newer = _exists(db, base, base_args, "c.seq > ?", newest)
        return HistoryPage([_entry(r) for r in rows], str(oldest) if older else None,
                           str(newest) if newer else None)

    def channels(self, layer: str | None | bool = False) -> list[str]:
        """The channels of the diary entries the indexed commits added or removed, sorted (``layer``: of that layer
        only, None the shared one; ``False``: of every layer)."""
        self.sync()
        where, args = _layer_is(layer)
        with self._lock:
            rows = self._db().execute(f"SELECT DISTINCT channel FROM touches WHERE channel IS NOT NULL{where} "
                                      "ORDER BY channel", args).fetchall()
        return [r[0] for r in rows]

    def diary_days(self, channel: str, layer: str | None = None) -> list[str]:
        """The days on which an indexed commit added or removed a diary entry (of ``layer``; None: the shared
        one) said in ``channel``, ascending."""
        self.sync()
        where, args = _layer_is(layer)
        with self._lock:
            rows = self._db().execute("SELECT DISTINCT date FROM touches WHERE kind = 'diary' AND channel = ?"
                                      f"{where} ORDER BY date", [channel, *args]).fetchall()
        return [r[0] for r in rows if r[0]]

    def seq_at(self, ts: int) -> int | None:
        """The seq of the newest commit made at or before ``ts`` (a jump to a date pages from there)."""
        self.sync()
        with self._lock:
            row = self._db().execute("SELECT seq FROM commits WHERE time <= ? ORDER BY seq DESC LIMIT 1",
                                     (int(ts),)).fetchone()
        return row[0] if row else None

    def newest_first(self, ids: list[str]) -> list[str]:
        """``ids`` that are indexed commits of the branch, newest first (unknown ids are dropped)."""
        self.sync()
        found: list[tuple[int, str]] = []
        with self._lock:
            db = self._db()
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                found += db.execute(f"SELECT seq, id FROM commits WHERE id IN ({','.join('?' * len(chunk))})",
                                    chunk).fetchall()
        return [cid for _, cid in sorted(found, reverse=True)]

    def undo_commits(self) -> list[str]:
        """Ids of the revert and rollback commits, newest first (what can mark a commit "rolled back")."""
        self.sync()
        with self._lock:
            rows = self._db().execute(
                f"SELECT id FROM commits WHERE action IN ({','.join('?' * len(UNDO_ACTIONS))}) ORDER BY seq DESC",
                UNDO_ACTIONS).fetchall()
        return [r[0] for r in rows]


UNDO_ACTIONS = ("revert", "rollback")


def _where(file=None, item=None, run=None, date=None, actor=None, action=None, since=None, until=None,
           layers: tuple[str | None, ...] | None = None, channel=None):
    """SQL conditions on ``commits c`` (and its touches) for the given filters, with their arguments; ``layers``
    keeps the commits that touched an item of one of them (None: the shared layer) or no item at all; ``channel``
    the commits that added or removed a diary entry said there."""
    where, args = [], []
    for column, value in (("run", run), ("actor", actor), ("action", action)):
        if value is not None:
            where.append(f"c.{column} = ?")
            args.append(value)
    _bounded(where, args, ("c.time >= ?", since), ("c.time <= ?", until))
    touch = [(f"t.{col} = ?", [v]) for col, v in (("file", file), ("name", item), ("date", date), ("channel", channel))
             if v is not None]
    if layers is not None:
        named = [layer for layer in layers if layer is not None]
        options = (["t.layer IS NULL"] if None in layers else []) + (
            [f"t.layer IN ({','.join('?' * len(named))})"] if named else [])
        in_layers = "(" + (" OR ".join(options) or "0") + ")"
        if touch:  # the item asked for, in one of the layers
            touch.append((in_layers, named))
        else:  # a commit of no item (settings, a discard) is in every layer's view
            where.append("(NOT EXISTS (SELECT 1 FROM touches t WHERE t.seq = c.seq) OR EXISTS (SELECT 1 FROM touches t "
                         f"WHERE t.seq = c.seq AND {in_layers}))")
            args.extend(named)
    if touch:
        conditions = " AND ".join(c for c, _ in touch)
        where.append(f"EXISTS (SELECT 1 FROM touches t WHERE t.seq = c.seq AND {conditions})")
        for _, values in touch:
            args.extend(values)
    return where, args


def _layer_is(layer: str | None | bool) -> tuple[str, list]:
    """A condition on a touch's layer (None: the shared one; ``False``: any), to append after ``WHERE …``."""
    if layer is False:
        return "", []
    return (" AND layer IS NULL", []) if layer is None else (" AND layer = ?", [layer])


def _bounded(where: list[str], args: list, *bounds: tuple[str, int | None]) -> None:
    """Add each ``(condition, value)`` whose value is given (a seq or epoch seconds, as an int)."""
    for condition, value in bounds:
        if value is not None:
            where.append(condition)
            args.append(int(value))


def _exists(db, where: list[str], args: list, extra: str, seq: int) -> bool:
    sql = "SELECT 1 FROM commits c WHERE " + " AND ".join([*where, extra]) + " LIMIT 1"
    return db.execute(sql, [*args, seq]).fetchone() is not None
