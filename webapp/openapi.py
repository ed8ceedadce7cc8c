"""The OpenAPI 3.0 document of ``/api/v1``, served at ``/api/v1/openapi.json``.

Written by hand next to :mod:`webapp.api` (one entry per route of the SPEC §7
table, plus the probes ``/healthz`` and ``/readyz`` at the host's root). Every
operation has a stable ``operationId`` (:data:`OPERATION_IDS`: the name of the
:class:`wikimem.client.Client` method that calls it) and examples of its JSON
bodies (:data:`EXAMPLES`). ``tests/integration/test_openapi.py`` checks that
the document's calls are exactly the app's routes, that the examples fit their
schemas, and fuzzes the running app against it with schemathesis (no 5xx, no
response outside the schema).
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import wikimem
from wikimem.limits import (
    MAX_BATCH_CHARS,
    MAX_CONTENT_CHARS,
    MAX_OPS,
    MAX_QUERY_CHARS,
    MAX_RETRIEVE_LIMIT,
    MAX_TURN_CHARS,
)

__all__ = ["document", "OPERATION_IDS", "EXAMPLES", "OWNER_ID_PATTERN", "FILE_PATTERN"]

OWNER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
FILE_PATTERN = r"^[a-z0-9_][a-z0-9_-]*$"
_DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "example": "2026-07-21"}
_NSTR = {"type": "string", "nullable": True}
_UNREACHABLE = {"type": "array", "items": {"type": "string"},
                "description": "peers of a cluster that did not answer: the page lacks their owners"}
_CONTENT = {"type": "string", "maxLength": MAX_CONTENT_CHARS}


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(props: dict, required: list[str] | None = None, *, extra: bool = True, description: str = "") -> dict:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if description:
        out["description"] = description
    if not extra:
        out["additionalProperties"] = False
    return out


def _arr(items: dict) -> dict:
    return {"type": "array", "items": items}


_WRITE = {"run": {**_NSTR, "maxLength": 200}, "actor": {**_NSTR, "maxLength": 200},
          "source_conv": {**_NSTR, "maxLength": 200}}
_STAGED = {"staged": {"type": "boolean", "description": "put the write on probation: onto the branch "
                      "staged/<run> (run: the body's, else one made from the Idempotency-Key or new), not main; "
                      "the host's policy may stage it anyway (WIKIMEM_STAGED_ACTORS, WIKIMEM_STAGED_TOKENS)"}}
_APPEND = {"ts": {**_NSTR, "maxLength": 64}, "date": {**_NSTR, "maxLength": 64},
           "time": {**_NSTR, "maxLength": 64}, "tz": {**_NSTR, "maxLength": 64}}

SCHEMAS: dict[str, dict] = {
    "Error": _obj({"error": _obj({"code": {"type": "string"}, "message": {"type": "string"},
                                  "conflicts": _arr({"type": "object"}), "current": {},
                                  "item": {"type": "object", "description": "412 of an item write: the item there"}},
                                 ["code", "message"])}, ["error"]),
    "Item": _obj({"file": {"type": "string"}, "name": {"type": "string"}, "content": {"type": "string"},
                  "owner": _NSTR, "source_conv": _NSTR, "ts": _NSTR}, ["file", "name", "content"]),
    "DiaryItem": _obj({"date": {"type": "string"}, "time": {"type": "string"}, "content": {"type": "string"},
                       "owner": _NSTR, "source_conv": _NSTR, "ts": _NSTR}, ["date", "time", "content"]),
    "OwnerStats": _obj({"id": {"type": "string"}, "items": {"type": "integer"}, "files": {"type": "integer"},
                        "diary_days": {"type": "integer"}, "last_change": _NSTR, "head": _NSTR,
                        "vectors": _obj({"embedded": {"type": "integer"}, "total": {"type": "integer"}},
                                        ["embedded", "total"]),
                        "damaged": {"type": "string", "description": "in a listing: why this owner's folder "
                                    "cannot be read (counts are 0); see wikimem repair"}},
                       ["id", "items", "files", "diary_days"]),
    "Committed": _obj({"commit": _NSTR, "replayed": {"type": "boolean"}}, ["commit", "replayed"]),
    "HistoryEntry": _obj({"id": {"type": "string"}, "parents": _arr({"type": "string"}), "time": {"type": "string"},
                          "actor": _NSTR, "run": _NSTR, "action": _NSTR, "file": _NSTR, "item": _NSTR,
                          "date": _NSTR, "time_of_day": _NSTR, "owner": _NSTR, "source_conv": _NSTR,
                          "summary": {"type": "string"}, "changes": {"type": "integer"}},
                         ["id", "time", "summary"]),
    "ItemChange": _obj({"kind": {"type": "string", "enum": ["wiki", "diary"]},
                        "status": {"type": "string", "enum": ["added", "changed", "removed"]},
                        "file": _NSTR, "name": _NSTR, "date": _NSTR, "time": _NSTR,
                        "before": _NSTR, "after": _NSTR}, ["kind", "status"]),
    "Plan": _obj({"target": {"type": "string"}, "changes": _arr(_ref("ItemChange")),
                  "conflicts": _arr({"type": "object"})}, ["changes", "conflicts"]),
    "RunRow": _obj({"owner": {"type": "string"}, "run": _NSTR, "commit": {"type": "string"}, "actor": _NSTR,
                    "source_conv": _NSTR, "first": {"type": "string"}, "last": {"type": "string"},
                    "commits": {"type": "integer"}, "changes": {"type": "integer"},
                    "actions": _arr({"type": "string"}), "seq": {"type": "integer"}, "rolled_back_by": _NSTR},
                   ["owner", "run", "commit", "first", "last", "commits"]),
    "OwnerRunCount": _obj({"owner": {"type": "string"}, "runs": {"type": "integer"}, "commits": {"type": "integer"},
                           "first": {"type": "string"}, "last": {"type": "string"}}, ["owner", "runs"]),
    "OwnerPlan": _obj({"owner": {"type": "string"}, "runs": _arr({"type": "string"}),
                       "commits": _arr({"type": "string"}), "changes": _arr({"type": "object"}),
                       "conflicts": _arr({"type": "object"}), "conflict_count": {"type": "integer"},
                       "error": _NSTR}, ["owner", "changes", "conflicts"]),
    "RetrievedItem": _obj({"item": {"allOf": [_ref("Item"), _obj(
                               {"date": {"type": "string", "description": "a diary entry's day (its file)"},
                                "time": {"type": "string", "description": "a diary entry's HH:MM (its name)"}},
                               description="kind diary: also date and time, as the diary routes name an entry")]},
                           "source": {"type": "string", "enum": ["hit", "link"]},
                           "score": {"type": "number", "nullable": True},
                           "bm25_score": {"type": "number", "nullable": True},
                           "cos_score": {"type": "number", "nullable": True},
                           "via": _NSTR, "via_file": _NSTR, "matched_terms": _arr({"type": "string"}),
                           "tokens_est": {"type": "integer"}, "kind": {"type": "string"},
                           "staged": {"type": "boolean", "description": "with include_staged: whether the entry "
                                      "comes from a staged run (else from the approved memory)"}},
                          ["item", "source"]),
    "Settings": _obj({"tz": {**_NSTR, "description": "IANA time zone: the calendar of diary writes, memorize "
                                                   "and time words in retrieval when a request gives no tz"},
                      "character": {**_NSTR, "description": "memorize's character when a request names none"}},
                     ["tz", "character"]),
    "Job": _obj({"id": {"type": "string"}, "kind": {"type": "string"},
                 "state": {"type": "string", "enum": ["queued", "running", "done", "failed", "cancelled"]},
                 "done": {"type": "integer", "description": "finished steps (done or failed)"},
                 "failed": {"type": "integer"}, "total": {"type": "integer"},
                 "results": _arr(_obj({"step": {"type": "integer"},
                                       "state": {"type": "string",
                                                 "enum": ["pending", "running", "done", "failed", "cancelled"]},
                                       "result": {"description": "the step's result (memorize: entries, run, "
                                                                 "commit, replayed)"},
                                       "error": _obj({"code": {"type": "string"}, "message": {"type": "string"}})},
                                      ["step", "state"])),
                 "params": {"type": "object"}, "created": {"type": "string"}, "updated": {"type": "string"},
                 "finished": _NSTR},
                ["id", "kind", "state", "done", "total", "results"]),
    "JobSummary": _obj({"id": {"type": "string"}, "kind": {"type": "string"},
                        "state": {"type": "string", "enum": ["queued", "running", "done", "failed", "cancelled"]},
                        "done": {"type": "integer"}, "failed": {"type": "integer"}, "total": {"type": "integer"},
                        "params": {"type": "object"}, "owner": {**_NSTR, "description": "a one-owner job's owner"},
                        "scope": {"type": "string", "description": "its owner, or the owner prefix of a bulk job"},
                        "created": {"type": "string"}, "updated": {"type": "string"}, "finished": _NSTR},
                       ["id", "kind", "state", "done", "total", "created"]),
    "RetrievalResult": _obj({"items": _arr(_ref("RetrievedItem")), "unresolved_links": _arr({"type": "string"}),
                             "budget_tokens": {"type": "integer", "nullable": True},
                             "budget_used": {"type": "integer"}, "embedding_used": {"type": "boolean"},
                             "dropped": _arr(_ref("RetrievedItem")),
                             "time_range": {**_arr({"type": "string"}), "nullable": True,
                                            "description": "the diary window searched (local dates), if any"},
                             "time_range_source": _NSTR, "time_range_widened": {"type": "boolean"},
                             "query_terms": _arr({"type": "string"}),
                             "diary": {"type": "string", "enum": ["window", "all"],
                                       "description": "present when the diary was ranked with the wiki (all)"},
                             "vectors": _obj({"embedded": {"type": "integer"}, "total": {"type": "integer"}},
                                             description="with an embedder and explain: how many items had "
                                                         "their vectors"),
                             "diary_index": {"type": "string", "enum": ["building"],
                                             "description": "diary=all answered within 0.25 s while the diary "
                                                            "index's first build was still running: the diary "
                                                            "took part through its time window only"}},
                            ["items"]),
}


def _body(props: dict, required: list[str] | None = None, *, optional: bool = False) -> dict:
    return {"required": not optional,
            "content": {"application/json": {"schema": _obj(props, required, extra=False)}}}


def _ok(schema: dict, status: str = "200", description: str = "OK", *, etag: bool = False) -> dict:
    response: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": schema}}}
    if etag:
        response["headers"] = {"ETag": {"schema": {"type": "string"}, "description": "item etag or owner HEAD"}}
    return {status: response,
            "default": {"description": "an error (statuses: see the API description)",
                        "content": {"application/json": {"schema": _ref("Error")}}}}


def _param(name: str, where: str, schema: dict, *, required: bool = False, description: str = "") -> dict:
    out = {"name": name, "in": where, "required": required or where == "path", "schema": schema}
    if description:
        out["description"] = description
    return out


_OWNER = _param("owner_id", "path", {"type": "string", "pattern": OWNER_ID_PATTERN, "example": "user:ann"},
                description="owner id, e.g. user:ann")
_FILE = _param("file", "path", {"type": "string", "pattern": FILE_PATTERN, "maxLength": 128,
                                "example": "preferences"})
_NAME = _param("name", "path", {"type": "string", "minLength": 1, "maxLength": 200, "example": "likes-the-sea"},
               description="item name")
_HDR_IF_MATCH = _param("If-Match", "header", {"type": "string"},
                       description="the item's etag, or the owner's HEAD commit; 412 if the memory moved on")
_HDR_IF_NONE_MATCH = _param("If-None-Match", "header", {"type": "string", "enum": ["*"]},
                             description="* = create-only: 412 (with the current etag and item) when the item "
                                         "exists; nothing is written")
_HDR_IDEM = _param("Idempotency-Key", "header", {"type": "string", "pattern": r"^[\x21-\x7e]{1,200}$"},
                   description="a retried write with the same key writes nothing again")
_Q = {"type": "string", "maxLength": 200}
_TIME = {"type": "string", "maxLength": 64, "example": "2026-07-21T14:00:00Z",
         "description": "a date (YYYY-MM-DD, a whole UTC day) or an ISO-8601 time (no offset: UTC)"}
_POINT = {"type": "string", "pattern": r"^[0-9A-Za-z:+.\-_~^ ]{1,64}$",
          "description": "a commit id or prefix, HEAD, HEAD~N, or an ISO-8601 time"}


def _op(summary: str, scope: str, responses: dict, *, params: list | None = None, body: dict | None = None,
        tag: str = "memory") -> dict:
    out: dict[str, Any] = {"summary": summary, "tags": [tag], "responses": responses,
                           "description": f"Needs a token with the `{scope}` scope."}
    if params:
        out["parameters"] = params
    if body:
        out["requestBody"] = body
    return out


def _paths() -> dict[str, dict]:
    owner = "/owners/{owner_id}"
    item = owner + "/items/{file}/{name}"
    committed = lambda key, schema: {"allOf": [_ref("Committed"), _obj({key: schema}, [key])]}  # noqa: E731
    entries = _obj({"entries": _arr(_ref("DiaryItem"))}, ["entries"])
    point_body = lambda field, schema: _body({field: schema, "force": {"type": "boolean"},  # noqa: E731
                                              "preview": {"type": "boolean"}, "actor": _WRITE["actor"]}, [field])
    operation = _ok({"oneOf": [_obj({"commit": _NSTR, "replayed": {"type": "boolean"}}, ["commit"]),
                               _obj({"plan": _ref("Plan")}, ["plan"])]},
                    description="the new commit (null when nothing needed undoing), or the plan with preview")
    return {
        "/version": {"get": _op("server and API version", "read", _ok(
            _obj({"version": {"type": "string"}, "api": {"type": "integer"}}, ["version", "api"])), tag="service")},
        "/replication": {"get": _op("replication mode, remote and lag (commits not on the remote yet) per owner "
                                    "and in total", "admin", _ok(_obj({
                                        "mode": {"type": "string", "enum": ["none", "sync", "async"]},
                                        "remote": {"type": "string"},
                                        "lag": _obj({"total": {"type": "integer"},
                                                     "owners": {"type": "object",
                                                                "additionalProperties": {"type": "integer"}}}),
                                        "max_lag": {"type": "integer"}, "freshness": {"type": "number"},
                                        "queued": {"type": "integer"},
                                        "refused": {"type": "object", "description": "owners whose remote main "
                                                    "was refused (never applied): the commit, why, when",
                                                    "additionalProperties": _obj({
                                                        "commit": _NSTR, "reason": {"type": "string"},
                                                        "at": {"type": "string"}}, ["reason"])}},
                                       ["mode"])), tag="service")},
        "/peer/revoked": {"post": {
            "summary": "host to host: a peer's logout notice (a session ended there ends here too)",
            "tags": ["service"], "security": [],
            "description": "Sent by the hosts of a cluster to each other (WIKIMEM_PEERS) when an operator signs "
                           "out; the token is signed with the shared WIKIMEM_SECRET_KEY and good for 60 s. "
                           "Anything else is refused with 403; a signed notice without a session id or a "
                           "finite until is 400.",
            "requestBody": _body({"token": {"type": "string"}}, ["token"]),
            "responses": {"204": {"description": "recorded"},
                          "default": {"description": "an error (statuses: see the API description)",
                                      "content": {"application/json": {"schema": _ref("Error")}}}}}},
        "/owners": {"get": _op("list owners (paged; behind a cluster, gathered from every host in WIKIMEM_PEERS)",
                               "read", _ok(
            _obj({"owners": _arr(_ref("OwnerStats")), "next": _NSTR,
                  "unreachable": _UNREACHABLE}, ["owners", "next"])),
            params=[_param("prefix", "query", {"type": "string", "maxLength": 128}),
                    _param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 1000}),
                    _param("cursor", "query", {"type": "string", "maxLength": 128})], tag="owners")},
        owner: {
            "parameters": [_OWNER],
            "put": _op("create an owner (idempotent)", "write", {
                **_ok(_obj({"owner": _ref("OwnerStats"), "created": {"type": "boolean"}}), "201", "created"),
                "200": {"description": "already there", "content": {"application/json": {"schema": _obj(
                    {"owner": _ref("OwnerStats"), "created": {"type": "boolean"}})}}}}, tag="owners"),
            "get": _op("an owner's counts and last change", "read", _ok(_ref("OwnerStats"), etag=True), tag="owners"),
            "delete": _op("delete an owner", "admin", _ok(_obj({"deleted": {"type": "string"}})), tag="owners"),
        },
        owner + "/export": {"parameters": [_OWNER], "get": _op(
            "archive of the owner's markdown (zip, tar), or its whole history as a git bundle", "read",
            {"200": {"description": "the archive, or (bundle) the whole history with the settings as a git bundle",
                     "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}},
                                 "application/x-tar": {"schema": {"type": "string", "format": "binary"}},
                                 "application/x-git-bundle": {"schema": {"type": "string", "format": "binary"}}}},
             "default": _ok({})["default"]},
            params=[_param("format", "query", {"type": "string", "enum": ["zip", "tar", "bundle"]})], tag="owners")},
        owner + "/files": {"parameters": [_OWNER], "get": _op("RecallFile names", "read", _ok(
            _obj({"files": _arr({"type": "string"})}, ["files"])))},
        owner + "/items": {"parameters": [_OWNER], "get": _op("items, of one file (404 if none) or all", "read", _ok(
            _obj({"items": _arr(_ref("Item"))}, ["items"])),
            params=[_param("file", "query", {"type": "string", "maxLength": 128})])},
        item: {
            "parameters": [_OWNER, _FILE, _NAME],
            "get": _op("one item", "read", _ok(_obj({"item": _ref("Item")}, ["item"]), etag=True)),
            "put": _op("add or update an item (201 when it is new, 200 when it replaced one; empty content is "
                       "refused with 422; If-None-Match: * adds it only if it does not exist, else 412)", "write", {
                           **_ok(committed("item", _ref("Item")), "201", "created", etag=True),
                           "200": _ok(committed("item", _ref("Item")), etag=True)["200"]},
                       params=[_HDR_IF_MATCH, _HDR_IF_NONE_MATCH, _HDR_IDEM],
                       body=_body({"content": _CONTENT, "ts": {**_NSTR, "maxLength": 64}, **_WRITE, **_STAGED},
                                  ["content"])),
            "delete": _op("remove an item", "write", _ok(committed("removed", {"type": "boolean"})),
                          params=[_HDR_IF_MATCH, _HDR_IDEM], body=_body({**_WRITE, **_STAGED}, optional=True)),
        },
        owner + "/diary": {
            "parameters": [_OWNER],
            "post": _op("append a diary event", "write", _ok(committed("entry", _ref("DiaryItem")), "201", "appended"),
                        params=[_HDR_IDEM], body=_body({"content": _CONTENT, **_APPEND, **_WRITE, **_STAGED},
                                                       ["content"])),
            "get": _op("diary events of a window of days", "read", _ok(entries),
                       params=[_param("start", "query", _DATE, required=True),
                               _param("end", "query", _DATE, required=True)]),
        },
        owner + "/diary/dates": {"parameters": [_OWNER], "get": _op("days with a diary file", "read", _ok(
            _obj({"dates": _arr({"type": "string"})}, ["dates"])))},
        owner + "/diary/{day}": {"parameters": [_OWNER, _param("day", "path", _DATE)],
                                 "get": _op("one day's diary events", "read", _ok(entries))},
        owner + "/batch": {"parameters": [_OWNER], "post": _op(
            "several writes as one commit", "write",
            _ok(_obj({"results": _arr({"type": "object"}), "commit": _NSTR, "replayed": {"type": "boolean"}},
                     ["results", "commit"])),
            params=[_HDR_IF_MATCH, _HDR_IDEM],
            body=_body({"ops": {**_arr(_obj({"op": {"type": "string", "enum": ["add", "remove", "diary"]},
                                             "file": {"type": "string"}, "name": {"type": "string"},
                                             "content": _CONTENT, **_APPEND,
                                             "source_conv": _WRITE["source_conv"]}, ["op"])),
                                "minItems": 1, "maxItems": MAX_OPS,
                                "description": f"at most {MAX_OPS} ops and {MAX_BATCH_CHARS} characters of "
                                               "content in all (413 beyond)"},
                        "message": {**_NSTR, "maxLength": 200}, **_WRITE, **_STAGED}, ["ops"]))},
        owner + "/retrieve": {"parameters": [_OWNER], "post": _op(
            "the memories that belong in the prompt", "read", _ok(_ref("RetrievalResult")),
            body=_body({"include_staged": {"type": "boolean", "description": "read the owner's staged runs too "
                                           "(each hit then says whether it is staged); default: the token's "
                                           "(WIKIMEM_STAGED_READ_TOKENS), else false; not with as_of"},
                        "query": {"type": "string", "maxLength": MAX_QUERY_CHARS,
                                  "description": "what to recall; or give `messages` instead"},
                        "messages": {**_arr(_obj({"role": {"type": "string"}, "content": {"type": "string"}},
                                                 ["role"])),
                                     "description": "the chat so far, as messages (not pasted into `query`): "
                                                    "the query is its user turns (the last `messages_last`), "
                                                    "cut to its most recent characters; the character's own "
                                                    "words would only pull its earlier answers back "
                                                    "(bench/quality_chat.py)"},
                        "messages_last": {"type": "integer", "minimum": 1},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RETRIEVE_LIMIT,
                                  "description": f"how many hits at most (default 10; at most {MAX_RETRIEVE_LIMIT}, "
                                                 "422 beyond)"},
                        "budget_tokens": {"type": "integer", "nullable": True, "minimum": 1,
                                          "description": "a prefix cut in injection order; the first entry "
                                                         "always survives, even alone over the budget, unless "
                                                         "budget_strict"},
                        "budget_strict": {"type": "boolean", "description": "nothing over the budget, "
                                                                            "possibly nothing at all"},
                        "expand_links": {"type": "boolean"}, "explain": {"type": "boolean"},
                        "time_range": {"type": "array", "items": _DATE, "minItems": 2, "maxItems": 2,
                                       "nullable": True},
                        "tz": {**_NSTR, "maxLength": 64}, "as_of": {**_POINT, "nullable": True},
                        "diary": {"type": "string", "enum": ["window", "all"], "nullable": True,
                                  "description": "window: diary entries only through a time window (the seed's); "
                                                 "all: diary entries ranked with the wiki (default: "
                                                 "WIKIMEM_DIARY_RECALL, all)"},
                        "recency_half_life": {"type": "number", "nullable": True, "minimum": 0,
                                              "description": "days; with diary=all an entry's score is "
                                                             "multiplied by 0.5 + 0.5*2^(-age/half_life); "
                                                             "0: none (default: WIKIMEM_RECENCY_HALF_LIFE)"}}),
            tag="retrieval")},
        owner + "/memorize": {"parameters": [_OWNER], "post": _op(
            "run the configured LLM over a turn and write its diary entries as one run; with "
            "`Prefer: respond-async`, 202 and a job to poll at its Location (the same Idempotency-Key is "
            "the same job)", "write",
            {**_ok(_obj({"entries": _arr(_ref("DiaryItem")), "run": {"type": "string"}, "commit": _NSTR},
                        ["run"])),
             "202": {"description": "accepted as a background job (Prefer: respond-async)",
                     "headers": {"Location": {"schema": {"type": "string"}, "description": "/api/v1/jobs/<id>"},
                                 "Preference-Applied": {"schema": {"type": "string"}}},
                     "content": {"application/json": {"schema": _ref("Job")}}}},
            params=[_HDR_IDEM, _param("Prefer", "header", {"type": "string"},
                                      description="respond-async: answer 202 at once, run as a job")],
            body=_body({"turn": {"type": "string", "maxLength": MAX_TURN_CHARS},
                        "character": {**_NSTR, "maxLength": 200},
                        "prompt": _NSTR, "ts": _APPEND["ts"], "tz": _APPEND["tz"], **_WRITE, **_STAGED}, ["turn"]),
            tag="memorize")},
        owner + "/diary-tool": {"parameters": [_OWNER], "post": _op(
            "handle the agent's append_diary tool call (400 carries the message for the agent)", "write",
            _ok(committed("entry", _ref("DiaryItem")), "201", "appended"), params=[_HDR_IDEM],
            body=_body({"arguments": {}, **_APPEND, **_WRITE, **_STAGED}, ["arguments"]), tag="memorize")},
        owner + "/settings": {
            "parameters": [_OWNER],
            "get": _op("the owner's settings (unset: null)", "read", _ok(_obj({"settings": _ref("Settings")},
                                                                             ["settings"])), tag="owners"),
            "put": _op("set settings as one commit: fields sent are set (null unsets one), others are kept",
                       "write", _ok(_obj({"settings": _ref("Settings"), "commit": _NSTR,
                                          "replayed": {"type": "boolean"}}, ["settings", "commit"])),
                       params=[_HDR_IDEM],
                       body=_body({"tz": {**_NSTR, "maxLength": 64}, "character": {**_NSTR, "maxLength": 200},
                                   **_WRITE}), tag="owners"),
        },
        "/jobs/{job_id}": {"parameters": [_param("job_id", "path", {"type": "string",
                                                                    "pattern": r"^job_\d{8}T\d{6}Z_[0-9a-f]{12}$"})],
                           "get": _op("a background job: state, progress, each step's result (kept a week after "
                                      "it finished; a token sees the jobs of owners it reaches, admins all)",
                                      "read", _ok(_ref("Job")), tag="memorize")},
        "/jobs": {"get": _op(
            "background jobs, newest first: a token sees the jobs of the owners its prefix reaches, bulk jobs "
            "only with the admin scope; in a cluster with a shared database, the jobs of every host", "read",
            _ok(_obj({"jobs": _arr(_ref("JobSummary")), "next": _NSTR}, ["jobs", "next"])),
            params=[_param("kind", "query", {"type": "string", "maxLength": 128}),
                    _param("state", "query", {"type": "string",
                                              "enum": ["queued", "running", "done", "failed", "cancelled"]}),
                    _param("owner_prefix", "query", {"type": "string", "maxLength": 128}),
                    _param("since", "query", {"type": "string", "maxLength": 64,
                                              "description": "created at or after (a date or ISO-8601 time)"}),
                    _param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 1000}),
                    _param("cursor", "query", {"type": "string", "maxLength": 200})], tag="memorize")},
        "/jobs/{job_id}/cancel": {
            "parameters": [_param("job_id", "path", {"type": "string",
                                                     "pattern": r"^job_\d{8}T\d{6}Z_[0-9a-f]{12}$"})],
            "post": _op("cancel a job that has not started (409 once a step runs): a write token for the jobs of "
                        "its owners, the admin scope for bulk jobs", "write", _ok(_ref("Job")), tag="memorize")},
        owner + "/history": {"parameters": [_OWNER], "get": _op(
            "commits, newest first (filters; older with cursor, newer with after; at jumps to a date)", "read",
            _ok(_obj({"entries": _arr(_ref("HistoryEntry")), "next": _NSTR, "prev": _NSTR,
                      "reverted_by": {"type": "object", "additionalProperties": _arr({"type": "string"}),
                                      "description": "commit id → the revert/rollback commits that undid it"}},
                     ["entries", "next"])),
            params=[_param("file", "query", _Q), _param("item", "query", _Q), _param("run", "query", _Q),
                    _param("actor", "query", _Q), _param("action", "query", _Q),
                    _param("since", "query", _TIME), _param("until", "query", _TIME),
                    _param("at", "query", _TIME),
                    _param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 500}),
                    _param("cursor", "query", _Q), _param("after", "query", _Q)], tag="history")},
        **_operator_paths(),
        **_erasure_paths(owner),
        **_staged_paths(),
        owner + "/commits/{commit}": {"parameters": [_OWNER, _param("commit", "path", _POINT)], "get": _op(
            "one commit with its per-item diff", "read",
            _ok(_obj({"entry": _ref("HistoryEntry"), "changes": _arr(_ref("ItemChange")),
                      "patch": {"type": "string"}}, ["changes"])), tag="history")},
        owner + "/diff": {"parameters": [_OWNER], "get": _op(
            "per-item diff between two points", "read",
            _ok(_obj({"entry": {"nullable": True}, "changes": _arr(_ref("ItemChange")),
                      "patch": {"type": "string"}}, ["changes"])),
            params=[_param("from", "query", _POINT, required=True), _param("to", "query", _POINT)], tag="history")},
        owner + "/revert": {"parameters": [_OWNER], "post": _op(
            "undo one commit, item by item (409 lists conflicts unless forced)", "admin", deepcopy(operation),
            params=[_HDR_IDEM], body=point_body("commit", _POINT), tag="history")},
        owner + "/rollback": {"parameters": [_OWNER], "post": _op(
            "undo every commit of a run as one commit (409 lists conflicts unless forced)", "admin",
            deepcopy(operation), params=[_HDR_IDEM],
            body=point_body("run", {"type": "string", "minLength": 1, "maxLength": 64}), tag="history")},
        owner + "/restore": {"parameters": [_OWNER], "post": _op(
            "make wiki/ and diary/ as they were at a point, as one new commit", "admin", deepcopy(operation),
            params=[_HDR_IDEM], body=point_body("to", _POINT), tag="history")},
        "/openapi.json": {"get": {"summary": "this document", "tags": ["service"], "security": [],
                                  "responses": {"200": {"description": "OpenAPI 3.0",
                                                        "content": {"application/json": {"schema": {
                                                            "type": "object"}}}}}}},
        **_probe_paths(),
    }


# The probes live at the host's root, outside /api/v1: their path items name that server.
_ROOT_SERVER = [{"url": "/", "description": "the host's root (the probes are not under /api/v1)"}]


def _probe_paths() -> dict[str, dict]:
    """``GET /healthz`` (liveness) and ``GET /readyz`` (readiness), no token needed."""
    ready = _obj({"ready": {"type": "boolean"},
                  "remote": {"type": "string", "enum": ["none", "reachable", "unreachable"]},
                  "disk": {"type": "string", "enum": ["ok", "full", "read-only"],
                           "description": "the data root's disk: full below WIKIMEM_READY_MIN_FREE MiB free"},
                  "details": {"type": "object", "description": "paths, free bytes and the remote's message: "
                                                               "only for a bearer token with the admin scope"}},
                 ["ready", "remote", "disk"])
    return {
        "/healthz": {"servers": deepcopy(_ROOT_SERVER), "get": {
            "summary": "liveness: the process answers", "tags": ["service"], "security": [],
            "description": "No token needed. A load balancer's liveness check; see /readyz for readiness.",
            "responses": {"200": {"description": "alive", "content": {"application/json": {"schema": _obj(
                {"ok": {"type": "boolean", "enum": [True]}}, ["ok"])}}}}}},
        "/readyz": {"servers": deepcopy(_ROOT_SERVER), "get": {
            "summary": "readiness: the data root's disk is writable and not full, the remote (if any) answers",
            "tags": ["service"],
            "security": [],
            "description": "No token needed. 503 with Retry-After until the host can take writes.",
            "responses": {
                "200": {"description": "ready", "content": {"application/json": {"schema": ready}}},
                "503": {"description": "not ready yet",
                        "headers": {"Retry-After": {"schema": {"type": "string"}, "description": "seconds"}},
                        "content": {"application/json": {"schema": deepcopy(ready)}}}}}},
    }


_SELECTION = {"run": {**_NSTR, "maxLength": 200}, "actor": {**_NSTR, "maxLength": 200},
              "source_conv": {**_NSTR, "maxLength": 200}, "action": {**_NSTR, "maxLength": 64},
              "since": {**_TIME, "nullable": True}, "until": {**_TIME, "nullable": True},
              "owner_prefix": {**_NSTR, "maxLength": 128}}
_RUNS_DOC = ("Runs of every owner the token reaches (a commit without a run id is a run of its own), newest "
             "last commit first. A run matches the time window when its commits overlap it. The order (last "
             "time, owner, run) is global and the cursor is that key, so a gatherer can ask every host of a "
             "cluster the same query with the same cursor and merge the pages by that order.")


def _operator_paths() -> dict[str, dict]:
    """``GET /runs`` and ``POST /bulk/rollback`` (issue 16)."""
    run_page = _obj({"runs": _arr(_ref("RunRow")), "next": _NSTR,
                     "total": _obj({"runs": {"type": "integer"}, "owners": {"type": "integer"},
                                    "commits": {"type": "integer"}}),
                     "complete": {"type": "boolean", "description": "false until `wikimem index rebuild` ran "
                                  "over owners older than the index"},
                     "unreachable": _UNREACHABLE}, ["runs", "next", "total"])
    per_owner = _obj({"owners": _arr(_ref("OwnerRunCount")), "next": _NSTR, "unreachable": _UNREACHABLE},
                     ["owners", "next"])
    runs = _op("runs across owners (by run, actor, source conversation, action, time, owner prefix)", "read",
               _ok({"oneOf": [run_page, per_owner]}, description="a page of runs, or with by=owner the counts "
                   "per owner"),
               params=[_param("run", "query", _Q), _param("actor", "query", _Q), _param("source_conv", "query", _Q),
                       _param("action", "query", {"type": "string", "maxLength": 64}),
                       _param("since", "query", _TIME), _param("until", "query", _TIME),
                       _param("owner_prefix", "query", {"type": "string", "maxLength": 128}),
                       _param("by", "query", {"type": "string", "enum": ["run", "owner"]}),
                       _param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 1000}),
                       _param("cursor", "query", {"type": "string", "maxLength": 1000})], tag="operators")
    runs["description"] += (" " + _RUNS_DOC + " In a cluster (WIKIMEM_PEERS) the host that answers asks every "
                            "peer the same search and cursor and merges the pages; peers that did not answer are "
                            "listed in unreachable.")
    preview = _obj({"selection": {"type": "object"}, "total": {"type": "object"},
                    "owners": _arr(_ref("OwnerPlan")), "next": _NSTR}, ["total", "owners"])
    started = {"description": "the job was queued (or an earlier one with the same Idempotency-Key is returned)",
               "headers": {"Location": {"schema": {"type": "string"}, "description": "/api/v1/jobs/<id>"}},
               "content": {"application/json": {"schema": _ref("Job")}}}
    bulk = _op("roll back every matching run, one commit per owner, as a durable job (preview: the plan)",
               "admin", {**_ok(preview, description="with preview: every owner's plan and conflicts"),
                         "202": started},
               params=[_HDR_IDEM],
               body=_body({**_SELECTION, "force": {"type": "boolean"}, "preview": {"type": "boolean"},
                           "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                           "cursor": {**_NSTR, "maxLength": 12}}), tag="operators")
    bulk["description"] += (" The selection needs run, actor, source_conv, action, since or until (an owner "
                            "prefix alone is refused). Owners whose items changed after the runs are skipped "
                            "(status conflict) unless force. Each commit's run id is the job id: a bulk "
                            "rollback of run=<job id> undoes the whole action.")
    return {"/runs": {"get": runs}, "/bulk/rollback": {"post": bulk}}


_RECEIPT = _obj({"erasure": {"type": "string", "description": "the keyed digest naming an erasure (never the id)"},
                 "forget": {"type": "string"}, "kind": {"type": "string", "enum": ["erase-owner", "forget"]},
                 "by": _NSTR, "started": _NSTR, "finished": _NSTR,
                 "places": _arr(_obj({"place": {"type": "string"}, "state": {"type": "string"},
                                      "where": {"type": "string"}, "remains": {"type": "string"}},
                                     ["place", "state"])),
                 "remains": _arr({"type": "string"}), "owner": {"type": "string"}, "target": {"type": "object"}},
                ["kind", "places"], description="what was removed where, when and by whom; no memory content")


def _erasure_paths(owner: str) -> dict[str, dict]:
    """Erase an owner, forget an item, an erasure's receipt (issue 27)."""
    started = {"202": {"description": "started: the job (Location: /api/v1/jobs/<id>); its result is the receipt",
                       "content": {"application/json": {"schema": _ref("Job")}}},
               "default": _ok({})["default"]}
    return {
        owner + "/erase": {"parameters": [_OWNER], "post": _op(
            "erase the owner everywhere (repository, remote, indexes, jobs, caches) as a job ending with a receipt; "
            "confirm repeats the owner id", "admin", deepcopy(started),
            body=_body({"confirm": {"type": "string", "maxLength": 128}, "actor": _WRITE["actor"]}, ["confirm"]),
            tag="erasure")},
        owner + "/forget": {"parameters": [_OWNER], "post": _op(
            "forget one wiki item (file, name) or diary entry (date, time, index) with its history: every commit "
            "rewritten without it, the remote replaced, unreachable objects pruned; a job ending with a receipt",
            "admin", deepcopy(started),
            body=_body({"file": {**_NSTR, "maxLength": 128}, "name": {**_NSTR, "maxLength": 200},
                        "date": {**_NSTR, "maxLength": 64}, "time": {**_NSTR, "maxLength": 64},
                        "index": {"type": "integer", "minimum": 0, "maximum": 1000, "nullable": True},
                        "actor": _WRITE["actor"]}), tag="erasure")},
        "/erasures": {"get": _op(
            "the receipt of an owner's erasure, asked by its id (404: none finished)", "admin", _ok(_RECEIPT),
            params=[_param("owner", "query", {"type": "string", "pattern": OWNER_ID_PATTERN}, required=True)],
            tag="erasure")},
    }


