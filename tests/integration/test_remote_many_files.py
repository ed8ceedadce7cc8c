"""A process holding many files open still fetches from its remote.

dulwich asks select(2) whether git's upload-pack has bytes for it, and select refuses a descriptor above 1023:
a long-lived host holding many owners open (each holds its intent log and its history index) reached that, and
every catch-up with a file:// remote then failed ("filedescriptor out of range in select()", answered 422).
Real app, real repositories, a real file:// remote; the descriptors are /dev/null opened by the test.
"""

from __future__ import annotations

import pytest
from apiworld import ADMIN, auth
from manyfiles import many_open_files, next_descriptor

from webapp import create_app


@pytest.fixture
def many_files():
    with many_open_files():
        yield


def test_a_host_past_a_thousand_open_files_still_catches_up_with_its_remote(tmp_path, many_files):
    remote = f"file://{tmp_path}/remote/{{owner}}.git"
    (tmp_path / "remote").mkdir()
    first = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "a"), "ADMIN_TOKEN": ADMIN, "REMOTE": remote,
                        "REMOTE_FRESHNESS": 0}).test_client()
    second = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "b"), "ADMIN_TOKEN": ADMIN,
                         "REMOTE": remote}).test_client()
    assert first.put("/api/v1/owners/user:ann", headers=auth(ADMIN)).status_code == 201
    assert first.put("/api/v1/owners/user:ann/items/notes/a", headers=auth(ADMIN),
                     json={"content": "written on a"}).status_code == 201
    assert next_descriptor() > 1024  # the next descriptor a fetch opens is past FD_SETSIZE
    got = second.get("/api/v1/owners/user:ann/items/notes/a", headers=auth(ADMIN))  # b clones from the remote
    assert got.status_code == 200 and got.get_json()["item"]["content"] == "written on a", got.get_json()
    assert second.put("/api/v1/owners/user:ann/items/notes/b", headers=auth(ADMIN),
                      json={"content": "written on b"}).status_code == 201
    back = first.get("/api/v1/owners/user:ann/items/notes/b", headers=auth(ADMIN))  # a fetches b's write
    assert back.status_code == 200 and back.get_json()["item"]["content"] == "written on b", back.get_json()
