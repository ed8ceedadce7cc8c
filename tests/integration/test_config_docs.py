"""The variables' documents come from their one definition, and the paths the deploy docs name are the code's.

``wikimem/host/variables.py`` defines every variable; the documentation's tables
(``docs/reference/configuration.md``, the cluster guide) and ``deploy/env.example``
are generated from it (``make docs``). A variable added
to the code without an entry, or an entry without regenerated docs, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docblocks import doc_block, documents

from webapp.config import FLASK_KEYS
from wikimem.host import build_host, load_config
from wikimem.host.access import STATE_FILE
from wikimem.host.config import ENV_VARS, KERNEL_DIR, KEYS, PEER_STATE
from wikimem.host.fleet import INDEX_PATH, JOBS_FILE, STAGED_PATH
from wikimem.host.variables import VARIABLES, stale_docs

ROOT = Path(__file__).resolve().parents[2]
NAMES = {v.name for v in VARIABLES}
# What operators read: a path or a variable named here must be the code's.
DOCS = ["ARCHITECTURE.md", *(p.relative_to(ROOT).as_posix() for p in documents()),
        *(p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "deploy").rglob("*"))
          if p.is_file() and p.suffix not in (".pyc",))]


def text(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def test_the_tables_and_env_example_are_generated_from_the_definition():
    assert stale_docs(ROOT) == [], "run `make docs` (wikimem/host/variables.py changed, or a generated file did)"


def test_every_variable_the_code_or_the_docs_name_is_defined():
    named = {}
    for rel in DOCS + [p.relative_to(ROOT).as_posix() for d in ("wikimem", "webapp")
                       for p in sorted((ROOT / d).rglob("*.py"))]:
        for name in re.findall(r"\bWIKIMEM_[A-Z0-9_]*[A-Z0-9]\b", text(rel)):
            named.setdefault(name, rel)
    assert {n: where for n, where in named.items() if n not in NAMES} == {}


def test_gunicorn_conf_reads_only_defined_variables():
    """Every quoted NAME in deploy/gunicorn.conf.py is a variable of the definition or a key it reads."""
    quoted = set(re.findall(r"\"([A-Z][A-Z0-9]*_[A-Z0-9_]+|[A-Z]{3,})\"", text("deploy/gunicorn.conf.py")))
    assert quoted - NAMES - KEYS == set()
    assert {v.name for v in VARIABLES if v.key is None} <= quoted  # and each of gunicorn's is read there


def test_the_host_reads_every_variable_with_a_key_and_the_web_ones_reach_flask():
    assert set(ENV_VARS) == {v.name for v in VARIABLES if v.key is not None}
    assert {v.key for v in VARIABLES if v.mark == "web"} <= set(FLASK_KEYS)


def env_lines(commented: bool) -> dict[str, str]:
    """The NAME=value lines of deploy/env.example (with the commented ones too when ``commented``)."""
    out = {}
    for line in text("deploy/env.example").splitlines():
        m = re.fullmatch(r"(#?)([A-Z][A-Z0-9_]*)=(.*)", line)
        if m and (commented or not m.group(1)):
            out[m.group(2)] = m.group(3)
    return out


def test_env_example_lists_every_variable_and_its_values_are_valid():
    every = env_lines(commented=True)
    assert list(every) == [v.name for v in VARIABLES]
    set_lines = env_lines(commented=False)
    assert set(set_lines) == {"WIKIMEM_DATA", "WIKIMEM_SECRET_KEY", "WIKIMEM_TOKENS_FILE", "WIKIMEM_OPERATORS_FILE",
                              "WIKIMEM_PROXIES"}
    load_config(environ=set_lines)  # what it sets, as written
    load_config(environ=every)  # and every example uncommented at once


def test_every_etc_wikimem_file_the_docs_name_is_one_name():
    """The tokens file was /etc/wikimem/tokens in some places and tokens.jsonl in others."""
    expected = {"env", "gunicorn.conf.py"} | {Path(v.setting).name for v in VARIABLES
                                              if v.setting and v.setting.startswith("/etc/wikimem/")}
    named = {name: rel for rel in DOCS for name in re.findall(r"/etc/wikimem/([A-Za-z0-9._-]*[A-Za-z0-9])", text(rel))}
    assert set(named) == expected, named


@pytest.fixture
def layout(tmp_path) -> set[str]:
    """Every path under a data root the code names, relative, with the folders that hold them."""
    data = tmp_path / "data"
    host = build_host(load_config({"DATA_ROOT": str(data), "REMOTE": f"file://{tmp_path}/r/{{owner}}.git"},
                                  environ={}))
    refused = host.replication.refused_dir if host.replication is not None else None
    paths = [host.owners_dir, host.staging_dir, host.cache_dir, data / INDEX_PATH, data / JOBS_FILE,
             data / STATE_FILE, refused, data / PEER_STATE, data / STAGED_PATH, data / KERNEL_DIR]
    out = set()
    for path in paths:
        assert path is not None
        rel = Path(path).relative_to(data)
        out |= {p.as_posix() + "/" for p in rel.parents if p.as_posix() != "."}
        out.add(rel.as_posix() + ("" if rel.suffix else "/"))
    return out


def test_the_data_root_paths_the_docs_name_are_the_codes(layout):
    named = {}
    for rel in DOCS:
        body = text(rel)
        # "<data root>/index/runs.sqlite3", "<data>/owners/<folder>/", "auth/state.sqlite3 in the data root"
        found = re.findall(r"<data(?: root)?>/([A-Za-z0-9_./-]*)", body)
        found += re.findall(r"`?([a-z]+/[A-Za-z0-9_./-]*\.sqlite3)`? in the data root", body)
        for path in found:
            named.setdefault(path, rel)
    for line in doc_block("deploy-data-root").splitlines():  # the deploy guide's layout of the data root
        if re.match(r"[a-z]", line):
            named.setdefault(line.split()[0].split("<")[0], "docs/guides/deploy.md (layout)")
    assert named, "no data root path found in the docs"
    assert {p: rel for p, rel in named.items() if p not in layout} == {}
    assert "cache/" in layout and "index/runs.sqlite3" in layout  # (the fixture found the code's paths)
