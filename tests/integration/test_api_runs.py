"""The operators' API: ``GET /api/v1/runs``, ``POST /api/v1/bulk/rollback``, the history's new filters and marks.

The real app over a real data root (Flask's test client); tokens with
scopes and owner prefixes as a bot worker or an operator's script holds them.
"""

from __future__ import annotations

import pytest
from apiworld import ADMIN, auth
from operators_world import BAD_ACTOR, bad_deploy

from webapp.hosting import get_host
from wikimem.context import WriteContext
from wikimem.host.access.tokens import append_token, mint_token


@pytest.fixture
def deploy(world):
    with world.app.app_context():
        d = bad_deploy(get_host(), 4)
        for i in range(2):  # owners a token limited to "user:lu" reaches
            get_host().ensure_owner(f"user:lu{i}")[0].add(
                "preferences", "tea", "Hates tea.", ctx=WriteContext(actor=BAD_ACTOR, run=f"run_lu_{i}"))
    return d


def get(world, url, token, **params):
    return world.client.get(url, query_string=params, headers=auth(token))


def test_runs_across_owners_with_totals_and_paging(world, deploy):
    r = get(world, "/api/v1/runs", world.secrets["reader"], actor=BAD_ACTOR, since="2000-01-01", limit=4)
    body = r.get_json()
    assert r.status_code == 200 and body["total"] == {"runs": 6, "owners": 6, "commits": 6}
    assert len(body["runs"]) == 4 and body["next"]
    rest = get(world, "/api/v1/runs", world.secrets["reader"], actor=BAD_ACTOR, since="2000-01-01",
               cursor=body["next"]).get_json()
    owners = [r["owner"] for r in body["runs"] + rest["runs"]]
    assert sorted(owners) == sorted(deploy.owners + ["user:lu0", "user:lu1"]) and rest["next"] is None
    row = body["runs"][0]
    assert set(row) >= {"owner", "run", "commit", "actor", "first", "last", "commits", "rolled_back_by"}


def test_counts_per_owner(world, deploy):
    body = get(world, "/api/v1/runs", ADMIN, actor=BAD_ACTOR, by="owner").get_json()
    assert [o["owner"] for o in body["owners"]] == sorted(deploy.owners + ["user:lu0", "user:lu1"])


def test_a_token_sees_only_the_runs_of_its_owners(world, deploy):
    body = get(world, "/api/v1/runs", world.secrets["scoped"], actor=BAD_ACTOR).get_json()
    assert {r["owner"] for r in body["runs"]} == {"user:lu0", "user:lu1"}
    assert get(world, "/api/v1/runs", world.secrets["scoped"], owner_prefix="user:d").get_json()["runs"] == []


@pytest.mark.parametrize("params, status", [({"since": "soon"}, 422), ({"cursor": "!!"}, 400), ({"limit": "0"}, 422),
                                            ({"limit": "ten"}, 400), ({"actor": "x" * 201}, 422)])
def test_bad_run_searches_are_400_and_refused_values_422(world, params, status):
    r = get(world, "/api/v1/runs", ADMIN, **params)
    assert r.status_code == status
    assert r.get_json()["error"]["code"] == {400: "bad_request", 422: "invalid_value"}[status]


def test_bulk_preview_needs_admin_and_a_selective_search(world, deploy):
    url = "/api/v1/bulk/rollback"
    assert world.client.post(url, json={"actor": BAD_ACTOR, "preview": True},
                             headers=auth(world.secrets["writer"])).status_code == 403
    r = world.client.post(url, json={"owner_prefix": "user:", "preview": True}, headers=auth(ADMIN))
    assert r.status_code == 400 and "owner prefix alone" in r.get_json()["error"]["message"]
    r = world.client.post(url, json={"actor": BAD_ACTOR, "preview": True, "limit": 2}, headers=auth(ADMIN))
    body = r.get_json()
    assert r.status_code == 200 and body["total"]["owners"] == 6 and body["total"]["conflicts"] == 1
    assert len(body["owners"]) == 2 and body["next"] == "2"
    more = world.client.post(url, json={"actor": BAD_ACTOR, "preview": True, "cursor": "2"},
                             headers=auth(ADMIN)).get_json()
    assert len(more["owners"]) == 4 and more["next"] is None
    conflicted = next(o for o in body["owners"] + more["owners"] if o["owner"] == deploy.conflicted)
    assert conflicted["conflict_count"] == 1 and conflicted["conflicts"][0]["name"] == "tea"


def test_bulk_preview_is_limited_to_the_tokens_owners(world, deploy):
    secret, entry = mint_token("lu-admin", ["admin"], "user:lu")
    append_token(world.tmp_path / "tokens.jsonl", entry)
    r = world.client.post("/api/v1/bulk/rollback", json={"actor": BAD_ACTOR, "preview": True}, headers=auth(secret))
    assert r.status_code == 200
    assert sorted(o["owner"] for o in r.get_json()["owners"]) == ["user:lu0", "user:lu1"]


def test_bulk_rollback_rejects_unknown_fields(world):
    r = world.client.post("/api/v1/bulk/rollback", json={"actor": BAD_ACTOR, "owners": ["a"]}, headers=auth(ADMIN))
    assert r.status_code == 400 and "unknown field" in r.get_json()["error"]["message"]


def test_history_filters_paging_and_undo_marks(world, deploy):
    owner = deploy.owners[1]
    url = f"/api/v1/owners/{owner}/history"
    bad = get(world, url, ADMIN, actor=BAD_ACTOR).get_json()
    assert [e["run"] for e in bad["entries"]] == ["run_bad_1"] and bad["prev"] is None
    world.client.post(f"/api/v1/owners/{owner}/rollback", json={"run": "run_bad_1"}, headers=auth(ADMIN))
    page = get(world, url, ADMIN, limit=1).get_json()
    rollback = page["entries"][0]["id"]
    older = get(world, url, ADMIN, limit=2, cursor=page["next"]).get_json()
    assert older["prev"] and older["reverted_by"] == {older["entries"][0]["id"]: [rollback]}
    assert get(world, url, ADMIN, limit=1, after=older["prev"]).get_json()["entries"][0]["id"] == rollback
    assert get(world, url, ADMIN, action="rollback").get_json()["entries"][0]["id"] == rollback
    assert get(world, url, ADMIN, until="2000-01-01").get_json()["entries"] == []
    assert get(world, url, ADMIN, since="nope").status_code == 422


@pytest.mark.parametrize("edge", ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"])
def test_a_time_past_the_calendar_in_utc_is_a_clear_422_everywhere(world, deploy, edge):
    """Parsed in one place (codec.utc_instant): the search, the bulk preview and the bulk start agree."""
    for field in ("since", "until"):
        r = get(world, "/api/v1/runs", ADMIN, **{field: edge})
        assert r.status_code == 422 and "years 1 to 9999" in r.get_json()["error"]["message"]
        for body in ({field: edge, "preview": True}, {field: edge, "actor": BAD_ACTOR}):
            r = world.client.post("/api/v1/bulk/rollback", json=body, headers=auth(ADMIN))
            assert r.status_code == 422 and "years 1 to 9999" in r.get_json()["error"]["message"]
    r = world.client.post(f"/api/v1/owners/{deploy.owners[0]}/retrieve", json={"query": "tea", "as_of": edge},
                          headers=auth(ADMIN))  # a point in history, read by the git layer
    assert r.status_code == 422 and "years 1 to 9999" in r.get_json()["error"]["message"]
    # the calendar's last and first days themselves are fine
    assert get(world, "/api/v1/runs", ADMIN, since="0001-01-01", until="9999-12-31").status_code == 200
