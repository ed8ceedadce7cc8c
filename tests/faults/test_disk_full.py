"""A full disk under the data root: 507 with Retry-After, nothing half-written, and writes resume once there is room.

Uses a small tmpfs (root only); skipped with the reason where mounting is
not allowed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from apiworld import ADMIN, OWNER, auth

from webapp import create_app
from wikimem.host import encode_owner_id

O = f"/api/v1/owners/{OWNER}"


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not root'})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder: Path) -> Path:
    """Fill the disk until a write fails; the file that holds the space."""
    ballast = folder / f"ballast-{uuid.uuid4().hex}"
    with open(ballast, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    return ballast


@pytest.mark.slow
def test_a_full_disk_answers_507_and_loses_nothing(small_disk):
    app = create_app({"TESTING": True, "DATA_ROOT": str(small_disk / "data"), "ADMIN_TOKEN": ADMIN})
    client = app.test_client()
    assert client.put(O, headers=auth(ADMIN)).status_code == 201
    assert client.put(O + "/items/f/before", headers=auth(ADMIN), json={"content": "saved"}).status_code == 201
    repo = small_disk / "data" / "owners" / encode_owner_id(OWNER)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "main"], capture_output=True, text=True).stdout
    ballast = _fill(small_disk)
    statuses = []
    for n in range(5):
        r = client.put(O + f"/items/f/full{n}", headers=auth(ADMIN), json={"content": "x" * 20_000})
        statuses.append(r.status_code)
        if r.status_code == 507:
            assert r.get_json()["error"]["code"] == "storage_full" and r.headers["Retry-After"]
        else:
            assert r.status_code < 500, r.get_data(as_text=True)
    assert 507 in statuses
    os.unlink(ballast)
    after = client.put(O + "/items/f/after", headers=auth(ADMIN), json={"content": "room again"})
    assert after.status_code == 201  # created
    items = client.get(O + "/items?file=f", headers=auth(ADMIN)).get_json()["items"]
    names = {i["name"] for i in items}
    assert {"before", "after"} <= names
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert "external-edit" not in log
    if shutil.which("git"):
        fsck = subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
        assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                              text=True).stdout == ""
    assert head  # the first write stood throughout


@pytest.mark.slow
def test_reads_of_a_rate_limited_token_go_on_when_the_counter_cannot_be_written(small_disk, tmp_path):
    from webapp.hosting import metrics_of
    from wikimem.host.access import append_token, mint_token

    tokens = tmp_path / "tokens"
    reader, entry = mint_token("bot", ["read"])
    append_token(tokens, entry)
    app = create_app({"TESTING": True, "DATA_ROOT": str(small_disk / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens), "API_LIMIT": "100000/minute"})
    client = app.test_client()
    assert client.put(O, headers=auth(ADMIN)).status_code == 201
    assert client.put(O + "/items/f/tea", headers=auth(ADMIN), json={"content": "likes green tea"}).status_code == 201
    assert client.get(O + "/items?file=f", headers=auth(reader)).status_code == 200  # the state file exists
    ballast = _fill(small_disk)
    try:
        statuses = []
        for _ in range(60):
            statuses.append(client.get(O + "/items?file=f", headers=auth(reader)).status_code)
            statuses.append(client.post(O + "/retrieve", headers=auth(reader), json={"query": "tea"}).status_code)
            statuses.append(client.get(O + "/history", headers=auth(reader)).status_code)
            _fill(small_disk)  # whatever SQLite freed meanwhile is taken again
        assert set(statuses) == {200}, statuses
        text = metrics_of(app).exposition().decode()
        counted = [line for line in text.splitlines() if line.startswith("wikimem_rate_limit_unavailable_total")]
        assert counted and float(counted[0].split()[-1]) >= 1, counted
    finally:
        os.unlink(ballast)
