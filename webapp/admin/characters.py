"""The characters' pages: the registry (list, register one) and a character's page — its definition (name, persona,
``shared_writes``; the edit form), its profile (the owner ``char:<id>``) and its runs across persons, with the bulk
rollback of them.

Anyone signed in reads the registry (the API's ``read`` scope does too); registering and changing a definition need
the admin role and the character's owner within the operator's prefix (the API's ``admin`` on ``char:<id>``). Each
change is one commit in ``char:<id>``, through the host's gate (:func:`.access.act`).
"""

from __future__ import annotations

from flask import flash, g, redirect, render_template, request, url_for

from webapp.errors import error_status
from webapp.hosting import get_host
from webapp.peering import forward_for
from wikimem.errors import Conflict, InvalidValue, NotFound, NotPermitted, WikimemError
from wikimem.host import SHARED_WRITES, RunQuery, character_owner
from wikimem.naming import is_character_id, validate_character_id

from .access import PAGE_SIZE, act, require_role, wikitext_for
from .blueprint import bp

__all__ = ["definition_of"]


def _registered(character: str):
    """The character (deleted ones too); a malformed or unknown id is not found."""
    if not is_character_id(character):
        raise NotFound(f"no character {character[:80]!r}")
    return get_host().characters.get(character)


def _may_define(operator, character: str) -> str:
    """The character, if this operator (an admin: :func:`require_role` first) may define it: ``char:<id>`` is
    within its owners (the API asks ``admin`` on ``char:<id>``)."""
    if not operator.may_see(character_owner(character)):
        raise NotPermitted(f"the character's profile char:{character} is outside your owners")
    return character


def definition_of(form) -> dict[str, str | None]:
    """The definition an edit form sends (``name``, ``persona``: blank is none, ``shared_writes``)."""
    policy = (form.get("shared_writes") or "staged").strip()
    if policy not in SHARED_WRITES:
        raise InvalidValue(f"shared_writes must be one of {', '.join(SHARED_WRITES)}, got {policy[:20]!r}")
    persona = (form.get("persona") or "").replace("\r\n", "\n").strip()
    return {"name": (form.get("name") or "").strip(), "persona": persona or None, "shared_writes": policy}


def _profile(character: str):
    """The character's own profile (``char:<id>``) if this operator may see it, else None."""
    owner_id = character_owner(character)
    return get_host().owner(owner_id) if g.operator.may_see(owner_id) else None


def _runs(character: str, cursor: str | None):
    """The runs that wrote this character's layer in any person's folder this operator sees, newest first."""
    within = g.operator.owner_prefix
    return get_host().fleet.find_runs(RunQuery.parse(character=character), within=within, limit=PAGE_SIZE,
                                      cursor=cursor, forward=forward_for(within))


def _put(character: str, operator, typed: dict, *, created: bool):
    """Register or change the definition through the gate; the commit (None: nothing changed)."""
    with act(character_owner(character), "character-put", operator, character=character) as a:
        _, commit = get_host().characters.put(character, ctx=a.ctx, **typed)
        a.done(commit, created=created)
    return commit


@bp.get("/characters")
def characters():
    return render_template("admin/characters.html", characters=get_host().characters.list(deleted=True),
                           shared_writes=SHARED_WRITES, typed={}, error=None)


@bp.post("/characters")
def register_character():
    operator, character = require_role("admin"), (request.form.get("id") or "").strip()
    try:
        _put(_may_define(operator, _new_id(character)), operator, definition_of(request.form), created=True)
    except (WikimemError, ValueError) as exc:  # the form again, as typed, with what is wrong
        return render_template("admin/characters.html", characters=get_host().characters.list(deleted=True),
                               shared_writes=SHARED_WRITES, typed=request.form, error=str(exc)), error_status(exc)
    flash(f"Registered the character {character}.", "ok")
    return redirect(url_for("admin.character", character=character))


def _new_id(character: str) -> str:
    """An id to register: well-formed (422) and not registered already (409; a deleted one may come back)."""
    if get_host().characters.exists(validate_character_id(character)):
        raise Conflict(f"the character {character!r} is registered already: change it on its page")
    return character


@bp.get("/characters/<character>")
def character(character: str):
    found = _registered(character)
    try:
        return _page(found, runs=_runs(found.id, request.args.get("cursor") or None))
    except (WikimemError, ValueError) as exc:  # the page stays: its definition and profile are still worth reading
        return _page(found, runs_error=str(exc))


@bp.post("/characters/<character>")
def edit_character(character: str):
    found, operator = _registered(character), require_role("admin")  # reviewers and operators may look, not change
    _may_define(operator, found.id)
    try:
        commit = _put(found.id, operator, definition_of(request.form), created=False)
    except (WikimemError, ValueError) as exc:  # the form as typed, with what is wrong with it
        return _page(found, typed=request.form, error=str(exc)), error_status(exc)
    flash(f"Saved {found.id}'s definition as commit {commit[:12]}." if commit else "Nothing changed.", "ok")
    return redirect(url_for("admin.character", character=found.id))


def _page(found, *, runs=None, runs_error: str | None = None, typed=None, error: str | None = None):
    """A character's page: its definition (the form as typed after an error), its profile, its runs."""
    profile = _profile(found.id)
    return render_template("admin/character.html", character=found, profile=profile, runs=runs,
                           profile_items=profile.items() if profile is not None else [],
                           wikitext=wikitext_for(profile) if profile is not None else None, runs_error=runs_error,
                           shared_writes=SHARED_WRITES, typed=typed, error=error)
