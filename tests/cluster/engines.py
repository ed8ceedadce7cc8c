"""Real engines on loopback for the cluster tests and ``bench/cluster.py``.

Each class starts one real program from Debian's packages on 127.0.0.1 and a
free port, in its own process group, logging into its own folder:

- :class:`GitHttpServer` — nginx + fcgiwrap + ``git http-backend`` with
  receive-pack enabled and ``receive.fsckObjects=true``; a missing repository
  is created on the first push (the push-to-create behaviour of hosted git
  servers), so ``WIKIMEM_REMOTE=http://127.0.0.1:PORT/{owner}.git`` works
  without preparing anything;
- :class:`GuideGitServer` — the same, set up by running the steps of
  ``docs/guides/git-server.md`` ("Set up the git server") with its files, as root:
  nginx's workers as ``www-data``, fcgiwrap started by spawn-fcgi, basic auth;
- :class:`GitDaemon` — ``git daemon --enable=receive-pack`` (git:// URLs);
- :class:`Balancer` — nginx proxying to N upstreams with
  ``hash $owner consistent`` (the map of ``deploy/cluster/nginx-balancer.conf``);
- :class:`HostProcess` — one wikimem host: gunicorn with its own data root.

Nothing here imports pytest: the fixtures in ``conftest.py`` and the
benchmark share it. Every wait is bounded in time; :meth:`Engine.stop`
terminates the whole process group (SIGTERM, then SIGKILL) and is safe to
call twice.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["free_port", "wait_until", "EngineError", "Engine", "GitHttpServer", "GuideGitServer", "GitDaemon",
           "Balancer", "HostProcess", "bare_repo", "REPO", "have", "guide_blocks"]

REPO = Path(__file__).resolve().parents[2]
START_SECONDS = 30.0
STOP_SECONDS = 15.0
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class EngineError(RuntimeError):
    """An engine did not start (its log is in the message)."""


def have(*programs: str) -> bool:
    """Whether every program is installed (nginx and fcgiwrap live in /usr/sbin)."""
    return all(_which(p) for p in programs)


def _which(program: str) -> str | None:
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/usr/bin:/sbin:/bin")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    """Poll ``predicate`` until it is true; raise :class:`EngineError` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() >= deadline:
            raise EngineError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def http_status(url: str, timeout: float = 2.0) -> int | None:
    """The status of a GET (None when nothing answers)."""
    try:
        with _NO_PROXY.open(url, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code
    except OSError:
        return None


def bare_repo(path: Path) -> Path:
    """Create an empty bare repository (branch ``main``) with the server-side checks on."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "config", "receive.fsckObjects", "true"], check=True)
    return path


class Engine:
    """One started program: its process group, its folder, its log."""

    name = "engine"

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log = self.workdir / f"{self.name}.log"
        self.procs: list[subprocess.Popen] = []

    def _spawn(self, argv: Sequence[str], env: dict | None = None, cwd: Path | None = None) -> subprocess.Popen:
        with open(self.log, "ab") as out:
            proc = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, cwd=cwd, start_new_session=True)
        self.procs.append(proc)
        return proc

    def log_text(self, tail: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-tail:]
        except FileNotFoundError:
            return ""

    def _check_alive(self) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                raise EngineError(f"{self.name} exited with {proc.returncode}:\n{self.log_text()}")

    def _wait_port(self, port: int) -> None:
        def up() -> bool:
            self._check_alive()
            return _port_open(port)

        try:
            wait_until(up, START_SECONDS, f"{self.name} on port {port}")
        except EngineError as exc:
            self.stop()
            raise EngineError(f"{exc}\n{self.log_text()}") from None

    def stop(self) -> None:
        """SIGTERM every process group, SIGKILL what is left after a bounded wait."""
        for proc in reversed(self.procs):
            _stop_group(proc)
        self.procs.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _stop_group(proc: subprocess.Popen, timeout: float = STOP_SECONDS) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    try:  # children of the group (nginx workers, fcgiwrap's forks) may outlive the leader
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.wait(timeout=5)


def _nginx_prelude(workdir: Path, user: str = "root root") -> str:
    """The top of an nginx.conf that keeps every file nginx writes inside ``workdir``.

    Started by root, the workers run as ``user``: root by default, so they reach the files of
    root-made folders (pytest's are 0700); ``www-data`` where the test is that they need not.
    """
    tmp = workdir / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    user = f"user {user};\n" if os.geteuid() == 0 else ""
    temps = "\n".join(f"    {kind}_temp_path {tmp / kind};" for kind in ("client_body", "proxy", "fastcgi",
                                                                          "uwsgi", "scgi"))
    return (f"{user}daemon off;\nworker_processes 1;\npid {workdir / 'nginx.pid'};\n"
            f"error_log {workdir / 'nginx-error.log'} warn;\n"
            f"events {{ worker_connections 512; }}\n"
            f"http {{\n{temps}\n    access_log {workdir / 'nginx-access.log'};\n")


def _nginx_argv(workdir: Path, conf: Path) -> list[str]:
    nginx = _which("nginx")
    if not nginx:
        raise EngineError("nginx is not installed (.ci/system-deps installs it)")
    return [nginx, "-e", str(workdir / "nginx-error.log"), "-p", str(workdir), "-c", str(conf)]


# The CGI that fcgiwrap runs for every request: push-to-create, then git's own http-backend
# (the same file a production git server uses, see docs/guides/git-server.md).
CREATE_AND_SERVE = REPO / "deploy" / "cluster" / "git-http-create.cgi"


class GitServer(Engine):
    """A git server on 127.0.0.1 serving the bare repositories under ``root`` as ``<url>/<folder>.git``."""

    scheme = ""

    def __init__(self, workdir: Path, root: Path | None = None):
        super().__init__(workdir)
        self.root = Path(root or self.workdir / "repos")
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def template(self) -> str:
        """A ``WIKIMEM_REMOTE`` template for this server."""
        return f"{self.url}/{{owner}}.git"

    def repo(self, folder: str) -> Path:
        """The bare repository behind ``{owner}`` = ``folder``."""
        return self.root / f"{folder}.git"


class GitHttpServer(GitServer):
    """nginx + fcgiwrap + ``git http-backend``: smart HTTP with push, fsck on receive, push-to-create."""

    name = "git-http"
    scheme = "http"

    def __init__(self, workdir: Path, root: Path | None = None, fcgi_children: int = 4):
        super().__init__(workdir, root)
        self.fcgi_port = 0
        self.fcgi_children = fcgi_children

    def start(self) -> GitHttpServer:
        fcgiwrap = _which("fcgiwrap")
        if not fcgiwrap:
            raise EngineError("fcgiwrap is not installed (.ci/system-deps installs it)")
        script = CREATE_AND_SERVE
        self.fcgi_port = free_port()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.workdir)}
        self._spawn([fcgiwrap, "-f", "-c", str(self.fcgi_children), "-s", f"tcp:127.0.0.1:{self.fcgi_port}"],
                    env=env)
        self._wait_port(self.fcgi_port)
        self.port = self.port or free_port()  # a restart keeps the address, as a real server does
        conf = self.workdir / "nginx.conf"
        conf.write_text(_nginx_prelude(self.workdir) + f"""
    server {{
        listen 127.0.0.1:{self.port};
        client_max_body_size 0;
        location / {{
            fastcgi_pass 127.0.0.1:{self.fcgi_port};
            fastcgi_read_timeout 60s;
            fastcgi_param SCRIPT_FILENAME {script};
            fastcgi_param GIT_PROJECT_ROOT {self.root};
            fastcgi_param GIT_HTTP_EXPORT_ALL "";
            fastcgi_param GIT_CONFIG_COUNT 1;
            fastcgi_param GIT_CONFIG_KEY_0 receive.fsckObjects;
            fastcgi_param GIT_CONFIG_VALUE_0 true;
            fastcgi_param REMOTE_USER wikimem;
            fastcgi_param PATH_INFO $uri;
            fastcgi_param QUERY_STRING $query_string;
            fastcgi_param REQUEST_METHOD $request_method;
            fastcgi_param CONTENT_TYPE $content_type;
            fastcgi_param CONTENT_LENGTH $content_length;
            fastcgi_param HTTP_CONTENT_ENCODING $http_content_encoding;
            fastcgi_param GIT_PROTOCOL $http_git_protocol;
            fastcgi_param REMOTE_ADDR $remote_addr;
            fastcgi_param SERVER_PROTOCOL $server_protocol;
            fastcgi_param PATH {os.environ.get("PATH", "/usr/bin:/bin")};
            fastcgi_param HOME {self.workdir};
        }}
    }}
}}
""")
        self._spawn(_nginx_argv(self.workdir, conf))
        self._wait_port(self.port)
        return self


GUIDE = REPO / "docs" / "guides" / "git-server.md"
# The absolute paths the guide installs to; a test keeps them under its own folder.
_GUIDE_PATHS = re.compile(r"(?<![\w/.-])(/usr/local/lib/wikimem|/srv/git|/etc/nginx|/run/fcgiwrap)")


def guide_blocks() -> dict[str, str]:
    """The shell blocks of the git server guide the server runs, by step (dedented, as a shell reads them)."""
    from docblocks import doc_block

    return {"files": doc_block("git-server-files"), "fcgiwrap": doc_block("git-server-fcgiwrap"),
            "nginx": doc_block("git-server-nginx-check")}


class GuideGitServer(GitServer):
    """The git server of ``docs/guides/git-server.md``, made by following it.

    Its shell blocks run as written (as root, from the repository, with its files), but every
    absolute path they name lives under ``<workdir>/root`` (``/srv/git`` is ``<workdir>/root/srv/git``);
    the installed site then gets the edit the guide asks of an operator: its ``listen`` address
    (127.0.0.1 and a free port) and, for TLS, a certificate (self-signed, ``self.cert``). nginx's
    workers run as ``www-data`` as on Debian, so ``workdir`` must be one ``www-data`` can reach.
    ``site``: ``"http"`` or ``"https"``. The repositories are ``<url>/wikimem/<folder>.git``.
    """

    name = "guide-git"

    def __init__(self, workdir: Path, site: str = "http"):
        Engine.__init__(self, workdir)  # (not GitServer's: the guide makes the repositories' folder)
        self.fs = self.workdir / "root"
        self.root = self.fs / "srv" / "git" / "wikimem"
        self.port = 0
        self.scheme = site
        self.password = ""
        self.cert = self.workdir / "cert.pem"
        self.output: dict[str, str] = {}  # what each step printed

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/wikimem"

    def template(self) -> str:
        """The hosts' ``WIKIMEM_REMOTE``, with the guide's account."""
        return f"{self.authed()}/{{owner}}.git"

    def authed(self, user: str = "wikimem", password: str | None = None) -> str:
        """The base URL with credentials: ``…/wikimem`` (a repository is ``<base>/<folder>.git``)."""
        return f"{self.scheme}://{user}:{self.password if password is None else password}@127.0.0.1:{self.port}/wikimem"

    def rooted(self, text: str) -> str:
        return _GUIDE_PATHS.sub(lambda m: f"{self.fs}{m.group(1)}", text)

    def run_step(self, name: str, script: str, timeout: float = 60) -> str:
        """One block of the guide, with its paths under ``self.fs``; ``nginx`` is this server's nginx."""
        conf = self.fs / "etc" / "nginx" / "nginx.conf"
        wrapper = f"nginx() {{ command {' '.join(_nginx_argv(self.workdir, conf))} \"$@\"; }}\n"
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", wrapper + self.rooted(script)], cwd=REPO,
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PATH": os.environ.get("PATH", "") + ":/usr/sbin:/sbin"})
        self.output[name] = done.stdout + done.stderr
        if done.returncode != 0:
            raise EngineError(f"step {name!r} of the guide failed ({done.returncode}):\n{self.output[name]}")
        return done.stdout

    def start(self) -> GuideGitServer:
        if os.geteuid() != 0:
            raise EngineError("the guide's steps are root's (install -o www-data, spawn-fcgi -u www-data)")
        blocks = guide_blocks()
        # What a fresh Debian machine has once the packages are in.
        for folder in ("run", "usr/local/lib", "etc/nginx/sites-enabled"):
            (self.fs / folder).mkdir(parents=True, exist_ok=True)
        site = f"git-server-{self.scheme}.nginx.conf"
        files = re.sub(r"(?m)^site=\S+$", f"site={site}", blocks["files"])
        self.password = self.run_step("files", files).strip().rsplit(" ", 1)[-1]
        self.port = self.port or free_port()
        self._edit_site(self.fs / "etc" / "nginx" / "sites-available" / "wikimem-git")
        snippet = self.fs / "etc" / "nginx" / "snippets" / "wikimem-git.conf"
        snippet.write_text(self.rooted(snippet.read_text()))
        (self.fs / "etc" / "nginx" / "nginx.conf").write_text(  # Debian's nginx.conf, in short
            _nginx_prelude(self.workdir, user="www-data") + "    include sites-enabled/*;\n}\n")
        self.run_step("fcgiwrap", blocks["fcgiwrap"])
        self.run_step("nginx", blocks["nginx"])
        self._spawn(_nginx_argv(self.workdir, self.fs / "etc" / "nginx" / "nginx.conf"))
        self._wait_port(self.port)
        return self

    def _edit_site(self, site: Path) -> None:
        """The operator's edit: this machine's address, and for TLS its certificate."""
        text = self.rooted(site.read_text())
        text, listens = re.subn(r"(?m)^(\s*listen )([^;]*);",
                                lambda m: f"{m.group(1)}127.0.0.1:{self.port}{' ssl' if 'ssl' in m.group(2) else ''};",
                                text)
        assert listens == 1, text
        if self.scheme == "https":
            key = self.workdir / "key.pem"
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                            "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key),
                            "-out", str(self.cert)], check=True, capture_output=True, timeout=60)
            text, certs = re.subn(r"(ssl_certificate(?:_key)?)\s+\S+;",
                                  lambda m: f"{m.group(1)} {key if m.group(1).endswith('key') else self.cert};", text)
            assert certs == 2, text
        site.write_text(text)

    def fcgiwrap_pid(self) -> int | None:
        try:
            return int((self.fs / "run" / "fcgiwrap.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> None:
        super().stop()
        pid = self.fcgiwrap_pid()  # spawn-fcgi made it the leader of its own group: stop the group
        if pid is not None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(pid, sig)
                except ProcessLookupError:
                    break
                time.sleep(0.2)
            (self.fs / "run" / "fcgiwrap.pid").unlink(missing_ok=True)


class GitDaemon(GitServer):
    """``git daemon`` serving every repository under ``root`` with receive-pack enabled (git:// URLs)."""

    name = "git-daemon"
    scheme = "git"

    def start(self) -> GitDaemon:
        self.port = self.port or free_port()
        env = dict(os.environ, HOME=str(self.workdir), GIT_CONFIG_COUNT="1",
                   GIT_CONFIG_KEY_0="receive.fsckObjects", GIT_CONFIG_VALUE_0="true")
        self._spawn(["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
                     f"--base-path={self.root}", "--listen=127.0.0.1", f"--port={self.port}",
                     "--informative-errors", str(self.root)], env=env)
        self._wait_port(self.port)
        return self


class Balancer(Engine):
    """nginx in front of N hosts, routing ``/…/owners/<owner>/…`` with ``hash $owner consistent``.

    Passive health checks only (``max_fails``/``fail_timeout``, as in
    ``deploy/cluster/nginx-balancer.conf``); ``proxy_next_upstream`` retries a request
    on another host only when the chosen one refused the connection, so a
    write is never sent twice.
    """

    name = "balancer"

    def __init__(self, workdir: Path, upstreams: Sequence[str], *, max_fails: int = 1, fail_timeout: int = 10):
        super().__init__(workdir)
        self.upstreams = list(upstreams)
        self.max_fails = max_fails
        self.fail_timeout = fail_timeout
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> str:
        servers = "\n".join(f"        server {u} max_fails={self.max_fails} fail_timeout={self.fail_timeout}s;"
                            for u in self.upstreams)
        return _nginx_prelude(self.workdir) + f"""
    map $uri $owner {{
        ~^/(?:api/v1|admin)/owners/(?<oid>[^/]+)  $oid;
        default                                   "";
    }}
    upstream wikimem_shards {{
        hash $owner consistent;
{servers}
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{self.port};
        client_max_body_size 1m;
        location / {{
            proxy_pass http://wikimem_shards;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_connect_timeout 2s;
            proxy_read_timeout 60s;
            proxy_next_upstream error;
            proxy_next_upstream_tries 3;
        }}
    }}
}}
"""

    def start(self) -> Balancer:
        self.port = self.port or free_port()
        conf = self.workdir / "nginx.conf"
        conf.write_text(self.config())
        self._spawn(_nginx_argv(self.workdir, conf))
        self._wait_port(self.port)
        return self


def gunicorn_command() -> list[str]:
    beside = Path(sys.executable).with_name("gunicorn")
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "gunicorn"]


class HostProcess(Engine):
    """One wikimem host: gunicorn with ``deploy/gunicorn.conf.py`` and its own data root.

    ``env`` adds ``WIKIMEM_*`` settings (remote, peers, secret key, tokens …);
    the port stays the same across :meth:`kill` / :meth:`start`, as a real
    host's address does.
    """

    name = "host"

    def __init__(self, workdir: Path, env: dict[str, str] | None = None, workers: int = 2, port: int = 0):
        super().__init__(workdir)
        self.data = self.workdir / "data"
        self.port = port or free_port()
        self.workers = workers
        self.extra_env = dict(env or {})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
        env.update(WIKIMEM_DATA=str(self.data), WIKIMEM_BIND=self.address, WIKIMEM_WORKERS=str(self.workers),
                   HOME=str(self.workdir), WIKIMEM_MAX_REQUESTS="0")
        env.update(self.extra_env)
        return env

    def start(self, wait: bool = True) -> HostProcess:
        self._spawn(gunicorn_command() + ["-c", str(REPO / "deploy" / "gunicorn.conf.py")], env=self.env(),
                    cwd=REPO)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, path: str = "/healthz", timeout: float = START_SECONDS) -> None:
        def up() -> bool:
            self._check_alive()
            return http_status(self.url + path, timeout=1.0) == 200

        wait_until(up, timeout, f"host {self.address}{path}", interval=0.1)

    def kill(self) -> None:
        """SIGKILL the whole gunicorn (arbiter and workers), as a machine loss would."""
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)
        self.procs.clear()
