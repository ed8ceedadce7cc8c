"""gunicorn configuration of the wikimem host: ``gunicorn -c deploy/gunicorn.conf.py``.

Everything comes from the environment. Every variable, the app's and these, is
one entry of ``wikimem/host/variables.py`` with its meaning and default (the
documentation's tables and ``deploy/env.example`` are made from it); gunicorn's own,
read here: ``WIKIMEM_WORKERS``, ``WIKIMEM_THREADS``, ``WIKIMEM_TIMEOUT`` (the
app's ``WIKIMEM_LLM_TIMEOUT`` stays below it), ``WIKIMEM_GRACEFUL_TIMEOUT``,
``WIKIMEM_MAX_REQUESTS``, ``WIKIMEM_LOG_LEVEL``, ``WIKIMEM_FORWARDED_ALLOW_IPS``,
``WIKIMEM_CONTROL_SOCKET`` and the BLAS/OpenMP thread counts; ``WIKIMEM_BIND``
and ``WIKIMEM_LOG_FORMAT`` are read as the app reads them.

Logs (``webapp/logs.py``): the app's lines and gunicorn's go to stderr,
the access log to stdout, as JSON lines (``WIKIMEM_LOG_FORMAT=json``, the
default here) or plain text (``text``), each with its request id.

The master checks the configuration once before starting any worker
(:func:`on_starting`): a missing ``WIKIMEM_SECRET_KEY`` or another bad
``WIKIMEM_*`` value is one line on stderr and exit status 1, not a
traceback per worker. It also empties the folder where every worker
writes its metrics (``WIKIMEM_METRICS_DIR``; ``prometheus_client``'s
multiprocess mode, ``GET /metrics`` sums them) and names it to the workers;
:func:`child_exit` marks a dead worker's gauges gone.

No ``preload_app``: each worker imports ``webapp.wsgi`` itself and so opens
its own repositories, locks and indexes after the fork (dulwich objects and
file locks must not be shared across a fork). Writers of one owner in
different workers are serialised by the owner's inter-process lock.
"""

from __future__ import annotations

import multiprocessing
import os

from webapp.logs import ACCESS_FORMATS, logging_config
from wikimem.host import read_setting

# The cap keeps a big machine from holding dozens of per-process index LRUs
# (memory grows with workers × WIKIMEM_INDEX_CACHE); shard owners across hosts instead.
MAX_DEFAULT_WORKERS = 8


def _int_env(name: str, default: int, minimum: int = 1) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise SystemExit(f"{name} must be at least {minimum}, got {value}")
    return value


def _default_workers() -> int:
    try:
        cores = len(os.sched_getaffinity(0))  # honours CPU pinning / container cpusets
    except (AttributeError, OSError):
        cores = multiprocessing.cpu_count()
    # Threads absorb the waits (LLM, locks, fsync); processes are for CPU (retrieval), one per
    # core plus one, so a process that is collecting garbage or packing never idles a core.
    return min(cores + 1, MAX_DEFAULT_WORKERS)


wsgi_app = "webapp.wsgi:app"
bind = [str(read_setting("BIND")).strip() or "127.0.0.1:8000"]  # WIKIMEM_BIND, read where the app reads it
workers = _int_env("WIKIMEM_WORKERS", _default_workers())
# Threaded workers: a memorize call waiting 20 s on a slow model holds one thread, while the
# process's other threads keep serving retrieves (a sync worker would be blocked whole). gthread,
# except that a worker holding `threads` connections leaves the next one to a less loaded worker for a
# few milliseconds: a burst of kept-alive connections no longer lands on one worker (webapp/gworker.py).
worker_class = "webapp.gworker.BalancedThreadWorker"
threads = _int_env("WIKIMEM_THREADS", 8)
preload_app = False

