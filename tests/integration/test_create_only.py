"""Create-only item writes (issue 24 item 12): ``If-None-Match: *`` on ``PUT …/items/<file>/<name>``.

It was ignored and the write overwrote the item. Now: 412 when the item exists (nothing written, the
current etag and item in the error), a create otherwise — checked inside the write's unit, under the
owner's lock, like ``If-Match``.
"""

from __future__ import annotations

import threading

import pytest
from apiworld import ADMIN, OWNER, auth

from wikimem.context import WriteContext
from wikimem.errors import PreconditionFailed

O = f"/api/v1/owners/{OWNER}"
ITEM = O + "/items/preferences/tea"
CREATE = {"If-None-Match": "*"}


def _owner(world):
    return world.app.extensions["wikimem.host"].owner(OWNER)


def test_if_none_match_creates_a_missing_item_and_refuses_an_existing_one(world):
    client = world.client
    first = client.put(ITEM, headers=auth(ADMIN, **CREATE), json={"content": "Oolong, no sugar."})
    assert first.status_code == 201, first.get_json()
    etag = first.headers["ETag"].strip('"')
    head = _owner(world).head()
    second = client.put(ITEM, headers=auth(ADMIN, **CREATE), json={"content": "Coffee now."})
    assert second.status_code == 412, second.get_json()
    err = second.get_json()["error"]
    assert err["code"] == "precondition_failed" and err["current"] == etag
    assert err["item"]["content"] == "Oolong, no sugar." and err["item"]["name"] == "tea"
    assert _owner(world).head() == head  # nothing written
    assert client.get(ITEM, headers=auth(ADMIN)).get_json()["item"]["content"] == "Oolong, no sugar."
    # without the header it is an update, as before
    assert client.put(ITEM, headers=auth(ADMIN), json={"content": "Coffee now."}).status_code == 200


def test_a_retry_of_a_create_with_its_key_is_replayed_not_refused(world):
    headers = auth(ADMIN, **CREATE, **{"Idempotency-Key": "create-tea-1"})
    first = world.client.put(ITEM, headers=headers, json={"content": "Oolong."})
    again = world.client.put(ITEM, headers=headers, json={"content": "Oolong."})
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.get_json()["replayed"] is True and again.get_json()["commit"] == first.get_json()["commit"]


@pytest.mark.parametrize("headers", [{"If-None-Match": '"abc"'}, {"If-None-Match": "*", "If-Match": '"abc"'}])
def test_other_if_none_match_values_and_both_preconditions_are_malformed(world, headers):
    r = world.client.put(ITEM, headers=auth(ADMIN, **headers), json={"content": "x"})
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "bad_request"
    assert world.client.get(ITEM, headers=auth(ADMIN)).status_code == 404


def test_concurrent_creates_of_one_item_make_one_item_and_one_commit(world):
    """Eight writers race to create the same item: one wins (201), the others get 412 — not a check
    that passes for all of them followed by eight overwrites."""
    head = _owner(world).head()
    start = threading.Barrier(8)
    statuses: list[int] = []

    def create(n: int) -> None:
        client = world.app.test_client()
        start.wait()
        r = client.put(ITEM, headers=auth(ADMIN, **CREATE), json={"content": f"writer {n}"})
        statuses.append(r.status_code)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(statuses) == [201] + [412] * 7
    history = world.client.get(O + "/history", headers=auth(ADMIN)).get_json()["entries"]
    assert [e["id"] for e in history].index(head) == 1  # exactly one commit on top of where it was


def test_the_versioned_store_checks_it_inside_the_unit(world):
    owner = _owner(world)
    owner.add("preferences", "tea", "Oolong.", ctx=WriteContext(if_none_match=True))
    head = owner.head()
    with pytest.raises(PreconditionFailed) as info:
        owner.add("preferences", "tea", "Coffee.", ctx=WriteContext(if_none_match=True))
    assert info.value.item["content"] == "Oolong." and owner.head() == head
    with pytest.raises(ValueError):
        WriteContext(if_none_match=True, if_match="abc")


def test_the_client_exposes_create_only(world):
    """The Python client over a real HTTP server: ``add(..., if_none_match=True)``."""
    from werkzeug.serving import make_server

    from wikimem.client import Client, PreconditionFailedError

    srv = make_server("127.0.0.1", 0, world.app, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        mem = Client(f"http://127.0.0.1:{srv.server_port}", ADMIN, owner=OWNER, retries=0, proxies={})
        made = mem.add("preferences", "tea", "Oolong.", if_none_match=True)
        assert made.commit and made.value.content == "Oolong."
        with pytest.raises(PreconditionFailedError) as info:
            mem.add("preferences", "tea", "Coffee.", if_none_match=True)
        assert info.value.status == 412 and info.value.current == made.etag
        assert info.value.item["content"] == "Oolong."
        assert mem.get("preferences", "tea").content == "Oolong."
        with pytest.raises(ValueError):
            mem.add("preferences", "tea", "x", if_match=made.etag, if_none_match=True)
    finally:
        srv.shutdown()
