"""The pieces of the OpenAPI document: patterns, schema helpers, the shared components (:data:`SCHEMAS`) and the
parameters the paths of :mod:`webapp.openapi.paths` share."""

from __future__ import annotations

from typing import Any

from wikimem.limits import MAX_CONTENT_CHARS
from wikimem.naming import MAX_PRESENT

OWNER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
FILE_PATTERN = r"^[a-z0-9_][a-z0-9_-]*$"
DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "example": "2026-07-21"}
NSTR = {"type": "string", "nullable": True}
UNREACHABLE = {"type": "array", "items": {"type": "string"},
                "description": "peers of a cluster that did not answer: the page lacks their owners"}
CONTENT = {"type": "string", "maxLength": MAX_CONTENT_CHARS}
# Where an entry was said and who was there (SPEC §11, "Channels"): on entries that say so.
ROOM = {"channel": {**NSTR, "pattern": OWNER_ID_PATTERN, "description": "where it was said: a channel id "
                    "(validated like an owner id); dm = a direct chat"},
        "present": {"type": "array", "maxItems": MAX_PRESENT, "items": {"type": "string", "pattern": OWNER_ID_PATTERN},
                    "description": "who was there: persons' owner ids and char:<character>"}}


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(props: dict, required: list[str] | None = None, *, extra: bool = True, description: str = "") -> dict:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if description:
        out["description"] = description
    if not extra:
        out["additionalProperties"] = False
    return out


def arr(items: dict) -> dict:
    return {"type": "array", "items": items}


WRITE = {"run": {**NSTR, "maxLength": 200}, "actor": {**NSTR, "maxLength": 200},
          "source_conv": {**NSTR, "maxLength": 200}}
LAYER_DOC = ("a registered character's id: its own layer of the person's memory (characters/<id>/); without it, "
             "the shared layer; a token bound to a character reaches only its own (403)")
STAGED = {"staged": {"type": "boolean", "description": "put the write on probation: onto the branch "
                      "staged/<run> (run: the body's, else one made from the Idempotency-Key or new), not main; "
                      "the host's policy may stage it anyway (WIKIMEM_STAGED_ACTORS, WIKIMEM_STAGED_TOKENS); "
                      "a character's write to the shared layer is a proposal by its shared_writes policy"},
          "character": {**NSTR, "maxLength": 64, "description": LAYER_DOC}}
APPEND = {"ts": {**NSTR, "maxLength": 64}, "date": {**NSTR, "maxLength": 64},
           "time": {**NSTR, "maxLength": 64}, "tz": {**NSTR, "maxLength": 64}}

