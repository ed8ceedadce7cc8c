"""The operator's own settings: the time zone of the pages (kept in a cookie of this browser)."""

from __future__ import annotations

from flask import redirect, render_template, request

from webapp.session import safe_next

from .blueprint import bp
from .rendering import BROWSER, COOKIE_AGE, ZONE_COOKIE, check_zone, zone_names


def _chosen(form) -> str | None:
    """The zone the form asks for: ``browser``, ``UTC`` or a typed zone name (None if unknown)."""
    pick = (form.get("pick") or "").strip()
    if pick in (BROWSER, "UTC"):
        return pick
    return check_zone((form.get("zone") or "").strip())


@bp.route("/timezone", methods=["GET", "POST"])
def timezone_page():
    target = safe_next(request.values.get("next"))
    if request.method == "GET":
        return render_template("admin/timezone.html", target=target, names=zone_names(), typed="", error=None)
    choice = _chosen(request.form)
    if choice is None:
        typed = (request.form.get("zone") or "")[:64]
        return render_template("admin/timezone.html", target=target, names=zone_names(), typed=typed,
                               error=f"Unknown time zone {typed!r}: pick one of the list (e.g. Europe/Paris)."), 422
    response = redirect(target)
    response.set_cookie(ZONE_COOKIE, choice, max_age=COOKIE_AGE, samesite="Lax", httponly=True,
                        secure=request.is_secure)
    return response

