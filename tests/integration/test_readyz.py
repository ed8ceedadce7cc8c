"""``/readyz``: a full or read-only disk is not ready; paths and messages only for an admin token."""

from __future__ import annotations

import os

import pytest
from apiworld import ADMIN, auth

from wikimem.host.readiness import disk_state


def _app(tmp_path, **config):
    from webapp import create_app

    return create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN, **config})


def test_ready_says_one_word_per_check_and_no_path_to_anyone(tmp_path):
    client = _app(tmp_path).test_client()
    r = client.get("/readyz")
    assert r.status_code == 200 and r.get_json() == {"ready": True, "remote": "none", "disk": "ok"}
    assert str(tmp_path) not in r.get_data(as_text=True)
    details = client.get("/readyz", headers=auth(ADMIN)).get_json()["details"]
    assert details["disk"]["path"].startswith(str(tmp_path)) and details["disk"]["free_bytes"] > 0


def test_a_disk_below_the_free_space_floor_is_full_and_not_ready(tmp_path):
    client = _app(tmp_path, READY_MIN_FREE=10**12).test_client()  # a floor no test disk reaches: "full"
    r = client.get("/readyz")
    assert r.status_code == 503 and r.headers["Retry-After"] == "5"
    assert r.get_json() == {"ready": False, "remote": "none", "disk": "full"}


def test_a_reader_token_sees_no_details(tmp_path):
    from wikimem.host.access import append_token, mint_token

    tokens = tmp_path / "tokens"
    secret, entry = mint_token("reader", ["read"])
    append_token(tokens, entry)
    client = _app(tmp_path, TOKENS_FILE=str(tokens)).test_client()
    assert "details" not in client.get("/readyz", headers=auth(secret)).get_json()


class _Stat:
    def __init__(self, flag=0, bavail=10**6, favail=10**6):
        self.f_flag, self.f_bavail, self.f_frsize, self.f_files, self.f_favail = flag, bavail, 4096, 10**6, favail


@pytest.mark.parametrize("stat, state", [(_Stat(), "ok"), (_Stat(flag=os.ST_RDONLY), "read-only"),
                                         (_Stat(bavail=10), "full"), (_Stat(favail=0), "full")])
def test_disk_states(tmp_path, monkeypatch, stat, state):
    monkeypatch.setattr(os, "statvfs", lambda path: stat)
    assert disk_state(tmp_path, min_free=1024 * 1024)[0] == state
