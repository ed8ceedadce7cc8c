"""The admin UI: server-rendered pages for operators, under ``/admin/``.

Views are thin: parse the request, make one call into the host (or an
owner's store), render a template. Every page requires a signed-in
operator (see :mod:`webapp.session`). The blueprint is :mod:`.blueprint`;
each view module registers its routes on it.
"""

from __future__ import annotations

from . import (  # noqa: F401  (routes on bp)
    actions,
    channels,
    characters,
    edits,
    erasure,
    history,
    imports,
    jobs,
    owners,
    prefs,
    runs,
    search,
    staged,
)
from .blueprint import bp

__all__ = ["bp"]
