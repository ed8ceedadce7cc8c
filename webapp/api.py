"""The JSON API for bot workers: ``/api/v1`` (SPEC §7; the route table is the contract).

Every view is the same three steps: read the request (:mod:`webapp.params`,
auth), make one call into the host or one :class:`~wikimem.host.Owner`,
answer JSON. Errors are raised, never caught here: :mod:`webapp.errors` maps
them.
"""

from __future__ import annotations

from dataclasses import asdict

from flask import Blueprint, Response, jsonify

import wikimem
from wikimem.errors import NotFound
from wikimem.host import EXPORT_TYPES, UNDO_TARGETS, BadRequest, validate_owner_id
from wikimem.host.operations import job_visible
from wikimem.host.review import HISTORY_FILTERS
from wikimem.host.settings import SETTINGS_FIELDS

from . import get_host
from .auth import Forbidden, current_principal, require
from .params import (
    WRITE_FIELDS, json_body, opt_bool, opt_int, opt_number, opt_str, opt_str_list, point, prefers, query_int, query_str,
    req_str, write_context,
)
from .peering import forward_for, listing_scope, revocation_from
from .session import revoke

__all__ = ["bp"]

bp = Blueprint("api", __name__, url_prefix="/api/v1")

OWNER = "/owners/<owner_id>"


def _owner(owner_id: str, scope: str):
    """The owner of the route, after the token's scope and prefix are checked."""
    require(scope, owner_id)
    validate_owner_id(owner_id)
    return get_host().owner(owner_id)


def _context(data: dict, **overrides):
    """The write's context; the actor defaults to the token's name."""
    return write_context(data, default_actor=current_principal().name, **overrides)


def _committed(done, key: str):
    return jsonify({key: done.value, "commit": done.commit, "replayed": bool(done.replayed)})


def _etag(response: Response, tag: str | None) -> Response:
    if tag:
        response.headers["ETag"] = f'"{tag}"'
    return response


# -- service ----------------------------------------------------------------

@bp.get("/version")
def version():
    current_principal()
    return jsonify(version=wikimem.__version__, api=1)


@bp.get("/openapi.json")
def openapi():
    from .openapi import document

    return jsonify(document())


# -- owners -------------------------------------------------------------------

@bp.post("/peer/revoked")
def peer_revoked():
    """A peer's logout notice (signed with the shared secret key): end that session here too."""
    found = revocation_from(json_body({"token"}).get("token"))
    if found is None:
        raise Forbidden("not a logout notice from a peer of this cluster")
    revoke(*found, tell_peers=False)
    return Response(status=204)


@bp.get("/owners")
def list_owners():
    within = listing_scope()
    host = get_host()
    rows, nxt = host.list_owners(prefix=query_str("prefix", limit=128) or "", within=within,
                                 limit=query_int("limit", 50, 1, 1000), cursor=query_str("cursor", limit=128),
                                 forward=forward_for(within))
    body = {"owners": [r.to_dict() for r in rows], "next": nxt}
    if host.peers is not None and host.last_unreachable:
        body["unreachable"] = host.last_unreachable  # a partial listing: these hosts did not answer
    return jsonify(body)


@bp.get("/replication")
def replication():
    require("admin")
    return jsonify(get_host().replication_status())


@bp.put(OWNER)
def create_owner(owner_id: str):
    principal = require("write", owner_id)
    quota_prefix = None if principal.has("admin") else principal.owner_prefix  # admin tokens have no quota
    owner, created = get_host().ensure_owner(owner_id, quota_prefix=quota_prefix)
    return _etag(jsonify(owner=owner.stats().to_dict(), created=created), owner.head()), 201 if created else 200


@bp.get(OWNER)
def owner_stats(owner_id: str):
    stats = _owner(owner_id, "read").stats(vectors=True)
    return _etag(jsonify(stats.to_dict()), stats.head)


@bp.delete(OWNER)
def delete_owner(owner_id: str):
    require("admin", owner_id)
    get_host().delete_owner(owner_id)
    return jsonify(deleted=owner_id)


@bp.get(OWNER + "/export")
def export_owner(owner_id: str):
    require("read", owner_id)
    fmt = query_str("format") or "zip"
    data = get_host().export_owner(owner_id, fmt=fmt)
    return Response(data, mimetype=EXPORT_TYPES[fmt],
                    headers={"Content-Disposition": f'attachment; filename="{get_host().export_name(owner_id, fmt)}"'})


# -- wiki ---------------------------------------------------------------------

@bp.get(OWNER + "/files")
def files(owner_id: str):
    return jsonify(files=_owner(owner_id, "read").files())


