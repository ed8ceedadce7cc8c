"""The OpenAPI 3.0 document of ``/api/v1``, served at ``/api/v1/openapi.json``.

Written by hand next to :mod:`webapp.api` (one entry per route of the SPEC §7
table, plus the probes ``/healthz`` and ``/readyz`` at the host's root). Every
operation has a stable ``operationId`` (:data:`OPERATION_IDS`: the name of the
:class:`wikimem.client.Client` method that calls it) and examples of its JSON
bodies (:data:`EXAMPLES`). ``tests/integration/test_openapi.py`` checks that
the document's calls are exactly the app's routes, that the examples fit their
schemas, and fuzzes the running app against it with schemathesis (no 5xx, no
response outside the schema).

- :mod:`~webapp.openapi.schema` — patterns, schema helpers, the shared components and parameters;
- :mod:`~webapp.openapi.paths` — one path item per route;
- :mod:`~webapp.openapi.examples` — :data:`OPERATION_IDS` and :data:`EXAMPLES`;
- here: :func:`document`, which puts them together (each operation given its id and examples).
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

from .examples import ERROR_EXAMPLE, EXAMPLES, OPERATION_IDS, Named
from .paths import all_paths
from .schema import FILE_PATTERN, OWNER_ID_PATTERN, SCHEMAS

__all__ = ["document", "OPERATION_IDS", "EXAMPLES", "OWNER_ID_PATTERN", "FILE_PATTERN"]


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
                if isinstance(value, Named):
                    media["examples"] = {name: deepcopy(dict(case)) for name, case in value.items()}
                else:
                    media["example"] = deepcopy(value)
            error = _media(op["responses"].get("default") or {})
            if error is not None:
                error["example"] = deepcopy(ERROR_EXAMPLE)
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
        "paths": _annotate(all_paths()),
        "components": {"schemas": deepcopy(SCHEMAS),
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }
