"""The documentation's blocks that cannot run as written here, checked against the real thing instead,
and the README's own claims (issue 36).

``systemctl``, ``journalctl`` and ``/etc`` are not the tests' to use: the cluster guide's host
steps are checked against the files they install and a real ``/readyz``; the log queries run
(with jq when it is installed) over lines the host's own formatter writes; the deploy guide's
gunicorn lines run with a free port. The README: under 250 lines, its install list is
``.ci/system-deps``'s, its links lead to files, its two commands are the Makefile's.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import tomllib
from docblocks import doc_block
from gunicorn_env import free_port, stop_process

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
VENV_BIN = Path(sys.executable).parent


def env_file(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if re.match(r"[A-Z_]+=", line))


# -- the README ------------------------------------------------------------------------------

def test_the_readme_fits_on_a_few_screens():
    assert len(README.splitlines()) < 250


def test_the_readme_install_list_is_what_ci_installs():
    installs = set(re.findall(r"need\+=\(([\w.-]+)\)", (REPO / ".ci" / "system-deps").read_text()))
    said = re.search(r"these Debian packages: ([^.]+)\.", README.replace("\n", " "))
    assert said and {p.strip() for p in said.group(1).split(",")} == installs


def test_the_readme_links_lead_to_files():
    links = re.findall(r"\]\(([^)#\s]+)", README)
    assert links and [link for link in links if not (REPO / link).exists()] == []


def test_the_readme_two_commands_are_the_makefiles():
    commands = [line.split("#")[0].strip() for line in doc_block("readme-two-commands").strip().splitlines()]
    assert commands == ["make run", "make test"]
    make = (REPO / "Makefile").read_text()
    assert re.search(r"(?m)^run: ", make) and re.search(r"(?m)^test: ", make)
    # what the comments promise: run prints how to mint (tests/integration/test_tutorial.py checks it on a real
    # run), test prints one line per area (tests/conftest.py's hook, checked in tests/unit/test_areas.py)
    assert "how to mint a token" in doc_block("readme-two-commands")


# -- reference pages written by hand -----------------------------------------------------------

def test_the_error_codes_the_reference_lists_are_the_codes():
    page = (REPO / "docs" / "reference" / "errors.md").read_text()
    codes = set(re.findall(r"`([a-z]+_[a-z_]+|[a-z]{4,})`", page)) - {"retry_after"}
    sources = "".join(p.read_text() for d in ("wikimem", "webapp") for p in (REPO / d).rglob("*.py"))
    assert codes and sorted(c for c in codes if f'"{c}"' not in sources) == []


def test_the_limits_reference_says_the_limits():
    from wikimem import limits
    from wikimem.host.fleet.bulk import MAX_BULK_OWNERS

    page = (REPO / "docs" / "reference" / "limits.md").read_text()
    for value in (limits.MAX_CONTENT_CHARS, limits.MAX_QUERY_CHARS, limits.MAX_TURN_CHARS, limits.MAX_BATCH_CHARS,
                  MAX_BULK_OWNERS):
        assert f"{value:,}" in page
    assert f"| {limits.MAX_OPS} ops" in page and f"| {limits.MAX_RETRIEVE_LIMIT} hits |" in page
    assert f"| {limits.MAX_STAGED_RUNS} |" in page
    from wikimem.host.access import MAX_PREFIXES
    from wikimem.llm import MAX_REPLY_ELEMENTS

    assert f"| {limits.MAX_CHARACTERS:,} | 422 |" in page and f"; {limits.MAX_PERSONA_CHARS:,} characters |" in page
    assert f"| {MAX_PREFIXES} | refused at mint |" in page and f"| {MAX_REPLY_ELEMENTS} (the rest" in page
    assert f"{limits.MAX_FILE_BYTES // 2**20} MiB" in page and f"{limits.MAX_SETTINGS_BYTES // 2**10} KiB" in page
    from wikimem.naming import MAX_PRESENT

    assert f"| {limits.MAX_LAYERS} | 403 `quota_exceeded` |" in page and f"; {MAX_PRESENT} ids, each" in page


def test_the_client_guide_names_the_clients_exceptions():
    import wikimem.client

    page = (REPO / "docs" / "guides" / "client.md").read_text()
    named = set(re.findall(r"`(\w+Error)`", page)) - {"ValueError"}
    assert named and sorted(n for n in named if not hasattr(wikimem.client, n)) == []


# -- the cluster guide -------------------------------------------------------------------------

def test_the_cluster_host_steps_install_a_valid_environment_and_readyz_says_reachable(tmp_path):
    from webapp import create_app

    step = doc_block("cluster-host")
    install = re.search(r"install -m 0640 (\S+) (\S+)", step)
    assert install and install.group(2) == "/etc/wikimem/env"
    unit = (REPO / "deploy" / "wikimem.service").read_text()
    assert "EnvironmentFile=/etc/wikimem/env" in unit and "systemctl start wikimem" in step
    env = env_file(REPO / install.group(1))
    assert {"WIKIMEM_REMOTE", "WIKIMEM_PEERS", "WIKIMEM_SELF"} <= set(env)
    # The answer the step shows, from a host whose remote answers (a file:// one here).
    (tmp_path / "remote").mkdir()
    app = create_app({"DATA_ROOT": str(tmp_path / "data"), "REMOTE": f"file://{tmp_path}/remote/{{owner}}.git",
                      "ADMIN_TOKEN": "t" * 32, "SECRET_KEY": "k" * 64, "ENV": "development"})
    shown = json.loads(re.search(r"# (\{.*\})", step).group(1))
    answer = app.test_client().get("/readyz")
    assert answer.status_code == 200 and {k: answer.get_json()[k] for k in shown} == shown


def test_the_cluster_check_commands_run(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")},
           "WIKIMEM_DATA": str(tmp_path / "data"), "WIKIMEM_REMOTE": f"file://{remote}/{{owner}}.git",
           "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-euc", doc_block("cluster-check")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("10.0.0.1") and "then 10.0.0.1" in done.stdout


# -- the deploy guide --------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_the_deploy_quickstart_serves_with_gunicorn(tmp_path):
    lines = doc_block("deploy-quickstart").strip().splitlines()
    assert lines[0] == "pip install '.[host]'"  # (this environment has it: the extra exists)
    assert "host" in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    exports, serve, check = lines[1:3], lines[3], lines[4]
    assert serve == "gunicorn -c deploy/gunicorn.conf.py"
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")},
           "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}", "WIKIMEM_BIND": f"127.0.0.1:{port}",
           "WIKIMEM_WORKERS": "1", "no_proxy": "*"}
    script = "\n".join([*exports, f"cd {REPO}", f"data={tmp_path}/data",
                        'export WIKIMEM_DATA="$data"', f"exec {serve}"])
    with open(tmp_path / "gunicorn.log", "wb") as log:
        proc = subprocess.Popen(["bash", "-euc", script], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        for _ in range(300):
            assert proc.poll() is None, (tmp_path / "gunicorn.log").read_text()
            try:
                opener.open(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        done = subprocess.run(["bash", "-euc", check.replace("127.0.0.1:8000", f"127.0.0.1:{port}")], env=env,
                              capture_output=True, text=True, timeout=30)
    finally:
        stop_process(proc)
    assert json.loads(done.stdout) == {"ok": True}


# -- the monitoring guide ----------------------------------------------------------------------

def test_the_log_queries_select_the_hosts_json_lines(tmp_path):
    from webapp.logs import AppJsonFormatter
    from wikimem.host import AUDIT_LOGGER

    def line(logger: str, rid: str, **extra) -> str:
        record = logging.LogRecord(logger, logging.INFO, __file__, 1, "audit revert", None, None)
        record.__dict__.update(request_id=rid, **extra)
        return AppJsonFormatter().format(record)

    rid = "7f3c0d2e"
    lines = [line(AUDIT_LOGGER, rid, audit="revert", actor="alice"), line("wikimem.host", rid),
             line("gunicorn.access", "other")]
    (tmp_path / "journal").write_text("\n".join(lines) + "\n")
    queries = [q.split("|", 1)[1].split("#")[0].strip().replace("7f3c…", rid)
               for q in doc_block("monitor-jq").strip().splitlines()]
    assert all(q.startswith("jq -c 'select(") for q in queries)
    fields = {f for q in queries for f in re.findall(r"\.(\w+) ==", q)}
    assert fields == {"logger", "request_id"} and all(fields <= set(json.loads(x)) for x in lines)
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed (the queries' fields were checked above)")
    found = [subprocess.run(["bash", "-c", f"cat journal | {q}"], cwd=tmp_path, capture_output=True, text=True,
                            check=True).stdout.splitlines() for q in queries]
    assert [len(f) for f in found] == [1, 2]
    assert json.loads(found[0][0])["audit"] == "revert"
