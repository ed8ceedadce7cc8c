"""The host's metrics in Prometheus form (``prometheus_client``; its multiprocess mode under gunicorn).

Design notes: docs/explanation/operations.md (``wikimem/host/metrics.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Metrics", "NullMetrics", "NULL_METRICS", "HostCollector", "TimedEmbedder", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_SLOW = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
LAG_EVERY = 10.0  # seconds between two computations of the replication lag (it reads every owner's refs)


class NullMetrics:
    """Metrics nobody reads: every report is a no-op (the library alone, a Host in a test)."""

    enabled = False

    def request(self, route: str, method: str, status: int, seconds: float) -> None: ...
    def commit(self) -> None: ...
    def write(self, seconds: float) -> None: ...
    def retrieve(self, phases: dict[str, float]) -> None: ...
    def owner_cache(self, event: str) -> None: ...
    def embedding_backlog(self, n: int) -> None: ...
    def job_step(self, kind: str, outcome: str) -> None: ...
    def push_failed(self, mode: str) -> None: ...
    def signin_failed(self, status: int) -> None: ...
    def rate_limited(self, route: str) -> None: ...
    def rate_limit_unavailable(self) -> None: ...


NULL_METRICS = NullMetrics()


class Metrics(NullMetrics):
    """The instruments of one process, and the exposition a scrape gets.

    ``multiprocess_dir``: the folder of every worker's files (gunicorn), or
    None for a single process (the development server): the instruments
    then live in this object's own registry.
    """

    enabled = True

    def __init__(self, multiprocess_dir: str | None = None):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.multiprocess_dir = multiprocess_dir
        self._children: dict[tuple, Any] = {}  # (instrument, labels) -> its series (see _child)
        self.registry = reg = CollectorRegistry()
        self._requests = Counter("wikimem_http_requests", "HTTP requests served", ["route", "method", "status"],
                                 registry=reg)
        self._latency = Histogram("wikimem_http_request_duration_seconds", "HTTP request latency",
                                  ["route", "method"], buckets=_FAST, registry=reg)
        self._commits = Counter("wikimem_commits", "commits made", registry=reg)
        self._write = Histogram("wikimem_write_duration_seconds", "a write: lock, files, commit, push",
                                buckets=_SLOW, registry=reg)
        self._retrieve = Histogram("wikimem_retrieve_duration_seconds", "retrieve latency by phase", ["phase"],
                                   buckets=_FAST, registry=reg)
        self._cache = Counter("wikimem_owner_cache", "owners' LRU events", ["event"], registry=reg)
        self._backlog = Gauge("wikimem_embedding_backlog", "indexes waiting for background embedding",
                              multiprocess_mode="livesum", registry=reg)
        self._steps = Counter("wikimem_job_steps", "job steps run", ["kind", "outcome"], registry=reg)
        self._push_failures = Counter("wikimem_replication_push_failures", "pushes to the remote that failed",
                                      ["mode"], registry=reg)
        self._signin = Counter("wikimem_signin_failures", "refused sign-ins", ["status"], registry=reg)
        self._limited = Counter("wikimem_rate_limited", "answers 429 (rate or quota)", ["route"], registry=reg)
        self._unlimited = Counter("wikimem_rate_limit_unavailable", "API requests let through uncounted (the rate "
                                  "counter could not be written)", registry=reg)

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, remembered: a request reports 7 series, each looked up once per process
        (every label comes from a closed set, so the memo stays small)."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        self._child(self._requests, route, method, str(status)).inc()
        self._child(self._latency, route, method).observe(seconds)

    def commit(self) -> None:
        self._commits.inc()

    def write(self, seconds: float) -> None:
        self._write.observe(seconds)

    def retrieve(self, phases: dict[str, float]) -> None:
        for phase, seconds in phases.items():
            self._child(self._retrieve, phase).observe(seconds)

    def owner_cache(self, event: str) -> None:
        self._child(self._cache, event).inc()

    def embedding_backlog(self, n: int) -> None:
        self._backlog.set(n)

    def job_step(self, kind: str, outcome: str) -> None:
        self._steps.labels(kind, outcome).inc()

    def push_failed(self, mode: str) -> None:
        self._push_failures.labels(mode).inc()

    def signin_failed(self, status: int) -> None:
        self._signin.labels(str(status)).inc()

    def rate_limited(self, route: str) -> None:
        self._limited.labels(route).inc()

    def rate_limit_unavailable(self) -> None:
        self._unlimited.inc()

    def exposition(self, *collectors: Any) -> bytes:
        """The text format of every worker's metrics (or this process's) and of ``collectors`` (read now)."""
        from prometheus_client import CollectorRegistry, generate_latest

        registry = CollectorRegistry()
        if self.multiprocess_dir:
            from prometheus_client import multiprocess

            multiprocess.MultiProcessCollector(registry, path=self.multiprocess_dir)
        else:
            registry.register(_Forward(self.registry))
        for collector in collectors:
            registry.register(collector)
        return generate_latest(registry)


class _Forward:
    """A collector that yields another registry's metrics (single-process mode)."""

    def __init__(self, registry):
        self.registry = registry

    def collect(self):
        yield from self.registry.collect()