_RUN = _param("run", "path", {"type": "string", "pattern": r"^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}$",
                               "example": "run_20260721T063000Z_5f0c"}, description="a staged run's id")
_OWNER_LIST = {**_arr({"type": "string", "maxLength": 128}), "nullable": True}
_STAGED_ROW = _obj({"owner": {"type": "string"}, "run": {"type": "string"}, "actor": _NSTR, "source_conv": _NSTR,
                    "first": {"type": "string"}, "last": {"type": "string"}, "commits": {"type": "integer"},
                    "changes": {"type": "integer"}, "tip": {"type": "string"},
                    "state": {"type": "string", "enum": ["staged", "approved", "discarded", "expired", "gone"]},
                    "held": {"type": "boolean"}, "settled_by": _NSTR, "settled_commit": _NSTR, "settled_at": _NSTR},
                   ["owner", "run", "state"])
_STAGED_RUN = _obj({"run": {"type": "string"}, "tip": {"type": "string"}, "base": {"type": "string"},
                    "actor": _NSTR, "source_conv": _NSTR, "first": {"type": "string"}, "last": {"type": "string"},
                    "commits": {"type": "integer"}, "changes": {"type": "integer"}}, ["run", "tip", "base"])
_SETTLED = _obj({"result": {"type": "object"}, "commit": _NSTR, "replayed": {"type": "boolean"}}, ["commit"])


