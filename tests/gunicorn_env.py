"""A real gunicorn of the host (``deploy/gunicorn.conf.py``) for integration tests.

``Gunicorn(tmp, **env).start()`` runs ``gunicorn -c deploy/gunicorn.conf.py``
on a free port of 127.0.0.1 with only the ``WIKIMEM_*`` variables given (the
caller's own are dropped), and waits for ``/healthz``. ``run_until_exit``
runs one that is expected to refuse to start.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "deploy" / "gunicorn.conf.py"
STARTUP_SECONDS = 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def json_call(port: int, method: str, path: str, token: str, body: dict | None = None,
              headers: dict | None = None, timeout: float = 120) -> tuple[int, dict]:
    """One JSON request to a host on 127.0.0.1:``port`` with a bearer token: (status, decoded body)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body).encode(),
                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                              **(headers or {})})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def gunicorn_command() -> list[str]:
    beside = Path(sys.executable).with_name("gunicorn")
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "gunicorn"]


def host_env(tmp: Path, **wikimem: str) -> dict[str, str]:
    """The environment of a host under ``tmp``: data root, free port, admin token, secret key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_DATA=str(tmp / "data"), WIKIMEM_BIND=f"127.0.0.1:{free_port()}",
               WIKIMEM_ADMIN_TOKEN=secrets.token_urlsafe(24), WIKIMEM_SECRET_KEY=secrets.token_hex(32),
               HOME=str(tmp))
    env.update(wikimem)
    return {k: v for k, v in env.items() if v is not None}


def access_pids(log_text: str, needle: str) -> set[str]:
    """Pids of the workers whose access-log lines contain ``needle`` (text: ``host <pid> "request" …``;
    JSON: the line's ``process``, matched against ``"<request line>``)."""
    pids = set()
    for line in log_text.splitlines():
        if line.startswith("{"):
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if row.get("logger") == "gunicorn.access" and needle in f'"{row.get("request", "")}':
                pids.add(str(row.get("process")))
        elif needle in line and len(line.split()) > 2:
            pids.add(line.split()[1])
    return pids


def wait_for(predicate, timeout: float = 60, what: str = "condition"):
    """Poll ``predicate`` every 0.1 s until it returns something true (returned); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM (gunicorn's graceful stop), then SIGKILL if it is still there after 15 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


class Gunicorn:
    """One gunicorn process; ``base`` is its URL, ``token`` the admin token, ``log`` its output."""

    def __init__(self, tmp: Path, *, args: list[str] | None = None, **wikimem: str):
        self.env = host_env(tmp, **wikimem)
        self.base = "http://" + self.env["WIKIMEM_BIND"]
        self.token = self.env["WIKIMEM_ADMIN_TOKEN"]
        self.data = Path(self.env["WIKIMEM_DATA"])
        self.log = tmp / f"gunicorn-{secrets.token_hex(3)}.log"
        self.args = args if args is not None else ["-c", str(CONF)]
        self.proc: subprocess.Popen | None = None

    def start(self) -> Gunicorn:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(gunicorn_command() + self.args, cwd=REPO, env=self.env,
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + STARTUP_SECONDS
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"gunicorn exited with {self.proc.returncode}:\n{self.output()}")
            try:
                with opener.open(self.base + "/healthz", timeout=1) as resp:
                    if json.load(resp) == {"ok": True}:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"gunicorn did not become healthy:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def kill(self) -> None:
        """SIGKILL the master and every worker at once (a crash, not a shutdown)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=15)

    def __enter__(self) -> Gunicorn:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def run_until_exit(tmp: Path, *, args: list[str] | None = None, timeout: float = 60,
                   **wikimem: str) -> subprocess.CompletedProcess:
    """Run a gunicorn that should refuse to start; its exit status and output."""
    env = host_env(tmp, **wikimem)
    return subprocess.run(gunicorn_command() + (args if args is not None else ["-c", str(CONF)]), cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=timeout)


@contextmanager
def wikimem_serve(folder: Path, env: dict[str, str]):
    """``wikimem serve`` (the development server) on a free port in ``folder`` with ``env``; yields the port once
    ``/healthz`` answers, stops it at the end (its output in ``folder / "serve.log"``)."""
    port = free_port()
    with open(folder / "serve.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "wikimem", "serve", "--bind", f"127.0.0.1:{port}"], env=env,
                                cwd=folder, stdout=log, stderr=subprocess.STDOUT)
        try:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None and time.monotonic() < deadline, (folder / "serve.log").read_text()
                try:
                    with opener.open(f"http://127.0.0.1:{port}/healthz", timeout=1):
                        break
                except OSError:
                    time.sleep(0.1)
            yield port
        finally:
            stop_process(proc)
