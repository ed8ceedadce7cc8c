"""Editing memory in place: add, edit and delete an item, delete an owner.

Every change is one commit with the signed-in operator as its actor. An
edit first shows what it will change (the diff), and carries the item's
etag from the moment the form was opened (``If-Match``): if another
operator or a bot changed the item meanwhile, nothing is written and the
page shows their version beside yours. Deleting an owner needs the admin
role and the owner id typed out.
"""

from __future__ import annotations

from flask import flash, g, redirect, render_template, request, url_for

from webapp.errors import error_status
from webapp.hosting import get_host
from wikimem.errors import PreconditionFailed
from wikimem.host import BadRequest

from .access import act, load_owner, require_role
from .blueprint import bp
from .rendering import inline_diff


def _form(name: str) -> str:
    return (request.form.get(name) or "").strip()


def _edit_page(owner, file: str, name: str, content: str, etag: str, *, preview: bool = False,
               error: str | None = None, status: int = 200):
    current, conflict = owner.item(file, name), status == 412
    return render_template("admin/edit.html", owner=owner, item=current, content=content, etag=etag,
                           diff=inline_diff(current.content, content) if preview or conflict else None,
                           current_etag=owner.etag(current), error=error, conflict=conflict), status


@bp.route("/owners/<owner_id>/new-item", methods=["GET", "POST"])
def new_item(owner_id: str):
    owner = load_owner(owner_id)
    if request.method == "GET":
        return render_template("admin/new_item.html", owner=owner, file=request.args.get("file", ""), name="",
                               content="", error=None, existing=False)
    operator = require_role("operator")
    file, name, content = _form("file"), _form("name"), request.form.get("content") or ""
    try:
        with act(owner, "edit", operator, file=file, name=name) as a:
            done = a.write(owner.review.add_new, file, name, content)
    except (PreconditionFailed, ValueError) as exc:  # exists already, or a name the library refuses
        exists = isinstance(exc, PreconditionFailed)
        return render_template("admin/new_item.html", owner=owner, file=file, name=name, content=content,
                               error=_said(exc), existing=exists), 412 if exists else error_status(exc)
    flash(f"Added {file} / {done.value.name} as commit {str(done.commit)[:12]}.", "ok")
    return redirect(url_for("admin.item", owner_id=owner.id, file=file, name=done.value.name))


def _said(exc: Exception) -> str:
    """An error as the page shows it: the library's message, first letter up."""
    text = str(exc).strip() or type(exc).__name__
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", ":")) else ".")


@bp.route("/owners/<owner_id>/edit/<file>/<path:name>", methods=["GET", "POST"])
def edit_item(owner_id: str, file: str, name: str):
    owner = load_owner(owner_id)
    if request.method == "GET":
        current = owner.item(file, name)
        return _edit_page(owner, file, name, current.content, owner.etag(current))
    operator = require_role("operator")
    content, etag = request.form.get("content") or "", _form("etag")
    if request.form.get("op") != "save":
        return _edit_page(owner, file, name, content, etag, preview=True)
    return _save(owner, file, name, content, etag, operator)


def _save(owner, file: str, name: str, content: str, etag: str, operator):
    try:  # only the text changes: the item keeps its provenance (source, recorded time)
        with act(owner, "edit", operator, if_match=etag, file=file, name=name) as a:
            done = a.write(owner.review.edit, file, name, content)
    except ValueError as exc:  # empty text
        return _edit_page(owner, file, name, content, etag, error=_said(exc), status=error_status(exc))
    except PreconditionFailed:
        return _edit_page(owner, file, name, content, etag, status=412, error=(
            "Someone changed this item after you opened it: nothing was written. Their version is on the left; "
            "save again to put yours over it."))
    flash(f"Saved {file} / {name} as commit {str(done.commit)[:12]}." if done.commit else "Nothing changed.", "ok")
    return redirect(url_for("admin.item", owner_id=owner.id, file=file, name=name))


@bp.route("/owners/<owner_id>/delete/<file>/<path:name>", methods=["GET", "POST"])
def delete_item(owner_id: str, file: str, name: str):
    owner = load_owner(owner_id)
    current = owner.item(file, name)
    if request.method == "GET":
        return render_template("admin/delete_item.html", owner=owner, item=current, etag=owner.etag(current),
                               error=None)
    operator = require_role("operator")
    try:
        with act(owner, "delete-item", operator, if_match=_form("etag"), file=file, name=name) as a:
            done = a.write(owner.remove, file, name)
    except PreconditionFailed:
        return render_template("admin/delete_item.html", owner=owner, item=current, etag=owner.etag(current),
                               error="This item changed after you opened the page: read it again, then delete."), 412
    flash(f"Deleted {file} / {name} as commit {str(done.commit)[:12]}.", "ok")
    return redirect(url_for("admin.owner", owner_id=owner.id, file=file))


@bp.route("/owners/<owner_id>/delete-owner", methods=["GET", "POST"])
def delete_owner(owner_id: str):
    owner = load_owner(owner_id)
    if request.method == "GET":
        return render_template("admin/delete_owner.html", owner=owner, stats=owner.stats(), error=None)
    operator = require_role("admin")
    if _form("confirm_id") != owner.id:
        error = BadRequest("Type the owner id exactly to delete it.")
        return render_template("admin/delete_owner.html", owner=owner, stats=owner.stats(), error=str(error)), 400
    with act(owner.id, "delete-owner", operator):
        get_host().delete_owner(owner.id)
    flash(f"Deleted owner {owner.id} and all its history (deleted by {g.operator.name}).", "ok")
    return redirect(url_for("admin.owners"))