SCHEMAS: dict[str, dict] = {
    "Character": obj({"id": {"type": "string"}, "owner": {"type": "string", "description": "char:<id>"},
                       "name": {"type": "string"}, "persona": NSTR,
                       "shared_writes": {"type": "string", "enum": ["staged", "direct", "none"]},
                       "deleted": {"type": "boolean"}, "updated": NSTR, "head": NSTR},
                      ["id", "owner", "name", "shared_writes", "deleted"]),
    "Error": obj({"error": obj({"code": {"type": "string"}, "message": {"type": "string"},
                                  "conflicts": arr({"type": "object"}), "current": {},
                                  "item": {"type": "object", "description": "412 of an item write: the item there"}},
                                 ["code", "message"])}, ["error"]),
    "Item": obj({"file": {"type": "string"}, "name": {"type": "string"}, "content": {"type": "string"},
                  "owner": NSTR, "source_conv": NSTR, "ts": NSTR, **ROOM}, ["file", "name", "content"]),
    "DiaryItem": obj({"date": {"type": "string"}, "time": {"type": "string"}, "content": {"type": "string"},
                       "owner": NSTR, "source_conv": NSTR, "ts": NSTR, **ROOM}, ["date", "time", "content"]),
    "OwnerStats": obj({"id": {"type": "string"}, "items": {"type": "integer"}, "files": {"type": "integer"},
                        "diary_days": {"type": "integer"}, "last_change": NSTR, "head": NSTR,
                        "vectors": obj({"embedded": {"type": "integer"}, "total": {"type": "integer"}},
                                        ["embedded", "total"]),
                        "damaged": {"type": "string", "description": "in a listing: why this owner's folder "
                                    "cannot be read (counts are 0); see wikimem repair"}},
                       ["id", "items", "files", "diary_days"]),
    "Committed": obj({"commit": NSTR, "replayed": {"type": "boolean"},
                      "staged": {"type": "boolean", "description": "present (true) when the write went on probation: "
                                 "a staged run to approve, not yet on the memory it addresses"}},
                     ["commit", "replayed"]),
    "HistoryEntry": obj({"id": {"type": "string"}, "parents": arr({"type": "string"}), "time": {"type": "string"},
                          "actor": NSTR, "run": NSTR, "action": NSTR, "file": NSTR, "item": NSTR,
                          "date": NSTR, "time_of_day": NSTR, "owner": NSTR, "source_conv": NSTR,
                          "summary": {"type": "string"}, "changes": {"type": "integer"}},
                         ["id", "time", "summary"]),
    "ItemChange": obj({"kind": {"type": "string", "enum": ["wiki", "diary"]},
                        "status": {"type": "string", "enum": ["added", "changed", "removed"]},
                        "file": NSTR, "name": NSTR, "date": NSTR, "time": NSTR,
                        "before": NSTR, "after": NSTR, **ROOM}, ["kind", "status"]),
    "Plan": obj({"target": {"type": "string"}, "changes": arr(ref("ItemChange")),
                  "conflicts": arr({"type": "object"})}, ["changes", "conflicts"]),
    "RunRow": obj({"owner": {"type": "string"}, "run": NSTR, "commit": {"type": "string"}, "actor": NSTR,
                    "source_conv": NSTR, "first": {"type": "string"}, "last": {"type": "string"},
                    "commits": {"type": "integer"}, "changes": {"type": "integer"},
                    "actions": arr({"type": "string"}), "seq": {"type": "integer"}, "rolled_back_by": NSTR},
                   ["owner", "run", "commit", "first", "last", "commits"]),
    "OwnerRunCount": obj({"owner": {"type": "string"}, "runs": {"type": "integer"}, "commits": {"type": "integer"},
                           "first": {"type": "string"}, "last": {"type": "string"}}, ["owner", "runs"]),
    "OwnerPlan": obj({"owner": {"type": "string"}, "runs": arr({"type": "string"}),
                       "commits": arr({"type": "string"}), "changes": arr({"type": "object"}),
                       "conflicts": arr({"type": "object"}), "conflict_count": {"type": "integer"},
                       "error": NSTR}, ["owner", "changes", "conflicts"]),
    "RetrievedItem": obj({"item": {"allOf": [ref("Item"), obj(
                               {"date": {"type": "string", "description": "a diary entry's day (its file)"},
                                "time": {"type": "string", "description": "a diary entry's HH:MM (its name)"}},
                               description="kind diary: also date and time, as the diary routes name an entry")]},
                           "source": {"type": "string", "enum": ["hit", "link"]},
                           "score": {"type": "number", "nullable": True},
                           "bm25_score": {"type": "number", "nullable": True},
                           "cos_score": {"type": "number", "nullable": True},
                           "via": NSTR, "via_file": NSTR, "matched_terms": arr({"type": "string"}),
                           "tokens_est": {"type": "integer"}, "kind": {"type": "string"},
                           "staged": {"type": "boolean", "description": "with include_staged: whether the entry "
                                      "comes from a staged run (else from the approved memory)"}},
                          ["item", "source"]),
    "Settings": obj({"tz": {**NSTR, "description": "IANA time zone: the calendar of diary writes, memorize "
                                                   "and time words in retrieval when a request gives no tz"},
                      "character": {**NSTR, "description": "memorize's character when a request names none"},
                      "dm_with_others": {"type": "boolean", "nullable": True,
                                         "description": "true: what this person said in a direct chat may be "
                                                        "recalled when others are in the room (default false)"},
                      "definition": {"type": "object", "description": "only on a character's own owner "
                                     "(char:<id>): its definition, written by the registry (/characters)"}},
                     ["tz", "character"]),
    "Job": obj({"id": {"type": "string"}, "kind": {"type": "string"},
                 "state": {"type": "string", "enum": ["queued", "running", "done", "failed", "cancelled"]},
                 "done": {"type": "integer", "description": "finished steps (done or failed)"},
                 "failed": {"type": "integer"}, "total": {"type": "integer"},
                 "results": arr(obj({"step": {"type": "integer"},
                                       "state": {"type": "string",
                                                 "enum": ["pending", "running", "done", "failed", "cancelled"]},
                                       "result": {"description": "the step's result (memorize: entries, run, "
                                                                 "commit, replayed)"},
                                       "error": obj({"code": {"type": "string"}, "message": {"type": "string"}})},
                                      ["step", "state"])),
                 "params": {"type": "object"}, "created": {"type": "string"}, "updated": {"type": "string"},
                 "finished": NSTR},
                ["id", "kind", "state", "done", "total", "results"]),
    "JobSummary": obj({"id": {"type": "string"}, "kind": {"type": "string"},
                        "state": {"type": "string", "enum": ["queued", "running", "done", "failed", "cancelled"]},
                        "done": {"type": "integer"}, "failed": {"type": "integer"}, "total": {"type": "integer"},
                        "params": {"type": "object"}, "owner": {**NSTR, "description": "a one-owner job's owner"},
                        "scope": {"type": "string", "description": "its owner, or the owner prefix of a bulk job"},
                        "created": {"type": "string"}, "updated": {"type": "string"}, "finished": NSTR},
                       ["id", "kind", "state", "done", "total", "created"]),
    "RetrievalResult": obj({"items": arr(ref("RetrievedItem")), "unresolved_links": arr({"type": "string"}),
                             "budget_tokens": {"type": "integer", "nullable": True},
                             "budget_used": {"type": "integer"}, "embedding_used": {"type": "boolean"},
                             "dropped": arr(ref("RetrievedItem")),
                             "time_range": {**arr({"type": "string"}), "nullable": True,
                                            "description": "the diary window searched (local dates), if any"},
                             "time_range_source": NSTR, "time_range_widened": {"type": "boolean"},
                             "time_days": {**arr({"type": "string"}),
                                           "description": "a window of separate days (last Friday asked on a "
                                                          "Sunday): those days only; time_range spans them"},
                             "query_terms": arr({"type": "string"}),
                             "excluded": {"type": "object", "additionalProperties": {"type": "integer"},
                                          "description": "with explain, in a room (channel, present or "
                                                         "character): how many entries the room left out, by "
                                                         "reason (direct_chat, not_present); never their text"},
                             "diary": {"type": "string", "enum": ["window", "all"],
                                       "description": "present when the diary was ranked with the wiki (all)"},
                             "vectors": obj({"embedded": {"type": "integer"}, "total": {"type": "integer"}},
                                             description="with an embedder and explain: how many items had "
                                                         "their vectors"),
                             "diary_index": {"type": "string", "enum": ["building"],
                                             "description": "diary=all answered within 0.25 s while the diary "
                                                            "index's first build was still running: the diary "
                                                            "took part through its time window only"}},
                            ["items"]),
}


