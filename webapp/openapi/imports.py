"""The imports' part of the OpenAPI document: their path items (:func:`import_paths`), operation ids
(:data:`IMPORT_IDS`) and examples (:data:`IMPORT_EXAMPLES`); see :mod:`webapp.api.imports`."""

from __future__ import annotations

from typing import Any

from wikimem.limits import MAX_CARD_BYTES, MAX_CHAT_BYTES, MAX_LOREBOOK_ENTRIES, MAX_PERSON_BYTES

from .schema import HDR_IDEM, NSTR, OWNER, WRITE, arr, body, obj, ok, op, param

__all__ = ["import_paths", "IMPORT_IDS", "IMPORT_EXAMPLES"]

_CHARACTER = param("character", "path", {"type": "string", "pattern": r"^[a-z0-9_][a-z0-9_-]{0,63}$",
                                         "example": "kai"}, description="a character id")
_NAMED = obj({"file": {"type": "string"}, "name": {"type": "string"}}, ["file", "name"])
_PLAN = obj({"character": {"type": "string"}, "owner": {"type": "string"}, "created": {"type": "boolean"},
             "changes": {"type": "boolean"},
             "definition": obj({"before": {"type": "object", "nullable": True}, "after": {"type": "object"}}),
             "items": obj({"added": arr(_NAMED), "changed": arr(_NAMED), "removed": arr(_NAMED),
                           "unchanged": {"type": "integer"}}),
             "card": {"type": "object"}, "warnings": arr({"type": "string"}),
             "commit": NSTR, "run": {"type": "string"}}, ["character", "created", "items"])
_PREVIEW = obj({"owner": {"type": "string"}, "character": {"type": "string"}, "turns": {"type": "integer"},
                "messages": {"type": "integer"}, "system": {"type": "integer"}, "swipes": {"type": "integer"},
                "days": arr({"type": "string"}), "first_day": NSTR, "last_day": NSTR, "model": {"type": "boolean"},
                "llm_calls": {"type": "integer"},
                "tokens": obj({"input": {"type": "integer"}, "output": {"type": "integer"}}),
                "cut": arr({"type": "integer"}), "warnings": arr({"type": "string"}),
                "offer": {"type": "string", "description": "without a chat model: keep it as a transcript"}},
               ["turns", "days", "model", "tokens"])
_FILE = {"type": "string", "description": "the file, base64"}


