"""A write load over many owners through the balancer, and the check of what the remote holds.

Shared by ``test_cluster.py`` (a short run) and ``bench/cluster.py`` (the
long kill/restart run). Each logical write is one diary append with a unique
content and one ``Idempotency-Key`` (the client resends it on every retry);
it is *acknowledged* when the client call returned. Afterwards every
acknowledged content must be on its owner's remote exactly once, and no
content (acknowledged or not) more than once.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from wikimem.client import Client, ClientError
from wikimem.format.codec import parse_day
from wikimem.host.owner_ids import encode_owner_id

DATE = "2026-07-21"

__all__ = ["Load", "LoadResult", "remote_entries", "check_remote", "DATE"]


@dataclass
class LoadResult:
    acknowledged: dict[str, list[str]] = field(default_factory=dict)  # owner -> contents
    failed: dict[str, list[str]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)

    @property
    def acked(self) -> int:
        return sum(map(len, self.acknowledged.values()))


class Load:
    """``threads`` writers appending to random owners through ``url`` until stopped (or ``max_writes``)."""

    def __init__(self, url: str, token: str, owners: list[str], threads: int = 4, max_writes: int = 100_000,
                 seed: int = 7):
        self.url, self.token, self.owners = url, token, owners
        self.threads, self.max_writes = threads, max_writes
        self.result = LoadResult()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._count = 0
        self._workers: list[threading.Thread] = []
        self._rng = random.Random(seed)

    def start(self) -> Load:
        for n in range(self.threads):
            t = threading.Thread(target=self._run, args=(n,), daemon=True)
            t.start()
            self._workers.append(t)
        return self

    def stop(self, timeout: float = 120) -> LoadResult:
        self._stop.set()
        deadline = time.monotonic() + timeout
        for t in self._workers:
            t.join(max(0.1, deadline - time.monotonic()))
        return self.result

    def _next(self) -> int | None:
        with self._lock:
            if self._count >= self.max_writes or self._stop.is_set():
                return None
            self._count += 1
            return self._count

    def _run(self, n: int) -> None:
        client = Client(self.url, self.token, timeout=30.0, retries=6, backoff=0.3, proxies={})
        rng = random.Random(n)
        while True:
            i = self._next()
            if i is None:
                return
            owner = rng.choice(self.owners)
            content = f"write {n}-{i} to {owner}"
            started = time.monotonic()
            try:
                client.diary_append(content, owner=owner, date=DATE, time="09:00")
            except (ClientError, OSError) as exc:
                with self._lock:
                    self.result.failed.setdefault(owner, []).append(content)
                    kind = f"{getattr(exc, 'status', 'os')} {getattr(exc, 'code', type(exc).__name__)}"
                    self.result.errors[kind] += 1
                continue
            with self._lock:
                self.result.acknowledged.setdefault(owner, []).append(content)
                self.result.latencies.append(time.monotonic() - started)


def remote_entries(bare: Path) -> list[str]:
    """The contents of every diary entry on ``main`` of a bare repository (``[]`` when it has none)."""
    if not (bare / "HEAD").exists():
        return []
    done = subprocess.run(["git", "-C", str(bare), "show", f"main:diary/{DATE}.md"], capture_output=True)
    if done.returncode != 0:
        return []
    return [e.content for e in parse_day(done.stdout, DATE)]


def check_remote(result: LoadResult, bare_of) -> dict:
    """Lost (acknowledged, absent), duplicated (twice or more) and fsck problems of the remotes."""
    lost, duplicated, fsck_bad = [], [], []
    owners = set(result.acknowledged) | set(result.failed)
    for owner in sorted(owners):
        bare = bare_of(encode_owner_id(owner))
        counts = Counter(remote_entries(bare))
        lost += [c for c in result.acknowledged.get(owner, []) if counts[c] == 0]
        duplicated += [c for c, k in counts.items() if k > 1]
        if bare.exists():
            fsck = subprocess.run(["git", "-C", str(bare), "fsck", "--strict", "--no-progress"], capture_output=True,
                                  text=True)
            if fsck.returncode != 0:
                fsck_bad.append((owner, fsck.stderr[-300:]))
    return {"lost": lost, "duplicated": duplicated, "fsck": fsck_bad}
