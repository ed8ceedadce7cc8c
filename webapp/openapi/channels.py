"""The paths of the channels (group chats, SPEC §11): a group turn memorized, a channel's context."""

from __future__ import annotations

from wikimem.limits import MAX_CHANNEL_MESSAGES, MAX_CONTEXT_DAYS, MAX_QUERY_CHARS, MAX_RETRIEVE_LIMIT, MAX_TURN_CHARS

from .schema import APPEND, HDR_IDEM, NSTR, OWNER_ID_PATTERN, ROOM, STAGED, WRITE, arr, body, obj, ok, op, param, ref

__all__ = ["channel_paths"]

CHANNEL = param("channel", "path", {"type": "string", "pattern": OWNER_ID_PATTERN, "example": "discord:1234"},
                description="a channel id (validated like an owner id): a group chat; dm is a direct chat")
_IDS = arr({"type": "string"})
_PERSON = obj({"person": {"type": "string"}, "entries": arr(ref("DiaryItem")), "facts": arr(ref("Item")),
               "writes": arr({"type": "object"}), "proposal": {"type": "object", "nullable": True},
               "commit": NSTR, "replayed": {"type": "boolean"}}, ["person", "entries", "commit"],
              description="what the turn wrote in one person's folder (nothing: empty lists, commit null)")
_TURN = obj({"channel": {"type": "string"}, "character": {"type": "string"}, "run": {"type": "string"},
             "present": _IDS, "persons": arr(_PERSON),
             "unknown_speakers": {**_IDS, "description": "speakers that are neither a person with a folder nor a "
                                  "registered character: reported, nothing written for them"},
             "dropped": arr({"type": "object"}), "replayed": {"type": "boolean"}},
            ["channel", "character", "run", "present", "persons", "unknown_speakers"])
_ITEM = {"allOf": [ref("RetrievedItem"), obj({"person": {**NSTR, "description": "whose folder the entry came "
                                                         "from (null: the character's own profile)"}})]}
_CONTEXT = obj({"channel": {"type": "string"}, "character": NSTR, "present": _IDS, "query": NSTR,
                "items": arr(_ITEM), "budget_tokens": {"type": "integer", "nullable": True},
                "budget_used": {"type": "integer"},
                "unknown": {**_IDS, "description": "persons present without a folder: skipped"},
                "dropped": arr(_ITEM), "excluded": {"type": "object", "additionalProperties": {"type": "integer"}}},
               ["channel", "present", "items", "budget_used", "unknown"])


def channel_paths() -> dict[str, dict]:
    return {
        "/channels/{channel}/memorize": {"parameters": [CHANNEL], "post": op(
            "memorize one group turn with ONE model call: what each person said or did is filed in that person's "
            "folder only (the character's layer; facts proposed to the shared layer by its shared_writes), every "
            "diary entry with channel and present, all as one run (one bulk rollback undoes it). The token must "
            "reach every person speaking (403 before anything is asked or written). With `Prefer: "
            "respond-async` or async: true, 202 and a job (the same Idempotency-Key is the same job)", "write",
            {**ok(_TURN), "202": {"description": "accepted as a background job",
                                  "headers": {"Location": {"schema": {"type": "string"},
                                                           "description": "/api/v1/jobs/<id>"}},
                                  "content": {"application/json": {"schema": ref("Job")}}}},
            params=[HDR_IDEM, param("Prefer", "header", {"type": "string"},
                                    description="respond-async: answer 202 at once, run as a job")],
            body=body({"messages": {**arr(obj({"speaker": {"type": "string", "pattern": OWNER_ID_PATTERN},
                                               "content": {"type": "string", "minLength": 1}},
                                              ["speaker", "content"], extra=False)),
                                    "minItems": 1, "maxItems": MAX_CHANNEL_MESSAGES,
                                    "description": f"the turn: speakers as person owner ids or char:<character>; "
                                                   f"at most {MAX_TURN_CHARS:,} characters in all"},
                       "character": {**NSTR, "maxLength": 64, "description": "the registered character that "
                                     "memorizes the turn (default: the one the token is bound to)"},
                       "async": {"type": "boolean"}, "prompt": NSTR, "ts": APPEND["ts"], "tz": APPEND["tz"],
                       **WRITE, "staged": STAGED["staged"]}, ["messages"]),
            tag="channels")},
        "/channels/{channel}/context": {"parameters": [CHANNEL], "post": op(
            "the channel's context for who is present, in one call: every present person's folder asked with the "
            "same room rules (a direct chat's memories stay out when others are there; a character recalls only "
            "what it was at), merged under ONE limit and ONE token budget, each item naming its person. Without "
            "query: the channel's own diary entries of the last `days` days, newest first. The token must reach "
            "every person present (403)", "read", ok(_CONTEXT),
            body=body({"present": {**ROOM["present"], "minItems": 1, "description": "who is in the room now: "
                                   "persons' owner ids and char:<character>"},
                       "character": {**NSTR, "maxLength": 64, "description": "recall as this character (default: "
                                     "the one the token is bound to)"},
                       "query": {**NSTR, "maxLength": MAX_QUERY_CHARS},
                       "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RETRIEVE_LIMIT,
                                 "description": "hits at most, over all the persons (default 10)"},
                       "budget_tokens": {"type": "integer", "nullable": True, "minimum": 1,
                                         "description": "one budget over all the persons"},
                       "budget_strict": {"type": "boolean"}, "explain": {"type": "boolean"},
                       "days": {"type": "integer", "minimum": 1, "maximum": MAX_CONTEXT_DAYS,
                                "description": "without query: how many days back (default 7)"}}, ["present"]),
            tag="channels")},
    }
