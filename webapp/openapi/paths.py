"""The paths of the OpenAPI document: one entry per route of :mod:`webapp.api`, plus the probes at the root."""

from __future__ import annotations

from copy import deepcopy

from wikimem.limits import (
    MAX_BATCH_CHARS,
    MAX_CHARACTERS,
    MAX_OPS,
    MAX_PERSONA_CHARS,
    MAX_QUERY_CHARS,
    MAX_RETRIEVE_LIMIT,
    MAX_TURN_CHARS,
)

from .channels import channel_paths
from .imports import import_paths
from .schema import (
    APPEND,
    CONTENT,
    DATE,
    FILE,
    HDR_IDEM,
    HDR_IF_MATCH,
    HDR_IF_NONE_MATCH,
    LAYER_DOC,
    NAME,
    NSTR,
    OWNER,
    OWNER_ID_PATTERN,
    POINT,
    ROOM,
    STAGED,
    TIME,
    UNREACHABLE,
    WRITE,
    Q,
    arr,
    body,
    obj,
    ok,
    op,
    param,
    ref,
)

# The character's layer a read addresses (none: the shared layer).
LAYER_Q = param("character", "query", {"type": "string", "maxLength": 64}, description=LAYER_DOC)


def all_paths() -> dict[str, dict]:
    owner = "/owners/{owner_id}"
    item = owner + "/items/{file}/{name}"
    committed = lambda key, schema: {"allOf": [ref("Committed"), obj({key: schema}, [key])]}  # noqa: E731
    entries = obj({"entries": arr(ref("DiaryItem"))}, ["entries"])
    point_body = lambda field, schema: body({field: schema, "force": {"type": "boolean"},  # noqa: E731
                                              "preview": {"type": "boolean"}, "actor": WRITE["actor"]}, [field])
    operation = ok({"oneOf": [obj({"commit": NSTR, "replayed": {"type": "boolean"}}, ["commit"]),
                               obj({"plan": ref("Plan")}, ["plan"])]},
                    description="the new commit (null when nothing needed undoing), or the plan with preview")
    return {
        "/version": {"get": op("server and API version", "read", ok(
            obj({"version": {"type": "string"}, "api": {"type": "integer"}}, ["version", "api"])), tag="service")},
        "/replication": {"get": op("replication mode, remote and lag (commits not on the remote yet) per owner "
                                    "and in total", "admin", ok(obj({
                                        "mode": {"type": "string", "enum": ["none", "sync", "async"]},
                                        "remote": {"type": "string"},
                                        "lag": obj({"total": {"type": "integer"},
                                                     "owners": {"type": "object",
                                                                "additionalProperties": {"type": "integer"}}}),
                                        "max_lag": {"type": "integer"}, "freshness": {"type": "number"},
                                        "queued": {"type": "integer"},
                                        "refused": {"type": "object", "description": "owners whose remote main "
                                                    "was refused (never applied): the commit, why, when",
                                                    "additionalProperties": obj({
                                                        "commit": NSTR, "reason": {"type": "string"},
                                                        "at": {"type": "string"}}, ["reason"])}},
                                       ["mode"])), tag="service")},
        "/peer/revoked": {"post": {
            "summary": "host to host: a peer's logout notice (a session ended there ends here too)",
            "tags": ["service"], "security": [],
            "description": "Sent by the hosts of a cluster to each other (WIKIMEM_PEERS) when an operator signs "
                           "out; the token is signed with the shared WIKIMEM_SECRET_KEY and good for 60 s. "
                           "Anything else is refused with 403; a signed notice without a session id or a "
                           "finite until is 400.",
            "requestBody": body({"token": {"type": "string"}}, ["token"]),
            "responses": {"204": {"description": "recorded"},
                          "default": {"description": "an error (statuses: see the API description)",
                                      "content": {"application/json": {"schema": ref("Error")}}}}}},
        "/owners": {"get": op("list owners (paged; behind a cluster, gathered from every host in WIKIMEM_PEERS)",
                               "read", ok(
            obj({"owners": arr(ref("OwnerStats")), "next": NSTR,
                  "unreachable": UNREACHABLE}, ["owners", "next"])),
            params=[param("prefix", "query", {"type": "string", "maxLength": 128}),
                    param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 1000}),
                    param("cursor", "query", {"type": "string", "maxLength": 128})], tag="owners")},
        owner: {
            "parameters": [OWNER],
            "put": op("create an owner (idempotent)", "write", {
                **ok(obj({"owner": ref("OwnerStats"), "created": {"type": "boolean"}}), "201", "created"),
                "200": {"description": "already there", "content": {"application/json": {"schema": obj(
                    {"owner": ref("OwnerStats"), "created": {"type": "boolean"}})}}}}, tag="owners"),
            "get": op("an owner's counts and last change", "read", ok(ref("OwnerStats"), etag=True), tag="owners"),
            "delete": op("delete an owner", "admin", ok(obj({"deleted": {"type": "string"}})), tag="owners"),
        },
        owner + "/export": {"parameters": [OWNER], "get": op(
            "archive of the owner's markdown (zip, tar), or its whole history as a git bundle", "read",
            {"200": {"description": "the archive, or (bundle) the whole history with the settings as a git bundle",
                     "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}},
                                 "application/x-tar": {"schema": {"type": "string", "format": "binary"}},
                                 "application/x-git-bundle": {"schema": {"type": "string", "format": "binary"}}}},
             "default": ok({})["default"]},
            params=[param("format", "query", {"type": "string", "enum": ["zip", "tar", "bundle"]}), LAYER_Q],
            tag="owners")},
        owner + "/files": {"parameters": [OWNER], "get": op("RecallFile names", "read", ok(
            obj({"files": arr({"type": "string"})}, ["files"])), params=[LAYER_Q])},
        owner + "/items": {"parameters": [OWNER], "get": op("items, of one file (404 if none) or all", "read", ok(
            obj({"items": arr(ref("Item"))}, ["items"])),
            params=[param("file", "query", {"type": "string", "maxLength": 128}), LAYER_Q])},
        item: {
            "parameters": [OWNER, FILE, NAME],
            "get": op("one item", "read", ok(obj({"item": ref("Item")}, ["item"]), etag=True), params=[LAYER_Q]),
            "put": op("add or update an item (201 when it is new, 200 when it replaced one; empty content is "
                       "refused with 422; If-None-Match: * adds it only if it does not exist, else 412)", "write", {
                           **ok(committed("item", ref("Item")), "201", "created", etag=True),
                           "200": ok(committed("item", ref("Item")), etag=True)["200"]},
                       params=[HDR_IF_MATCH, HDR_IF_NONE_MATCH, HDR_IDEM],
                       body=body({"content": CONTENT, "ts": {**NSTR, "maxLength": 64}, **WRITE, **STAGED},
                                  ["content"])),
            "delete": op("remove an item", "write", ok(committed("removed", {"type": "boolean"})),
                          params=[HDR_IF_MATCH, HDR_IDEM], body=body({**WRITE, **STAGED}, optional=True)),
        },
        owner + "/diary": {
            "parameters": [OWNER],
            "post": op("append a diary event", "write", ok(committed("entry", ref("DiaryItem")), "201", "appended"),
                        params=[HDR_IDEM], body=body({"content": CONTENT, **APPEND, **ROOM, **WRITE, **STAGED,
                                                      "planned": {"type": "boolean", "description": (
                                                          "true to file an event on a day after today (a plan); "
                                                          "without it such a date is refused (422)")}},
                                                       ["content"])),
            "get": op("diary events of a window of days", "read", ok(entries),
                       params=[param("start", "query", DATE, required=True),
                               param("end", "query", DATE, required=True), LAYER_Q]),
        },
        owner + "/diary/dates": {"parameters": [OWNER], "get": op("days with a diary file", "read", ok(
            obj({"dates": arr({"type": "string"})}, ["dates"])), params=[LAYER_Q])},
        owner + "/diary/{day}": {"parameters": [OWNER, param("day", "path", DATE)],
                                 "get": op("one day's diary events", "read", ok(entries), params=[LAYER_Q])},
        owner + "/batch": {"parameters": [OWNER], "post": op(
            "several writes as one commit", "write",
            ok(obj({"results": arr({"type": "object"}), "commit": NSTR, "replayed": {"type": "boolean"}},
                     ["results", "commit"])),
            params=[HDR_IF_MATCH, HDR_IDEM],
            body=body({"ops": {**arr(obj({"op": {"type": "string", "enum": ["add", "remove", "diary"]},
                                             "file": {"type": "string"}, "name": {"type": "string"},
                                             "content": CONTENT, **APPEND, **ROOM,
                                             "source_conv": WRITE["source_conv"]}, ["op"])),
                                "minItems": 1, "maxItems": MAX_OPS,
                                "description": f"at most {MAX_OPS} ops and {MAX_BATCH_CHARS} characters of "
                                               "content in all (413 beyond)"},
                        "message": {**NSTR, "maxLength": 200}, **WRITE, **STAGED}, ["ops"]))},
        owner + "/retrieve": {"parameters": [OWNER], "post": op(
            "the memories that belong in the prompt", "read", ok(ref("RetrievalResult")),
            body=body({"character": {**NSTR, "maxLength": 64, "description": "recall as this character: its layer, "
                                      "the shared layer and its profile, ranked as one list (each hit says its layer "
                                      "and character); default: the character the token is bound to"},
                        "channel": {**NSTR, "pattern": OWNER_ID_PATTERN,
                                    "description": "where the answer will be read (dm: a direct chat; another id: "
                                                   "a group, with others present unless `present` says who)"},
                        "present": {**ROOM["present"], "nullable": True,
                                    "description": "who is in the room now (owner ids, char:<character>): what "
                                                   "was said in a direct chat is left out when anyone else is, "
                                                   "unless the person's dm_with_others setting allows it"},
                        "include_staged": {"type": "boolean", "description": "read the owner's staged runs too "
                                           "(each hit then says whether it is staged); default: the token's "
                                           "(WIKIMEM_STAGED_READ_TOKENS), else false; not with as_of"},
                        "query": {"type": "string", "maxLength": MAX_QUERY_CHARS,
                                  "description": "what to recall; or give `messages` instead"},
                        "messages": {**arr(obj({"role": {"type": "string"}, "content": {"type": "string"}},
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
                        "time_range": {"type": "array", "items": DATE, "minItems": 2, "maxItems": 2,
                                       "nullable": True},
                        "tz": {**NSTR, "maxLength": 64}, "as_of": {**POINT, "nullable": True},
                        "diary": {"type": "string", "enum": ["window", "all"], "nullable": True,
                                  "description": "window: diary entries only through a time window (the seed's); "
                                                 "all: diary entries ranked with the wiki (default: "
                                                 "WIKIMEM_DIARY_RECALL, all)"},
                        "recency_half_life": {"type": "number", "nullable": True, "minimum": 0,
                                              "description": "days; with diary=all an entry's score is "
                                                             "multiplied by 0.5 + 0.5*2^(-age/half_life); "
                                                             "0: none (default: WIKIMEM_RECENCY_HALF_LIFE)"}}),
            tag="retrieval")},
        owner + "/memorize": {"parameters": [OWNER], "post": op(
            "run the configured LLM over a turn and write its diary entries and facts as one run (as a registered "
            "character: into its layer, its facts proposed to the shared layer by its shared_writes); with "
            "`Prefer: respond-async`, 202 and a job to poll at its Location (the same Idempotency-Key is "
            "the same job)", "write",
            {**ok(obj({"entries": arr(ref("DiaryItem")), "facts": arr(ref("Item")),
                       "writes": arr({"type": "object"}), "dropped": arr({"type": "object"}),
                       "proposal": {"type": "object", "nullable": True}, "character": NSTR,
                       "run": {"type": "string"}, "commit": NSTR}, ["run"])),
             "202": {"description": "accepted as a background job (Prefer: respond-async)",
                     "headers": {"Location": {"schema": {"type": "string"}, "description": "/api/v1/jobs/<id>"},
                                 "Preference-Applied": {"schema": {"type": "string"}}},
                     "content": {"application/json": {"schema": ref("Job")}}}},
            params=[HDR_IDEM, param("Prefer", "header", {"type": "string"},
                                      description="respond-async: answer 202 at once, run as a job")],
            body=body({"turn": {"type": "string", "maxLength": MAX_TURN_CHARS},
                        "prompt": NSTR, "ts": APPEND["ts"], "tz": APPEND["tz"], **WRITE, **STAGED,
                        "channel": ROOM["channel"], "present": {**ROOM["present"], "nullable": True},
                        "character": {**NSTR, "maxLength": 200, "description": "memorize as this registered "
                                      "character (404 naming how to register a name that is not one)"}}, ["turn"]),
            tag="memorize")},
        owner + "/diary-tool": {"parameters": [OWNER], "post": op(
            "handle the agent's append_diary tool call (400 carries the message for the agent)", "write",
            ok(committed("entry", ref("DiaryItem")), "201", "appended"), params=[HDR_IDEM],
            body=body({"arguments": {}, **APPEND, **ROOM, **WRITE, **STAGED}, ["arguments"]), tag="memorize")},
        owner + "/settings": {
            "parameters": [OWNER],
            "get": op("the owner's settings (unset: null)", "read", ok(obj({"settings": ref("Settings")},
                                                                             ["settings"])), tag="owners"),
            "put": op("set settings as one commit: fields sent are set (null unsets one), others are kept",
                       "write", ok(obj({"settings": ref("Settings"), "commit": NSTR,
                                          "replayed": {"type": "boolean"}}, ["settings", "commit"])),
                       params=[HDR_IDEM],
                       body=body({"tz": {**NSTR, "maxLength": 64}, "character": {**NSTR, "maxLength": 200},
                                   **WRITE}), tag="owners"),
        },
        "/jobs/{job_id}": {"parameters": [param("job_id", "path", {"type": "string",
                                                                    "pattern": r"^job_\d{8}T\d{6}Z_[0-9a-f]{12}$"})],
                           "get": op("a background job: state, progress, each step's result (kept a week after "
                                      "it finished; a token sees the jobs of owners it reaches, admins all)",
                                      "read", ok(ref("Job")), tag="memorize")},
        "/jobs": {"get": op(
            "background jobs, newest first: a token sees the jobs of the owners its prefix reaches, bulk jobs "
            "only with the admin scope; in a cluster with a shared database, the jobs of every host", "read",
            ok(obj({"jobs": arr(ref("JobSummary")), "next": NSTR}, ["jobs", "next"])),
            params=[param("kind", "query", {"type": "string", "maxLength": 128}),
                    param("state", "query", {"type": "string",
                                              "enum": ["queued", "running", "done", "failed", "cancelled"]}),
                    param("owner_prefix", "query", {"type": "string", "maxLength": 128}),
                    param("since", "query", {"type": "string", "maxLength": 64,
                                              "description": "created at or after (a date or ISO-8601 time)"}),
                    param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 1000}),
                    param("cursor", "query", {"type": "string", "maxLength": 200})], tag="memorize")},
        "/jobs/{job_id}/cancel": {
            "parameters": [param("job_id", "path", {"type": "string",
                                                     "pattern": r"^job_\d{8}T\d{6}Z_[0-9a-f]{12}$"})],
            "post": op("cancel a job that has not started (409 once a step runs): a write token for the jobs of "
                        "its owners, the admin scope for bulk jobs", "write", ok(ref("Job")), tag="memorize")},
        owner + "/history": {"parameters": [OWNER], "get": op(
            "commits, newest first (filters; older with cursor, newer with after; at jumps to a date)", "read",
            ok(obj({"entries": arr(ref("HistoryEntry")), "next": NSTR, "prev": NSTR,
                      "reverted_by": {"type": "object", "additionalProperties": arr({"type": "string"}),
                                      "description": "commit id → the revert/rollback commits that undid it"}},
                     ["entries", "next"])),
            params=[param("file", "query", Q), param("item", "query", Q), param("run", "query", Q),
                    param("actor", "query", Q), param("action", "query", Q),
                    param("since", "query", TIME), param("until", "query", TIME),
                    param("at", "query", TIME),
                    param("channel", "query", {"type": "string", "pattern": OWNER_ID_PATTERN},
                          description="the commits that added or removed a diary entry said in this channel"),
                    param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 500}),
                    param("cursor", "query", Q), param("after", "query", Q), LAYER_Q], tag="history")},
        **_operator_paths(),
        **_erasure_paths(owner),
        **_staged_paths(),
        **_character_paths(),
        **channel_paths(),
        **import_paths(owner),
        owner + "/commits/{commit}": {"parameters": [OWNER, param("commit", "path", POINT)], "get": op(
            "one commit with its per-item diff", "read",
            ok(obj({"entry": ref("HistoryEntry"), "changes": arr(ref("ItemChange")),
                      "patch": {"type": "string"}}, ["changes"])), params=[LAYER_Q], tag="history")},
        owner + "/diff": {"parameters": [OWNER], "get": op(
            "per-item diff between two points", "read",
            ok(obj({"entry": {"nullable": True}, "changes": arr(ref("ItemChange")),
                      "patch": {"type": "string"}}, ["changes"])),
            params=[param("from", "query", POINT, required=True), param("to", "query", POINT), LAYER_Q],
            tag="history")},
        owner + "/revert": {"parameters": [OWNER], "post": op(
            "undo one commit, item by item (409 lists conflicts unless forced)", "admin", deepcopy(operation),
            params=[HDR_IDEM], body=point_body("commit", POINT), tag="history")},
        owner + "/rollback": {"parameters": [OWNER], "post": op(
            "undo every commit of a run as one commit (409 lists conflicts unless forced)", "admin",
            deepcopy(operation), params=[HDR_IDEM],
            body=point_body("run", {"type": "string", "minLength": 1, "maxLength": 64}), tag="history")},
        owner + "/restore": {"parameters": [OWNER], "post": op(
            "make wiki/ and diary/ as they were at a point, as one new commit", "admin", deepcopy(operation),
            params=[HDR_IDEM], body=point_body("to", POINT), tag="history")},
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
    ready = obj({"ready": {"type": "boolean"},
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
            "responses": {"200": {"description": "alive", "content": {"application/json": {"schema": obj(
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


_SELECTION = {"run": {**NSTR, "maxLength": 200}, "actor": {**NSTR, "maxLength": 200},
              "source_conv": {**NSTR, "maxLength": 200}, "action": {**NSTR, "maxLength": 64},
              "since": {**TIME, "nullable": True}, "until": {**TIME, "nullable": True},
              "owner_prefix": {**NSTR, "maxLength": 128},
              "character": {**NSTR, "maxLength": 64, "description": "runs that wrote this character's layer"}}
_RUNS_DOC = ("Runs of every owner the token reaches (a commit without a run id is a run of its own), newest "
             "last commit first. A run matches the time window when its commits overlap it. The order (last "
             "time, owner, run) is global and the cursor is that key, so a gatherer can ask every host of a "
             "cluster the same query with the same cursor and merge the pages by that order.")


def _operator_paths() -> dict[str, dict]:
    """``GET /runs`` and ``POST /bulk/rollback`` (issue 16)."""
    run_page = obj({"runs": arr(ref("RunRow")), "next": NSTR,
                     "total": obj({"runs": {"type": "integer"}, "owners": {"type": "integer"},
                                    "commits": {"type": "integer"}}),
                     "complete": {"type": "boolean", "description": "false until `wikimem index rebuild` ran "
                                  "over owners older than the index"},
                     "unreachable": UNREACHABLE,
                     "by_owner": {"type": "object", "description": "with totals=owners: the match's totals per "
                                  "owner, [runs, commits, furthest seq] (what a host asks its peers, to count an "
                                  "owner two hosts hold once)",
                                  "additionalProperties": arr({"type": "integer"})}}, ["runs", "next", "total"])
    per_owner = obj({"owners": arr(ref("OwnerRunCount")), "next": NSTR, "unreachable": UNREACHABLE},
                     ["owners", "next"])
    runs = op("runs across owners (by run, actor, source conversation, action, time, owner prefix)", "read",
               ok({"oneOf": [run_page, per_owner]}, description="a page of runs, or with by=owner the counts "
                   "per owner"),
               params=[param("run", "query", Q), param("actor", "query", Q), param("source_conv", "query", Q),
                       param("action", "query", {"type": "string", "maxLength": 64}),
                       param("since", "query", TIME), param("until", "query", TIME),
                       param("owner_prefix", "query", {"type": "string", "maxLength": 128}),
                       param("by", "query", {"type": "string", "enum": ["run", "owner"]}),
                       param("totals", "query", {"type": "string", "enum": ["owners"]}),
                       param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 1000}),
                       param("cursor", "query", {"type": "string", "maxLength": 1000})], tag="operators")
    runs["description"] += (" " + _RUNS_DOC + " In a cluster (WIKIMEM_PEERS) the host that answers asks every "
                            "peer the same search and cursor and merges the pages (an owner two hosts hold is counted "
                            "once in the totals); peers that did not answer are listed in unreachable.")
    preview = obj({"selection": {"type": "object"}, "total": {"type": "object"},
                    "owners": arr(ref("OwnerPlan")), "next": NSTR}, ["total", "owners"])
    started = {"description": "the job was queued (or an earlier one with the same Idempotency-Key is returned)",
               "headers": {"Location": {"schema": {"type": "string"}, "description": "/api/v1/jobs/<id>"}},
               "content": {"application/json": {"schema": ref("Job")}}}
    bulk = op("roll back every matching run, one commit per owner, as a durable job (preview: the plan)",
               "admin", {**ok(preview, description="with preview: every owner's plan and conflicts"),
                         "202": started},
               params=[HDR_IDEM],
               body=body({**_SELECTION, "force": {"type": "boolean"}, "preview": {"type": "boolean"},
                           "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                           "cursor": {**NSTR, "maxLength": 12}}), tag="operators")
    bulk["description"] += (" The selection needs run, actor, source_conv, action, since or until (an owner "
                            "prefix alone is refused). Owners whose items changed after the runs are skipped "
                            "(status conflict) unless force. Each commit's run id is the job id: a bulk "
                            "rollback of run=<job id> undoes the whole action.")
    return {"/runs": {"get": runs}, "/bulk/rollback": {"post": bulk}}


_RECEIPT = obj({"erasure": {"type": "string", "description": "the keyed digest naming an erasure (never the id)"},
                 "forget": {"type": "string"}, "kind": {"type": "string", "enum": ["erase-owner", "forget"]},
                 "by": NSTR, "started": NSTR, "finished": NSTR,
                 "places": arr(obj({"place": {"type": "string"}, "state": {"type": "string"},
                                      "where": {"type": "string"}, "remains": {"type": "string"}},
                                     ["place", "state"])),
                 "remains": arr({"type": "string"}), "owner": {"type": "string"}, "target": {"type": "object"}},
                ["kind", "places"], description="what was removed where, when and by whom; no memory content")


def _erasure_paths(owner: str) -> dict[str, dict]:
    """Erase an owner, forget an item, an erasure's receipt (issue 27)."""
    started = {"202": {"description": "started: the job (Location: /api/v1/jobs/<id>); its result is the receipt",
                       "content": {"application/json": {"schema": ref("Job")}}},
               "default": ok({})["default"]}
    return {
        owner + "/erase": {"parameters": [OWNER], "post": op(
            "erase the owner everywhere (repository, remote, indexes, jobs, caches) as a job ending with a receipt; "
            "confirm repeats the owner id", "admin", deepcopy(started),
            body=body({"confirm": {"type": "string", "maxLength": 128}, "actor": WRITE["actor"]}, ["confirm"]),
            tag="erasure")},
        owner + "/forget": {"parameters": [OWNER], "post": op(
            "forget one wiki item (file, name) or diary entry (date, time, index) with its history: every commit "
            "rewritten without it, the remote replaced, unreachable objects pruned; a job ending with a receipt",
            "admin", deepcopy(started),
            body=body({"file": {**NSTR, "maxLength": 128}, "name": {**NSTR, "maxLength": 200},
                        "date": {**NSTR, "maxLength": 64}, "time": {**NSTR, "maxLength": 64},
                        "index": {"type": "integer", "minimum": 0, "maximum": 1000, "nullable": True},
                        "character": {**NSTR, "maxLength": 64, "description": LAYER_DOC},
                        "actor": WRITE["actor"]}), tag="erasure")},
        "/erasures": {"get": op(
            "the receipt of an owner's erasure, asked by its id (404: none finished)", "admin", ok(_RECEIPT),
            params=[param("owner", "query", {"type": "string", "pattern": OWNER_ID_PATTERN}, required=True)],
            tag="erasure")},
    }


_RUN = param("run", "path", {"type": "string", "pattern": r"^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}$",
                               "example": "run_20260721T063000Z_5f0c"}, description="a staged run's id")
_OWNER_LIST = {**arr({"type": "string", "maxLength": 128}), "nullable": True}
_STAGED_ROW = obj({"owner": {"type": "string"}, "run": {"type": "string"}, "actor": NSTR, "source_conv": NSTR,
                    "first": {"type": "string"}, "last": {"type": "string"}, "commits": {"type": "integer"},
                    "changes": {"type": "integer"}, "tip": {"type": "string"},
                    "state": {"type": "string", "enum": ["staged", "approved", "discarded", "expired", "gone"]},
                    "held": {"type": "boolean"}, "settled_by": NSTR, "settled_commit": NSTR, "settled_at": NSTR},
                   ["owner", "run", "state"])
_STAGED_RUN = obj({"run": {"type": "string"}, "tip": {"type": "string"}, "base": {"type": "string"},
                    "actor": NSTR, "source_conv": NSTR, "first": {"type": "string"}, "last": {"type": "string"},
                    "commits": {"type": "integer"}, "changes": {"type": "integer"}}, ["run", "tip", "base"])
_SETTLED = obj({"result": {"type": "object"}, "commit": NSTR, "replayed": {"type": "boolean"}}, ["commit"])


def _staged_paths() -> dict[str, dict]:
    """Runs on probation (issue 28): across owners, and one owner's."""
    owner = "/owners/{owner_id}/staged"
    listing = obj({"runs": arr(obj({"run": {"type": "string"}, "actor": NSTR, "owners": {"type": "integer"},
                                       "first": NSTR, "last": NSTR, "age_seconds": {"type": "integer",
                                                                                      "nullable": True},
                                       "commits": {"type": "integer"}, "changes": {"type": "integer"},
                                       "held": {"type": "integer"}, "state": {"type": "string"}}, ["run"])),
                    "waiting": obj({"runs": {"type": "integer"}, "owners": {"type": "integer"}, "oldest": NSTR,
                                     "oldest_age_seconds": {"type": "integer", "nullable": True}}),
                    "complete": {"type": "boolean"}, "policy": {"type": "object"}}, ["runs", "waiting"])
    started = {"description": "the job was queued (or an earlier one with the same Idempotency-Key is returned)",
               "headers": {"Location": {"schema": {"type": "string"}, "description": "/api/v1/jobs/<id>"}},
               "content": {"application/json": {"schema": {"type": "object"}}}}
    bulk_body = {"owners": _OWNER_LIST, "except_owners": _OWNER_LIST}
    approve = op("approve a staged run on every owner holding it (or owners, less except_owners) as a durable "
                  "job, one commit per owner (preview: each owner's plan)", "admin",
                  {**ok(obj({"run": {"type": "string"}, "total": {"type": "object"},
                               "owners": arr({"type": "object"})}, ["total", "owners"]),
                         description="with preview: what each owner's approval would change, and its conflicts"),
                   "202": started}, params=[_RUN, HDR_IDEM],
                  body=body({**bulk_body, "force": {"type": "boolean"}, "preview": {"type": "boolean"}},
                             optional=True), tag="probation")
    approve["description"] += (" Items main changed since the run started are skipped (reported per owner) "
                               "unless force. An approved run is rolled back like any other (bulk rollback of "
                               "run=<run>).")
    discard = op("discard a staged run on every owner holding it (or owners, less except_owners) as a durable "
                  "job", "admin", {"202": started, "default": ok({})["default"]}, params=[_RUN, HDR_IDEM],
                  body=body(bulk_body, optional=True), tag="probation")
    return {
        "/staged": {"get": op("staged runs across owners, oldest first, and how many wait since when", "read",
                               ok(listing), params=[param("state", "query", {"type": "string", "enum": [
                                   "staged", "approved", "discarded", "expired", "gone"]}),
                                   param("run", "query", Q), param("actor", "query", Q),
                                   param("owner_prefix", "query", {"type": "string", "maxLength": 128})],
                               tag="probation")},
        "/staged/{run}": {"get": op("every owner's copy of a staged run (staged or settled)", "read",
                                     ok(obj({"run": {"type": "string"}, "owners": arr(_STAGED_ROW)},
                                              ["run", "owners"])),
                                     params=[_RUN, param("state", "query", {"type": "string", "maxLength": 16})],
                                     tag="probation")},
        "/staged/{run}/approve": {"post": approve},
        "/staged/{run}/discard": {"post": discard},
        "/staged/{run}/hold": {"post": op(
            "keep a staged run from auto-approval and expiry (held: false lets it go again)", "admin",
            ok(obj({"run": {"type": "string"}, "held": {"type": "boolean"}, "owners": {"type": "integer"}},
                     ["run", "held", "owners"])), params=[_RUN],
            body=body({"held": {"type": "boolean"}, "owners": _OWNER_LIST}, optional=True), tag="probation")},
        owner: {"parameters": [OWNER], "get": op("the owner's staged runs, oldest first", "read",
                                                   ok(obj({"runs": arr(_STAGED_RUN)}, ["runs"])),
                                                   tag="probation")},
        owner + "/{run}": {"parameters": [OWNER, _RUN], "get": op(
            "a staged run against current main: what it changed, what approving would change now, conflicts",
            "read", ok(obj({"run": _STAGED_RUN, "staged": arr(ref("ItemChange")),
                              "changes": arr(ref("ItemChange")), "conflicts": arr({"type": "object"})},
                             ["run", "staged", "changes", "conflicts"])), tag="probation")},
        owner + "/{run}/approve": {"parameters": [OWNER, _RUN], "post": op(
            "approve one owner's staged run onto main as one commit (the approver in Wikimem-Approved-By)",
            "admin", ok(_SETTLED), body=body({"force": {"type": "boolean"}, "actor": WRITE["actor"],
                                                "edits": arr(obj({"file": NSTR, "name": NSTR, "date": NSTR,
                                                                    "time": NSTR, "before": NSTR,
                                                                    "content": {"type": "string"}}, ["content"]))},
                                               optional=True), tag="probation")},
        owner + "/{run}/discard": {"parameters": [OWNER, _RUN], "post": op(
            "discard one owner's staged run: its branch goes, a commit on main records it", "admin",
            ok(_SETTLED), body=body({"actor": WRITE["actor"]}, optional=True), tag="probation")},
    }


CHARACTER_ID_PATTERN = r"^[a-z0-9_][a-z0-9_-]{0,63}$"
_CHARACTER = param("character", "path", {"type": "string", "pattern": CHARACTER_ID_PATTERN, "example": "kai"},
                   description="a character id: 1-64 of a-z, 0-9, _ and - (not first)")


def _character_paths() -> dict[str, dict]:
    """The character registry (issue 33): register, read, list, delete."""
    one = obj({"character": ref("Character")}, ["character"])
    written = obj({"character": ref("Character"), "commit": NSTR, "created": {"type": "boolean"}},
                  ["character", "commit"])
    return {
        "/characters": {"get": op(
            "the registered characters by id (deleted=true: the deleted ones too); the registry is the host's, "
            "whatever the token's owner prefixes", "read", ok(obj({"characters": arr(ref("Character"))},
                                                                   ["characters"])),
            params=[param("deleted", "query", {"type": "string", "enum": ["true", "false"]})], tag="characters")},
        "/characters/{character}": {
            "parameters": [_CHARACTER],
            "get": op("one character (a deleted one says deleted: true); 404 says how to register it", "read",
                      ok(one), tag="characters"),
            "put": op(f"register or change a character: one commit in its own owner char:<id> (made when missing); "
                      f"201 when it was not registered (or was deleted), 200 otherwise, commit null when nothing "
                      f"changed. At most {MAX_CHARACTERS:,} profiles per host (422 past it)", "admin",
                      {**ok(written, "201", "registered"), "200": ok(written)["200"]},
                      params=[HDR_IDEM],
                      body=body({"name": {"type": "string", "minLength": 1, "maxLength": 200},
                                 "persona": {**NSTR, "maxLength": MAX_PERSONA_CHARS},
                                 "shared_writes": {"type": "string", "enum": ["staged", "direct", "none"]},
                                 **WRITE}, ["name"]), tag="characters"),
            "delete": op("mark a character deleted (a commit in char:<id>): it can no longer write; its layers in "
                         "persons' folders stay until erased or forgotten; PUT registers it again", "admin",
                         ok(written), params=[HDR_IDEM], tag="characters")},
    }
