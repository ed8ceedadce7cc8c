"""The cluster guide's git server works as written (issue 24 item 19), on 127.0.0.1.

``GuideGitServer`` follows ``docs/guides/git-server.md`` ("Set up the git server"): its
shell blocks and files, as root, with only the guide's absolute paths moved
under a test folder and the site's ``listen`` (and, for TLS, its certificate)
set the way the guide tells an operator to. nginx's workers run as
``www-data`` as on Debian, fcgiwrap is started by the guide's spawn-fcgi line,
the password file comes from ``openssl passwd``, fsck on receive from git's
environment. Then git's own client and a wikimem host use it.

Before: the guide needed ``htpasswd`` (apache2-utils, not installed), was
TLS-only with ``http2 on`` (nginx < 1.25.1 refuses it: test_nginx_sites.py), changed the machine
with ``git config --system``, and left starting fcgiwrap to the reader — a
root-started one makes a socket the workers cannot open (502).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from docblocks import doc_block, documents
from engines import REPO, GuideGitServer, HostProcess, have

from wikimem.client import Client
from wikimem.host.owner_ids import encode_owner_id

GUIDE = REPO / "docs" / "guides" / "git-server.md"
CLUSTER = REPO / "deploy" / "cluster"


def need_root_and_engines() -> None:
    if os.geteuid() != 0:
        pytest.skip("the guide's steps are root's (install -o www-data, spawn-fcgi -u www-data); CI runs as root")
    missing = [p for p in ("nginx", "fcgiwrap", "spawn-fcgi", "git", "openssl") if not have(p)]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (installed by .ci/system-deps as root)")
    try:
        pwd.getpwnam("www-data")
    except KeyError:
        pytest.skip("no www-data user (Debian's nginx worker user)")


def start_guide_server(site: str):
    need_root_and_engines()
    # Not under pytest's folders (0700): nginx's workers and fcgiwrap run as www-data and must reach it.
    folder = Path(tempfile.mkdtemp(prefix=f"wikimem-guide-{site}-"))
    folder.chmod(0o755)
    server = GuideGitServer(folder, site)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def http_guide():
    yield from start_guide_server("http")


@pytest.fixture(scope="module")
def https_guide():
    yield from start_guide_server("https")


def git_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("GIT_")}
    return {**env, "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org", **extra}


def git(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", "-c", "safe.directory=*", *args], capture_output=True, text=True, env=env,
                          timeout=60)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done


def work_repo(tmp_path: Path, env: dict[str, str], name: str = "work") -> Path:
    work = tmp_path / name
    git("init", "-q", "-b", "main", str(work), env=env)
    (work / "note.md").write_text("one\n")
    git("-C", str(work), "add", "note.md", env=env)
    git("-C", str(work), "commit", "-q", "-m", "one", env=env)
    return work


def head(repo: Path, env: dict[str, str]) -> str:
    """``main`` of a bare repository."""
    return git("--git-dir", str(repo), "rev-parse", "main", env=env).stdout.strip()


def local_head(work: Path, env: dict[str, str]) -> str:
    return git("-C", str(work), "rev-parse", "HEAD", env=env).stdout.strip()


# -- what the guide asks for, without running it ---------------------------------------------

def ci_packages() -> set[str]:
    return set(re.findall(r"need\+=\(([\w.-]+)\)", (REPO / ".ci" / "system-deps").read_text()))


def test_the_guide_names_its_packages_and_ci_installs_them():
    guide = GUIDE.read_text()
    step = doc_block("git-server-packages")
    named = set(re.search(r"apt-get install -y --no-install-recommends ([\w .-]+)\n", step).group(1).split())
    named |= set(re.findall(r"apt-get install ([\w-]+)`", guide))  # (spawn-fcgi, without systemd)
    assert {"nginx", "fcgiwrap", "git", "openssl", "spawn-fcgi"} <= named
    assert named <= ci_packages()


def test_nothing_in_the_guide_changes_the_machines_git_configuration():
    texts = [*(p.read_text() for p in documents()), *(p.read_text() for p in CLUSTER.iterdir())]
    assert not [t for t in texts if "git config --system" in t]


def test_debians_fcgiwrap_socket_unit_makes_the_socket_the_site_uses():
    unit = Path("/lib/systemd/system/fcgiwrap.socket")
    if not unit.exists():
        pytest.skip("fcgiwrap's package is not installed")
    text = unit.read_text()
    socket = re.search(r"fastcgi_pass unix:(\S+);", (CLUSTER / "git-server-locations.conf").read_text()).group(1)
    assert f"ListenStream={socket}\n" in text and "SocketUser=www-data" in text and "SocketMode=0660" in text
    fcgiwrap_step = re.search(r"spawn-fcgi -s (\S+) -M 0660 -U www-data -G www-data -u www-data",
                              doc_block("git-server-fcgiwrap"))
    assert fcgiwrap_step and fcgiwrap_step.group(1) == socket  # and the line without systemd makes the same


def test_the_systemd_steps_give_fcgiwrap_the_options_of_the_step_without_systemd():
    """Steps 3 and 4 with systemd (not run: no systemd here) say what the spawn-fcgi step runs."""
    systemd = doc_block("git-server-systemd")
    assert "/etc/default/fcgiwrap" in systemd and "fcgiwrap.socket" in systemd and "-f -c 4" in systemd
    assert "fcgiwrap -f -c 4" in doc_block("git-server-fcgiwrap")  # the same options without systemd
    assert doc_block("git-server-nginx-reload").split()[:3] == ["systemctl", "reload", "nginx"]


# -- the guide, followed -----------------------------------------------------------------------

def test_fcgiwrap_runs_as_the_workers_user_on_a_socket_they_can_open(http_guide):
    socket = http_guide.fs / "run" / "fcgiwrap.socket"
    st = socket.stat()
    assert (pwd.getpwuid(st.st_uid).pw_name, oct(st.st_mode & 0o777)) == ("www-data", "0o660")
    pid = http_guide.fcgiwrap_pid()
    assert pid is not None and pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name == "www-data"


def test_a_push_creates_the_repository_and_only_the_account_may_push(http_guide, tmp_path):
    env = git_env(tmp_path)
    work = work_repo(tmp_path, env)
    for refused in (f"{http_guide.url}/nobody.git", f"{http_guide.authed(password='wrong')}/nobody.git"):
        done = git("-C", str(work), "push", refused, "main", env=env, check=False)
        assert done.returncode != 0 and ("401" in done.stderr or "Authentication failed" in done.stderr
                                         or "could not read Username" in done.stderr), done.stderr
    assert not http_guide.repo("nobody").exists()

    git("-C", str(work), "push", f"{http_guide.authed()}/user_3aann.git", "main", env=env)
    bare = http_guide.repo("user_3aann")
    assert head(bare, env) == local_head(work, env)
    assert git("--git-dir", str(bare), "symbolic-ref", "HEAD", env=env).stdout.strip() == "refs/heads/main"
    assert git("--git-dir", str(bare), "rev-parse", "--is-bare-repository", env=env).stdout.strip() == "true"
    assert pwd.getpwuid(bare.stat().st_uid).pw_name == "www-data"  # git ran as www-data, not root

    (work / "note.md").write_text("two\n")
    git("-C", str(work), "commit", "-q", "-am", "two", env=env)
    git("-C", str(work), "push", f"{http_guide.authed()}/user_3aann.git", "main", env=env)
    assert head(bare, env) == local_head(work, env)
    clone = git("clone", "-q", f"{http_guide.authed()}/user_3aann.git", str(tmp_path / "clone"), env=env)
    assert clone.returncode == 0 and (tmp_path / "clone" / "note.md").read_text() == "two\n"


def test_every_object_a_push_brings_is_checked(http_guide, tmp_path):
    """receive.fsckObjects, from the site's GIT_CONFIG_* instead of `git config --system`."""
    env = git_env(tmp_path)
    work = work_repo(tmp_path, env)
    url = f"{http_guide.authed()}/user_3abob.git"
    git("-C", str(work), "push", url, "main", env=env)
    before = head(http_guide.repo("user_3abob"), env)
    blob = git("-C", str(work), "rev-parse", "HEAD:note.md", env=env).stdout.strip()
    entry = b"100644 note.md\0" + bytes.fromhex(blob)
    tree = subprocess.run(["git", "-C", str(work), "hash-object", "-t", "tree", "--literally", "-w", "--stdin"],
                          input=entry + entry, capture_output=True, env=env, check=True).stdout.decode().strip()
    bad = git("-C", str(work), "commit-tree", tree, "-p", "HEAD", "-m", "duplicate entries", env=env).stdout.strip()
    done = git("-C", str(work), "push", url, f"{bad}:refs/heads/main", env=env, check=False)
    assert done.returncode != 0 and "duplicateEntries" in done.stderr, done.stderr
    assert head(http_guide.repo("user_3abob"), env) == before


