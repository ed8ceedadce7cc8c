"""The other hosts of a cluster (``WIKIMEM_PEERS``), asked for what spans every host: the owner listing.

Design notes: docs/explanation/replication-internals.md (``wikimem/host/cluster/peers.py``).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Peers", "Breaker", "Courier", "Delivery", "merge_owner_pages"]

log = logging.getLogger(__name__)

MAX_ANSWER = 16 * 1024 * 1024  # bytes of a peer's answer read at most
SLACK = 0.25  # seconds a gathering waits beyond the connect and read timeouts (thread start, parsing)


def _normal(url: str) -> str:
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"a peer must be an http(s) base URL like http://10.0.0.11:8000, not {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{parts.hostname}:{port}{parts.path.rstrip('/')}"


class PeerFailed(Exception):
    """A call to a peer failed in a way that says it is down (no connection, a timeout, a 5xx)."""


class Breaker:
    """Which peers to leave alone: one that failed is skipped for ``cooldown`` seconds, then tried once more.

    States per peer: *closed* (no record: call it), *open* (a record whose
    time is still ahead: skip it), *half-open* (the time has passed: the
    first caller moves it one cooldown ahead and makes the trial call, the
    others keep skipping; a success removes the record, a failure opens it
    again). Records live in ``folder`` (one small file per peer, shared by
    the processes of a host) or, without one, in this object.
    """

    def __init__(self, cooldown: float = 30.0, folder: Path | str | None = None):
        self.cooldown = float(cooldown)
        self.folder = Path(folder) if folder is not None else None
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def _file(self, url: str) -> Path:
        assert self.folder is not None
        return self.folder / hashlib.sha256(url.encode()).hexdigest()[:24]

    def _get(self, url: str) -> float | None:
        if self.folder is None:
            return self._until.get(url)
        try:
            return float(self._file(url).read_text(encoding="ascii"))
        except (OSError, ValueError):
            return None

    def _set(self, url: str, until: float | None) -> None:
        if self.folder is None:
            if until is None:
                self._until.pop(url, None)
            else:
                self._until[url] = until
            return
        path = self._file(url)
        try:
            if until is None:
                path.unlink(missing_ok=True)
                return
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(repr(until), encoding="ascii")
            os.replace(tmp, path)
        except OSError as exc:  # a full disk: the breaker forgets, peers are called (slowly) as before
            log.debug("peer breaker state of %s not stored: %s", url, exc)

    def allow(self, url: str, now: float | None = None) -> bool:
        """Whether to call ``url`` now (True for the one trial call of a half-open peer)."""
        now = time.time() if now is None else now
        with self._lock:
            until = self._get(url)
            if until is None:
                return True
            if now < until:
                return False
            self._set(url, now + self.cooldown)  # this caller makes the trial; the others skip meanwhile
            return True

    def is_open(self, url: str, now: float | None = None) -> bool:
        """Whether ``url`` is being skipped now."""
        until = self._get(url)
        return until is not None and (time.time() if now is None else now) < until

    def succeeded(self, url: str) -> None:
        with self._lock:
            if self._get(url) is not None:
                self._set(url, None)
                log.info("peer %s answers again", url)

    def failed(self, url: str, now: float | None = None) -> None:
        with self._lock:
            if self._get(url) is None:
                log.warning("peer %s did not answer; skipping it for %.0f s", url, self.cooldown)
            self._set(url, (time.time() if now is None else now) + self.cooldown)


@dataclass(frozen=True)
class Peers:
    """Every host's base URL, which one is this host, and how long a peer may take."""

    urls: tuple[str, ...]
    self_url: str | None = None
    timeout: float = 2.0  # seconds a peer may take to answer, once connected
    connect_timeout: float = 0.5
    cooldown: float = 30.0  # seconds a peer that failed is skipped
    state_dir: Path | None = None  # where the breaker's records live (shared by a host's processes)
    breaker: Breaker = field(init=False, repr=False, compare=False)
    courier: Courier = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "breaker", Breaker(self.cooldown, self.state_dir))
        object.__setattr__(self, "courier", Courier(self))

    @classmethod
    def parse(cls, text: str, self_url: str | None = None, bind: str | None = None, **options) -> Peers:
        """``WIKIMEM_PEERS`` (comma- or space-separated URLs); this host is ``self_url``, else the one on ``bind``.

        ``options``: ``timeout``, ``connect_timeout``, ``cooldown``, ``state_dir``.
        """
        urls = tuple(dict.fromkeys(_normal(u) for u in str(text).replace(",", " ").split()))
        if not urls:
            raise ValueError("WIKIMEM_PEERS lists no host")
        me = _normal(self_url) if self_url else None
        if me is None and bind and not str(bind).startswith("unix:"):
            host, _, port = str(bind).rpartition(":")
            me = next((u for u in urls if urllib.parse.urlsplit(u).netloc == f"{host}:{port}"), None)
        return cls(urls, me, **options)

    def others(self) -> list[str]:
        return [u for u in self.urls if u != self.self_url]

    @property
    def budget(self) -> float:
        """The most a gathering from the peers waits, in seconds."""
        return self.connect_timeout + self.timeout + SLACK

    # -- one call ---------------------------------------------------------------------

    def call(self, method: str, url: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, bytes]:
        """One HTTP request to a peer with this host's timeouts: ``(status, body)``; :class:`PeerFailed` when
        the peer is down (the caller tells the breaker)."""
        parts = urllib.parse.urlsplit(url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = kind(parts.hostname or "", parts.port, timeout=self.connect_timeout)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            conn.connect()
            if conn.sock is not None:
                conn.sock.settimeout(self.timeout)
            conn.request(method, target or "/", body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read(MAX_ANSWER)
        except (OSError, http.client.HTTPException) as exc:
            raise PeerFailed(f"{url}: {exc or type(exc).__name__}") from None
        finally:
            conn.close()
        if resp.status >= 500:
            raise PeerFailed(f"{url}: HTTP {resp.status}")
        return resp.status, data

    def _guarded(self, base: str, method: str, url: str, body: bytes | None, headers: dict) -> tuple[int, bytes] | None:
        """:meth:`call` through the breaker: None when the peer is skipped or down."""
        if not self.breaker.allow(base):
            return None
        try:
            answer = self.call(method, url, body, headers)
        except PeerFailed as exc:
            log.info("peer call failed: %s", exc)
            self.breaker.failed(base)
            return None
        self.breaker.succeeded(base)
        return answer

    # -- every peer at once -------------------------------------------------------------

    def _gather(self, one: Callable[[str], object], targets: list[str]) -> list[object]:
        """``one(base)`` for every target at once; a target not done within :attr:`budget` gives None."""
        if not targets:
            return []
        pool = ThreadPoolExecutor(max_workers=min(8, len(targets)), thread_name_prefix="wikimem-peer")
        futures = [pool.submit(one, base) for base in targets]
        pool.shutdown(wait=False)  # a straggler finishes on its own (its socket timeouts bound it)
        wait_for_futures(futures, timeout=self.budget)
        return [f.result() if f.done() and f.exception() is None else None for f in futures]

    def get(self, path: str, query: dict, headers: dict) -> tuple[list[dict], list[str]]:
        """GET ``path?query`` from every other peer at once: (answers, URLs of peers that did not answer)."""
        targets = self.others()
        qs = urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})

        def one(base: str) -> dict | None:
            answer = self._guarded(base, "GET", f"{base}{path}?{qs}", None, dict(headers))
            if answer is None or not 200 <= answer[0] < 300:
                return None
            try:
                data = json.loads(answer[1])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None

        answers = self._gather(one, targets)
        return [a for a in answers if isinstance(a, dict)], [b for b, a in zip(targets, answers) if a is None]

    def post(self, path: str, body: dict, headers: dict, targets: list[str] | None = None) -> list[str]:
        """POST ``body`` (JSON) to ``path`` of every other peer (or of ``targets``) at once: the URLs of peers that
        did not take it."""
        targets = self.others() if targets is None else targets
        data = json.dumps(body).encode()

        def one(base: str) -> bool:
            answer = self._guarded(base, "POST", f"{base}{path}", data,
                                   {"Content-Type": "application/json", **headers})
            return answer is not None and 200 <= answer[0] < 300

        taken = self._gather(one, targets)
        return [b for b, ok in zip(targets, taken) if not ok]

    def deliver(self, path: str, body: Callable[[], dict], *, until: float) -> Delivery:
        """Send ``body()`` (made again for each attempt: a signed notice stays fresh) to every other peer in the
        background, retrying a peer that missed it until the POSIX time ``until``; see :class:`Courier`."""
        return self.courier.send(path, body, until)


