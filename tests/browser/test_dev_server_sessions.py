"""``wikimem serve`` keeps its session key in the data root: a restart does not sign the operator out.

A real ``wikimem serve`` process, a real Chromium session cookie: sign in,
stop the server, start it again, and the same browser is still signed in.
Deleting the kept key (the control) does sign it out, so the test measures
the key file and nothing else.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager

import pytest

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])").expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dev_server(data, port: int):
    """``wikimem serve`` on 127.0.0.1:``port`` over ``data``; yields the admin token it prints."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_DATA=str(data), WIKIMEM_BIND=f"127.0.0.1:{port}", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "wikimem", "serve"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        token = None
        deadline = time.monotonic() + 60
        while token is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                raise AssertionError(f"wikimem serve exited with {proc.returncode}")
            found = re.match(r"admin token: (\S+)", line)
            token = found.group(1) if found else None
        assert token, "no admin token printed"
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    break
            except OSError:
                time.sleep(0.1)
        yield token
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


def test_a_restart_of_the_dev_server_keeps_the_operator_signed_in(tmp_path, page, screenshots):
    data = tmp_path / "data"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with dev_server(data, port) as token:
        page.goto(url + "/admin/")
        expect(page).to_have_url(re.compile(r"/login"))
        page.fill("input[name=token]", token)
        page.click("#token-submit")
        expect(page.locator(".who")).to_contain_text("admin")
    key_file = data / "secret-key"
    key = key_file.read_text()
    assert len(key.strip()) >= 32 and key_file.stat().st_mode & 0o777 == 0o600

    with dev_server(data, port) as again:
        assert again == token, "the admin token is kept too"
        page.goto(url + "/admin/")
        expect(page).to_have_url(url + "/admin/")
        expect(page.locator(".who")).to_contain_text("admin")
        page.screenshot(path=screenshots / "dev-server-after-restart.png", full_page=True)
    assert key_file.read_text() == key

    # The control: without the kept key, a restart makes a new one and the old cookie is worthless.
    key_file.unlink()
    with dev_server(data, port):
        page.goto(url + "/admin/")
        expect(page).to_have_url(re.compile(r"/login"))
    assert key_file.read_text() != key
