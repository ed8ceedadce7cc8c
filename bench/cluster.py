"""Cluster benchmark (issue 14): the replication transport, then the cluster on loopback.

Section ``transport`` (the choice between dulwich's client and the git CLI):
for each remote kind — ``file://``, smart HTTP (nginx + fcgiwrap + ``git
http-backend``, fsck on receive) and ``git://`` (``git daemon``) — the
median and p90 latency of

- a compare-and-swap push of one new commit (dulwich ``send_pack`` with the
  advertised-value check vs ``git push --force-with-lease=main:<old>``),
- a fetch of one new commit into a clone that is one commit behind
  (dulwich ``fetch`` vs ``git fetch … main:refs/remotes/origin/main``),
- reading the remote head (dulwich ``get_refs`` vs ``git ls-remote``),

next to the reference measured in the same run: one unreplicated write
(``VersionedStore.add``), so "sync replication costs at most 2x a write"
can be read off directly.

    .venv/bin/python bench/cluster.py [--samples 40] [--pushes 600] [--section transport]

and a growth table: push latency of a file:// remote over ``--pushes``
pushes, git's receive-pack (what :class:`Remote` uses when git is installed)
vs dulwich's in-process LocalGitClient (one pack per push in the remote).

Figures on the shared 2-core machine are noisy: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "cluster"))

from engines import GitDaemon, GitHttpServer, bare_repo  # noqa: E402
from wikimem.versioned import VersionedStore  # noqa: E402
from wikimem.versioned.remote import Remote  # noqa: E402


def fmt(samples: list[float]) -> str:
    s = sorted(samples)
    return f"{statistics.median(s) * 1000:7.2f} ms (p90 {s[int(len(s) * 0.9)] * 1000:6.2f})"


def med(samples: list[float]) -> float:
    return statistics.median(samples)


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


class CliTransport:
    """The git CLI doing what :class:`Remote` does: the same CAS push, fetch and head read."""

    def __init__(self, url: str):
        self.url = url

    def _git(self, repo: Path | None, *args: str) -> str:
        argv = ["git"] + (["-C", str(repo)] if repo else []) + list(args)
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def remote_head(self) -> str | None:
        out = self._git(None, "ls-remote", self.url, "refs/heads/main").split()
        return out[0] if out else None

    def push(self, repo: Path, new: str, expected: str | None) -> None:
        self._git(repo, "push", "-q", "--porcelain", f"--force-with-lease=refs/heads/main:{expected or ''}",
                  self.url, f"{new}:refs/heads/main")

    def fetch(self, repo: Path) -> None:
        self._git(repo, "fetch", "-q", "--no-tags", self.url, "+refs/heads/main:refs/remotes/origin/main")


def make_transport(client: str, url: str):
    """``dulwich``: :class:`Remote` as the product uses it; ``dulwich in-process``: file:// through
    dulwich's LocalGitClient instead of git's receive-pack; ``git CLI``: :class:`CliTransport`."""
    if client == "git CLI":
        return CliTransport(url)
    remote = Remote(url)
    if client == "dulwich in-process":
        from dulwich.client import LocalGitClient

        remote._client = LocalGitClient()
    return remote


def transport_rows(kind: str, client: str, url: str, tmp: Path, samples: int) -> list[tuple[str, str, str, float]]:
    """(remote kind, operation, figures, median) of one client against one fresh, empty remote."""
    transport = make_transport(client, url)
    writer = VersionedStore(tmp / f"{kind[:4]}-{client}-w", auto_pack=False)
    reader = tmp / f"{kind[:4]}-{client}-r"
    writer.add("f", "seed", "first memory")
    transport.push(writer.root, writer.head(), None)
    Remote(url).clone(reader)
    push, fetch, head = [], [], []
    for i in range(samples):
        before = writer.head()
        writer.add(f"f{i % 10}", f"item{i}", f"memory number {i}: she mentioned the sea again.")
        push.append(timed(lambda: transport.push(writer.root, writer.head(), before)))
        fetch.append(timed(lambda: transport.fetch(reader)))
        head.append(timed(transport.remote_head))
    writer.close()
    return [(kind, f"push (CAS) · {client}", fmt(push), med(push)),
            (kind, f"fetch · {client}", fmt(fetch), med(fetch)),
            (kind, f"remote head · {client}", fmt(head), med(head))]


def section_transport(args) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="wikimem-bench-cluster-"))
    try:
        local = VersionedStore(tmp / "reference", auto_pack=False)
        local.add("f", "seed", "x")
        ref = [timed(lambda i=i: local.add(f"f{i % 10}", f"item{i}", f"memory number {i}: the sea."))
               for i in range(args.samples)]
        local.close()
        rows = []
        with GitHttpServer(tmp / "http").start() as http, GitDaemon(tmp / "daemon").start() as daemon:
            for kind, url_of in (("file://", lambda n: f"file://{bare_repo(tmp / 'file' / f'{n}.git')}"),
                                 ("http (nginx+git http-backend)", lambda n: f"{http.url}/{n}.git"),
                                 ("git:// (git daemon)", lambda n: f"{daemon.url}/{bare_repo(daemon.repo(n)).name}")):
                clients = ("dulwich", "dulwich in-process", "git CLI") if kind == "file://" else ("dulwich", "git CLI")
                for n, client in enumerate(clients):
                    rows += transport_rows(kind, client, url_of(f"bench-{n}"), tmp, args.samples)
        print(f"\n## Transport: dulwich client vs git CLI ({args.samples} samples each, one commit per push)\n")
        print(f"reference: one unreplicated write (VersionedStore.add): {fmt(ref)}\n")
        print("| remote | operation · client | latency median (p90) | ÷ unreplicated write |")
        print("|---|---|---|---|")
        for kind, op, figures, m in rows:
            print(f"| {kind} | {op} | {figures} | {m / med(ref):.1f}x |")
        growth(tmp, args.pushes)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def growth(tmp: Path, pushes: int) -> None:
    """Push latency of a file:// remote over its life: the first and the last 50 of ``pushes`` pushes."""
    print(f"\n## file:// remote over {pushes} pushes (one commit each): first 50 vs last 50\n")
    print("| client | first 50 | last 50 | packs in the remote |")
    print("|---|---|---|---|")
    for client in ("dulwich", "dulwich in-process"):
        bare = bare_repo(tmp / "growth" / f"{client.replace(' ', '-')}.git")
        remote = make_transport(client, f"file://{bare}")
        writer = VersionedStore(tmp / "growth" / f"{client.replace(' ', '-')}-w", auto_pack=False)
        writer.add("f", "seed", "x")
        remote.push(writer.root, writer.head(), None)
        lat = []
        for i in range(pushes):
            before = writer.head()
            writer.add(f"f{i % 10}", f"item{i}", f"memory {i}")
            lat.append(timed(lambda: remote.push(writer.root, writer.head(), before)))
        writer.close()
        packs = len(list((bare / "objects" / "pack").glob("*.pack")))
        print(f"| {client} | {fmt(lat[:50])} | {fmt(lat[-50:])} | {packs} |")


SECTIONS = {"transport": section_transport}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--pushes", type=int, default=600, help="pushes of the file:// growth table")
    ap.add_argument("--section", choices=sorted(SECTIONS), action="append")
    args = ap.parse_args()
    for name in args.section or list(SECTIONS):
        SECTIONS[name](args)


if __name__ == "__main__":
    main()