class Delivery:
    """One notice on its way to the peers: :meth:`wait` for the first round, :attr:`missing` the peers left."""

    def __init__(self, path: str, body: Callable[[], dict], until: float, targets: list[str]):
        self.path, self.body, self.until = path, body, until
        self.missing = list(targets)
        self.attempts = 0
        self.next_try = 0.0
        self._first = threading.Event()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the first round of attempts; whether every peer took it by then."""
        self._first.wait(timeout)
        return self._first.is_set() and not self.missing

    def first_round_done(self) -> None:
        self._first.set()


class Courier:
    """A background thread of one process that delivers notices to the peers, retrying those that missed one.

    A peer that missed a notice is tried again after 1, 2, 4 … seconds (at
    most :data:`MAX_BACKOFF`), until the notice's ``until`` (for a logout:
    when the session would have ended anyway). At most :data:`MAX_PENDING`
    notices wait; beyond that the oldest is dropped (logged). Notices still
    pending when the process exits are lost (logged when they are dropped
    on purpose, not at exit).
    """

    MAX_BACKOFF = 60.0
    MAX_PENDING = 10_000

    def __init__(self, peers: Peers):
        self.peers = peers
        self._pending: list[Delivery] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def send(self, path: str, body: Callable[[], dict], until: float) -> Delivery:
        delivery = Delivery(path, body, until, self.peers.others())
        if not delivery.missing:
            delivery.first_round_done()
            return delivery
        with self._cond:
            if len(self._pending) >= self.MAX_PENDING:
                dropped = self._pending.pop(0)
                log.warning("peer notice %s dropped (too many pending); peers %s never got it", dropped.path,
                            ", ".join(dropped.missing))
            self._pending.append(delivery)
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._loop, name="wikimem-peer-courier", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return delivery

    def pending(self) -> int:
        with self._cond:
            return len(self._pending)

    def _due(self) -> tuple[list[Delivery], float | None]:
        """The deliveries to try now (dropping expired ones), and how long until the next one is due."""
        now = time.time()
        due, later = [], None
        for d in list(self._pending):
            if now >= d.until:
                self._pending.remove(d)
                log.warning("peer notice %s given up: peers %s never took it", d.path, ", ".join(d.missing))
                d.first_round_done()
            elif d.next_try <= now:
                due.append(d)
            else:
                later = d.next_try - now if later is None else min(later, d.next_try - now)
        return due, later

    def _loop(self) -> None:
        while True:
            with self._cond:
                due, later = self._due()
                if not due:
                    self._cond.wait(later if later is not None else None)
                    continue
            for d in due:
                self._attempt(d)

    def _attempt(self, d: Delivery) -> None:
        try:
            d.missing = self.peers.post(d.path, d.body(), {}, targets=d.missing)
        except Exception:  # a body that cannot be made: nothing will get better by retrying
            log.exception("peer notice %s cannot be sent", d.path)
            d.missing = []
        d.attempts += 1
        d.first_round_done()
        with self._cond:
            if not d.missing:
                if d in self._pending:
                    self._pending.remove(d)
                if d.attempts > 1:
                    log.info("peer notice %s delivered after %d attempts", d.path, d.attempts)
                return
            d.next_try = time.time() + min(self.MAX_BACKOFF, 2.0 ** (d.attempts - 1))
            if d.attempts == 1:
                log.warning("peer notice %s not taken by %s yet; retrying in the background", d.path,
                            ", ".join(d.missing))


def merge_owner_pages(pages: list[tuple[list[dict], str | None]], limit: int) -> tuple[list[dict], str | None]:
    """One page of owners from each host's page (sorted by id): the first ``limit`` ids, and the next cursor.

    An owner held by two hosts (a stale copy after a failover) is listed
    once, with the stats of the copy that changed last.
    """
    best: dict[str, dict] = {}
    more = False
    for rows, nxt in pages:
        more = more or nxt is not None
        for row in rows:
            seen = best.get(row["id"])
            if seen is None or (row.get("last_change") or "") > (seen.get("last_change") or ""):
                best[row["id"]] = row
    ids = sorted(best)
    page = ids[:limit]
    more = more or len(ids) > limit
    return [best[i] for i in page], (page[-1] if more and page else None)
