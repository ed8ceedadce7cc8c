"""nginx's ``hash $owner consistent`` over three real hosts: each owner lives on one host.

Before replication this is the routing alone: the owner id in the path
picks the host, the same owner always lands on the same host, and a dead
host's owners move to the others (nginx's passive checks) while the other
owners stay where they were.
"""

from __future__ import annotations

import pytest

from wikimem.client import Client

pytestmark = pytest.mark.slow

OWNERS = [f"user:route{i}" for i in range(24)]


def test_each_owner_lives_on_exactly_one_host_and_stays_there(make_cluster):
    cluster = make_cluster(3)
    api = Client(cluster.url, cluster.token, timeout=30.0, proxies={})
    for owner in OWNERS:
        api.create_owner(owner)
        api.add("notes", "first", f"first note of {owner}", owner=owner)
    placement = {}
    for owner in OWNERS:
        holders = cluster.host_holding(owner)
        assert len(holders) == 1, (owner, holders)
        placement[owner] = holders[0]
    assert len(set(map(id, placement.values()))) == 3  # 24 owners spread over all three hosts
    for owner in OWNERS:  # later requests find what the first one wrote: same host
        assert api.get("notes", "first", owner=owner).content == f"first note of {owner}"
        assert cluster.host_holding(owner) == [placement[owner]]


def test_a_dead_hosts_owners_move_and_the_others_stay(make_cluster):
    cluster = make_cluster(3)
    api = Client(cluster.url, cluster.token, timeout=30.0, proxies={}, retries=0)
    for owner in OWNERS:
        api.create_owner(owner)
    before = {o: cluster.host_holding(o)[0] for o in OWNERS}
    dead = before[OWNERS[0]]
    dead.kill()
    for owner in OWNERS:
        api.create_owner(owner)  # idempotent; on a host that lacks the owner it creates it there
    for owner in OWNERS:
        holders = [h for h in cluster.host_holding(owner) if h is not dead]
        if before[owner] is dead:
            assert len(holders) == 1  # moved to exactly one surviving host
        else:
            assert holders == [before[owner]]  # consistent hashing: untouched


def test_the_ring_of_the_cluster_commands_is_the_one_nginx_uses(make_cluster):
    from wikimem.host.cluster.shards import Ring

    cluster = make_cluster(3)
    api = Client(cluster.url, cluster.token, timeout=30.0, proxies={})
    ring = Ring([h.address for h in cluster.hosts])
    for owner in OWNERS:
        api.create_owner(owner)
        assert cluster.host_holding(owner)[0].address == ring.server_for(owner), owner
