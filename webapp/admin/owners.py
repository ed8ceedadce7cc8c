"""Pages of the memory itself: owners list, an owner's wiki (with the person's layers), one item, the diary,
export. The Wiki, item and Diary pages show one layer of a person's folder (:mod:`.layers`)."""

from __future__ import annotations

from datetime import date, datetime
from io import BytesIO
from zoneinfo import ZoneInfo

from flask import g, render_template, request, send_file

from webapp.hosting import get_host
from webapp.peering import forward_for
from wikimem.errors import InvalidValue, NotFound

from .access import PAGE_SIZE, etags_of, load_owner, wikitext_for
from .blueprint import bp
from .layers import layer_switch
from .rendering import calendar_params, month_view

SORTS = ("id", "changed")  # by owner id (every host of a cluster), or the last changed first (this host's)


@bp.get("/")
def owners():
    prefix = request.args.get("prefix", "").strip()
    sort = request.args.get("sort") or "id"
    if sort not in SORTS:
        raise InvalidValue(f"sort must be one of {', '.join(SORTS)}")
    cursor = request.args.get("cursor") or None
    if sort == "changed":
        rows, next_cursor = get_host().owners_by_last_change(prefix=prefix, within=g.operator.owner_prefix,
                                                             limit=PAGE_SIZE, cursor=cursor)
    else:
        rows, next_cursor = get_host().list_owners(prefix=prefix, within=g.operator.owner_prefix, limit=PAGE_SIZE,
                                                   cursor=cursor, forward=forward_for(g.operator.owner_prefix))
    return render_template("admin/owners.html", owners=rows, next_cursor=next_cursor, prefix=prefix, sort=sort)


@bp.get("/owners/<owner_id>")
def owner(owner_id: str):
    owner = load_owner(owner_id)
    layer = layer_switch(owner, request.args, "admin.owner")
    files = owner.files(layer.character)
    file = request.args.get("file") or (files[0] if files else None)
    if file is not None and file not in files:
        raise NotFound(f"no wiki file {file!r} in {owner_id!r}" + (f" ({layer.character}'s layer)"
                                                                  if layer.character else ""))
    items = owner.items(file, layer.character) if file else []
    return render_template("admin/owner.html", owner=owner, stats=owner.stats(), files=files, layer=layer,
                           overview=owner.review.layers_overview() if layer.shown else [], file=file, items=items,
                           etags=etags_of(owner, items), wikitext=wikitext_for(owner, layer.character))


@bp.get("/owners/<owner_id>/items/<file>/<path:name>")
def item(owner_id: str, file: str, name: str):
    owner = load_owner(owner_id)
    layer = layer_switch(owner, request.args, "admin.owner")
    found = owner.item(file, name, layer.character)
    page = owner.history(file=file, item=found.name, limit=20, layers=layer.layers)
    # (versions and blame read the shared layer's files: an item of a character's layer shows its commits)
    return render_template("admin/item.html", owner=owner, item=found, history=page.entries, layer=layer,
                           blame=None if layer.character else owner.review.item_blame(file, found.name),
                           marks=owner.review.history_marks(page.entries), etag=owner.etag(found),
                           wikitext=wikitext_for(owner, layer.character))


@bp.get("/owners/<owner_id>/links")
def links(owner_id: str):
    """The wiki-link graph: which item links where, which links dangle (``wikimem graph``'s data)."""
    owner = load_owner(owner_id)
    return render_template("admin/links.html", owner=owner, graph=owner.review.link_graph())


@bp.get("/owners/<owner_id>/diary")
def diary(owner_id: str):
    owner = load_owner(owner_id)
    layer = layer_switch(owner, request.args, "admin.diary", keep=("month", "channel"))
    channel = (request.args.get("channel") or "").strip() or None  # the entries said there (422: not an id)
    month, day = calendar_params(request.args)
    tz = owner.settings().tz
    dates = owner.diary_dates(layer.character) if channel is None else \
        owner.review.channel_days(channel, layer.character)
    view = month_view(dates, month, today=person_today(tz))
    day = day or view.latest
    entries = owner.review.diary_entries(day, layer.character, channel) if day else []
    return render_template("admin/diary.html", owner=owner, cal=view, day=day, entries=entries, layer=layer,
                           channel=channel, channels=owner.review.channels(layer.character),
                           wikitext=wikitext_for(owner, layer.character), tz=tz)


def person_today(tz: str | None) -> str:
    """Today on the owner's calendar (its time zone setting), else on this machine's."""
    if not tz:
        return date.today().isoformat()
    return datetime.now(ZoneInfo(tz)).date().isoformat()


@bp.get("/owners/<owner_id>/export")
def export(owner_id: str):
    owner = load_owner(owner_id)
    data = get_host().export_owner(owner.id, fmt="zip")
    return send_file(BytesIO(data), mimetype="application/zip", as_attachment=True,
                     download_name=get_host().export_name(owner.id, "zip"))