class HostCollector:
    """What a scrape reads from the shared files, once: jobs by kind and state, their age, the replication lag.

    ``jobs()`` gives ``(kind, state, count, oldest created)`` rows;
    ``lags()`` gives ``{owner: commits not on the remote}`` (or None without a remote), computed at most
    every :data:`LAG_EVERY` seconds.
    """

    def __init__(self, jobs: Callable[[], Iterable[tuple[str, str, int, float]]],
                 lags: Callable[[], dict[str, int] | None],
                 staged: Callable[[], dict[str, Any]] | None = None):
        self._jobs = jobs
        self._lags = lags
        self._staged = staged  # runs on probation: {"runs", "owners", "oldest_age_seconds"} waiting
        self._lag_cache: tuple[float, dict[str, int] | None] = (0.0, None)
        self._lock = threading.Lock()

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        now = time.time()
        count = GaugeMetricFamily("wikimem_jobs", "jobs in the store by kind and state", labels=["kind", "state"])
        age = GaugeMetricFamily("wikimem_job_oldest_age_seconds", "age of the oldest queued or running job",
                                labels=["kind", "state"])
        for kind, state, n, oldest in self._jobs():
            count.add_metric([kind, state], n)
            if state in ("queued", "running") and oldest is not None:
                age.add_metric([kind, state], max(0.0, now - oldest))
        yield count
        yield age
        if self._staged is not None:
            waiting = self._staged()
            yield GaugeMetricFamily("wikimem_staged_runs_waiting", "staged runs waiting for review",
                                    value=waiting.get("runs") or 0)
            yield GaugeMetricFamily("wikimem_staged_owner_runs_waiting", "owners' copies of staged runs waiting",
                                    value=waiting.get("owners") or 0)
            yield GaugeMetricFamily("wikimem_staged_oldest_age_seconds", "age of the oldest staged run waiting",
                                    value=waiting.get("oldest_age_seconds") or 0)
        lags = self._lag_now()
        if lags is not None:
            yield GaugeMetricFamily("wikimem_replication_lag_commits", "commits not on the remote yet",
                                    value=sum(lags.values()))
            yield GaugeMetricFamily("wikimem_replication_lagging_owners", "owners with commits not on the remote",
                                    value=len(lags))

    def _lag_now(self) -> dict[str, int] | None:
        with self._lock:
            at, lags = self._lag_cache
            if time.monotonic() - at >= LAG_EVERY or at == 0.0:
                lags = self._lags()
                self._lag_cache = (time.monotonic(), lags)
            return lags


class TimedEmbedder:
    """An embedder that adds the time its calls take on each thread (the embedding phase of a retrieve).

    Everything else (``model``, ``dim`` …) is the wrapped embedder's.
    """

    def __init__(self, inner: Any):
        self.inner = inner
        self._spent = threading.local()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"TimedEmbedder({self.inner!r})"

    def _timed(self, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            return call()
        finally:
            self._spent.seconds = getattr(self._spent, "seconds", 0.0) + time.perf_counter() - start

    def embed(self, texts: list[str]) -> Any:
        return self._timed(lambda: self.inner.embed(texts))

    def embed_query(self, texts: list[str]) -> Any:
        fn = getattr(self.inner, "embed_query", None)
        return self._timed(lambda: fn(texts) if callable(fn) else self.inner.embed(texts))

    def take(self) -> float:
        """Seconds this thread spent in the embedder since its last ``take``."""
        spent = getattr(self._spent, "seconds", 0.0)
        self._spent.seconds = 0.0
        return spent
