"""The admin blueprint (``/admin/``, a signed-in operator on every page) and what its templates share: the
operator's time zone, instants shown in it, diary days in parts. The view modules register their routes on it."""

from __future__ import annotations

from flask import Blueprint

from webapp.session import require_operator

from .rendering import GROUP_FROM, clock_of, current_zone, day_parts, instant

__all__ = ["bp"]

bp = Blueprint("admin", __name__, url_prefix="/admin")
bp.before_request(require_operator)


@bp.app_template_test("diary_day")
def _is_diary_day(value) -> bool:
    """Retrieval names a diary day's items by the date (``file="YYYY-MM-DD"``)."""
    from wikimem.naming import DATE_RE

    return isinstance(value, str) and DATE_RE.fullmatch(value) is not None


@bp.app_template_filter("instant")
def _instant(value, label: str | None = None):
    """An instant in the operator's zone (:mod:`.zones`), UTC on hover (:func:`.present.instant`)."""
    return instant(value, label, current_zone().tzinfo)


@bp.app_context_processor
def _zone() -> dict:
    """``zone``: the operator's time zone, for every page (the sign-in and error pages too)."""
    return {"zone": current_zone()}


# Presentation helpers (see :mod:`.present`): long diary days in parts, which time a diary HH:MM is.
bp.add_app_template_global(day_parts, "day_parts")
bp.add_app_template_global(clock_of, "clock_of")
bp.record_once(lambda state: state.app.jinja_env.globals.update(diary_group_from=GROUP_FROM))  # a value, not a function
