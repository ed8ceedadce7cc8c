"""The Flask app: the JSON API (``/api/v1``), the admin UI (``/admin/``), ``/healthz``.

``create_app(test_config=None)`` is the only way to get an app (``wsgi.py``
calls it once for gunicorn). Configuration: :mod:`webapp.config`. Views get
the process's :class:`wikimem.host.Host` from :func:`get_host`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask, current_app, jsonify

__all__ = ["create_app", "get_host"]

_HOST = "wikimem.host"
_PACKAGE = Path(__file__).resolve().parent


def _asset_folder(name: str) -> str:
    """``templates``/``static`` next to the package in a wheel, or at the repository top."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return str(candidate)
    return str(_PACKAGE / name)


def _make_host(config: Mapping[str, Any]):
    from webapp.config import recall_options
    from wikimem.host import Host, OwnerQuota

    llm = None
    if config.get("LLM_URL"):
        from wikimem.llm import ChatClient

        llm = ChatClient(config["LLM_URL"], config["LLM_MODEL"], api_key=config.get("LLM_API_KEY"),
                         timeout=float(config["LLM_TIMEOUT"]))
    quota = OwnerQuota(int(config["QUOTA_OWNERS"]), int(config["QUOTA_OWNERS_PER_MINUTE"]))
    return Host(config["DATA_ROOT"], index_cache=int(config["INDEX_CACHE"]), embedder=_make_embedder(config),
                llm=llm, recall=recall_options(config), quota=quota,
                replication=config.get("REPLICATION_SETTINGS"), peers=config.get("PEER_SET"))


def _make_embedder(config: Mapping[str, Any]):
    """The bundled local model (``WIKIMEM_EMBEDDER=local``), an endpoint (``WIKIMEM_EMBED_URL``) or None.

    Both are stdlib until used: numpy and the model load on the first retrieve.
    """
    if config.get("EMBEDDER") == "local":
        from wikimem.vectors import LocalEmbedder

        return LocalEmbedder(threads=config.get("EMBED_THREADS"))
    if config.get("EMBED_URL") and config.get("EMBEDDER") != "none":
        from wikimem.vectors import HttpEmbedder

        return HttpEmbedder(config["EMBED_URL"], config["EMBED_MODEL"], api_key=config.get("EMBED_API_KEY"),
                            timeout=float(config["EMBED_TIMEOUT"]), query_model=config.get("EMBED_QUERY_MODEL"),
                            query_prefix=config.get("EMBED_QUERY_PREFIX") or "",
                            passage_prefix=config.get("EMBED_PASSAGE_PREFIX") or "",
                            input_type=bool(config.get("EMBED_INPUT_TYPE")))
    return None


def _readyz():
    """Ready to serve: the data root is usable and, with a remote, the remote answers (else 503)."""
    ready, remote = get_host().ready()
    response = jsonify(ready=ready, remote=remote)
    if not ready:
        response.status_code = 503
        response.headers["Retry-After"] = "5"
    return response


def get_host():
    """The :class:`~wikimem.host.Host` of this app (created on first use, once per process)."""
    app = current_app
    host = app.extensions.get(_HOST)
    if host is None:
        with app.extensions["wikimem.host_lock"]:
            host = app.extensions.get(_HOST)
            if host is None:
                host = app.extensions[_HOST] = _make_host(app.config)
    return host


def _register_ui(app: Flask, api_bp) -> None:
    from webapp import admin, session

    session.init_app(app, exempt=[api_bp])
    app.register_blueprint(session.bp)
    app.register_blueprint(admin.bp)


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """A new app: defaults → ``WIKIMEM_*`` environment → ``test_config``."""
    from webapp import api, auth, errors
    from webapp.config import load_config
    from webapp.headers import AbortAsJson, security_headers

    config = load_config(test_config)
    app = Flask(__name__, template_folder=_asset_folder("templates"), static_folder=_asset_folder("static"))
    app.config.update(config)
    app.json.sort_keys = False
    app.json.ensure_ascii = False  # CJK memory reads as text in curl and logs
    app.url_map.merge_slashes = False  # /api/v1//x is a 404 in JSON, not a redirect page
    app.extensions["wikimem.host_lock"] = threading.Lock()
    if config.get("HOST") is not None:  # tests may hand in a ready Host
        app.extensions[_HOST] = config["HOST"]
    elif config.get("REPLICATION_SETTINGS") is not None and config["REPLICATION_SETTINGS"].mode == "async":
        # at once, not on the first request: a restarted host resumes pushing what is not on the remote
        app.extensions[_HOST] = _make_host(app.config)
    if int(config.get("PROXIES") or 0):
        from werkzeug.middleware.proxy_fix import ProxyFix

        n = int(config["PROXIES"])
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n)
    app.wsgi_app = AbortAsJson(app.wsgi_app)
    auth.init_app(app)
    errors.init_app(app)
    app.after_request(security_headers)
    app.register_blueprint(api.bp)
    _register_ui(app, api.bp)
    app.add_url_rule("/healthz", "healthz", lambda: jsonify(ok=True))
    app.add_url_rule("/readyz", "readyz", _readyz)
    app.add_url_rule("/favicon.ico", "favicon", lambda: app.send_static_file("favicon.ico"))  # browsers ask anyway
    return app
