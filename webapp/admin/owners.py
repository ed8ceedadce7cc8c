"""Pages of the memory itself: owners list, an owner's wiki, one item, the diary, export."""

from __future__ import annotations

from io import BytesIO

from flask import g, render_template, request, send_file

from wikimem.errors import NotFound

from . import bp
from .access import PAGE_SIZE, _host, etags_of, load_owner, scoped_prefix, wikitext_for
from .months import calendar_params, month_view


@bp.get("/")
def owners():
    prefix = request.args.get("prefix", "").strip()
    cursor = request.args.get("cursor") or None
    scope = scoped_prefix(g.operator.owner_prefix, prefix)
    rows, next_cursor = ([], None) if scope is None else _host().list_owners(prefix=scope, limit=PAGE_SIZE, cursor=cursor)
    return render_template("admin/owners.html", owners=rows, next_cursor=next_cursor, prefix=prefix)


@bp.get("/owners/<owner_id>")
def owner(owner_id: str):
    owner = load_owner(owner_id)
    files = owner.store.files()
    file = request.args.get("file") or (files[0] if files else None)
    if file is not None and file not in files:
        raise NotFound(f"no RecallFile {file!r} for {owner_id!r}")
    items = owner.store.items(file) if file else []
    return render_template("admin/owner.html", owner=owner, stats=owner.stats(), files=files,
                           file=file, items=items, etags=etags_of(items), wikitext=wikitext_for(owner))


@bp.get("/owners/<owner_id>/items/<file>/<path:name>")
def item(owner_id: str, file: str, name: str):
    owner = load_owner(owner_id)
    found = owner.store.get(file, name)
    if found is None:
        raise NotFound(f"no item {name!r} in {file!r}")
    page = owner.vstore.history(file=file, item=found.name, limit=20)
    return render_template("admin/item.html", owner=owner, item=found, history=page.entries,
                           etag=etags_of([found])[found.name], wikitext=wikitext_for(owner))


@bp.get("/owners/<owner_id>/diary")
def diary(owner_id: str):
    owner = load_owner(owner_id)
    month, day = calendar_params(request.args)
    view = month_view(owner.diary.dates(), month)
    day = day or view.latest
    entries = owner.diary.day(day) if day else []
    return render_template("admin/diary.html", owner=owner, cal=view, day=day, entries=entries,
                           wikitext=wikitext_for(owner))


@bp.get("/owners/<owner_id>/export")
def export(owner_id: str):
    owner = load_owner(owner_id)
    data = _host().export_owner(owner.id, fmt="zip")
    name = owner.id.replace(":", "_") + ".zip"
    return send_file(BytesIO(data), mimetype="application/zip", as_attachment=True, download_name=name)
