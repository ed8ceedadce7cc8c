"""Upstream's ``wikimem.journal`` (a face over :mod:`wikimem.store`): the append-only audit log."""

from __future__ import annotations

from wikimem.store import Journal

__all__ = ["Journal"]