def _staged_paths() -> dict[str, dict]:
    """Runs on probation (issue 28): across owners, and one owner's."""
    owner = "/owners/{owner_id}/staged"
    listing = _obj({"runs": _arr(_obj({"run": {"type": "string"}, "actor": _NSTR, "owners": {"type": "integer"},
                                       "first": _NSTR, "last": _NSTR, "age_seconds": {"type": "integer",
                                                                                      "nullable": True},
                                       "commits": {"type": "integer"}, "changes": {"type": "integer"},
                                       "held": {"type": "integer"}, "state": {"type": "string"}}, ["run"])),
                    "waiting": _obj({"runs": {"type": "integer"}, "owners": {"type": "integer"}, "oldest": _NSTR,
                                     "oldest_age_seconds": {"type": "integer", "nullable": True}}),
                    "complete": {"type": "boolean"}, "policy": {"type": "object"}}, ["runs", "waiting"])
    started = {"description": "the job was queued (or an earlier one with the same Idempotency-Key is returned)",
               "headers": {"Location": {"schema": {"type": "string"}, "description": "/api/v1/jobs/<id>"}},
               "content": {"application/json": {"schema": {"type": "object"}}}}
    bulk_body = {"owners": _OWNER_LIST, "except_owners": _OWNER_LIST}
    approve = _op("approve a staged run on every owner holding it (or owners, less except_owners) as a durable "
                  "job, one commit per owner (preview: each owner's plan)", "admin",
                  {**_ok(_obj({"run": {"type": "string"}, "total": {"type": "object"},
                               "owners": _arr({"type": "object"})}, ["total", "owners"]),
                         description="with preview: what each owner's approval would change, and its conflicts"),
                   "202": started}, params=[_RUN, _HDR_IDEM],
                  body=_body({**bulk_body, "force": {"type": "boolean"}, "preview": {"type": "boolean"}},
                             optional=True), tag="probation")
    approve["description"] += (" Items main changed since the run started are skipped (reported per owner) "
                               "unless force. An approved run is rolled back like any other (bulk rollback of "
                               "run=<run>).")
    discard = _op("discard a staged run on every owner holding it (or owners, less except_owners) as a durable "
                  "job", "admin", {"202": started, "default": _ok({})["default"]}, params=[_RUN, _HDR_IDEM],
                  body=_body(bulk_body, optional=True), tag="probation")
    return {
        "/staged": {"get": _op("staged runs across owners, oldest first, and how many wait since when", "read",
                               _ok(listing), params=[_param("state", "query", {"type": "string", "enum": [
                                   "staged", "approved", "discarded", "expired", "gone"]}),
                                   _param("run", "query", _Q), _param("actor", "query", _Q),
                                   _param("owner_prefix", "query", {"type": "string", "maxLength": 128})],
                               tag="probation")},
        "/staged/{run}": {"get": _op("every owner's copy of a staged run (staged or settled)", "read",
                                     _ok(_obj({"run": {"type": "string"}, "owners": _arr(_STAGED_ROW)},
                                              ["run", "owners"])),
                                     params=[_RUN, _param("state", "query", {"type": "string", "maxLength": 16})],
                                     tag="probation")},
        "/staged/{run}/approve": {"post": approve},
        "/staged/{run}/discard": {"post": discard},
        "/staged/{run}/hold": {"post": _op(
            "keep a staged run from auto-approval and expiry (held: false lets it go again)", "admin",
            _ok(_obj({"run": {"type": "string"}, "held": {"type": "boolean"}, "owners": {"type": "integer"}},
                     ["run", "held", "owners"])), params=[_RUN],
            body=_body({"held": {"type": "boolean"}, "owners": _OWNER_LIST}, optional=True), tag="probation")},
        owner: {"parameters": [_OWNER], "get": _op("the owner's staged runs, oldest first", "read",
                                                   _ok(_obj({"runs": _arr(_STAGED_RUN)}, ["runs"])),
                                                   tag="probation")},
        owner + "/{run}": {"parameters": [_OWNER, _RUN], "get": _op(
            "a staged run against current main: what it changed, what approving would change now, conflicts",
            "read", _ok(_obj({"run": _STAGED_RUN, "staged": _arr(_ref("ItemChange")),
                              "changes": _arr(_ref("ItemChange")), "conflicts": _arr({"type": "object"})},
                             ["run", "staged", "changes", "conflicts"])), tag="probation")},
        owner + "/{run}/approve": {"parameters": [_OWNER, _RUN], "post": _op(
            "approve one owner's staged run onto main as one commit (the approver in Wikimem-Approved-By)",
            "admin", _ok(_SETTLED), body=_body({"force": {"type": "boolean"}, "actor": _WRITE["actor"],
                                                "edits": _arr(_obj({"file": _NSTR, "name": _NSTR, "date": _NSTR,
                                                                    "time": _NSTR, "before": _NSTR,
                                                                    "content": {"type": "string"}}, ["content"]))},
                                               optional=True), tag="probation")},
        owner + "/{run}/discard": {"parameters": [_OWNER, _RUN], "post": _op(
            "discard one owner's staged run: its branch goes, a commit on main records it", "admin",
            _ok(_SETTLED), body=_body({"actor": _WRITE["actor"]}, optional=True), tag="probation")},
    }