@bp.get(OWNER + "/items")
def items(owner_id: str):
    return jsonify(items=_owner(owner_id, "read").items(query_str("file")))


@bp.get(OWNER + "/items/<file>/<path:name>")
def get_item(owner_id: str, file: str, name: str):
    owner = _owner(owner_id, "read")
    item = owner.item(file, name)
    return _etag(jsonify(item=item), owner.etag(item))


@bp.put(OWNER + "/items/<file>/<path:name>")
def put_item(owner_id: str, file: str, name: str):
    owner = _owner(owner_id, "write")
    data = json_body({"content", "ts"} | WRITE_FIELDS, {"content"})
    done = owner.add(file, name, req_str(data, "content"), ts=opt_str(data, "ts"), ctx=_context(data))
    return _etag(_committed(done, "item"), owner.etag(done.value)), 201 if done.created else 200


@bp.delete(OWNER + "/items/<file>/<path:name>")
def delete_item(owner_id: str, file: str, name: str):
    owner = _owner(owner_id, "write")
    data = json_body(WRITE_FIELDS, optional_body=True)
    return _committed(owner.remove(file, name, ctx=_context(data)), "removed")


# -- diary --------------------------------------------------------------------

_APPEND = {"ts", "date", "time", "tz"}


def _append_kwargs(data: dict) -> dict:
    return {k: opt_str(data, k, limit=64) for k in sorted(_APPEND)}


@bp.post(OWNER + "/diary")
def diary_append(owner_id: str):
    owner = _owner(owner_id, "write")
    data = json_body({"content"} | _APPEND | WRITE_FIELDS, {"content"})
    done = owner.diary_append(req_str(data, "content"), ctx=_context(data), **_append_kwargs(data))
    return _committed(done, "entry"), 201


@bp.get(OWNER + "/diary/dates")
def diary_dates(owner_id: str):
    return jsonify(dates=_owner(owner_id, "read").diary_dates())


@bp.get(OWNER + "/diary")
def diary_window(owner_id: str):
    owner = _owner(owner_id, "read")
    start, end = query_str("start", limit=10), query_str("end", limit=10)
    if start is None or end is None:
        raise BadRequest("give both start and end dates (YYYY-MM-DD)")
    return jsonify(entries=owner.diary_window(start, end))


@bp.get(OWNER + "/diary/<day>")
def diary_day(owner_id: str, day: str):
    return jsonify(entries=_owner(owner_id, "read").diary_day(day))


# -- batches, retrieval, memorize ---------------------------------------------

@bp.post(OWNER + "/batch")
def batch(owner_id: str):
    owner = _owner(owner_id, "write")
    data = json_body({"ops", "message"} | WRITE_FIELDS, {"ops"})
    result = owner.apply_ops(data["ops"], message=opt_str(data, "message", limit=200), ctx=_context(data))
    return jsonify(result.to_dict())


_RETRIEVE = {"query", "messages", "messages_last", "limit", "budget_tokens", "budget_strict", "expand_links",
             "explain", "time_range", "tz", "as_of", "diary", "recency_half_life"}


@bp.post(OWNER + "/retrieve")
def retrieve(owner_id: str):
    owner = _owner(owner_id, "read")
    data = json_body(_RETRIEVE, one_of=("query", "messages"))
    as_of = opt_str(data, "as_of")
    time_range = opt_str_list(data, "time_range", 2)
    limit = opt_int(data, "limit", minimum=1)
    result = owner.retrieve(
        opt_str(data, "query"), messages=data.get("messages"), messages_last=opt_int(data, "messages_last", minimum=1),
        as_of=None if as_of is None else point(as_of, "as_of"),
        limit=10 if limit is None else limit, budget_tokens=opt_int(data, "budget_tokens", minimum=1),
        budget_strict=opt_bool(data, "budget_strict", False),
        expand_links=opt_bool(data, "expand_links", True), explain=opt_bool(data, "explain", False),
        time_range=tuple(time_range) if time_range else None, tz=opt_str(data, "tz", limit=64),
        diary=opt_str(data, "diary", limit=16), recency_half_life=opt_number(data, "recency_half_life"),
    )
    return jsonify(result.to_dict())


