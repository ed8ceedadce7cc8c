"""``GET /metrics`` (Prometheus text format, admin scope) and the HTTP side of the host's metrics.

Every request is counted by route (the URL rule), method and status, and
timed; a refused sign-in and every 429 are counted too. Every label comes
from a closed set, so no request can make a new series: a method outside
:data:`METHODS` (gunicorn passes invented ones through) is ``other``, a path
no rule matches is ``<unmatched>``. The instruments are the process's
:class:`~wikimem.host.metrics.Metrics` (made by the composition root,
shared with the host); under gunicorn a scrape sums every worker's.

``/metrics`` needs a bearer token with the ``admin`` scope (Prometheus:
``authorization: {credentials_file: …}``; see ``deploy/prometheus.yml``),
so memory counts never leak; a token limited to an owner prefix gets 403
(the metrics are host-wide). nginx may also restrict it by address.
"""

from __future__ import annotations

import time

from flask import Flask, Response, current_app, g, request

from webapp.hosting import METRICS_KEY, get_host, metrics_of
from wikimem.host import build_metrics

__all__ = ["init_app", "start_timer", "METHODS", "method_label"]

UNMATCHED = "<unmatched>"
# The HTTP methods a series may be labelled with; any other is counted as "other".
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"


def method_label(method: str) -> str:
    """The method label of a request: one of :data:`METHODS`, else ``other``."""
    return method if method in METHODS else OTHER_METHOD


def start_timer() -> None:
    """``before_request``: when the request began (registered before every hook but the request id's)."""
    g.metrics_start = time.perf_counter()


def _observe(response):
    start = g.pop("metrics_start", None)
    if start is None:
        return response
    metrics = metrics_of(current_app)
    route = request.url_rule.rule if request.url_rule is not None else UNMATCHED
    status = response.status_code
    metrics.request(route, method_label(request.method), status, time.perf_counter() - start)
    if status == 429:
        metrics.rate_limited(route)
    if request.endpoint == "session.login" and request.method == "POST" and status >= 400:
        metrics.signin_failed(status)
    return response


def _scrape():
    from .auth import Forbidden, require

    principal = require("admin")
    if principal.owner_prefix:
        raise Forbidden("the metrics are host-wide: a token limited to an owner prefix may not read them")
    host = get_host()
    body = metrics_of(current_app).exposition(host.metrics_collector())
    return Response(body, content_type="text/plain; version=0.0.4; charset=utf-8",
                    headers={"Cache-Control": "no-store"})


def init_app(app: Flask, metrics=None) -> None:
    """Count and time every request; serve ``/metrics``. ``metrics``: the process's (default: made now)."""
    app.extensions[METRICS_KEY] = metrics if metrics is not None else build_metrics()
    app.before_request(start_timer)
    app.after_request(_observe)
    app.add_url_rule("/metrics", "metrics", _scrape)
