"""The file format of a memory folder: the codec (memory paths, file <-> items), the block syntax."""

from __future__ import annotations

from . import blocks, codec
from .blocks import *  # noqa: F403
from .codec import *  # noqa: F403

__all__ = [*blocks.__all__, *codec.__all__]