@pytest.mark.slow
def test_a_host_replicates_to_it(http_guide, tmp_path):
    import secrets

    token = secrets.token_urlsafe(24)
    host = HostProcess(tmp_path / "host", workers=1, env={
        "WIKIMEM_REMOTE": http_guide.template(), "WIKIMEM_ADMIN_TOKEN": token,
        "WIKIMEM_SECRET_KEY": secrets.token_hex(32), "WIKIMEM_REMOTE_TIMEOUT": "10"})
    try:
        host.start()
        host.wait_ready("/readyz")  # the remote answers, with the guide's account
        api = Client(host.url, token, timeout=30.0, proxies={})
        owner = "user:guide"
        api.create_owner(owner)
        done = api.diary_append("pushed through the guide's server", owner=owner, date="2026-07-21", time="09:00")
    finally:
        host.stop()
    assert head(http_guide.repo(encode_owner_id(owner)), git_env(tmp_path)) == done.commit


def test_the_tls_site_serves_git_with_its_certificate(https_guide, tmp_path):
    env = git_env(tmp_path, GIT_SSL_CAINFO=str(https_guide.cert))
    work = work_repo(tmp_path, env)
    done = git("-C", str(work), "push", f"{https_guide.url}/user_3acat.git", "main", env=env, check=False)
    assert done.returncode != 0 and not https_guide.repo("user_3acat").exists()
    git("-C", str(work), "push", f"{https_guide.authed()}/user_3acat.git", "main", env=env)
    assert head(https_guide.repo("user_3acat"), env) == local_head(work, env)
