"""Channels on a person's pages (SPEC §11, "Channels"): "who could have heard this?" of one diary entry.

The answer is the host's (:meth:`wikimem.host.review.Review.who_could_hear`, by the rules of a room): who was there,
whether it was a direct chat kept out of rooms with others (the person's ``dm_with_others``), and which characters
may recall it. The Diary and History pages filter by channel themselves (their ``channel`` parameter).
"""

from __future__ import annotations

from flask import render_template, request

from wikimem.naming import validate_date

from .access import load_owner, wikitext_for
from .blueprint import bp
from .layers import layer_switch


@bp.get("/owners/<owner_id>/diary/<day>/<int:position>/heard")
def heard(owner_id: str, day: str, position: int):
    owner = load_owner(owner_id)
    layer = layer_switch(owner, request.args, "admin.diary")
    allowed = bool(owner.settings().dm_with_others)
    entry, who = owner.review.who_could_hear(validate_date(day), position, layer.character, dm_with_others=allowed)
    return render_template("admin/heard.html", owner=owner, layer=layer, entry=entry, who=who, position=position,
                           dm_with_others=allowed, wikitext=wikitext_for(owner, layer.character))
