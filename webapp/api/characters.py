"""The character registry (SPEC §11): ``/characters`` and ``/characters/<character>``.

Reading needs the ``read`` scope (the registry is the host's, whatever a token's owner prefixes);
registering, changing and deleting need ``admin`` on the character's own owner ``char:<character>``,
where each change is a commit (:mod:`wikimem.host.characters`).
"""

from __future__ import annotations

from flask import jsonify

from webapp.auth import require
from webapp.hosting import get_host
from webapp.params import WRITE_FIELDS, json_body, opt_str, query_str, req_str
from wikimem.host import BadRequest, character_owner

from .blueprint import act, bp

CHARACTER = "/characters/<character>"


def _admin_of(character: str) -> str:
    """The character's owner id, once the token holds ``admin`` over it (401/403, then 422 for a bad id)."""
    require("admin")
    owner_id = character_owner(character)
    require("admin", owner_id)
    return owner_id


@bp.get("/characters")
def list_characters():
    require("read")
    shown = query_str("deleted", limit=5)
    if shown not in (None, "true", "false"):
        raise BadRequest("deleted must be true or false")
    found = get_host().characters.list(deleted=shown == "true")
    return jsonify(characters=[c.to_dict() for c in found])


@bp.get(CHARACTER)
def get_character(character: str):
    require("read")
    return jsonify(character=get_host().characters.get(character).to_dict())


@bp.put(CHARACTER)
def put_character(character: str):
    owner_id = _admin_of(character)
    data = json_body({"name", "persona", "shared_writes"} | WRITE_FIELDS, {"name"})
    characters = get_host().characters
    created = not characters.exists(character)
    with act(owner_id, "character-put", data, character=character) as a:
        found, commit = characters.put(character, name=req_str(data, "name"), persona=opt_str(data, "persona"),
                                       shared_writes=opt_str(data, "shared_writes") or "staged", ctx=a.ctx)
        a.done(commit, created=created)
    return jsonify(character=found.to_dict(), commit=commit, created=created), 201 if created else 200


@bp.delete(CHARACTER)
def delete_character(character: str):
    owner_id = _admin_of(character)
    with act(owner_id, "character-delete", character=character) as a:
        found, commit = get_host().characters.delete(character, ctx=a.ctx)
        a.done(commit)
    return jsonify(character=found.to_dict(), commit=commit)
