"""Channels — group chats of several persons and characters (SPEC §11): ``/channels/<channel>/…``.

- ``POST /channels/<channel>/memorize``: one group turn, each person's part filed in that person's folder only, as
  one run (:class:`wikimem.host.Channels`); with ``Prefer: respond-async`` (or ``"async": true``), a job.
- ``POST /channels/<channel>/context``: what the persons present left, as a character recalls it in this room, from
  every present person's folder under one limit and one budget.

A token must reach every person the turn names (403 before anything is asked or written); the turn is memorized as
a registered character (``character``, else the one the token is bound to). The context asks the same of every
person present, for reading.
"""

from __future__ import annotations

from flask import jsonify

from webapp.auth import require
from webapp.hosting import get_host
from webapp.params import WRITE_FIELDS, json_body, opt_bool, opt_int, opt_room, opt_str, prefers
from webapp.requestid import current_request_id
from wikimem.host import BadRequest, GroupTurn, persons_of

from .blueprint import STAGED, act, bp, caller, recall_as

CHANNEL = "/channels/<channel>"
_MEMORIZE = {"messages", "prompt", "ts", "tz", "async"} | WRITE_FIELDS | STAGED
_CONTEXT = {"present", "character", "query", "limit", "budget_tokens", "budget_strict", "explain", "days"}


def group_turn(channel: str, data: dict) -> GroupTurn:
    """The group turn a request sends (400/413/422; 404 for a character that is not registered), once the token
    may write every person it names (403: nothing asked, nothing written)."""
    require("write")
    asked = opt_str(data, "character", limit=200)
    character = asked if asked is not None else caller().character
    if character is None:
        raise BadRequest("missing field(s): character (the registered character that memorizes the turn; a token "
                         "bound to a character memorizes as it)")
    turn = get_host().channels.turn(channel, data["messages"], character)
    for person in turn.persons:
        require("write", person)
    return turn


@bp.post(CHANNEL + "/memorize")
def channel_memorize(channel: str):
    data = json_body(_MEMORIZE, {"messages"})
    turn = group_turn(channel, data)
    options = {"prompt": opt_str(data, "prompt"), "ts": opt_str(data, "ts", limit=64),
               "tz": opt_str(data, "tz", limit=64)}
    channels = get_host().channels
    with act(None, "channel-memorize", {**data, "character": turn.character}, layered=True, channel=turn.channel,
             persons=",".join(turn.persons)) as a:
        header = prefers("respond-async")
        if header or opt_bool(data, "async", False):  # answer at once; the job survives a restart
            job, _ = channels.submit(turn, ctx=a.ctx, tenant=a.tenant, request_id=current_request_id(), **options)
            a.done(job=job.id)
            response = jsonify(job.to_dict())
            response.headers["Location"] = f"{bp.url_prefix}/jobs/{job.id}"
            if header:
                response.headers["Preference-Applied"] = "respond-async"
            return response, 202
        result = channels.memorize(turn, ctx=a.ctx, **options)
        a.done(run=result.run)
    return jsonify(result.to_dict())


@bp.post(CHANNEL + "/context")
def channel_context(channel: str):
    require("read")
    data = json_body(_CONTEXT, {"present"})
    present = opt_room(data).get("present")
    if present is None:
        raise BadRequest('present must be a list of who is in the room (e.g. ["user:ann", "char:kai"])')
    for person in persons_of(present):  # every person present, before any folder is read
        require("read", person)
    limit, days = opt_int(data, "limit"), opt_int(data, "days")
    found = get_host().channels.context(
        channel, present, character=recall_as(data), query=opt_str(data, "query"),
        limit=10 if limit is None else limit, budget_tokens=opt_int(data, "budget_tokens", minimum=1),
        budget_strict=opt_bool(data, "budget_strict", False), explain=opt_bool(data, "explain", False),
        days=7 if days is None else days)
    return jsonify(found.to_dict())
