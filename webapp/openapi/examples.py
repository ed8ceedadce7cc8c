"""The operation ids and examples of the OpenAPI document (:data:`OPERATION_IDS`, :data:`EXAMPLES`)."""

from __future__ import annotations

from typing import Any

import wikimem

from .imports import IMPORT_EXAMPLES, IMPORT_IDS

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
    ("get", "/characters"): "characters",
    ("get", "/characters/{character}"): "character",
    ("put", "/characters/{character}"): "put_character",
    ("delete", "/characters/{character}"): "delete_character",
    **IMPORT_IDS,
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
             "owner": "user:ann", "source_conv": "conv_101", "ts": _TS, "channel": "dm",
             "present": ["user:ann", "char:kai"]}
_EX_STATS = {"id": "user:ann", "items": 2, "files": 2, "diary_days": 1, "last_change": "2026-07-21T06:30:00Z",
             "head": _C2}
_EX_ENTRY_LOG = {"id": _C2, "parents": [_C1], "time": "2026-07-21T06:30:00Z", "actor": "Elaina", "run": "run_1",
                 "action": "diary", "file": None, "item": None, "date": "2026-07-21", "time_of_day": "14:30",
                 "owner": "user:ann", "source_conv": "conv_101", "summary": "diary 2026-07-21 14:30", "changes": 1}
_EX_ITEM_LOG = {**_EX_ENTRY_LOG, "id": _C1, "parents": [_C0], "action": "add", "file": "preferences",
                "item": "likes-the-sea", "date": None, "time_of_day": None, "summary": "add preferences/likes-the-sea"}
_EX_DIARY_GONE = {"kind": "diary", "status": "removed", "file": None, "name": None, "date": "2026-07-21",
                  "time": "14:30", "before": _EX_ENTRY["content"], "after": None, "channel": "dm",
                  "present": ["user:ann", "char:kai"]}
_EX_ITEM_GONE: dict[str, Any] = {"kind": "wiki", "status": "removed", "file": "preferences", "name": "likes-the-sea",
                                 "date": None, "time": None, "before": _EX_ITEM["content"], "after": None,
                                 "channel": None, "present": []}
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
ERROR_EXAMPLE = {"error": {"code": "not_found", "message": "no item 'likes-the-sea' in 'preferences'"}}


class Named(dict):
    """Several named examples (OpenAPI ``examples``) rather than one (``example``)."""


def _named(**cases: tuple[str, Any]) -> Named:
    """OpenAPI ``examples``: name → (summary, value)."""
    return Named({name: {"summary": summary, "value": value} for name, (summary, value) in cases.items()})


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
_EX_KAI = {"id": "kai", "owner": "char:kai", "name": "Kai", "persona": "A cheerful barista who remembers orders.",
           "shared_writes": "staged", "deleted": False, "updated": "2026-07-21T06:30:00+00:00", "head": _C1}
_CHARACTER_EXAMPLES: dict[str, dict[str, Any]] = {
    "characters": {"200": {"characters": [_EX_KAI]}},
    "character": {"200": {"character": _EX_KAI}},
    "put_character": {"request": {"name": "Kai", "persona": _EX_KAI["persona"], "shared_writes": "staged"},
                      "201": {"character": _EX_KAI, "commit": _C1, "created": True},
                      "200": {"character": {**_EX_KAI, "shared_writes": "direct", "head": _C2}, "commit": _C2,
                              "created": False}},
    "delete_character": {"200": {"character": {**_EX_KAI, "deleted": True, "head": _C2}, "commit": _C2}},
}
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
                                 "actor": "Elaina", "channel": "dm", "present": ["user:ann", "char:kai"]},
                     "201": {"entry": _EX_ENTRY, "commit": _C2, "replayed": False}},
    "diary_window": {"200": {"entries": [_EX_ENTRY]}},
    "diary_dates": {"200": {"dates": ["2026-07-21"]}},
    "diary_day": {"200": {"entries": [_EX_ENTRY]}},
    "diary_tool": {"request": {"arguments": {"content": "Went to the beach with [[people:mia]]."},
                               "tz": "Asia/Shanghai", "source_conv": "conv_101", "run": "run_1", "channel": "dm",
                               "present": ["user:ann", "char:kai"]},
                   "201": {"entry": _EX_ENTRY, "commit": _C2, "replayed": False}},
    "batch": {"request": {"ops": [{"op": "add", "file": "people", "name": "mia", "content": _EX_MIA["content"]},
                                  {"op": "diary", "content": "Met Mia.", "date": "2026-07-22", "time": "09:00"}],
                          "run": "run_2", "actor": "importer", "message": "import from the old bot"},
              "200": {"results": [{"op": "add", "item": _EX_MIA},
                                  {"op": "diary", "entry": {**_EX_ENTRY, "date": "2026-07-22", "time": "09:00",
                                                            "content": "Met Mia.", "source_conv": None,
                                                            "channel": None, "present": []}}],
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
                             "character": "kai", "tz": "Asia/Shanghai", "source_conv": "conv_102"},
                 "200": {"entries": [{**_EX_ENTRY, "time": "15:02", "content": "Started learning to surf.",
                                      "source_conv": "conv_102"}],
                         "facts": [{"file": "hobbies", "name": "surfing", "content": "Learning to surf.",
                                    "owner": "user:ann", "source_conv": "conv_102", "ts": "2026-07-21T07:02:00Z"}],
                         "writes": [{"kind": "diary", "layer": "character", "staged": False, "date": "2026-07-21",
                                     "time": "15:02"},
                                    {"kind": "fact", "layer": "character", "staged": False, "file": "hobbies",
                                     "name": "surfing"},
                                    {"kind": "fact", "layer": "shared", "staged": True, "file": "hobbies",
                                     "name": "surfing"}],
                         "dropped": [], "character": "kai",
                         "proposal": {"run": "run_20260721T070200Z_8d1e", "commit": _C2,
                                      "facts": [{"file": "hobbies", "name": "surfing",
                                                 "content": "Learning to surf."}]},
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
    **_CHARACTER_EXAMPLES,
    **IMPORT_EXAMPLES,
}