def import_paths(owner: str) -> dict[str, dict]:
    """``/characters/import``, ``/characters/{character}/card`` and the owner's import and lorebook routes."""
    from .schema import ref

    job = {"description": "started: the job memorizing the chat (Location: /api/v1/jobs/<id>), its run, the preview",
           "content": {"application/json": {"schema": obj({"job": ref("Job"), "run": {"type": "string"},
                                                           "preview": _PREVIEW}, ["job", "run"])}}}
    return {
        "/characters/import": {"post": op(
            f"a SillyTavern character card (V2 / V3; JSON, or a PNG as base64 in file; at most {MAX_CARD_BYTES:,} "
            f"bytes, {MAX_LOREBOOK_ENTRIES:,} lorebook entries) becomes a character: its definition and lorebook in "
            "char:<id> as one commit, actor import; preview: what would change. 201 registered, 200 updated",
            "admin", {**ok(obj({"preview": _PLAN}), "200", "the preview, or the character updated"),
                      "201": ok(_PLAN, "201", "registered")["201"]}, params=[HDR_IDEM],
            body=body({"card": {"type": "object"}, "file": _FILE, "character": {"type": "string", "maxLength": 64},
                       "shared_writes": {"type": "string", "enum": ["staged", "direct", "none"]},
                       "preview": {"type": "boolean"}, "run": WRITE["run"]}), tag="imports")},
        "/characters/{character}/card": {"parameters": [_CHARACTER], "get": op(
            "the card a character was imported from, as its profile holds it (its lorebook included)", "read",
            ok({"type": "object"}), tag="imports")},
        owner + "/import/chat": {"parameters": [OWNER], "post": op(
            f"a SillyTavern chat (JSONL; at most {MAX_CHAT_BYTES:,} bytes) becomes the owner's memory in the "
            "character's layer: preview (turns, days, estimated tokens), a job memorizing it turn by turn as one "
            "run (202), or transcript: a conversation file (201, one commit). Without a chat model: 501, and "
            "the transcript offered", "write",
            {**ok(obj({"preview": _PREVIEW}), "200", "the preview"), "202": job,
             "201": ok(obj({"transcript": {"type": "object"}}), "201", "kept as a transcript")["201"]},
            params=[HDR_IDEM],
            body=body({"chat": {"type": "string"}, "file": _FILE, "character": {"type": "string", "maxLength": 64},
                       "tz": {**NSTR, "maxLength": 64}, "preview": {"type": "boolean"},
                       "transcript": {"type": "boolean"}, "staged": {"type": "boolean"}, "run": WRITE["run"],
                       "source_conv": WRITE["source_conv"]}, ["character"]), tag="imports")},
        owner + "/import/rollback": {"parameters": [OWNER], "post": op(
            "undo an import's run: its commits rolled back (one commit), its proposal to the shared layer "
            "discarded", "admin", ok(obj({"run": {"type": "string"}, "commit": NSTR, "discarded": NSTR}, ["run"])),
            params=[HDR_IDEM], body=body({"run": {"type": "string", "minLength": 1, "maxLength": 200},
                                          "actor": WRITE["actor"]}, ["run"]), tag="imports")},
        owner + "/import/person": {"parameters": [OWNER], "post": {**op(
            f"make the owner from a person's portable file (GET …/export?format=bundle; at most "
            f"{MAX_PERSON_BYTES:,} bytes), checked as any remote's commits; 409 when it exists unless replace",
            "admin", ok(obj({"person": {"type": "object"}}, ["person"]), "201", "imported"),
            params=[param("replace", "query", {"type": "string", "enum": ["true", "false"]})], tag="imports"),
            "requestBody": {"required": True, "content": {"application/octet-stream": {
                "schema": {"type": "string", "format": "binary"}}}}}},
        owner + "/lorebook": {"parameters": [OWNER], "get": op(
            "what a character knows of the owner (its layer; shared=true: the shared layer too) as a SillyTavern "
            "World Info book, or (format=databank) a Data Bank markdown file", "read",
            {"200": {"description": "World Info JSON, or Data Bank markdown",
                     "content": {"application/json": {"schema": obj({"entries": {"type": "object"}}, ["entries"])},
                                 "text/markdown": {"schema": {"type": "string"}}}},
             "default": ok({})["default"]},
            params=[param("character", "query", {"type": "string", "maxLength": 64}),
                    param("shared", "query", {"type": "string", "enum": ["true", "false"]}),
                    param("format", "query", {"type": "string", "enum": ["worldinfo", "databank"]})],
            tag="imports")},
    }


IMPORT_IDS = {
    ("post", "/characters/import"): "import_card",
    ("get", "/characters/{character}/card"): "character_card",
    ("post", "/owners/{owner_id}/import/chat"): "import_chat",
    ("post", "/owners/{owner_id}/import/rollback"): "import_rollback",
    ("post", "/owners/{owner_id}/import/person"): "import_person",
    ("get", "/owners/{owner_id}/lorebook"): "lorebook",
}

_JOB, _RUN, _WHEN = "job_20260721T063000Z_02e9e046d924", "run_20260721T063000Z_5f0c1a", "2026-07-21T06:30:00+00:00"
_EX_CARD = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
    "name": "Kai", "description": "A cheerful barista.", "personality": "Warm, curious.", "scenario": "",
    "first_mes": "Hi! The usual?", "mes_example": "", "creator_notes": "", "system_prompt": "",
    "post_history_instructions": "", "alternate_greetings": [], "tags": ["cafe"], "creator": "ann",
    "character_version": "1", "extensions": {},
    "character_book": {"extensions": {}, "entries": [
        {"keys": ["oat milk"], "content": "Kai keeps oat milk for regulars.", "extensions": {}, "enabled": True,
         "insertion_order": 100, "comment": "oat milk"}]}}}
