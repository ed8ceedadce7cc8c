"""The one SQL layer of the fleet: a SQLite file (one machine) or a PostgreSQL database (a cluster's shared one).

Design notes: docs/explanation/operations.md (``wikimem/host/fleet/sql.py``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from wikimem.errors import StoreBusy
from wikimem.locking import while_locked

from . import pgpool

__all__ = ["Database", "Tx", "is_url", "prefix_match"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_url(target: str | os.PathLike | None) -> bool:
    """Whether ``target`` names a PostgreSQL server (else it is a SQLite file path)."""
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


class Database:
    """One database for one store (``name``: ``"runs"``, ``"jobs"``), SQLite or PostgreSQL.

    ``target`` is a file path (SQLite, WAL) or a ``postgresql://`` URL.
    ``synchronous`` is SQLite's (``FULL`` where a row must survive a power cut).
    """

    def __init__(self, target: str | os.PathLike, name: str, *, synchronous: str = "NORMAL"):
        self.name = name
        self.postgres = is_url(target)
        self.target = str(target) if self.postgres else Path(target)
        self.synchronous = synchronous
        self._local = threading.local()
        self._lock_key = zlib.crc32(f"wikimem:{name}".encode()) & 0x7FFFFFFF
        self._schema_key = zlib.crc32(b"wikimem:schema") & 0x7FFFFFFF  # every store's DDL, one at a time
        self.errors: tuple[type[BaseException], ...] = (sqlite3.Error,)  # what a failed statement raises
        self._prepared_pid: int | None = None  # PostgreSQL: the process that ran the schema check
        if self.postgres:
            import psycopg

            self.errors = (sqlite3.Error, psycopg.Error, StoreBusy)

    def __repr__(self) -> str:
        return f"Database({self.shown!r}, {self.name!r})"

    @property
    def shown(self) -> str:
        """Where it is, without a password."""
        if not self.postgres:
            return str(self.target)
        import urllib.parse

        parts = urllib.parse.urlsplit(str(self.target))
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    # -- connections ---------------------------------------------------------------

    def connection(self):
        """This thread's SQLite connection (a new one after a fork)."""
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is None or local.pid != os.getpid():
            conn = self._connect()
            local.conn, local.pid = conn, os.getpid()
        return conn

    def prepared(self, setup: Callable[[], None]) -> Database:
        """This database, ``setup()`` (a schema check) run once for each connection this thread opens (the
        file may have been replaced, the process forked since the last one); on PostgreSQL once per process."""
        if self.postgres:
            if self._prepared_pid != os.getpid():
                setup()
                self._prepared_pid = os.getpid()
            return self
        conn = self.connection()
        if getattr(self._local, "prepared", None) is not conn:
            setup()
            self._local.prepared = self.connection()
        return self

    def _connect(self):
        path = Path(self.target)
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
        while_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"), 30.0)  # (another process may switch it too)
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def close(self) -> None:
        """Close this thread's SQLite connection (PostgreSQL's go back to the process's pool after each use)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            try:
                conn.close()
            finally:
                self._local.conn = None

    # -- statements ----------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        return sql.replace("%", "%%").replace("?", "%s") if self.postgres else sql

    def execute(self, sql: str, args: Sequence[Any] = (), conn=None):
        """Run one statement (outside a transaction: on its own); the cursor (PostgreSQL: its rows, read)."""
        values = _values(args)
        conn = conn or getattr(self._local, "tx", None)  # (inside this store's write: its transaction)
        if conn is not None or not self.postgres:
            return (conn or self.connection()).execute(self._sql(sql), values)
        return pgpool.run(str(self.target), self.shown, lambda c: _Done(c.execute(self._sql(sql), values)))

    def rows(self, sql: str, args: Sequence[Any] = (), conn=None) -> list[tuple]:
        return [tuple(r) for r in self.execute(sql, args, conn).fetchall()]

    def one(self, sql: str, args: Sequence[Any] = (), conn=None) -> tuple | None:
        row = self.execute(sql, args, conn).fetchone()
        return None if row is None else tuple(row)

    def scalar(self, sql: str, args: Sequence[Any] = (), conn=None) -> Any:
        """The first column of the first row (a count, a pragma)."""
        row = self.one(sql, args, conn)
        return None if row is None else row[0]

    def many(self, sql: str, rows: Sequence[Sequence[Any]], conn=None) -> None:
        values = [_values(r) for r in rows]
        conn = conn or getattr(self._local, "tx", None)
        if conn is not None or not self.postgres:
            (conn or self.connection()).cursor().executemany(self._sql(sql), values)
            return
        pgpool.run(str(self.target), self.shown, lambda c: c.cursor().executemany(self._sql(sql), values))

    def script(self, ddl: str) -> None:
        """Run a schema script (``;``-separated statements, ``{text_c}`` and ``{real}`` filled in)."""
        ddl = ddl.format(text_c='TEXT COLLATE "C"' if self.postgres else "TEXT",
                         real="DOUBLE PRECISION" if self.postgres else "REAL")
        with self.write(schema=True) as tx:
            for statement in (s.strip() for s in ddl.split(";")):
                if statement:
                    tx.execute(statement)

    @contextmanager
    def write(self, *, schema: bool = False) -> Iterator[Tx]:
        """One write transaction, the only one of this store at a time (a claim never races); ``schema``: the
        only one changing any store's tables (PostgreSQL's concurrent ``CREATE … IF NOT EXISTS`` can collide).
        A write inside this store's own write joins it."""
        outer = getattr(self._local, "tx", None)
        if outer is not None:
            yield Tx(self, outer)
            return
        if self.postgres:
            conn = pgpool.begin(str(self.target), self.shown, self._schema_key if schema else self._lock_key)
        else:
            conn = self.connection()
            conn.execute("BEGIN IMMEDIATE")
        self._local.tx = conn
        try:
            yield Tx(self, conn)
        except BaseException:
            try:
                conn.execute("ROLLBACK")
            except self.errors:
                pass
            raise
        else:
            conn.execute("COMMIT")
        finally:
            self._local.tx = None
            if self.postgres:
                pgpool.give_back(str(self.target), conn)

    # -- schema and size -----------------------------------------------------------

    def version(self) -> int:
        """The schema version of this store (0: none yet)."""
        if not self.postgres:
            return int(self.scalar("PRAGMA user_version"))
        if self.scalar("SELECT to_regclass('wikimem_schema')") is None:
            with self.write(schema=True) as tx:
                tx.execute("CREATE TABLE IF NOT EXISTS wikimem_schema (name TEXT PRIMARY KEY, "
                           "version INTEGER NOT NULL)")
        row = self.one("SELECT version FROM wikimem_schema WHERE name = ?", (self.name,))
        return 0 if row is None else int(row[0])

    def set_version(self, tx: Tx, version: int) -> None:
        """Record the schema version, inside the migration's transaction."""
        if not self.postgres:
            tx.execute(f"PRAGMA user_version = {int(version)}")
            return
        tx.execute("INSERT INTO wikimem_schema (name, version) VALUES (?, ?) "
                   "ON CONFLICT (name) DO UPDATE SET version = excluded.version", (self.name, int(version)))

    def size(self, tables: Sequence[str] = ()) -> int:
        """Bytes the store's rows take: the SQLite file's pages in use (freed pages are reused, not counted), or
        the PostgreSQL tables named (with their indexes)."""
        if self.postgres:
            total = 0
            for table in tables:
                total += int(self.scalar("SELECT pg_total_relation_size(to_regclass(?))", (table,)) or 0)
            return total
        pages = int(self.scalar("PRAGMA page_count")) - int(self.scalar("PRAGMA freelist_count"))
        return pages * int(self.scalar("PRAGMA page_size"))

    def compact(self) -> None:
        """Give freed space back (SQLite: checkpoint the WAL; PostgreSQL's autovacuum does it there)."""
        if not self.postgres:
            self.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def columns(self, table: str) -> set[str]:
        """The column names of ``table`` (a migration asks what is there)."""
        if self.postgres:
            return {r[0] for r in self.rows("SELECT column_name FROM information_schema.columns "
                                            "WHERE table_name = ? AND table_schema = current_schema()", (table,))}
        return {r[1] for r in self.rows(f"PRAGMA table_info({table})")}


