"""A throw-away PostgreSQL server on 127.0.0.1 for the tests and benchmarks of a cluster's shared database.

Debian's ``postgresql`` package (installed by ``.ci/system-deps``) gives
``initdb`` and ``postgres``; :class:`PgServer` makes a cluster in a fresh
folder under the system's temporary directory, starts it on a free loopback
port with trust authentication (loopback only, no password), and hands out
one new database per test (:meth:`PgServer.new_database`). PostgreSQL
refuses to run as root, so when the tests run as root (CI) the server runs
as the ``postgres`` user (``runuser``); without that user, or without the
binaries, :func:`unavailable` says why and the tests skip with that reason.
Every wait is bounded; :meth:`PgServer.stop` is safe to call twice.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["PgServer", "unavailable"]

START_SECONDS = 30.0
_names = itertools.count()


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return versions[-1] if versions else None


def _run_as() -> list[str]:
    """The prefix that runs a command as an unprivileged user (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return []
    return [shutil.which("runuser") or "/usr/sbin/runuser", "-u", "postgres", "--"]


def unavailable() -> str | None:
    """Why a server cannot be started here (None: it can)."""
    if not _binary("initdb") or not _binary("postgres"):
        return "needs PostgreSQL's initdb and postgres (Debian package postgresql, installed by .ci/system-deps)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "runs as root without a postgres user to run the server as"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "needs psycopg: pip install 'wikimem[postgres]'"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """One PostgreSQL cluster on 127.0.0.1, in its own folder, stopped by :meth:`stop`."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="wikimem-pg-"))
        self.data = self.folder / "data"
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None
        self.max_connections = 300

    def _own(self) -> None:
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chmod(self.folder, 0o700)
            os.chown(self.folder, user.pw_uid, user.pw_gid)

    def start(self, max_connections: int = 300) -> PgServer:
        self._own()
        log = self.folder / "initdb.log"
        with open(log, "wb") as out:
            subprocess.run([*_run_as(), _binary("initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
                            "-E", "UTF8", "--locale=C", "--no-sync"], stdout=out, stderr=subprocess.STDOUT,
                           check=True, timeout=120)
        self.max_connections = max_connections
        return self._launch()

    def restart(self, down: float = 0.0) -> PgServer:
        """Stop the server (fast shutdown: every connection is cut), stay down ``down`` seconds, start it again
        over the same data on the same port."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=30)
        time.sleep(down)
        return self._launch()

    def _launch(self) -> PgServer:
        self.proc = subprocess.Popen(
            [*_run_as(), _binary("postgres"), "-D", str(self.data), "-p", str(self.port), "-h", "127.0.0.1",
             "-k", str(self.folder), "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", f"max_connections={self.max_connections}",
             "-c", "shared_buffers=32MB"],
            stdout=open(self.folder / "postgres.log", "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}: {self.log_text()}")
            try:
                import psycopg

                with psycopg.connect(self.url("postgres"), connect_timeout=2):
                    return self
            except Exception:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"postgres did not start in {START_SECONDS:.0f}s: {self.log_text()}") from None
                time.sleep(0.1)

    def log_text(self) -> str:
        try:
            return (self.folder / "postgres.log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self, prefix: str = "t") -> str:
        """The URL of a new, empty database (one per test: tests never see each other's rows)."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(_names)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGINT)  # fast shutdown
                proc.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=5)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> PgServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