def body(props: dict, required: list[str] | None = None, *, optional: bool = False) -> dict:
    return {"required": not optional,
            "content": {"application/json": {"schema": obj(props, required, extra=False)}}}


def ok(schema: dict, status: str = "200", description: str = "OK", *, etag: bool = False) -> dict:
    response: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": schema}}}
    if etag:
        response["headers"] = {"ETag": {"schema": {"type": "string"}, "description": "item etag or owner HEAD"}}
    return {status: response,
            "default": {"description": "an error (statuses: see the API description)",
                        "content": {"application/json": {"schema": ref("Error")}}}}


def param(name: str, where: str, schema: dict, *, required: bool = False, description: str = "") -> dict:
    out = {"name": name, "in": where, "required": required or where == "path", "schema": schema}
    if description:
        out["description"] = description
    return out


OWNER = param("owner_id", "path", {"type": "string", "pattern": OWNER_ID_PATTERN, "example": "user:ann"},
                description="owner id, e.g. user:ann")
FILE = param("file", "path", {"type": "string", "pattern": FILE_PATTERN, "maxLength": 128,
                                "example": "preferences"})
NAME = param("name", "path", {"type": "string", "minLength": 1, "maxLength": 200, "example": "likes-the-sea"},
               description="item name")
HDR_IF_MATCH = param("If-Match", "header", {"type": "string"},
                       description="the item's etag, or the owner's HEAD commit; 412 if the memory moved on")
HDR_IF_NONE_MATCH = param("If-None-Match", "header", {"type": "string", "enum": ["*"]},
                             description="* = create-only: 412 (with the current etag and item) when the item "
                                         "exists; nothing is written")
HDR_IDEM = param("Idempotency-Key", "header", {"type": "string", "pattern": r"^[\x21-\x7e]{1,200}$"},
                   description="a retried write with the same key writes nothing again")
Q = {"type": "string", "maxLength": 200}
TIME = {"type": "string", "maxLength": 64, "example": "2026-07-21T14:00:00Z",
         "description": "a date (YYYY-MM-DD, a whole UTC day) or an ISO-8601 time (no offset: UTC)"}
POINT = {"type": "string", "pattern": r"^[0-9A-Za-z:+.\-_~^ ]{1,64}$",
          "description": "a commit id or prefix, HEAD, HEAD~N, or an ISO-8601 time"}


def op(summary: str, scope: str, responses: dict, *, params: list | None = None, body: dict | None = None,
        tag: str = "memory") -> dict:
    out: dict[str, Any] = {"summary": summary, "tags": [tag], "responses": responses,
                           "description": f"Needs a token with the `{scope}` scope."}
    if params:
        out["parameters"] = params
    if body:
        out["requestBody"] = body
    return out
