"""Imports (SPEC §11): a character card, a chat, a person's portable file; an import undone; a lorebook out.

``POST /characters/import`` (admin), ``GET /characters/<character>/card``, ``POST /owners/<id>/import/chat``
(write; ``character`` is the layer), ``POST /owners/<id>/import/rollback`` (admin), ``POST
/owners/<id>/import/person`` (admin; the body is the file), ``GET /owners/<id>/lorebook``. A file rides in a
JSON body as base64 (``file``), or as JSON (``card``) or text (``chat``); these routes take bodies up to the
import limits (:mod:`wikimem.limits`), not ``WIKIMEM_MAX_BODY``. Every import's commits carry the actor
``import`` and one run id; who asked is in the audit event.
"""

from __future__ import annotations

import json

from flask import Response, jsonify, request

from webapp.auth import require
from webapp.hosting import get_host
from webapp.params import json_body, opt_bool, opt_str, query_str, req_str
from wikimem.host import IMPORT_ACTOR, BadRequest, base64_size, character_owner, decode_base64
from wikimem.limits import MAX_CARD_BYTES, MAX_CHAT_BYTES, MAX_PERSON_BYTES

from .blueprint import OWNER, act, bp, caller, layer_for, owner_for

_CHAT_FIELDS = {"chat", "file", "character", "tz", "preview", "transcript", "run", "source_conv", "staged"}


def _allow_body(limit: int) -> None:
    """This request may carry a file of the import limits (checked after the token: a stranger's body is not
    read)."""
    request.max_content_length = max(limit + 64 * 1024, request.max_content_length or 0)


def _file(data: dict, text_field: str, limit: int) -> bytes:
    """The file of an import body: ``file`` (base64), else ``card`` (a JSON object) or ``chat`` (JSONL text)."""
    if data.get("file") is not None:
        return decode_base64(req_str(data, "file"), "file", limit)
    value = data.get(text_field)
    if text_field == "card":
        if not isinstance(value, dict):
            raise BadRequest("card must be a JSON object (or give the file as base64 in file)")
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
    return req_str(data, text_field).encode("utf-8")


def _ask(data: dict, **extra) -> dict:
    """What a write of an import says of itself: its run, and the actor every import writes as."""
    return {**{k: data[k] for k in ("run", "source_conv", "staged") if k in data}, "actor": IMPORT_ACTOR, **extra}


@bp.post("/characters/import")
def import_card():
    require("admin")
    _allow_body(base64_size(MAX_CARD_BYTES))
    data = json_body({"card", "file", "character", "shared_writes", "preview", "run"}, one_of=("card", "file"))
    raw, imports = _file(data, "card", MAX_CARD_BYTES), get_host().imports
    options = {"character": opt_str(data, "character", limit=100), "shared_writes": opt_str(data, "shared_writes")}
    plan = imports.preview_card(raw, **options)
    require("admin", character_owner(plan.character))
    if opt_bool(data, "preview", False):
        return jsonify(preview=plan.to_dict())
    with act(character_owner(plan.character), "import-card", _ask(data), character=plan.character) as a:
        done = imports.import_card(raw, ctx=a.ctx, **{**options, "character": plan.character})
        a.done(done.commit, run=done.run, created=done.plan.created)
    return jsonify(done.to_dict()), 201 if done.plan.created else 200


@bp.get("/characters/<character>/card")
def character_card(character: str):
    require("read")
    return jsonify(get_host().imports.card_of(character))


@bp.post(OWNER + "/import/chat")
def import_chat(owner_id: str):
    owner = owner_for(owner_id, "write")
    _allow_body(base64_size(MAX_CHAT_BYTES))
    data = json_body(_CHAT_FIELDS, {"character"}, one_of=("chat", "file"))
    raw, imports = _file(data, "chat", MAX_CHAT_BYTES), get_host().imports
    character, tz = req_str(data, "character"), opt_str(data, "tz", limit=64)
    if opt_bool(data, "preview", False):
        return jsonify(preview=imports.preview_chat(owner, character, raw, tz=tz).to_dict())
    if opt_bool(data, "transcript", False):
        with act(owner, "import-transcript", _ask(data, character=character), layered=True) as a:
            kept = imports.keep_transcript(owner, character, raw, ctx=a.ctx, tz=tz)
            a.done(kept["commit"], run=kept["run"])
        return jsonify(transcript=kept), 201
    with act(owner, "import-chat", _ask(data, character=character), layered=True) as a:
        job, _, preview = imports.import_chat(owner, character, raw, ctx=a.ctx, tz=tz, tenant=a.tenant)
        a.done(job=job.id, run=job.params.get("run"), turns=preview.turns)
    response = jsonify(job=job.to_dict(), run=job.params.get("run"), preview=preview.to_dict())
    response.headers["Location"] = f"{bp.url_prefix}/jobs/{job.id}"
    return response, 202


@bp.post(OWNER + "/import/rollback")
def import_rollback(owner_id: str):
    owner = owner_for(owner_id, "admin")
    data = json_body({"run", "actor"}, {"run"})
    run = req_str(data, "run")
    with act(owner, "import-rollback", {"actor": data.get("actor")}, run=run) as a:
        done = get_host().imports.roll_back(owner, run, ctx=a.ctx)
        a.done(done["commit"], discarded=done["discarded"])
    return jsonify(done)


@bp.post(OWNER + "/import/person")
def import_person(owner_id: str):
    require("admin", owner_id)
    _allow_body(MAX_PERSON_BYTES)
    replace = query_str("replace", limit=5)
    if replace not in (None, "true", "false"):
        raise BadRequest("replace must be true or false")
    with act(owner_id, "import-person", replace=replace == "true" or None) as a:
        done = get_host().imports.import_person(owner_id, request.stream, replace=replace == "true")
        a.done(done.head, replaced=done.replaced)
    return jsonify(person=done.to_dict()), 201


@bp.get(OWNER + "/lorebook")
def lorebook(owner_id: str):
    owner = owner_for(owner_id, "read")
    shared, fmt = query_str("shared", limit=5), query_str("format", limit=16) or "worldinfo"
    if shared not in (None, "true", "false") or fmt not in ("worldinfo", "databank"):
        raise BadRequest("shared must be true or false, format worldinfo or databank")
    character, imports = layer_for() or caller().character, get_host().imports
    if fmt == "databank":
        return Response(imports.data_bank(owner, character, shared=shared == "true"), mimetype="text/markdown")
    return jsonify(imports.world_info(owner, character, shared=shared == "true"))