_EX_PLAN: dict[str, Any] = {
    "character": "kai", "owner": "char:kai", "created": True, "changes": True,
    "definition": {"before": None, "after": {"name": "Kai", "persona": "A cheerful barista.\n\nWarm, curious.",
                                             "shared_writes": "staged"}},
    "items": {"added": [{"file": "lorebook", "name": "oat milk"}, {"file": "card", "name": "first_mes"}],
              "changed": [], "removed": [], "unchanged": 0},
    "card": {"spec": "chara_card_v2", "spec_version": "2.0", "source": "json", "name": "Kai", "entries": 1,
             "disabled": 0, "warnings": []}, "warnings": []}
_EX_CHAT = "\n".join([
    '{"user_name": "Ann", "character_name": "Kai", "create_date": "2026-07-20 @09h 00m 00s 000ms"}',
    '{"name": "Ann", "is_user": true, "mes": "I switched to oat milk.", "send_date": "July 20, 2026 9:01am"}',
    '{"name": "Kai", "is_user": false, "mes": "Noted!", "send_date": "July 20, 2026 9:02am", '
    '"swipes": ["Noted!", "Got it."], "swipe_id": 0}'])
_EX_PREVIEW = {"owner": "user:ann", "character": "kai", "turns": 1, "messages": 2, "system": 0, "swipes": 1,
               "days": ["2026-07-20"], "first_day": "2026-07-20", "last_day": "2026-07-20", "model": True,
               "llm_calls": 1, "tokens": {"input": 520, "output": 120}, "cut": [], "warnings": []}
IMPORT_EXAMPLES: dict[str, dict[str, Any]] = {
    "import_card": {"request": {"card": _EX_CARD, "preview": True}, "200": {"preview": _EX_PLAN},
                    "201": {**_EX_PLAN, "commit": "4377991b5003c0c0e32d74809f614b917b34da6b",
                            "run": "run_20260721T063000Z_5f0c1a"}},
    "character_card": {"200": _EX_CARD},
    "import_chat": {"request": {"chat": _EX_CHAT, "character": "kai", "tz": "Europe/Berlin", "preview": True},
                    "200": {"preview": _EX_PREVIEW},
                    "202": {"job": {"id": _JOB, "kind": "import-chat", "state": "queued", "done": 0, "failed": 0,
                                    "total": 1, "results": [{"step": 0, "state": "pending"}],
                                    "params": {"owner": "user:ann", "character": "kai", "run": _RUN, "turns": 1},
                                    "created": _WHEN, "updated": _WHEN, "finished": None},
                            "run": _RUN, "preview": _EX_PREVIEW},
                    "201": {"transcript": {"items": 1, "unchanged": 0, "files": ["chat-2026-07-20"],
                                           "commit": "4377991b5003c0c0e32d74809f614b917b34da6b", "run": _RUN,
                                           "staged": False}}},
    "import_person": {"201": {"person": {"owner": "user:ann", "head": "1225e4fe881d1a6580865d6d5fe99ccb161b3b9b",
                                         "refs": {"refs/heads/main": "1225e4fe881d1a6580865d6d5fe99ccb161b3b9b"},
                                         "layers": ["kai"], "replaced": False, "unregistered": [],
                                         "pushed": None}}},
    "import_rollback": {"request": {"run": "run_20260721T063000Z_5f0c1a"},
                        "200": {"run": "run_20260721T063000Z_5f0c1a",
                                "commit": "1225e4fe881d1a6580865d6d5fe99ccb161b3b9b", "discarded": None}},
    "lorebook": {"200": {"entries": {"0": {"uid": 0, "key": ["oat milk"], "keysecondary": [], "comment": "oat milk",
                                           "content": "Kai keeps oat milk for regulars.", "disable": False}}}},
}