# -- operation ids -----------------------------------------------------------------
# One stable snake_case id per operation: the name of the wikimem.client.Client method that calls it,
# except get_item / put_item / delete_item (Client.fetch / add / remove, the library's names, too bare for a
# generated client), healthz / readyz (Client.health / ready) and peer_revoked (host to host, no Client
# method). A route without an id here makes document() fail: ids are never invented.

OPERATION_IDS: dict[tuple[str, str], str] = {
    ("get", "/healthz"): "healthz",
    ("get", "/readyz"): "readyz",
    ("get", "/version"): "version",
    ("get", "/openapi.json"): "openapi",
    ("get", "/replication"): "replication",
    ("post", "/peer/revoked"): "peer_revoked",
    ("get", "/owners"): "owners",
    ("put", "/owners/{owner_id}"): "create_owner",
    ("get", "/owners/{owner_id}"): "owner_stats",
    ("delete", "/owners/{owner_id}"): "delete_owner",
    ("get", "/owners/{owner_id}/export"): "export",
    ("get", "/owners/{owner_id}/settings"): "settings",
    ("put", "/owners/{owner_id}/settings"): "set_settings",
    ("get", "/owners/{owner_id}/files"): "files",
    ("get", "/owners/{owner_id}/items"): "items",
    ("get", "/owners/{owner_id}/items/{file}/{name}"): "get_item",
    ("put", "/owners/{owner_id}/items/{file}/{name}"): "put_item",
    ("delete", "/owners/{owner_id}/items/{file}/{name}"): "delete_item",
    ("post", "/owners/{owner_id}/diary"): "diary_append",
    ("get", "/owners/{owner_id}/diary"): "diary_window",
    ("get", "/owners/{owner_id}/diary/dates"): "diary_dates",
    ("get", "/owners/{owner_id}/diary/{day}"): "diary_day",
    ("post", "/owners/{owner_id}/diary-tool"): "diary_tool",
    ("post", "/owners/{owner_id}/batch"): "batch",
    ("post", "/owners/{owner_id}/retrieve"): "retrieve",
    ("post", "/owners/{owner_id}/memorize"): "memorize",
    ("get", "/jobs/{job_id}"): "job",
    ("get", "/jobs"): "jobs",
    ("post", "/jobs/{job_id}/cancel"): "cancel_job",
    ("get", "/owners/{owner_id}/history"): "history",
    ("get", "/owners/{owner_id}/commits/{commit}"): "commit",
    ("get", "/owners/{owner_id}/diff"): "diff",
    ("post", "/owners/{owner_id}/revert"): "revert",
    ("post", "/owners/{owner_id}/rollback"): "rollback",
    ("post", "/owners/{owner_id}/restore"): "restore",
    ("get", "/runs"): "runs",
    ("post", "/bulk/rollback"): "bulk_rollback",
    ("post", "/owners/{owner_id}/erase"): "erase_owner",
    ("post", "/owners/{owner_id}/forget"): "forget",
    ("get", "/erasures"): "erasure",
    ("get", "/staged"): "staged_runs",
    ("get", "/staged/{run}"): "staged_run",
    ("post", "/staged/{run}/approve"): "approve_staged_run",
    ("post", "/staged/{run}/discard"): "discard_staged_run",
    ("post", "/staged/{run}/hold"): "hold_staged_run",
    ("get", "/owners/{owner_id}/staged"): "owner_staged",
    ("get", "/owners/{owner_id}/staged/{run}"): "staged_review",
    ("post", "/owners/{owner_id}/staged/{run}/approve"): "approve_staged",
    ("post", "/owners/{owner_id}/staged/{run}/discard"): "discard_staged",
}

