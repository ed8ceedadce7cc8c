"""The JSON API for bot workers: ``/api/v1`` (the route table is the contract; see ``webapp.openapi``).

One blueprint (:mod:`.blueprint`); each module registers the routes of one
subject on it: :mod:`.service`, :mod:`.owners`, :mod:`.memory`,
:mod:`.history`, :mod:`.runs`, :mod:`.erasure`, :mod:`.characters`, :mod:`.imports`.
"""

from __future__ import annotations

from . import characters, erasure, history, imports, memory, owners, runs, service, staged  # noqa: F401
from .blueprint import bp

__all__ = ["bp"]
