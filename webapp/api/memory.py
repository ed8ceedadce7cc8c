"""One owner's memory: the wiki's items, the diary, batches, retrieve, memorize and the diary tool."""

from __future__ import annotations

from dataclasses import asdict

from flask import jsonify

from webapp.hosting import get_host
from webapp.params import (
    ROOM_FIELDS,
    WRITE_FIELDS,
    json_body,
    opt_bool,
    opt_int,
    opt_number,
    opt_room,
    opt_str,
    opt_str_list,
    point,
    prefers,
    query_str,
    req_str,
)
from webapp.requestid import current_request_id
from wikimem.host import BadRequest

from .blueprint import (
    OWNER,
    STAGED,
    act,
    bp,
    caller,
    committed,
    include_staged,
    layer_for,
    owner_for,
    recall_as,
    with_etag,
)


@bp.get(OWNER + "/files")
def files(owner_id: str):
    return jsonify(files=owner_for(owner_id, "read").files(layer_for()))


@bp.get(OWNER + "/items")
def items(owner_id: str):
    return jsonify(items=owner_for(owner_id, "read").items(query_str("file"), layer_for()))


@bp.get(OWNER + "/items/<file>/<path:name>")
def get_item(owner_id: str, file: str, name: str):
    owner = owner_for(owner_id, "read")
    item = owner.item(file, name, layer_for())
    return with_etag(jsonify(item=item), owner.etag(item))


@bp.put(OWNER + "/items/<file>/<path:name>")
def put_item(owner_id: str, file: str, name: str):
    owner = owner_for(owner_id, "write")
    data = json_body({"content", "ts"} | WRITE_FIELDS | STAGED, {"content"})
    with act(owner, "edit", data, create_only=True, layered=True, file=file, name=name) as a:
        done = owner.add(file, name, req_str(data, "content"), ts=opt_str(data, "ts"), ctx=a.ctx, character=a.layer)
        a.done(done.commit)
    # (a replay of a write whose item was forgotten since answers item null: the item is no more)
    tag = owner.etag(done.value) if done.value is not None else None
    return with_etag(committed(done, "item", a.ctx), tag), 201 if done.created else 200


@bp.delete(OWNER + "/items/<file>/<path:name>")
def delete_item(owner_id: str, file: str, name: str):
    owner = owner_for(owner_id, "write")
    data = json_body(WRITE_FIELDS | STAGED, optional_body=True)
    with act(owner, "delete-item", data, layered=True, file=file, name=name) as a:
        done = owner.remove(file, name, ctx=a.ctx, character=a.layer)
        a.done(done.commit)
    return committed(done, "removed", a.ctx)


_APPEND = {"ts", "date", "time", "tz"}


def _append_kwargs(data: dict) -> dict:
    """A diary write's time fields, and its ``channel`` and ``present`` when sent (a request without them binds its
    idempotency key as it always did)."""
    return {**{k: opt_str(data, k, limit=64) for k in sorted(_APPEND)}, **opt_room(data)}


@bp.post(OWNER + "/diary")
def diary_append(owner_id: str):
    owner = owner_for(owner_id, "write")
    data = json_body({"content", "planned"} | _APPEND | ROOM_FIELDS | WRITE_FIELDS | STAGED, {"content"})
    with act(owner, "diary-append", data, layered=True) as a:
        done = owner.diary_append(req_str(data, "content"), ctx=a.ctx, character=a.layer, **_append_kwargs(data),
                                  planned=opt_bool(data, "planned", False))  # (a date after today: a plan)
        a.done(done.commit)
    return committed(done, "entry", a.ctx), 201


@bp.get(OWNER + "/diary/dates")
def diary_dates(owner_id: str):
    return jsonify(dates=owner_for(owner_id, "read").diary_dates(layer_for()))


@bp.get(OWNER + "/diary")
def diary_window(owner_id: str):
    owner = owner_for(owner_id, "read")
    start, end = query_str("start", limit=10), query_str("end", limit=10)
    if start is None or end is None:
        raise BadRequest("give both start and end dates (YYYY-MM-DD)")
    return jsonify(entries=owner.diary_window(start, end, layer_for()))