# -- examples ------------------------------------------------------------------------
# One memory, user:ann, seen through every operation. Each example is checked against its schema
# (tests/integration/test_openapi.py) and each request example is sent to the real app there.

_C0, _C1, _C2, _C3 = ("5b7c4e40d56cc9685ea177ec06bec101db229a37", "4377991b5003c0c0e32d74809f614b917b34da6b",
                      "1225e4fe881d1a6580865d6d5fe99ccb161b3b9b", "77eb1d7dc1d39166470a2eca1f9afc39bd718d3f")
_JOB_ID = "job_20260721T063000Z_02e9e046d924"
_TS = "2026-07-21T14:30:00+08:00"
_EX_ITEM = {"file": "preferences", "name": "likes-the-sea", "content": "Likes the sea; see [[people:mia]].",
            "owner": "user:ann", "source_conv": "conv_101", "ts": _TS}
_EX_MIA = {"file": "people", "name": "mia", "content": "A friend who surfs.", "owner": "user:ann",
           "source_conv": None, "ts": _TS}
_EX_ENTRY = {"date": "2026-07-21", "time": "14:30", "content": "Went to the beach with [[people:mia]].",
             "owner": "user:ann", "source_conv": "conv_101", "ts": _TS}
_EX_STATS = {"id": "user:ann", "items": 2, "files": 2, "diary_days": 1, "last_change": "2026-07-21T06:30:00Z",
             "head": _C2}