@bp.post(OWNER + "/memorize")
def memorize(owner_id: str):
    owner = _owner(owner_id, "write")
    data = json_body({"turn", "character", "prompt", "ts", "tz"} | WRITE_FIELDS, {"turn"})
    when = {k: v for k in ("ts", "tz") if (v := opt_str(data, k, limit=64))}
    turn, character, prompt = req_str(data, "turn"), opt_str(data, "character", limit=200), opt_str(data, "prompt")
    ctx = write_context(data)
    if prefers("respond-async"):  # answer at once; the job runs in the background and survives a restart
        job, _ = get_host().submit_memorize(owner.id, turn, key=ctx.idempotency_key, character=character,
                                            prompt=prompt, run=ctx.run, actor=ctx.actor,
                                            source_conv=ctx.source_conv, **when)
        response = jsonify(job.to_dict())
        response.headers["Location"] = f"{bp.url_prefix}/jobs/{job.id}"
        response.headers["Preference-Applied"] = "respond-async"
        return response, 202
    result = owner.memorize(turn, character=character, prompt=prompt, ctx=ctx, **when)
    return jsonify(result.to_dict())


@bp.post(OWNER + "/diary-tool")
def diary_tool(owner_id: str):
    owner = _owner(owner_id, "write")
    data = json_body({"arguments"} | _APPEND | WRITE_FIELDS, {"arguments"})
    entry, commit, replayed = owner.diary_tool(data["arguments"], ctx=_context(data), **_append_kwargs(data))
    return jsonify(entry=asdict(entry), commit=commit, replayed=replayed), 201


# -- settings, jobs -----------------------------------------------------------

@bp.get(OWNER + "/settings")
def get_settings(owner_id: str):
    return jsonify(settings=_owner(owner_id, "read").settings().to_dict())


@bp.put(OWNER + "/settings")
def put_settings(owner_id: str):
    owner = _owner(owner_id, "write")
    data = json_body(set(SETTINGS_FIELDS) | WRITE_FIELDS)
    changes = {k: data[k] for k in SETTINGS_FIELDS if k in data}
    done = owner.put_settings(changes, ctx=_context(data))
    return jsonify(settings=done.value.to_dict(), commit=done.commit, replayed=bool(done.replayed))


@bp.get("/jobs/<job_id>")
def get_job(job_id: str):
    require("read")
    job = get_host().job(job_id)
    owner_id = job.params.get("owner")
    if owner_id:
        require("read", owner_id)
    elif not job_visible(job.params, require("admin").owner_prefix):  # a bulk job: admins of its owners
        raise NotFound(f"no job {job_id!r}")
    return jsonify(job.to_dict())


# -- history ------------------------------------------------------------------

@bp.get(OWNER + "/history")
def history(owner_id: str):
    owner = _owner(owner_id, "read")
    page = owner.search_history(**{k: query_str(k) for k in HISTORY_FILTERS}, limit=query_int("limit", 50, 1, 500),
                                cursor=query_str("cursor"), after=query_str("after"), at=query_str("at", limit=64))
    return jsonify(entries=page.entries, next=page.next, prev=page.prev, reverted_by=owner.undone_by(page.entries))


@bp.get(OWNER + "/commits/<commit>")
def commit(owner_id: str, commit: str):
    return jsonify(_owner(owner_id, "read").show_commit(point(commit, "commit")))


@bp.get(OWNER + "/diff")
def diff(owner_id: str):
    owner = _owner(owner_id, "read")
    return jsonify(owner.diff(point(query_str("from", limit=64), "from"),
                              point(query_str("to", limit=64) or "HEAD", "to")))


def _target(data: dict, field: str) -> str:
    """The run id of a rollback, or the commit point of a revert / restore."""
    if field == "run":  # a run id, as written in Wikimem-Run
        run = opt_str(data, "run", limit=64)
        if not run or not run.strip():
            raise BadRequest("run must be a non-empty run id")
        return run
    return point(opt_str(data, field), field)


def _undo(owner_id: str, kind: str):
    """revert / rollback / restore: the preview plan, or the new commit (409 on conflicts unless forced)."""
    owner = _owner(owner_id, "admin")
    field = UNDO_TARGETS[kind]
    data = json_body({field, "force", "preview", "actor"}, {field})
    target = _target(data, field)
    if opt_bool(data, "preview", False):
        return jsonify(plan=owner.preview_undo(kind, target))
    done = owner.undo(kind, target, force=opt_bool(data, "force", False), ctx=_context(data))
    return jsonify(commit=done.commit, replayed=bool(done.replayed))


@bp.post(OWNER + "/revert")
def revert(owner_id: str):
    return _undo(owner_id, "revert")


@bp.post(OWNER + "/rollback")
def rollback(owner_id: str):
    return _undo(owner_id, "rollback")


@bp.post(OWNER + "/restore")
def restore(owner_id: str):
    return _undo(owner_id, "restore")

from . import api_runs  # noqa: E402,F401  (the cross-owner routes register on bp)
