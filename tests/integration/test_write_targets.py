"""One write API over every target (issue 32): the same preconditions and idempotent replay on ``main`` and on a
staged run, through the real app.

``If-Match`` on a staged write is checked against the staged run's view (the run's tip, or ``main``'s head before
its first write): an item's etag as that view holds it, a commit id equal to that view's head. Before the write
verbs were one copy, a stale ``If-Match`` got 412 on ``main`` and 200 on a staged write (PUT and DELETE alike).
"""

from __future__ import annotations

import pytest
from apiworld import OWNER, auth

ITEM = f"/api/v1/owners/{OWNER}/items/people/mia"
TARGETS = {"main": {}, "staged": {"staged": True, "run": "run_probe"}}


@pytest.fixture(params=sorted(TARGETS))
def target(request) -> dict:
    return TARGETS[request.param]


def _put(world, body: dict, target: dict, **headers):
    token = world.secrets["writer"]
    return world.client.put(ITEM, json={**body, **target}, headers=auth(token, **headers))


def _delete(world, target: dict, **headers):
    return world.client.delete(ITEM, json=target, headers=auth(world.secrets["writer"], **headers))


def _etag(response) -> str:
    return response.headers["ETag"].strip('"')


def test_a_stale_item_etag_is_refused_on_every_target(world, target):
    first = _put(world, {"content": "A friend who surfs."}, {})  # on main: the view every target starts from
    seen = _etag(first)
    assert _put(world, {"content": "A friend who surfs daily."}, target, **{"If-Match": f'"{seen}"'}).status_code == 200
    stale_put = _put(world, {"content": "Moved away."}, target, **{"If-Match": f'"{seen}"'})
    assert stale_put.status_code == 412, stale_put.get_json()
    assert stale_put.get_json()["error"]["code"] == "precondition_failed"
    stale_delete = _delete(world, target, **{"If-Match": f'"{seen}"'})
    assert stale_delete.status_code == 412, stale_delete.get_json()


def test_a_current_item_etag_is_accepted_for_a_delete_on_every_target(world, target):
    _put(world, {"content": "A friend who surfs."}, {})
    changed = _put(world, {"content": "A friend who sails."}, target)
    done = _delete(world, target, **{"If-Match": f'"{_etag(changed)}"'})
    assert done.status_code == 200 and done.get_json()["removed"] is True


def test_create_only_is_refused_when_the_targets_view_holds_the_item(world, target):
    _put(world, {"content": "A friend who surfs."}, {})
    refused = _put(world, {"content": "Another Mia."}, target, **{"If-None-Match": "*"})
    assert refused.status_code == 412


def test_a_commit_id_if_match_must_be_the_head_of_the_targets_view(world, target):
    head = _put(world, {"content": "A friend who surfs."}, {}).get_json()["commit"]
    moved = _put(world, {"content": "A friend who sails."}, target).get_json()["commit"]
    assert _put(world, {"content": "x"}, target, **{"If-Match": head}).status_code == 412
    assert _put(world, {"content": "y"}, target, **{"If-Match": moved}).status_code == 200


def test_a_retry_with_the_same_key_replays_and_another_body_is_refused_on_every_target(world, target):
    key = {"Idempotency-Key": "key-mia-1"}
    first = _put(world, {"content": "A friend who surfs."}, target, **key)
    again = _put(world, {"content": "A friend who surfs."}, target, **key)
    assert first.status_code in (200, 201) and again.status_code in (200, 201)
    assert again.get_json()["replayed"] is True and again.get_json()["commit"] == first.get_json()["commit"]
    other = _put(world, {"content": "Someone else."}, target, **key)
    assert other.status_code == 422 and other.get_json()["error"]["code"] == "idempotency_key_reused"
