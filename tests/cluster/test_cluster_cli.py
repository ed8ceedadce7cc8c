"""``wikimem cluster verify | restore | push | where | rebalance`` on real data roots and a file:// remote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikimem.host import make_host
from wikimem.host.cluster.replication import Settings
from wikimem.host.cluster.shards import Ring

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wikimem", "cluster", "--json", *args], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO), **env})


@pytest.fixture
def remote(tmp_path):
    (tmp_path / "replicas").mkdir()
    return f"file://{tmp_path}/replicas/{{owner}}.git"


def test_verify_reports_equal_then_a_hand_edit_and_an_unpushed_commit(tmp_path, remote):
    a = make_host(tmp_path / "a", replication=Settings(remote))
    for i in range(3):
        a.create_owner(f"user:v{i}").add("prefs", "sea", "likes the sea")
    env = {"WIKIMEM_DATA": str(tmp_path / "a"), "WIKIMEM_REMOTE": remote}
    done = cli("verify", env=env)
    assert done.returncode == 0, done.stderr
    assert {c["state"] for c in json.loads(done.stdout)} == {"equal"}
    (a.owner_path("user:v0") / "wiki" / "prefs.md").write_text("## edited\nby hand\n")
    from wikimem.versioned import VersionedStore

    unreplicated = VersionedStore(a.owner_path("user:v1"))  # a write by something that does not replicate
    unreplicated.add("prefs", "tea", "green tea")
    unreplicated.close()
    done = cli("verify", env=env)
    states = {c["id"]: c["state"] for c in json.loads(done.stdout)}
    assert done.returncode == 1 and states == {"user:v0": "dirty", "user:v1": "ahead", "user:v2": "equal"}
    assert cli("push", env=env).returncode == 0
    assert {c["id"]: c["state"] for c in json.loads(cli("verify", env=env).stdout)}["user:v1"] == "equal"


def test_restore_all_rebuilds_a_host_from_the_remote_alone(tmp_path, remote):
    a = make_host(tmp_path / "a", replication=Settings(remote))
    owners = [f"user:r{i}" for i in range(4)]
    for owner in owners:
        a.create_owner(owner).diary_append(f"{owner} was here", date="2026-07-21", time="09:00")
    env = {"WIKIMEM_DATA": str(tmp_path / "new"), "WIKIMEM_REMOTE": remote}
    done = cli("restore", "--all", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {o: "cloned" for o in owners}
    restored = make_host(tmp_path / "new")
    assert restored.owner_ids() == owners
    assert [e.content for e in restored.owner("user:r2").diary_day("2026-07-21")] == ["user:r2 was here"]
    assert {c["state"] for c in json.loads(cli("verify", env=env).stdout)} == {"equal"}
    missing = cli("restore", "--owner", "user:nobody", env=env)
    assert missing.returncode == 1 and json.loads(missing.stdout) == {"user:nobody": "not on the remote"}


def test_rebalance_drops_only_copies_served_elsewhere_and_safely_on_the_remote(tmp_path, remote):
    a = make_host(tmp_path / "a", replication=Settings(remote))
    owners = [f"user:b{i}" for i in range(12)]
    for owner in owners:
        a.create_owner(owner).add("prefs", "sea", "likes the sea")
    servers = ["10.0.0.11:8000", "10.0.0.12:8000"]  # a second host joined
    ring = Ring(servers)
    moving = [o for o in owners if ring.server_for(o) != servers[0]]
    assert moving and len(moving) < len(owners)
    (a.owner_path(moving[0]) / "wiki" / "prefs.md").write_text("## edited\nnot committed yet\n")
    env = {"WIKIMEM_DATA": str(tmp_path / "a"), "WIKIMEM_REMOTE": remote}
    dry = cli("rebalance", "--servers", ",".join(servers), "--self", servers[0], "--dry-run", env=env)
    assert set(json.loads(dry.stdout)) == set(moving) and make_host(tmp_path / "a").owner_ids() == sorted(owners)
    done = cli("rebalance", "--servers", ",".join(servers), "--self", servers[0], env=env)
    result = json.loads(done.stdout)
    assert result[moving[0]].startswith("kept: dirty") and done.returncode == 1
    assert all(result[o].startswith("dropped") for o in moving[1:])
    assert make_host(tmp_path / "a").owner_ids() == sorted([o for o in owners if o not in moving] + [moving[0]])


def test_where_prints_the_servers_in_nginx_order(tmp_path):
    done = cli("where", "user:xnne", "--servers", "127.0.0.1:8001,127.0.0.1:8002", env={})
    assert json.loads(done.stdout) == Ring(["127.0.0.1:8001", "127.0.0.1:8002"]).servers_for("user:xnne")
