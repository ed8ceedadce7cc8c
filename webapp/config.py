"""Flask's own configuration, derived from the host's (:mod:`wikimem.host.config`).

:func:`flask_config` reads the host's :class:`~wikimem.host.Config`
(defaults → ``WIKIMEM_*`` → the test config's keys of that table) and gives
the app's ``config`` mapping: the :class:`Config` itself under
:data:`HOST_CONFIG`, the keys the web layer reads (:data:`FLASK_KEYS`: the
signing key, the body limit, proxies, credentials files, sign-in limits, the
data root of the shared sign-in state, the peer set), and whatever else the
test config holds (``TESTING``, ``HOST`` — a ready host —, Flask's own).
Every variable is documented in ``wikimem/host/config.py``.

In production (the default, e.g. under gunicorn) the app refuses to start
without a real ``SECRET_KEY``; in development and tests a random one is
made for the life of the process.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from wikimem.host import Config, ConfigError, load_config

__all__ = ["flask_config", "host_config", "ConfigError", "check_secret", "HOST_CONFIG", "FLASK_KEYS"]

HOST_CONFIG = "HOST_CONFIG"  # app.config key of the host's Config
# What the web layer reads from app.config, copied from the host's Config.
FLASK_KEYS = ("DATA_ROOT", "ENV", "SECRET_KEY", "ADMIN_TOKEN", "TOKENS_FILE", "OPERATORS_FILE",
              "MAX_CONTENT_LENGTH", "PROXIES", "LOGIN_LIMIT_ADDRESS", "LOGIN_LIMIT_ACCOUNT", "LOGIN_LIMIT_STORAGE",
              "API_LIMIT")
# Secrets people paste from examples; never acceptable in production.
_DEV_SECRETS = {"dev", "development", "secret", "changeme", "change-me", "test", "insecure"}
MIN_SECRET_LEN = 16


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


def flask_config(test_config: Mapping[str, Any] | None = None,
                 environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The app's configuration; raises :class:`ConfigError` when it cannot run."""
    given = dict(test_config or {})
    host = load_config({k: given.pop(k) for k in list(given) if k in Config.KEYS}, environ=environ)
    config: dict[str, Any] = {key: host.value(key) for key in FLASK_KEYS}
    config["PEER_SET"] = host.peer_set
    config["PERMANENT_SESSION_LIFETIME"] = timedelta(hours=float(host.session_hours))  # (a logout's record as long)
    config.update(given)
    config[HOST_CONFIG] = host
    check_secret(config)
    return config


def host_config(config: Mapping[str, Any]) -> Config:
    """The host's :class:`Config` inside an app's configuration."""
    return config[HOST_CONFIG]
