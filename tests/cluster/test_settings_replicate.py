"""Settings replicate like memory: a time zone set on one host decides the diary on the other, and stays.

Two hosts (the real Flask app with ``WIKIMEM_REMOTE``), one ``file://``
remote. Host A sets the owner's time zone to ``Pacific/Kiritimati`` (UTC+14):
host B, which cloned the owner before, files the next entry by that zone —
20:00 UTC on 21 July is 10:00 on 22 July there — and B's own settings write
(the character) keeps A's time zone on the remote. With async replication
both hosts change a setting before either has seen the other's: the replay
keeps both.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from apiworld import ADMIN, auth

from webapp import create_app
from wikimem.host import encode_owner_id

OWNER = "user:tz"
O = f"/api/v1/owners/{OWNER}"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def hosts(tmp_path):
    (tmp_path / "remotes").mkdir()

    def host(name: str, mode: str = "sync"):
        app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / name), "ADMIN_TOKEN": ADMIN,
                          "REMOTE": f"file://{tmp_path}/remotes/{{owner}}.git", "REPLICATION": mode,
                          "REMOTE_FRESHNESS": 0})
        client = app.test_client()
        client.folder = tmp_path / name / "owners" / encode_owner_id(OWNER)
        client.app = app
        return client

    host.bare = tmp_path / "remotes" / f"{encode_owner_id(OWNER)}.git"
    return host


def remote_settings(bare: Path) -> dict:
    return json.loads(git(bare, "show", "main:settings.json"))


def test_a_time_zone_set_on_one_host_files_the_diary_on_the_other_and_is_never_reverted(hosts):
    a, b = hosts("a"), hosts("b")
    assert a.put(O, headers=auth(ADMIN)).status_code == 201
    assert a.post(O + "/diary", headers=auth(ADMIN), json={"content": "first"}).status_code == 201
    assert b.get(O + "/items", headers=auth(ADMIN)).status_code == 200  # b holds the owner now
    assert a.put(O + "/settings", headers=auth(ADMIN), json={"tz": "Pacific/Kiritimati"}).status_code == 200
    entry = b.post(O + "/diary", headers=auth(ADMIN), json={"content": "late call", "ts": "2026-07-21T20:00:00Z"})
    assert entry.status_code == 201, entry.get_data()
    assert (entry.get_json()["entry"]["date"], entry.get_json()["entry"]["time"]) == ("2026-07-22", "10:00")
    assert b.get(O + "/settings", headers=auth(ADMIN)).get_json()["settings"]["tz"] == "Pacific/Kiritimati"
    assert json.loads((b.folder / "settings.json").read_text())["tz"] == "Pacific/Kiritimati"  # the file too
    assert git(b.folder, "status", "--porcelain") == ""
    # b's own settings write starts from the branch: a's time zone stays, on the remote and on a
    assert b.put(O + "/settings", headers=auth(ADMIN), json={"character": "Elaina"}).status_code == 200
    assert remote_settings(hosts.bare) == {"tz": "Pacific/Kiritimati", "character": "Elaina"}
    assert a.get(O + "/settings", headers=auth(ADMIN)).get_json()["settings"] == {
        "tz": "Pacific/Kiritimati", "character": "Elaina", "dm_with_others": None}
    entry = a.post(O + "/diary", headers=auth(ADMIN), json={"content": "back on a", "ts": "2026-07-21T20:30:00Z"})
    assert entry.get_json()["entry"]["date"] == "2026-07-22"


def test_a_stale_settings_file_on_disk_never_decides_nor_reverts(hosts):
    """A host whose file on disk is older than its branch (what an older version left behind)."""
    a, b = hosts("a"), hosts("b")
    a.put(O, headers=auth(ADMIN))
    a.put(O + "/settings", headers=auth(ADMIN), json={"tz": "UTC"})
    assert b.get(O + "/items", headers=auth(ADMIN)).status_code == 200
    a.put(O + "/settings", headers=auth(ADMIN), json={"tz": "Pacific/Kiritimati"})
    b.get(O + "/items", headers=auth(ADMIN))  # caught up
    (b.folder / "settings.json").write_text('{"tz": "UTC"}\n')  # stale on disk, as before this fix
    entry = b.post(O + "/diary", headers=auth(ADMIN), json={"content": "late", "ts": "2026-07-21T20:00:00Z"})
    assert entry.get_json()["entry"]["date"] == "2026-07-22"
    assert b.put(O + "/settings", headers=auth(ADMIN), json={"character": "Elaina"}).status_code == 200
    assert remote_settings(hosts.bare) == {"tz": "Pacific/Kiritimati", "character": "Elaina"}


def test_async_settings_written_on_both_hosts_are_both_kept(hosts):
    a, b = hosts("a", "async"), hosts("b", "async")
    a.put(O, headers=auth(ADMIN))
    _drain(a)
    assert b.get(O + "/items", headers=auth(ADMIN)).status_code == 200
    assert a.put(O + "/settings", headers=auth(ADMIN), json={"tz": "Pacific/Kiritimati"}).status_code == 200
    assert b.put(O + "/settings", headers=auth(ADMIN), json={"character": "Elaina"}).status_code == 200
    _drain(a)
    _drain(b)  # b's push meets a's commit: b replays its settings write on top of it
    assert remote_settings(hosts.bare) == {"tz": "Pacific/Kiritimati", "character": "Elaina"}
    for host in (a, b):
        got = host.get(O + "/settings", headers=auth(ADMIN)).get_json()["settings"]
        assert got == {"tz": "Pacific/Kiritimati", "character": "Elaina", "dm_with_others": None}


def _drain(client) -> None:
    """Wait for the host's background pusher (async replication)."""
    from webapp.hosting import get_host

    with client.app.app_context():
        assert get_host().replication.pusher.drain(30)