class _Done:
    """A PostgreSQL statement's outcome, read before its connection went back to the pool: rows and rowcount."""

    def __init__(self, cursor) -> None:
        self._rows = list(cursor.fetchall()) if cursor.description is not None else []
        self.rowcount = cursor.rowcount

    def fetchall(self) -> list:
        return self._rows

    def fetchone(self):
        return self._rows[0] if self._rows else None


def _values(args: Sequence[Any] | dict) -> tuple | dict:
    """The arguments of a statement, each text value checked: no NUL (the one value PostgreSQL's text refuses; refused
    on SQLite too, so that both engines answer alike)."""
    values = args.values() if isinstance(args, dict) else args
    for value in values:
        if isinstance(value, str) and "\0" in value:
            from wikimem.errors import InvalidValue

            raise InvalidValue("a value may not contain a NUL character")
    return args if isinstance(args, dict) else tuple(args)


class Tx:
    """The statements of one write transaction (:meth:`Database.write`)."""

    def __init__(self, db: Database, conn) -> None:
        self.db = db
        self.conn = conn

    def execute(self, sql: str, args: Sequence[Any] = ()):
        return self.db.execute(sql, args, self.conn)

    def rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        return self.db.rows(sql, args, self.conn)

    def one(self, sql: str, args: Sequence[Any] = ()) -> tuple | None:
        return self.db.one(sql, args, self.conn)

    def scalar(self, sql: str, args: Sequence[Any] = ()) -> Any:
        return self.db.scalar(sql, args, self.conn)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.db.many(sql, rows, self.conn)


def prefix_match(column: str, prefixes: Sequence[str]) -> tuple[str, list]:
    """The condition "``column`` starts with one of ``prefixes``" and its arguments (``""`` matches every row,
    no prefix none); ``substr`` rather than ``LIKE``, whose ``_`` and ``%`` an owner id may hold."""
    if "" in prefixes:
        return "1 = 1", []
    if not prefixes:
        return "1 = 0", []
    test = f"substr({column}, 1, ?) = ?"
    return "(" + " OR ".join([test] * len(prefixes)) + ")", [x for p in prefixes for x in (len(p), p)]
