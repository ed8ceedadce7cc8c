"""The WSGI entry point for gunicorn: ``gunicorn -c deploy/gunicorn.conf.py webapp.wsgi:app``.

Configured only by the ``WIKIMEM_*`` environment variables (:mod:`webapp.config`).
Each worker process imports this module once and so builds one app and one host.
"""

from __future__ import annotations

from . import create_app

app = create_app()
