"""Upstream's ``wikimem.diary`` (a face over :mod:`wikimem.store`): the append-only event stream."""

from __future__ import annotations

from wikimem.models import DiaryItem
from wikimem.store import Diary

__all__ = ["Diary", "DiaryItem"]