_EX_ENTRY_LOG = {"id": _C2, "parents": [_C1], "time": "2026-07-21T06:30:00Z", "actor": "Elaina", "run": "run_1",
                 "action": "diary", "file": None, "item": None, "date": "2026-07-21", "time_of_day": "14:30",
                 "owner": "user:ann", "source_conv": "conv_101", "summary": "diary 2026-07-21 14:30", "changes": 1}
_EX_ITEM_LOG = {**_EX_ENTRY_LOG, "id": _C1, "parents": [_C0], "action": "add", "file": "preferences",
                "item": "likes-the-sea", "date": None, "time_of_day": None, "summary": "add preferences/likes-the-sea"}
_EX_DIARY_GONE = {"kind": "diary", "status": "removed", "file": None, "name": None, "date": "2026-07-21",
                  "time": "14:30", "before": _EX_ENTRY["content"], "after": None}
_EX_ITEM_GONE = {"kind": "wiki", "status": "removed", "file": "preferences", "name": "likes-the-sea", "date": None,
                 "time": None, "before": _EX_ITEM["content"], "after": None}
_EX_ITEM_ADDED = {**_EX_ITEM_GONE, "status": "added", "before": None, "after": _EX_ITEM["content"]}
_EX_PATCH = ("--- /dev/null\n+++ b/wiki/preferences.md\n@@ -0,0 +1,7 @@\n+# preferences\n+\n+## likes-the-sea\n+\n"
             "+Likes the sea; see [[people:mia]].\n+\n+<!-- wikimem: owner=user:ann | source_conv=conv_101 | "
             f"ts={_TS} -->\n")
_EX_HIT = {"item": _EX_ITEM, "source": "hit", "score": 0.91, "bm25_score": 0.91, "cos_score": None, "via": None,
           "via_file": None, "matched_terms": ["sea"], "tokens_est": 9, "kind": "wiki"}
_EX_LINK: dict[str, Any] = {**_EX_HIT, "item": _EX_MIA, "source": "link", "score": None, "bm25_score": None,
                            "via": "likes-the-sea", "via_file": "preferences", "matched_terms": [], "tokens_est": 5}
_EX_DIARY_HIT: dict[str, Any] = {
    **_EX_HIT, "kind": "diary", "score": 0.64, "bm25_score": 0.64, "matched_terms": ["beach"], "tokens_est": 10,
    "item": {"file": _EX_ENTRY["date"], "name": _EX_ENTRY["time"], **_EX_ENTRY}}
_EX_RETRIEVED = {"items": [_EX_HIT, _EX_LINK, _EX_DIARY_HIT], "budget_tokens": 300, "budget_used": 24,
                 "embedding_used": False, "dropped": [], "unresolved_links": [], "time_range": None,
                 "time_range_source": None, "time_range_widened": False, "query_terms": ["sea", "beach"],
                 "diary": "all"}
_EX_WHEN = {"created": "2026-07-21T06:30:00+00:00", "updated": "2026-07-21T06:30:02+00:00"}
_EX_MEMORIZE_JOB = {"id": _JOB_ID, "kind": "memorize", "state": "queued", "done": 0, "failed": 0, "total": 1,
                    "results": [{"step": 0, "state": "pending"}],
                    "params": {"owner": "user:ann", "run": "run_20260721T063000Z_5f0c"},
                    "created": _EX_WHEN["created"], "updated": _EX_WHEN["created"], "finished": None}
_EX_BULK_PARAMS = {"actor": "admin", "force": False, "selection": {"run": "run_1"}, "within": ""}
_EX_BULK_JOB = {"id": _JOB_ID, "kind": "bulk-rollback", "state": "done", "done": 1, "failed": 0, "total": 1,
                "results": [{"step": 0, "state": "done", "result": {
                    "owner": "user:ann", "status": "done", "runs": ["run_1"], "commits": [], "changes": 2,
                    "commit": _C3, "replayed": False}}],
                "params": _EX_BULK_PARAMS, **_EX_WHEN, "finished": _EX_WHEN["updated"]}
_EX_ERASE_JOB = {"id": _JOB_ID, "kind": "erase-owner", "state": "queued", "done": 0, "failed": 0, "total": 1,
                 "results": [{"step": 0, "state": "pending"}],
                 "params": {"erasure": "er_7c1d3e5f9a0b2c4d6e8f1a3b5c7d9e0f", "actor": "admin", "within": ""},
                 "created": _EX_WHEN["created"], "updated": _EX_WHEN["created"], "finished": None}
_EX_RECEIPT = {"erasure": "er_7c1d3e5f9a0b2c4d6e8f1a3b5c7d9e0f", "kind": "erase-owner", "by": "admin",
               "started": "2026-07-21T06:30:00+00:00", "finished": "2026-07-21T06:30:02+00:00",
               "places": [{"place": "owner repository", "state": "removed"},
                          {"place": "remote", "where": "https://git.example/wikimem/{owner}.git",
                           "state": "emptied: main replaced by the erasure tombstone (no text, no id)",
                           "remains": "delete the owner's repository on the git server"}],
               "remains": ["remote: delete the owner's repository on the git server"],
               "owner": "not recorded: the erasure is named by a keyed digest of the owner id"}
