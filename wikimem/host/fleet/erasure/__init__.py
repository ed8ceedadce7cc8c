"""Erasure across the host: erasing an owner everywhere and forgetting an item with its history, as jobs
(``erase``: :class:`Erasure`, held as ``host.erasure``), and the erasure register with what erasing does to the
host's databases (``register``). See docs/explanation/erasure.md."""

from __future__ import annotations

from . import erase, register
from .erase import *  # noqa: F403
from .register import *  # noqa: F403

__all__ = [*erase.__all__, *register.__all__]