# A worker whose main loop is silent this long is killed and restarted. With gthread a slow
# request does not silence it; WIKIMEM_LLM_TIMEOUT still stays below, checked at start.
timeout = _int_env("WIKIMEM_TIMEOUT", 60)
graceful_timeout = _int_env("WIKIMEM_GRACEFUL_TIMEOUT", 30)
keepalive = 5

# Recycle workers now and then so a slow leak never becomes an outage; jitter avoids all at once.
max_requests = _int_env("WIKIMEM_MAX_REQUESTS", 10000, minimum=0)
max_requests_jitter = max(1, max_requests // 10) if max_requests else 0

# Logs to stdout/stderr: systemd's journal or the container runtime collects them.
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("WIKIMEM_LOG_LEVEL", "info")
_log_format = str(read_setting("LOG_FORMAT") or "json")  # WIKIMEM_LOG_FORMAT: json (default here) or text
if _log_format not in ACCESS_FORMATS:
    raise SystemExit(f"WIKIMEM_LOG_FORMAT must be json or text, got {_log_format!r}")
# The app's and gunicorn's loggers, one format; every line with its request id (webapp/logs.py).
logconfig_dict = logging_config(_log_format, loglevel)
# Text: %(p)s is the worker's pid (each holds its own index LRU), rid= the request id the app echoed.
# JSON: the atoms become fields (method, path, status, duration_ms, request_id, …).
access_log_format = ACCESS_FORMATS[_log_format]
capture_output = True

# Headers are small; the body limit (1 MiB) is enforced by the app (WIKIMEM_MAX_BODY) and nginx.
limit_request_line = 8190
limit_request_fields = 100

# gunicorn itself trusts X-Forwarded-* only from the local proxy; the app's ProxyFix is WIKIMEM_PROXIES.
forwarded_allow_ips = os.environ.get("WIKIMEM_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")

# gunicorn >= 25 opens a control socket ($HOME/.gunicorn/gunicorn.ctl by default), one path shared
# by every instance of a user and unwritable under ProtectSystem/ProtectHome: off unless asked for.
_control = os.environ.get("WIKIMEM_CONTROL_SOCKET", "").strip()
control_socket_disable = not _control
if _control:
    control_socket = _control

# Several workers on few cores: one BLAS thread each keeps the exact vector tier's tail latency
# flat (bench/vectors.py measured p99 108 ms with 2 threads vs 5 ms with 1 on a busy 2-core box).
# Set before the workers import numpy; an explicit value in the environment wins.
for _blas in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas, "1")


def on_starting(server) -> None:
    """In the master, before any worker: refuse a configuration that cannot run, in one line."""
    from webapp.config import ConfigError, flask_config, host_config
    from wikimem.host import prepare_embedder, prepare_metrics_dir

    try:
        config = host_config(flask_config())  # the host's and Flask's checks, as each worker will make them
    except ConfigError as exc:
        raise SystemExit(f"wikimem: {exc}") from None  # printed as one line; exit status 1
    if float(config.llm_timeout) >= server.cfg.timeout:
        raise SystemExit(f"wikimem: WIKIMEM_LLM_TIMEOUT ({config.llm_timeout:g} s) must be below the "
                         f"worker timeout WIKIMEM_TIMEOUT ({server.cfg.timeout} s)")
    try:
        # Every worker writes its metrics there (prometheus_client's multiprocess mode); emptied for this run.
        folder = prepare_metrics_dir(config)
    except OSError as exc:
        raise SystemExit(f"wikimem: cannot prepare the metrics folder (WIKIMEM_METRICS_DIR): {exc}") from None
    server.log.info("metrics of every worker in %s", folder)
    engine = prepare_embedder(config)  # (WIKIMEM_EMBED_KERNEL=prepared: built once here, loaded by every worker)
    if engine is not None:
        server.log.info("the local model runs on the prepared engine %s", engine)


def child_exit(server, worker) -> None:
    """In the master, when a worker exits: its live gauges (the embedding backlog) stop counting."""
    from wikimem.host import mark_worker_dead

    mark_worker_dead(worker.pid)