_EX_RUN = {"owner": "user:ann", "run": "run_1", "commit": _C2, "actor": "Elaina", "source_conv": "conv_101",
           "first": "2026-07-21T06:29:58Z", "last": "2026-07-21T06:30:00Z", "commits": 2, "changes": 2,
           "actions": ["add", "diary"], "seq": 3, "rolled_back_by": None}
_EX_PLAN = {"target": "run_1", "changes": [_EX_DIARY_GONE, _EX_ITEM_GONE], "conflicts": []}
_EX_ERROR = {"error": {"code": "not_found", "message": "no item 'likes-the-sea' in 'preferences'"}}


class _Named(dict):
    """Several named examples (OpenAPI ``examples``) rather than one (``example``)."""


def _named(**cases: tuple[str, Any]) -> _Named:
    """OpenAPI ``examples``: name → (summary, value)."""
    return _Named({name: {"summary": summary, "value": value} for name, (summary, value) in cases.items()})


_EX_STAGED_RUN = {"run": "run_v7_1", "tip": _C3, "base": _C2, "actor": "memorize-v7", "source_conv": "conv_102",
                  "first": "2026-07-21T06:31:00Z", "last": "2026-07-21T06:31:00Z", "commits": 1, "changes": 1}
_EX_STAGED_ADDED = {**_EX_DIARY_GONE, "status": "added", "time": "15:02", "before": None,
                    "after": "Started learning to surf."}
_EX_STAGED_ROW = {"owner": "user:ann", "run": "run_v7_1", "actor": "memorize-v7", "source_conv": "conv_102",
                  "first": "2026-07-21T06:31:00Z", "last": "2026-07-21T06:31:00Z", "commits": 1, "changes": 1,
                  "tip": _C3, "state": "staged", "held": False, "settled_by": None, "settled_commit": None,
                  "settled_at": None}
_EX_STAGED_JOB = {"id": _JOB_ID, "kind": "staged-approve", "action": "approve", "state": "queued", "done": 0,
                  "total": 1, "failed": 0, "run": "run_v7_1", "force": False, "actor": "admin",
                  "reason": "discarded", "within": "", "counts": {"pending": 1}, "results": [],
                  "created": _EX_WHEN["created"], "finished": None}
_STAGED_EXAMPLES: dict[str, dict[str, Any]] = {
    "staged_runs": {"200": {"runs": [{"run": "run_v7_1", "actor": "memorize-v7", "actors": ["memorize-v7"],
                                      "owners": 52, "first": "2026-07-21T06:31:00Z", "last": "2026-07-21T06:40:00Z",
                                      "age_seconds": 3600, "commits": 52, "changes": 61, "held": 0,
                                      "state": "staged"}],
                            "waiting": {"runs": 1, "owners": 52, "oldest": "2026-07-21T06:31:00Z",
                                        "oldest_age_seconds": 3600},
                            "complete": True,
                            "policy": {"actors": ["memorize-v7"], "tokens": [], "read_tokens": [],
                                       "auto_approve_seconds": 0, "expire_seconds": 2592000}}},
    "staged_run": {"200": {"run": "run_v7_1", "owners": [_EX_STAGED_ROW]}},
    "approve_staged_run": {"request": _named(
                               preview=("each owner's plan, writing nothing", {"preview": True}),
                               start=("approve all but one owner", {"except_owners": ["user:bob"]})),
                           "200": {"run": "run_v7_1", "total": {"owners": 1, "changes": 1, "conflicts": 0,
                                                                "owners_with_conflicts": 0},
                                   "owners": [{"owner": "user:ann", "tip": _C3, "staged": 1,
                                               "changes": [_EX_STAGED_ADDED], "change_count": 1, "conflicts": [],
                                               "conflict_count": 0}]},
                           "202": _EX_STAGED_JOB},
    "discard_staged_run": {"request": {"owners": ["user:bob"]},
                           "202": {**_EX_STAGED_JOB, "kind": "staged-discard", "action": "discard"}},
    "hold_staged_run": {"request": {"held": True}, "200": {"run": "run_v7_1", "held": True, "owners": 52}},
    "owner_staged": {"200": {"runs": [_EX_STAGED_RUN]}},
    "staged_review": {"200": {"run": _EX_STAGED_RUN, "staged": [_EX_STAGED_ADDED], "changes": [_EX_STAGED_ADDED],
                              "conflicts": []}},
    "approve_staged": {"request": _named(
                           plain=("approve as it is", {"actor": "alice"}),
                           edited=("edit, then approve", {"edits": [{"date": "2026-07-21", "time": "15:02",
                                                                     "content": "Started surfing lessons."}]})),
                       "200": {"result": {"changes": [_EX_STAGED_ADDED], "conflicts": [], "skipped": 0,
                                          "forced": 0, "approved_by": "alice", "tip": _C3},
                               "commit": _C3, "replayed": False}},
    "discard_staged": {"request": {"actor": "alice"},
                       "200": {"result": {"discarded": 1, "reason": "discarded", "tip": _C3}, "commit": _C3,
                               "replayed": False}},
}


