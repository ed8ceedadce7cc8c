"""Every writing CLI command on a replicated data root moves the remote (issues 21 and 22, item 7).

The commands get their host from the composition root (``wikimem.host.config``), so they
replicate like the web app: in ``sync`` mode the commit is on the remote before the command
returns; in ``async`` mode the command waits for its pushes before it exits. ``git`` itself
is the witness of the remote's branch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikimem.context import WriteContext
from wikimem.host import Host, make_host
from wikimem.host.cluster import Settings

REPO = Path(__file__).resolve().parents[2]
OWNERS = ("user:ann", "user:bob")


def wikimem(*args: str, env: dict) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    return subprocess.run([sys.executable, "-m", "wikimem", *args], capture_output=True, text=True, timeout=120,
                          env={**clean, "PYTHONPATH": str(REPO), **env})


def remote_main(remotes: Path, host: Host, owner_id: str) -> str:
    """The remote's ``main`` of an owner, as ``git`` sees it."""
    bare = remotes / f"{host.owner_path(owner_id).name}.git"
    done = subprocess.run(["git", "--git-dir", str(bare), "rev-parse", "refs/heads/main"],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def world(tmp_path):
    """A data root replicating to one file:// bare repository per owner; each owner has a good and a bad run."""
    remotes = tmp_path / "remotes"
    remotes.mkdir()
    template = f"file://{remotes}/{{owner}}.git"
    host = make_host(tmp_path / "data", replication=Settings(template))
    for owner_id in OWNERS:
        owner = host.create_owner(owner_id)
        owner.vstore.add("prefs", "sea", "likes the sea", ctx=WriteContext(run="good", actor="Elaina"))
        owner.vstore.add("prefs", "sea", "hates the sea", ctx=WriteContext(run="bad", actor="Elaina"))
        owner.vstore.add("prefs", "tea", "drinks tea", ctx=WriteContext(run="bad", actor="Elaina"))
        assert remote_main(remotes, host, owner_id) == owner.head()  # the starting point is replicated
    return host, remotes, {"WIKIMEM_DATA": str(host.root), "WIKIMEM_REMOTE": template}


def _first_of(host: Host, run: str) -> str:
    return host.owner("user:ann").history(run=run).entries[-1].id


COMMANDS = {
    "bulk-rollback": lambda host: (["bulk-rollback", "--run", "bad"], OWNERS),
    "revert": lambda host: (["--owner", "user:ann", "revert", _first_of(host, "bad")], ("user:ann",)),
    "rollback": lambda host: (["--owner", "user:ann", "rollback", "bad"], ("user:ann",)),
    "restore": lambda host: (["--owner", "user:ann", "restore", _first_of(host, "good")], ("user:ann",)),
}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_writing_command_moves_the_remote(world, command, mode):
    host, remotes, env = world
    args, written = COMMANDS[command](host)
    before = {o: host.owner(o).head() for o in OWNERS}
    done = wikimem(*args, env={**env, "WIKIMEM_REPLICATION": mode})
    assert done.returncode == 0, done.stdout + done.stderr
    for owner_id in OWNERS:
        local = make_host(host.root).owner(owner_id).head()
        if owner_id in written:
            assert local != before[owner_id], f"{command} wrote no commit for {owner_id}"
        assert remote_main(remotes, host, owner_id) == local, f"{command}: the remote of {owner_id} stayed behind"
    after = make_host(host.root).owner("user:ann")
    assert after.item("prefs", "sea").content == "likes the sea"


def test_a_dry_run_writes_nothing_anywhere(world):
    host, remotes, env = world
    before = {o: remote_main(remotes, host, o) for o in OWNERS}
    assert wikimem("bulk-rollback", "--run", "bad", "--dry-run", env=env).returncode == 0
    assert wikimem("--owner", "user:ann", "rollback", "bad", "--dry-run", env=env).returncode == 0
    assert {o: remote_main(remotes, host, o) for o in OWNERS} == before
    assert {o: make_host(host.root).owner(o).head() for o in OWNERS} == before


def test_a_missing_owner_is_brought_from_the_remote_before_the_command(world, tmp_path):
    """A fresh data root on the same remote: ``--owner`` finds the owner there, as the host would."""
    host, remotes, env = world
    fresh = {**env, "WIKIMEM_DATA": str(tmp_path / "fresh")}
    done = wikimem("--owner", "user:bob", "rollback", "bad", env=fresh)
    assert done.returncode == 0, done.stderr
    rebuilt = make_host(tmp_path / "fresh").owner("user:bob")
    assert rebuilt.item("prefs", "sea").content == "likes the sea"
    assert remote_main(remotes, host, "user:bob") == rebuilt.head()
