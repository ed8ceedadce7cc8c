"""Configuration: defaults, then ``WIKIMEM_*`` environment variables, then the test config.

=========================  =====================  ==========================================
environment                config key             meaning (default)
=========================  =====================  ==========================================
``WIKIMEM_DATA``           ``DATA_ROOT``          data root (``./data``)
``WIKIMEM_BIND``           ``BIND``               address to serve on (``127.0.0.1:8000``)
``WIKIMEM_ADMIN_TOKEN``    ``ADMIN_TOKEN``        a plain admin token (development, tests)
``WIKIMEM_TOKENS_FILE``    ``TOKENS_FILE``        hashed tokens, see :mod:`webapp.auth`
``WIKIMEM_OPERATORS_FILE`` ``OPERATORS_FILE``     admin UI accounts, see :mod:`webapp.session`
``WIKIMEM_SECRET_KEY``     ``SECRET_KEY``         session signing key
``WIKIMEM_LLM_URL``        ``LLM_URL``            OpenAI-compatible chat endpoint (``…/v1``)
``WIKIMEM_LLM_MODEL``      ``LLM_MODEL``          chat model name
``WIKIMEM_LLM_API_KEY``    ``LLM_API_KEY``        its key
``WIKIMEM_LLM_TIMEOUT``    ``LLM_TIMEOUT``        seconds one chat call may take (30; below the worker timeout)
``WIKIMEM_EMBED_URL``      ``EMBED_URL``          OpenAI-compatible embeddings endpoint
``WIKIMEM_EMBED_MODEL``    ``EMBED_MODEL``        embedding model name
``WIKIMEM_EMBED_API_KEY``  ``EMBED_API_KEY``      its key
``WIKIMEM_EMBED_QUERY_MODEL`` ``EMBED_QUERY_MODEL`` model name sent for queries (the same)
``WIKIMEM_EMBED_QUERY_PREFIX`` ``EMBED_QUERY_PREFIX`` text put before queries (e5: ``"query: "``)
``WIKIMEM_EMBED_PASSAGE_PREFIX`` ``EMBED_PASSAGE_PREFIX`` text put before memory items (``"passage: "``)
``WIKIMEM_EMBED_INPUT_TYPE`` ``EMBED_INPUT_TYPE``   send ``input_type`` query/passage (off)
``WIKIMEM_EMBEDDER``       ``EMBEDDER``           ``local`` = the bundled model; unset = the URL if given
``WIKIMEM_EMBED_THREADS``  ``EMBED_THREADS``      threads of the local model (all cores)
``WIKIMEM_EMBED_BACKGROUND`` ``EMBED_BACKGROUND`` embed memory off the request path (on for local)
``WIKIMEM_TOKENIZER``      ``TOKENIZER``          Chinese terms: ``bigram`` (default) or ``jieba``
``WIKIMEM_DIARY_RECALL``   ``DIARY_RECALL``       retrieve's default ``diary``: ``all`` or ``window`` (the seed's) (all)
``WIKIMEM_QUERY_STOPWORDS`` ``QUERY_STOPWORDS``   drop function words from queries: on, off, ``en`` or ``zh`` (on)
``WIKIMEM_NEIGHBOUR_CONTEXT`` ``NEIGHBOUR_CONTEXT`` score items with their neighbours too (on)
``WIKIMEM_NEIGHBOUR_ITEM_WEIGHT`` ``NEIGHBOUR_ITEM_WEIGHT`` the item's own share against its neighbours' (0.6)
``WIKIMEM_FUSION_WEIGHT``  ``FUSION_WEIGHT``      BM25's share of the fused score (0.3)
``WIKIMEM_BM25_B``         ``BM25_B``             BM25's length normalisation (0.4)
``WIKIMEM_NEIGHBOUR_SMOOTHING`` ``NEIGHBOUR_SMOOTHING`` a turn's share of its neighbours' BM25 (0.2; 0 with an embedder)
``WIKIMEM_RECENCY_HALF_LIFE`` ``RECENCY_HALF_LIFE`` ``diary: "all"``: favour recent entries, days (0 = no prior)
``WIKIMEM_INDEX_CACHE``    ``INDEX_CACHE``        owners' indexes a process keeps (64)
``WIKIMEM_ENV``            ``ENV``                ``production`` (default) or ``development``
``WIKIMEM_MAX_BODY``       ``MAX_CONTENT_LENGTH`` largest request body in bytes (1 MiB)
``WIKIMEM_PROXIES``        ``PROXIES``            reverse proxies to trust for X-Forwarded-* (0)
``WIKIMEM_REMOTE``         ``REMOTE``             git remote URL template with ``{owner}`` (none)
``WIKIMEM_REPLICATION``    ``REPLICATION``        ``sync`` (default with a remote) or ``async``
``WIKIMEM_REPLICATION_MAX_LAG`` ``REPLICATION_MAX_LAG`` async: unpushed commits per owner before writes wait (1000)
``WIKIMEM_REMOTE_FRESHNESS`` ``REMOTE_FRESHNESS``   staleness bound of reads, seconds (2)
``WIKIMEM_REMOTE_TIMEOUT`` ``REMOTE_TIMEOUT``     seconds per remote operation (10)
``WIKIMEM_PEERS``          ``PEERS``              every host of the cluster, comma-separated base URLs
``WIKIMEM_SELF``           ``SELF``               this host's entry in ``PEERS`` (default: the one on ``BIND``)
``WIKIMEM_LOGIN_LIMIT_*``  ``LOGIN_LIMIT_*``      sign-in rate limits, see :mod:`webapp.ratelimit`
``WIKIMEM_QUOTA_OWNERS``   ``QUOTA_OWNERS``       owners one token's prefix may hold (10000; 0 = no limit)
``WIKIMEM_QUOTA_OWNERS_PER_MINUTE`` ``…_PER_MINUTE`` owners it may create a minute (120; 0 = no limit)
=========================  =====================  ==========================================

``LOGIN_LIMIT_ADDRESS`` (``10/minute;50/hour``), ``LOGIN_LIMIT_ACCOUNT``
(``5/minute;20/hour``), ``LOGIN_LIMIT_STORAGE`` (unset: shared counters at
the data root).

In production (the default, e.g. under gunicorn) the app refuses to start
without a real ``SECRET_KEY``; in development and tests a random one is
made for the life of the process.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULTS", "ENV_VARS", "load_config", "ConfigError", "check_secret", "recall_options"]

DEFAULTS: dict[str, Any] = {
    "DATA_ROOT": "data",
    "BIND": "127.0.0.1:8000",
    "ADMIN_TOKEN": None,
    "TOKENS_FILE": None,
    "OPERATORS_FILE": None,
    "SECRET_KEY": None,
    "LLM_URL": None,
    "LLM_MODEL": None,
    "LLM_API_KEY": None,
    "LLM_TIMEOUT": 30.0,  # below gunicorn's worker timeout (60), so a hung model fails the call, not the worker
    "EMBED_URL": None,
    "EMBED_MODEL": None,
    "EMBED_API_KEY": None,
    "EMBED_TIMEOUT": 5.0,
    "EMBED_QUERY_MODEL": None,
    "EMBED_QUERY_PREFIX": "",
    "EMBED_PASSAGE_PREFIX": "",
    "EMBED_INPUT_TYPE": False,
    "EMBEDDER": None,
    "EMBED_THREADS": None,
    "EMBED_BACKGROUND": None,  # None: on for the local model, off for an endpoint
    "TOKENIZER": "bigram",
    "DIARY_RECALL": "all",  # bench/quality_diary.py: topic recall of the diary
    "QUERY_STOPWORDS": True,
    "NEIGHBOUR_CONTEXT": True,
    "NEIGHBOUR_ITEM_WEIGHT": 0.6,
    "FUSION_WEIGHT": 0.3,
    "BM25_B": 0.4,
    "NEIGHBOUR_SMOOTHING": None,  # None: 0.2 without an embedder, 0 with one (bench/quality.py)
    "RECENCY_HALF_LIFE": 0.0,
    "INDEX_CACHE": 64,
    "ENV": "production",
    "MAX_CONTENT_LENGTH": 1024 * 1024,
    "PROXIES": 0,
    "REMOTE": None,
    "REPLICATION": "sync",
    "REPLICATION_MAX_LAG": 1000,
    "REMOTE_FRESHNESS": 2.0,
    "REMOTE_TIMEOUT": 10.0,
    "PEERS": None,
    "SELF": None,
    "LOGIN_LIMIT_ADDRESS": "10/minute;50/hour",
    "LOGIN_LIMIT_ACCOUNT": "5/minute;20/hour",
    "LOGIN_LIMIT_STORAGE": None,
    "QUOTA_OWNERS": 10_000,
    "QUOTA_OWNERS_PER_MINUTE": 120,
}

ENV_VARS = {
    "WIKIMEM_DATA": "DATA_ROOT",
    "WIKIMEM_BIND": "BIND",
    "WIKIMEM_ADMIN_TOKEN": "ADMIN_TOKEN",
    "WIKIMEM_TOKENS_FILE": "TOKENS_FILE",
    "WIKIMEM_OPERATORS_FILE": "OPERATORS_FILE",
    "WIKIMEM_SECRET_KEY": "SECRET_KEY",
    "WIKIMEM_LLM_URL": "LLM_URL",
    "WIKIMEM_LLM_MODEL": "LLM_MODEL",
    "WIKIMEM_LLM_API_KEY": "LLM_API_KEY",
    "WIKIMEM_LLM_TIMEOUT": "LLM_TIMEOUT",
    "WIKIMEM_EMBED_URL": "EMBED_URL",
    "WIKIMEM_EMBED_MODEL": "EMBED_MODEL",
    "WIKIMEM_EMBED_API_KEY": "EMBED_API_KEY",
    "WIKIMEM_EMBED_QUERY_MODEL": "EMBED_QUERY_MODEL",
    "WIKIMEM_EMBED_QUERY_PREFIX": "EMBED_QUERY_PREFIX",
    "WIKIMEM_EMBED_PASSAGE_PREFIX": "EMBED_PASSAGE_PREFIX",
    "WIKIMEM_EMBED_INPUT_TYPE": "EMBED_INPUT_TYPE",
    "WIKIMEM_EMBEDDER": "EMBEDDER",
    "WIKIMEM_EMBED_THREADS": "EMBED_THREADS",
    "WIKIMEM_EMBED_BACKGROUND": "EMBED_BACKGROUND",
    "WIKIMEM_TOKENIZER": "TOKENIZER",
    "WIKIMEM_DIARY_RECALL": "DIARY_RECALL",
    "WIKIMEM_QUERY_STOPWORDS": "QUERY_STOPWORDS",
    "WIKIMEM_NEIGHBOUR_CONTEXT": "NEIGHBOUR_CONTEXT",
    "WIKIMEM_FUSION_WEIGHT": "FUSION_WEIGHT",
    "WIKIMEM_NEIGHBOUR_ITEM_WEIGHT": "NEIGHBOUR_ITEM_WEIGHT",
    "WIKIMEM_BM25_B": "BM25_B",
    "WIKIMEM_NEIGHBOUR_SMOOTHING": "NEIGHBOUR_SMOOTHING",
    "WIKIMEM_RECENCY_HALF_LIFE": "RECENCY_HALF_LIFE",
    "WIKIMEM_INDEX_CACHE": "INDEX_CACHE",
    "WIKIMEM_ENV": "ENV",
    "WIKIMEM_MAX_BODY": "MAX_CONTENT_LENGTH",
    "WIKIMEM_PROXIES": "PROXIES",
    "WIKIMEM_REMOTE": "REMOTE",
    "WIKIMEM_REPLICATION": "REPLICATION",
    "WIKIMEM_REPLICATION_MAX_LAG": "REPLICATION_MAX_LAG",
    "WIKIMEM_REMOTE_FRESHNESS": "REMOTE_FRESHNESS",
    "WIKIMEM_REMOTE_TIMEOUT": "REMOTE_TIMEOUT",
    "WIKIMEM_PEERS": "PEERS",
    "WIKIMEM_SELF": "SELF",
    "WIKIMEM_LOGIN_LIMIT_ADDRESS": "LOGIN_LIMIT_ADDRESS",
    "WIKIMEM_LOGIN_LIMIT_ACCOUNT": "LOGIN_LIMIT_ACCOUNT",
    "WIKIMEM_LOGIN_LIMIT_STORAGE": "LOGIN_LIMIT_STORAGE",
    "WIKIMEM_QUOTA_OWNERS": "QUOTA_OWNERS",
    "WIKIMEM_QUOTA_OWNERS_PER_MINUTE": "QUOTA_OWNERS_PER_MINUTE",
}

_INTS = {"INDEX_CACHE", "MAX_CONTENT_LENGTH", "PROXIES", "QUOTA_OWNERS", "QUOTA_OWNERS_PER_MINUTE",
         "REPLICATION_MAX_LAG"}
_MAY_BE_ZERO = {"PROXIES", "QUOTA_OWNERS", "QUOTA_OWNERS_PER_MINUTE"}
_OPTIONAL_INTS = {"EMBED_THREADS"}
_FLOATS = {"FUSION_WEIGHT", "LLM_TIMEOUT", "REMOTE_FRESHNESS", "REMOTE_TIMEOUT", "NEIGHBOUR_ITEM_WEIGHT", "BM25_B",
           "NEIGHBOUR_SMOOTHING", "RECENCY_HALF_LIFE"}
_BOOLS = {"EMBED_INPUT_TYPE", "EMBED_BACKGROUND", "QUERY_STOPWORDS", "NEIGHBOUR_CONTEXT"}
_LANGUAGE_LISTS = {"QUERY_STOPWORDS"}  # a boolean, or the languages it applies to ("en", "zh")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
TOKENIZERS = ("bigram", "jieba")
EMBEDDERS = ("local", "none")
# Secrets people paste from examples; never acceptable in production.
_DEV_SECRETS = {"dev", "development", "secret", "changeme", "change-me", "test", "insecure"}
MIN_SECRET_LEN = 16


class ConfigError(RuntimeError):
    """The configuration cannot run (e.g. production without a secret key)."""


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for var, key in ENV_VARS.items():
        value = environ.get(var)
        if value is None or value == "":
            continue
        if key in _INTS or key in _OPTIONAL_INTS:
            try:
                out[key] = int(value)
            except ValueError:
                raise ConfigError(f"{var} must be an integer, got {value!r}") from None
        elif key in _FLOATS:
            try:
                out[key] = float(value)
            except ValueError:
                raise ConfigError(f"{var} must be a number, got {value!r}") from None
        elif key in _BOOLS:
            flag = value.strip().lower()
            if key in _LANGUAGE_LISTS and flag in ("en", "zh", "en,zh", "zh,en"):
                out[key] = flag
                continue
            if flag not in _TRUE | _FALSE:
                also = " (or en / zh)" if key in _LANGUAGE_LISTS else ""
                raise ConfigError(f"{var} must be 1/0, true/false, yes/no or on/off{also}, got {value!r}")
            out[key] = flag in _TRUE
        else:
            out[key] = value
    return out


def _check_recall(config: dict[str, Any]) -> None:
    """The tokenizer, the embedder choice and their switches (issue 17)."""
    if config["TOKENIZER"] not in TOKENIZERS:
        raise ConfigError(f"WIKIMEM_TOKENIZER must be bigram or jieba, got {config['TOKENIZER']!r}")
    if config["DIARY_RECALL"] not in ("window", "all"):
        raise ConfigError(f"WIKIMEM_DIARY_RECALL must be window or all, got {config['DIARY_RECALL']!r}")
    embedder = config["EMBEDDER"] or None
    if embedder is not None and embedder not in EMBEDDERS:
        raise ConfigError(f"WIKIMEM_EMBEDDER must be local or none (unset: WIKIMEM_EMBED_URL if given), "
                          f"got {embedder!r}")
    if embedder == "local":
        if config["EMBED_URL"]:
            raise ConfigError("set WIKIMEM_EMBEDDER=local or WIKIMEM_EMBED_URL, not both")
        from wikimem.vectors import local_model_available

        if not local_model_available():
            raise ConfigError("WIKIMEM_EMBEDDER=local needs the bundled model: pip install 'wikimem[embed-local]'")
    threads = config["EMBED_THREADS"]
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ConfigError(f"WIKIMEM_EMBED_THREADS must be a positive integer, got {threads!r}")
    for key in ("FUSION_WEIGHT", "NEIGHBOUR_ITEM_WEIGHT", "BM25_B", "NEIGHBOUR_SMOOTHING"):
        weight = config[key]
        if weight is None and key == "NEIGHBOUR_SMOOTHING":
            continue
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 <= weight <= 1.0:
            raise ConfigError(f"WIKIMEM_{key} must be a number in [0, 1], got {weight!r}")
    half_life = config["RECENCY_HALF_LIFE"]
    if isinstance(half_life, bool) or not isinstance(half_life, (int, float)) or not 0 <= half_life < float("inf"):
        raise ConfigError(f"WIKIMEM_RECENCY_HALF_LIFE must be a number of days (0: none), got {half_life!r}")
    for key in _BOOLS - {"EMBED_BACKGROUND"}:
        if not isinstance(config[key], bool) and not (key in _LANGUAGE_LISTS and config[key] in ("en", "zh")):
            raise ConfigError(f"{key} must be true or false, got {config[key]!r}")


def check_secret(config: dict[str, Any]) -> None:
    """Refuse a missing or development secret in production; make one up otherwise."""
    secret = config.get("SECRET_KEY")
    weak = not secret or str(secret).lower() in _DEV_SECRETS or len(str(secret)) < MIN_SECRET_LEN
    if not weak:
        return
    if config.get("TESTING") or config.get("ENV") == "development":
        config["SECRET_KEY"] = secrets.token_hex(32)
        return
    raise ConfigError(
        "WIKIMEM_SECRET_KEY is missing or a development value; set it to a long random string "
        "(e.g. python -c 'import secrets; print(secrets.token_hex(32))') or set WIKIMEM_ENV=development"
    )


def load_config(test_config: Mapping[str, Any] | None = None,
                environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The app's configuration; raises :class:`ConfigError` when it cannot run."""
    config = dict(DEFAULTS)
    config.update(_from_env(os.environ if environ is None else environ))
    if test_config:
        config.update(test_config)
    if config["ENV"] not in ("production", "development"):
        raise ConfigError(f"WIKIMEM_ENV must be production or development, got {config['ENV']!r}")
    for key in _INTS:
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key in _MAY_BE_ZERO else 1):
            raise ConfigError(f"{key} must be a {'non-negative' if key in _MAY_BE_ZERO else 'positive'} integer, "
                              f"got {value!r}")
    timeout = config["LLM_TIMEOUT"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ConfigError(f"WIKIMEM_LLM_TIMEOUT must be a positive number of seconds, got {timeout!r}")
    if bool(config["LLM_URL"]) != bool(config["LLM_MODEL"]):
        raise ConfigError("set both WIKIMEM_LLM_URL and WIKIMEM_LLM_MODEL, or neither")
    if bool(config["EMBED_URL"]) != bool(config["EMBED_MODEL"]):
        raise ConfigError("set both WIKIMEM_EMBED_URL and WIKIMEM_EMBED_MODEL, or neither")
    _check_recall(config)
    _check_cluster(config)
    check_secret(config)
    return config


def recall_options(config: Mapping[str, Any]):
    """How the host's indexes retrieve (:class:`wikimem.recall.index.RecallOptions`) for this configuration.

    The defaults are what ``bench/quality.py`` measured best (bench/README.md,
    "Recall quality"): character bigrams for Chinese, function words dropped
    from queries, BM25 ``b`` 0.4; with an embedder fusion weight 0.3 and
    neighbour context (the item at 0.6), memory embedded in the background
    with the local model; without one, lexical neighbour smoothing 0.2.
    """
    from wikimem.recall import RecallOptions

    local = config.get("EMBEDDER") == "local"
    embedder = local or bool(config.get("EMBED_URL"))
    background = config.get("EMBED_BACKGROUND")
    stopwords = config.get("QUERY_STOPWORDS", True)
    smoothing = config.get("NEIGHBOUR_SMOOTHING")
    context = bool(config.get("NEIGHBOUR_CONTEXT", True))
    return RecallOptions(
        use_jieba=config.get("TOKENIZER", "bigram") == "jieba",
        diary=config.get("DIARY_RECALL", "all"),
        query_stopwords=stopwords if isinstance(stopwords, str) else bool(stopwords),
        neighbour_context=float(config.get("NEIGHBOUR_ITEM_WEIGHT", 0.6)) if context else False,
        embed_in_background=local if background is None else bool(background),
        fusion_weight=float(config.get("FUSION_WEIGHT", 0.3)),
        bm25_b=float(config.get("BM25_B", 0.4)),
        neighbour_smoothing=float((0.0 if embedder else 0.2) if smoothing is None else smoothing),
        recency_half_life=float(config.get("RECENCY_HALF_LIFE") or 0) or None,
    )


def _check_cluster(config: dict[str, Any]) -> None:
    """Validate the replication and peer settings once, at start."""
    if config.get("REMOTE"):
        from wikimem.host.cluster import Settings

        try:
            config["REPLICATION_SETTINGS"] = Settings(
                str(config["REMOTE"]), mode=str(config["REPLICATION"] or "sync"),
                max_lag=config["REPLICATION_MAX_LAG"], freshness=float(config["REMOTE_FRESHNESS"]),
                timeout=float(config["REMOTE_TIMEOUT"]))
        except ValueError as exc:  # TemplateError too
            raise ConfigError(str(exc)) from None
    elif config.get("REPLICATION") not in (None, "", "sync"):
        raise ConfigError("WIKIMEM_REPLICATION needs WIKIMEM_REMOTE")
    if config.get("PEERS"):
        from wikimem.host.cluster import Peers

        try:
            config["PEER_SET"] = Peers.parse(config["PEERS"], self_url=config.get("SELF"), bind=config.get("BIND"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
