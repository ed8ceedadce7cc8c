"""What an app holds once per process: its :class:`~wikimem.host.Host` (:func:`get_host`, made by the
composition root on first use, or placed by ``create_app``) and the :class:`~wikimem.host.metrics.Metrics` it
shares with that host (:func:`metrics_of`)."""

from __future__ import annotations

from flask import Flask, current_app

__all__ = ["get_host", "metrics_of", "HOST_KEY", "METRICS_KEY"]

HOST_KEY = "wikimem.host"  # the app's extension holding its Host
METRICS_KEY = "wikimem.metrics"  # … and its Metrics (webapp.metrics.init_app places them)


def metrics_of(app: Flask):
    """The app's :class:`~wikimem.host.metrics.Metrics`."""
    return app.extensions[METRICS_KEY]


def get_host():
    """The :class:`~wikimem.host.Host` of this app (created on first use, once per process)."""
    app = current_app
    host = app.extensions.get(HOST_KEY)
    if host is None:
        with app.extensions["wikimem.host_lock"]:
            host = app.extensions.get(HOST_KEY)
            if host is None:
                from webapp.config import host_config
                from wikimem.host import build_host

                host = app.extensions[HOST_KEY] = build_host(host_config(app.config), metrics=metrics_of(app))
    return host