# operationId → {"request": an example body, or _named(...) cases; "<status>": the answer's example}
EXAMPLES: dict[str, dict[str, Any]] = {
    "healthz": {"200": {"ok": True}},
    "readyz": {"200": {"ready": True, "remote": "none", "disk": "ok"},
               "503": {"ready": False, "remote": "reachable", "disk": "full"}},
    "version": {"200": {"version": wikimem.__version__, "api": 1}},
    "openapi": {"200": {"openapi": "3.0.3", "info": {"title": "wikimem host API", "version": wikimem.__version__},
                        "paths": {"/version": {"get": {"operationId": "version"}}}}},
    "replication": {"200": {"mode": "async", "remote": "ssh://git@backup/srv/wikimem/{owner}.git",
                            "lag": {"total": 3, "owners": {"user:ann": 3}}, "max_lag": 3, "freshness": 1.5,
                            "queued": 1, "refused": {}}},
    "peer_revoked": {"request": {"token": "eyJzaWQiOiAiLi4uIn0.ZkVx1g.signature"}},
    "owners": {"200": {"owners": [_EX_STATS], "next": None}},
    "create_owner": {"201": {"owner": {**_EX_STATS, "items": 0, "files": 0, "diary_days": 0, "head": _C0},
                             "created": True},
                     "200": {"owner": _EX_STATS, "created": False}},
    "owner_stats": {"200": {**_EX_STATS, "vectors": {"embedded": 2, "total": 2}}},
    "delete_owner": {"200": {"deleted": "user:ann"}},
    "settings": {"200": {"settings": {"tz": "Asia/Shanghai", "character": None}}},
    "set_settings": {"request": {"tz": "Asia/Shanghai"},
                     "200": {"settings": {"tz": "Asia/Shanghai", "character": None}, "commit": _C0,
                             "replayed": False}},
    "files": {"200": {"files": ["people", "preferences"]}},
    "items": {"200": {"items": [_EX_MIA, _EX_ITEM]}},
    "get_item": {"200": {"item": _EX_ITEM}},
    "put_item": {"request": {"content": _EX_ITEM["content"], "source_conv": "conv_101", "run": "run_1",
                             "actor": "Elaina"},
                 "201": {"item": _EX_ITEM, "commit": _C1, "replayed": False},
                 "200": {"item": _EX_ITEM, "commit": _C1, "replayed": True}},
    "delete_item": {"request": {"run": "run_3", "actor": "Elaina"},
                    "200": {"removed": True, "commit": _C3, "replayed": False}},
    "diary_append": {"request": {"content": _EX_ENTRY["content"], "date": "2026-07-21", "time": "14:30",
                                 "tz": "Asia/Shanghai", "source_conv": "conv_101", "run": "run_1",
                                 "actor": "Elaina"},
                     "201": {"entry": _EX_ENTRY, "commit": _C2, "replayed": False}},
    "diary_window": {"200": {"entries": [_EX_ENTRY]}},
    "diary_dates": {"200": {"dates": ["2026-07-21"]}},
    "diary_day": {"200": {"entries": [_EX_ENTRY]}},
    "diary_tool": {"request": {"arguments": {"content": "Went to the beach with [[people:mia]]."},
                               "tz": "Asia/Shanghai", "source_conv": "conv_101", "run": "run_1"},
                   "201": {"entry": _EX_ENTRY, "commit": _C2, "replayed": False}},
    "batch": {"request": {"ops": [{"op": "add", "file": "people", "name": "mia", "content": _EX_MIA["content"]},
                                  {"op": "diary", "content": "Met Mia.", "date": "2026-07-22", "time": "09:00"}],
                          "run": "run_2", "actor": "importer", "message": "import from the old bot"},
              "200": {"results": [{"op": "add", "item": _EX_MIA},
                                  {"op": "diary", "entry": {**_EX_ENTRY, "date": "2026-07-22", "time": "09:00",
                                                            "content": "Met Mia.", "source_conv": None}}],
                      "commit": _C3, "replayed": False}},
    "retrieve": {"request": _named(
                     query=("a query within a token budget", {"query": "does she like the sea?",
                                                              "budget_tokens": 300}),
                     messages=("the chat so far, diary ranked with the wiki",
                               {"messages": [{"role": "user", "content": "Shall we go to the sea this weekend?"},
                                             {"role": "assistant", "content": "Sounds lovely!"}],
                                "messages_last": 2, "diary": "all", "recency_half_life": 30,
                                "budget_tokens": 300, "budget_strict": True})),
                 "200": _EX_RETRIEVED},
    "memorize": {"request": {"turn": "user: I started learning to surf\nassistant: How exciting!",
                             "character": "Elaina", "tz": "Asia/Shanghai", "source_conv": "conv_102"},
                 "200": {"entries": [{**_EX_ENTRY, "time": "15:02", "content": "Started learning to surf.",
                                      "source_conv": "conv_102"}],
                         "run": "run_20260721T070200Z_8d1e", "commit": _C3, "replayed": False},
                 "202": _EX_MEMORIZE_JOB},
    "job": {"200": _EX_BULK_JOB},
    "jobs": {"200": {"jobs": [{k: v for k, v in _EX_MEMORIZE_JOB.items() if k != "results"}
                              | {"owner": "user:ann", "scope": "user:ann"}], "next": None}},
    "cancel_job": {"200": {**_EX_MEMORIZE_JOB, "state": "cancelled", "results": [{"step": 0, "state": "cancelled"}],
                           "finished": _EX_WHEN["created"]}},
    "erase_owner": {"request": {"confirm": "user:ann"}, "202": _EX_ERASE_JOB},
    "forget": {"request": _named(item=("a wiki item", {"file": "preferences", "name": "likes-the-sea"}),
                                 entry=("a diary entry", {"date": "2026-07-21", "time": "14:30"})),
               "202": {**_EX_ERASE_JOB, "kind": "forget", "params": {
                   "owner": "user:ann", "forget": "fg_2b1f0c9d8e7a6b5c4d3e2f1a0b9c8d7e", "actor": "admin",
                   "target": {"kind": "wiki", "file": "preferences"}, "within": ""}}},
    "erasure": {"200": _EX_RECEIPT},
    "history": {"200": {"entries": [_EX_ENTRY_LOG, _EX_ITEM_LOG], "next": _C1, "prev": None, "reverted_by": {}}},
    "commit": {"200": {"entry": _EX_ITEM_LOG, "changes": [_EX_ITEM_ADDED], "patch": _EX_PATCH}},
    "diff": {"200": {"entry": None, "changes": [_EX_ITEM_ADDED], "patch": _EX_PATCH}},
    "revert": {"request": _named(apply=("undo one commit", {"commit": _C1, "actor": "operator"}),
                                 preview=("what it would change", {"commit": _C1, "preview": True})),
               "200": _named(applied=("the new commit", {"commit": _C3, "replayed": False}),
                             preview=("the plan (preview)", {"plan": {**_EX_PLAN, "target": _C1,
                                                                      "changes": [_EX_ITEM_GONE]}}))},
    "rollback": {"request": _named(apply=("undo a run", {"run": "run_1", "actor": "operator"}),
                                   preview=("what it would change", {"run": "run_1", "preview": True}),
                                   force=("over later edits", {"run": "run_1", "force": True})),
                 "200": _named(applied=("the new commit", {"commit": _C3, "replayed": False}),
                               preview=("the plan (preview)", {"plan": _EX_PLAN}))},
    "restore": {"request": _named(apply=("back to a time", {"to": "2026-07-21T06:00:00Z"}),
                                  preview=("what it would change", {"to": "HEAD~2", "preview": True})),
                "200": _named(applied=("the new commit", {"commit": _C3, "replayed": False}),
                              preview=("the plan (preview)", {"plan": {**_EX_PLAN, "target": _C0}}))},
    "runs": {"200": _named(runs=("runs, newest first", {"runs": [_EX_RUN], "next": None,
                                                        "total": {"runs": 1, "owners": 1, "commits": 2},
                                                        "complete": True}),
                           by_owner=("by=owner: counts per owner", {"owners": [{
                               "owner": "user:ann", "runs": 1, "commits": 2, "first": _EX_RUN["first"],
                               "last": _EX_RUN["last"]}], "next": None}))},
    "bulk_rollback": {"request": _named(
                          preview=("the plan, writing nothing", {"actor": "bad-bot", "since": "2026-07-21",
                                                                 "owner_prefix": "user:", "preview": True}),
                          start=("start the job", {"actor": "bad-bot", "since": "2026-07-21",
                                                   "owner_prefix": "user:"})),
                      "200": {"selection": {"actor": "bad-bot", "since": "2026-07-21", "owner_prefix": "user:"},
                              "total": {"owners": 1, "runs": 1, "changes": 2, "changes_if_forced": 2, "conflicts": 0,
                                        "owners_with_conflicts": 0, "owners_with_nothing_to_do": 0},
                              "owners": [{"owner": "user:ann", "runs": ["run_1"], "commits": [],
                                          "changes": [_EX_DIARY_GONE, _EX_ITEM_GONE], "conflicts": [],
                                          "conflict_count": 0, "error": None}],
                              "next": None},
                      "202": {**_EX_BULK_JOB, "state": "queued", "done": 0,
                              "results": [{"step": 0, "state": "pending"}],
                              "params": {**_EX_BULK_PARAMS, "selection": {
                                  "actor": "bad-bot", "since": "2026-07-21", "owner_prefix": "user:"}},
                              "updated": _EX_WHEN["created"], "finished": None}},
    **_STAGED_EXAMPLES,
}


def _media(target: dict) -> dict | None:
    return (target.get("content") or {}).get("application/json")


def _annotate(paths: dict[str, dict]) -> dict[str, dict]:
    """Give every operation its id and examples (``KeyError`` for a route without an id)."""
    for path, item in paths.items():
        for verb, op in item.items():
            if verb not in ("get", "put", "post", "delete", "patch"):
                continue
            op_id = OPERATION_IDS.get((verb, path))
            if op_id is None:
                raise KeyError(f"no operationId for {verb.upper()} {path}: add one to OPERATION_IDS")
            op["operationId"] = op_id
            examples = EXAMPLES.get(op_id, {})
            for where, value in examples.items():
                target = op.get("requestBody") if where == "request" else op["responses"][where]
                media = _media(target)
                if media is None:
                    raise KeyError(f"{op_id}: no JSON body for the {where} example")
                if isinstance(value, _Named):
                    media["examples"] = {name: deepcopy(dict(case)) for name, case in value.items()}
                else:
                    media["example"] = deepcopy(value)
            error = _media(op["responses"].get("default") or {})
            if error is not None:
                error["example"] = deepcopy(_EX_ERROR)
    return paths


_DESCRIPTION = f"""Git-backed markdown memory for LLM chat bots. Every write answers with the commit id;
errors are {{"error": {{"code", "message"}}}}. A write's actor is the body's actor, else the token's name
(memorize included: its character is who the model is asked to be). The same memory is offered as MCP tools
(retrieve, diary_append, put_item, memorize, history) at /mcp on the host's root, streamable HTTP, with the
same tokens.

Statuses: 400 bad_request, a malformed request (not JSON, not an object, a field unknown,
missing or of the wrong JSON type, a header or cursor not of its syntax; bad_tool_call, a
diary tool call the agent must make again); 401/403 token; 404; 409 conflicts; 412
precondition_failed (If-Match, If-None-Match); 413 too_large (the body, or one of the limits
below); 422 a well-formed request with a value refused by its rules: invalid_name (a file,
item, owner, date, time or provenance value), invalid_value (a time zone, a range such as
retrieve's limit, a choice, a length), idempotency_key_reused (the same Idempotency-Key with
another request); 429
quota_exceeded with Retry-After (owners created per minute per token prefix), 429
queue_full with Retry-After (a new background job past the open jobs one token prefix
(WIKIMEM_JOBS_PER_PREFIX, 100) or one owner (WIKIMEM_JOBS_PER_OWNER, 20) may have, or the
jobs database past its size budget), 403
quota_exceeded (owners per token prefix), 501/502 the LLM, 503 busy or timeout with
Retry-After, 507 storage_full with Retry-After.

Limits (413): content {MAX_CONTENT_CHARS} characters per item or diary entry; query
{MAX_QUERY_CHARS}; memorize turn {MAX_TURN_CHARS}; a batch {MAX_OPS} ops and
{MAX_BATCH_CHARS} characters of content. Provenance values (run, actor, source_conv,
message) are at most 200 characters of visible text: control, format (bidi,
zero-width) and line-separator characters are refused with 422. A retrieve returns at
most {MAX_RETRIEVE_LIMIT} hits (limit)."""


def document() -> dict[str, Any]:
    """The OpenAPI document (a fresh dict each call)."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "wikimem host API", "version": wikimem.__version__,
                 "description": _DESCRIPTION},
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearer": []}],
        "paths": _annotate(_paths()),
        "components": {"schemas": deepcopy(SCHEMAS),
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }
