"""Fixtures of the cluster tests: real git servers, real nginx, real gunicorn hosts on 127.0.0.1.

The engines come from Debian's packages (``.ci/system-deps`` installs nginx,
fcgiwrap and git); a test whose engine is missing is skipped with the
package to install. Every engine is stopped at teardown, whatever happened.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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


@dataclass
class Cluster:
    """N wikimem hosts (gunicorn, own data roots) behind an nginx consistent-hash balancer."""

    hosts: list
    balancer: object
    token: str
    remote: object | None = None

    @property
    def url(self) -> str:
        return self.balancer.url

    def host_holding(self, owner_id: str) -> list:
        """The hosts whose data root holds the owner's repository."""
        from wikimem.host.owner_ids import encode_owner_id

        folder = encode_owner_id(owner_id)
        return [h for h in self.hosts if (h.data / "owners" / folder / ".git").is_dir()]

    def stop(self) -> None:
        for engine in [self.balancer, *self.hosts]:
            if engine is not None:
                engine.stop()


@pytest.fixture
def make_cluster(tmp_path):
    """``make_cluster(n, env=…, remote=…)`` starts a cluster; everything it started is stopped at teardown."""
    import secrets

    from engines import Balancer, HostProcess

    need("nginx", "git")
    made: list[Cluster] = []

    def make(n: int = 3, env: dict | None = None, workers: int = 2, remote=None,
             ports: list[int] | None = None) -> Cluster:
        token = secrets.token_urlsafe(24)
        shared = {"WIKIMEM_ADMIN_TOKEN": token, "WIKIMEM_SECRET_KEY": secrets.token_hex(32), **(env or {})}
        cluster = Cluster([], None, token, remote)
        made.append(cluster)
        root = tmp_path / f"cluster{len(made)}"
        for i in range(n):
            cluster.hosts.append(HostProcess(root / f"host{i}", env=shared, workers=workers,
                                             port=ports[i] if ports else 0))
        for host in cluster.hosts:
            host.start(wait=False)
        for host in cluster.hosts:
            host.wait_ready()
        cluster.balancer = Balancer(root / "balancer", [h.address for h in cluster.hosts]).start()
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.stop()
