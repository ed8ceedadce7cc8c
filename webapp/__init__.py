"""The Flask app: the JSON API (``/api/v1``), MCP tools (``/mcp``), the admin UI (``/admin/``), ``/healthz``.

``create_app(test_config=None)`` is the only way to get an app (``wsgi.py``
calls it once for gunicorn). Configuration: :mod:`webapp.config` (Flask's
keys) over ``wikimem/host/config.py`` (everything else, and the host). Views
get the process's :class:`wikimem.host.Host` from :func:`webapp.hosting.get_host`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask, current_app, jsonify

__all__ = ["create_app"]
_PACKAGE = Path(__file__).resolve().parent


def _asset_folder(name: str) -> str:
    """``templates``/``static`` next to the package in a wheel, or at the repository top."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return str(candidate)
    return str(_PACKAGE / name)


def _readyz():
    """Ready to serve: the data root's disk is writable and not full and, with a remote, the remote answers
    (else 503). Paths and messages (``details``) only for a bearer token with the admin scope."""
    from webapp.auth import bearer_principal
    from webapp.hosting import get_host

    settings = current_app.config["HOST_CONFIG"]
    state = get_host().ready(min_free=int(settings.ready_min_free) * 1024 * 1024)
    principal = bearer_principal()
    response = jsonify(state.to_dict(details=principal is not None and principal.has("admin")))
    if not state.ready:
        response.status_code = 503
        response.headers["Retry-After"] = "5"
    return response


def _register_ui(app: Flask, *exempt) -> None:
    from webapp import admin, session

    session.init_app(app, exempt=exempt)
    app.register_blueprint(session.bp)
    app.register_blueprint(admin.bp)


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """A new app: defaults → ``WIKIMEM_*`` environment → ``test_config``."""
    from webapp import api, audit, auth, errors, mcp_tools, metrics, requestid
    from webapp.config import flask_config, host_config
    from webapp.headers import AbortAsJson, security_headers
    from webapp.hosting import HOST_KEY, metrics_of
    from webapp.jsonout import JsonProvider
    from wikimem.host import build_host, build_metrics

    config = flask_config(test_config)
    settings = host_config(config)
    app = Flask(__name__, template_folder=_asset_folder("templates"), static_folder=_asset_folder("static"))
    app.config.update(config)
    # Flask's provider written by orjson (webapp/jsonout.py): insertion order, CJK memory as text in curl and logs
    app.json = JsonProvider(app)
    app.url_map.merge_slashes = False  # /api/v1//x is a 404 in JSON, not a redirect page
    app.extensions["wikimem.host_lock"] = threading.Lock()
    metrics.init_app(app, build_metrics(settings))  # the process's instruments, shared with its host; times requests
    if config.get("HOST") is not None:  # tests may hand in a ready Host
        app.extensions[HOST_KEY] = config["HOST"]
    elif settings.replication_settings is not None and settings.replication_settings.mode == "async":
        # at once, not on the first request: a restarted host resumes pushing what is not on the remote
        app.extensions[HOST_KEY] = build_host(settings, metrics=metrics_of(app))
    if int(config.get("PROXIES") or 0):
        from werkzeug.middleware.proxy_fix import ProxyFix

        n = int(config["PROXIES"])
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n)  # type: ignore[method-assign]
    app.wsgi_app = AbortAsJson(app.wsgi_app)  # type: ignore[method-assign]  # (Flask's way to wrap it)
    requestid.init_app(app)  # first: every later hook, log line and error has the request's id
    audit.init_app(app)
    auth.init_app(app)
    errors.init_app(app)
    app.after_request(security_headers)
    app.register_blueprint(api.bp)
    mcp_tools.init_app(app)  # /mcp: the memory as MCP tools
    _register_ui(app, api.bp, mcp_tools.bp)
    app.add_url_rule("/healthz", "healthz", lambda: jsonify(ok=True))
    app.add_url_rule("/readyz", "readyz", _readyz)
    app.add_url_rule("/favicon.ico", "favicon", lambda: app.send_static_file("favicon.ico"))  # browsers ask anyway
    return app
