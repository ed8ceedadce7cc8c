"""A request that outlives gunicorn's worker timeout answers the API's JSON error shape, not gunicorn's HTML."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from fakes import FakeOpenAI
from gunicorn_env import free_port as _free_port

REPO = Path(__file__).resolve().parents[2]
TOKEN = "worker-timeout-token-0123456789"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gunicorn") is None and not (Path(sys.executable).parent / "gunicorn").exists(),
                    reason="gunicorn is not installed")
def test_a_request_stopped_by_the_worker_timeout_gets_a_json_503(tmp_path):
    port = _free_port()
    with FakeOpenAI() as chat:
        chat.delay = 30.0  # the model takes longer than the worker may
        env = dict(os.environ, PYTHONPATH=str(REPO), WIKIMEM_DATA=str(tmp_path), WIKIMEM_ADMIN_TOKEN=TOKEN,
                   WIKIMEM_ENV="development", WIKIMEM_LLM_URL=chat.url, WIKIMEM_LLM_MODEL="m")
        env.pop("WIKIMEM_LLM_TIMEOUT", None)
        proc = subprocess.Popen([str(Path(sys.executable).parent / "gunicorn"), "--bind", f"127.0.0.1:{port}",
                                 "--workers", "1", "--worker-class", "sync", "--timeout", "3", "webapp.wsgi:app"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    urllib.request.urlopen(base + "/healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
            urllib.request.urlopen(urllib.request.Request(base + "/api/v1/owners/user:t", method="PUT",
                                                          headers=headers), timeout=10)
            request = urllib.request.Request(base + "/api/v1/owners/user:t/memorize", method="POST",
                                             headers=headers, data=b'{"turn": "user: hi"}')
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(request, timeout=60)
            err = caught.value
            assert err.code == 503 and err.headers["Content-Type"] == "application/json"
            assert b'"code": "timeout"' in err.read() and err.headers["Retry-After"]
        finally:
            proc.terminate()
            proc.wait(10)