@bp.get(OWNER + "/diary/<day>")
def diary_day(owner_id: str, day: str):
    return jsonify(entries=owner_for(owner_id, "read").diary_day(day, layer_for()))


@bp.post(OWNER + "/batch")
def batch(owner_id: str):
    owner = owner_for(owner_id, "write")
    data = json_body({"ops", "message"} | WRITE_FIELDS | STAGED, {"ops"})
    with act(owner, "batch", data, layered=True) as a:
        result = owner.apply_ops(data["ops"], message=opt_str(data, "message", limit=200), ctx=a.ctx,
                                 character=a.layer)
        a.done(result.commit)
    return jsonify(result.to_dict())


_RETRIEVE = {"query", "messages", "messages_last", "limit", "budget_tokens", "budget_strict", "expand_links",
             "explain", "time_range", "tz", "as_of", "diary", "recency_half_life", "include_staged", "character",
             "channel", "present"}


@bp.post(OWNER + "/retrieve")
def retrieve(owner_id: str):
    owner = owner_for(owner_id, "read")
    data = json_body(_RETRIEVE, one_of=("query", "messages"))
    as_of = opt_str(data, "as_of")
    time_range = opt_str_list(data, "time_range", 2)
    limit = opt_int(data, "limit")  # its range is the host's to judge (1 to MAX_RETRIEVE_LIMIT)
    result = owner.retrieve(
        opt_str(data, "query"), messages=data.get("messages"), messages_last=opt_int(data, "messages_last", minimum=1),
        as_of=None if as_of is None else point(as_of, "as_of"),
        limit=10 if limit is None else limit, budget_tokens=opt_int(data, "budget_tokens", minimum=1),
        budget_strict=opt_bool(data, "budget_strict", False),
        expand_links=opt_bool(data, "expand_links", True), explain=opt_bool(data, "explain", False),
        time_range=tuple(time_range) if time_range else None, tz=opt_str(data, "tz", limit=64),
        diary=opt_str(data, "diary", limit=16), recency_half_life=opt_number(data, "recency_half_life"),
        include_staged=as_of is None and include_staged(data), character=recall_as(data),
        **opt_room(data),
    )
    return jsonify(result.to_dict())


@bp.post(OWNER + "/memorize")
def memorize(owner_id: str):
    owner = owner_for(owner_id, "write")
    data = json_body({"turn", "character", "prompt", "ts", "tz", "channel", "present"} | WRITE_FIELDS | STAGED,
                     {"turn"})
    when = {**{k: v for k in ("ts", "tz") if (v := opt_str(data, k, limit=64))}, **opt_room(data)}
    turn, prompt = req_str(data, "turn"), opt_str(data, "prompt")
    # memorize as a registered character (404 naming how to register one; a token bound to one: as it)
    asked = opt_str(data, "character", limit=200)
    character = get_host().characters.resolve(asked).id if asked is not None else caller().character
    with act(owner, "memorize", {**data, "character": character}, layered=True) as a:
        if prefers("respond-async"):  # answer at once; the job runs in the background and survives a restart
            job, _ = get_host().submit_memorize(owner.id, turn, ctx=a.ctx, request_id=current_request_id(),
                                                character=character, prompt=prompt, tenant=a.tenant, **when)
            a.done(job=job.id)
            response = jsonify(job.to_dict())
            response.headers["Location"] = f"{bp.url_prefix}/jobs/{job.id}"
            response.headers["Preference-Applied"] = "respond-async"
            return response, 202
        result = owner.memorize(turn, character=character, prompt=prompt, ctx=a.ctx, **when)
        a.done(result.commit, run=result.run)
    return jsonify(result.to_dict())


@bp.post(OWNER + "/diary-tool")
def diary_tool(owner_id: str):
    owner = owner_for(owner_id, "write")
    data = json_body({"arguments"} | _APPEND | ROOM_FIELDS | WRITE_FIELDS | STAGED, {"arguments"})
    with act(owner, "diary-tool", data, layered=True) as a:
        entry, commit, replayed = owner.diary_tool(data["arguments"], ctx=a.ctx, character=a.layer,
                                                   **_append_kwargs(data))
        a.done(commit)
    return jsonify(entry=asdict(entry), commit=commit, replayed=replayed), 201
