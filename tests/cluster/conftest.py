"""Fixtures of the cluster tests: real git servers, real nginx, real gunicorn hosts on 127.0.0.1.

The engines come from Debian's packages (``.ci/system-deps`` installs nginx,
fcgiwrap and git); a test whose engine is missing is skipped with the
package to install. Every engine is stopped at teardown, whatever happened.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engines import GitDaemon, GitHttpServer, bare_repo, have  # noqa: E402

_names = itertools.count()


def need(*programs: str) -> None:
    if not have(*programs):
        pytest.skip(f"needs {', '.join(programs)} (installed by .ci/system-deps as root)")


@pytest.fixture(scope="session")
def git_http(tmp_path_factory):
    """nginx + fcgiwrap + git http-backend on 127.0.0.1 (push-to-create, fsck on receive)."""
    need("nginx", "fcgiwrap", "git")
    server = GitHttpServer(tmp_path_factory.mktemp("git-http"))
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(scope="session")
def git_daemon(tmp_path_factory):
    """``git daemon --enable=receive-pack`` on 127.0.0.1 (git:// URLs)."""
    need("git")
    server = GitDaemon(tmp_path_factory.mktemp("git-daemon"))
    try:
        yield server.start()
    finally:
        server.stop()


@dataclass
class RemoteKind:
    """One kind of remote: ``new()`` gives the URL of a fresh repository and the bare folder behind it."""

    name: str
    new: Callable[[], tuple[str, Path]]


REMOTE_KINDS = ["file", "http", "git"]


@pytest.fixture(params=REMOTE_KINDS)
def remote_kind(request, tmp_path) -> RemoteKind:
    """Each test runs against a file:// remote, the smart-HTTP server and git daemon."""
    kind = request.param
    if kind == "file":
        (tmp_path / "remotes").mkdir()

        def new() -> tuple[str, Path]:
            folder = tmp_path / "remotes" / f"r{next(_names)}.git"
            return f"file://{folder}", folder
    elif kind == "http":
        server = request.getfixturevalue("git_http")

        def new() -> tuple[str, Path]:
            name = f"r{next(_names)}"
            return f"{server.url}/{name}.git", server.repo(name)
    else:
        server = request.getfixturevalue("git_daemon")

        def new() -> tuple[str, Path]:
            name = f"r{next(_names)}"
            return f"{server.url}/{name}.git", bare_repo(server.repo(name))
    return RemoteKind(kind, new)
