"""The WSGI entry point for gunicorn: ``gunicorn -c deploy/gunicorn.conf.py webapp.wsgi:app``.

Configured only by the ``WIKIMEM_*`` environment variables (``wikimem/host/config.py``).
Each worker process imports this module once and so builds one app and one host,
and starts the host's background job threads (:mod:`wikimem.host.fleet.jobs`): jobs
left unfinished by a worker that died or a host that restarted are resumed.

A configuration that cannot run (no ``WIKIMEM_SECRET_KEY`` in production, …)
is one line on stderr and exit status 4, which gunicorn takes as "the app
failed to load" and stops, instead of restarting the worker forever. (With
``deploy/gunicorn.conf.py`` the master has already refused it, once.)
"""

from __future__ import annotations

import sys

from . import create_app
from .config import ConfigError
from .hosting import get_host

# gunicorn's Arbiter.APP_LOAD_ERROR: the master halts rather than respawning the worker.
APP_LOAD_ERROR = 4

try:
    app = create_app()
except ConfigError as exc:
    print(f"wikimem: {exc}", file=sys.stderr, flush=True)
    raise SystemExit(APP_LOAD_ERROR) from None

with app.app_context():
    get_host().start_jobs()
    get_host().warm_up()  # before the first request: numpy, jieba, the local model
