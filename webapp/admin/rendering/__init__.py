"""How the admin pages show things: instants and diary days (``present``), the operator's time zone
(``zones``), inline diffs (``diffs``), search highlights (``highlight``), month calendars (``months``), runs on
a timeline (``timeline``) and wiki-links in text (``wikitext``). Pure helpers: no view, no host."""

from __future__ import annotations

from . import diffs, highlight, months, present, timeline, wikitext, zones
from .diffs import *  # noqa: F403
from .highlight import *  # noqa: F403
from .months import *  # noqa: F403
from .present import *  # noqa: F403
from .timeline import *  # noqa: F403
from .wikitext import *  # noqa: F403
from .zones import *  # noqa: F403

__all__ = [*diffs.__all__, *highlight.__all__, *months.__all__, *present.__all__, *timeline.__all__,
           *wikitext.__all__, *zones.__all__]
