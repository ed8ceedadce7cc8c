"""The admin UI: server-rendered pages for operators, under ``/admin/``.

Views are thin: parse the request, make one call into the host (or an
owner's store), render a template. Every page requires a signed-in
operator (see :mod:`webapp.session`).
"""

from __future__ import annotations

from flask import Blueprint

from webapp.admin.present import GROUP_FROM, day_parts, instant
from webapp.session import require_operator

__all__ = ["bp"]

bp = Blueprint("admin", __name__, url_prefix="/admin")
bp.before_request(require_operator)

# The view modules register their routes on ``bp``.
from webapp.admin import actions, edits, history, jobs, owners, runs, search  # noqa: E402,F401


@bp.app_template_test("diary_day")
def _is_diary_day(value) -> bool:
    """Retrieval names a diary day's items by the date (``file="YYYY-MM-DD"``)."""
    from wikimem.naming import DATE_RE

    return isinstance(value, str) and DATE_RE.fullmatch(value) is not None


# Presentation helpers (see :mod:`.present`): instants in local time, long diary days in parts.
bp.add_app_template_filter(instant, "instant")
bp.add_app_template_global(day_parts, "day_parts")
bp.add_app_template_global(GROUP_FROM, "diary_group_from")
