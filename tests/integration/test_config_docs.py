"""The variables' documents come from their one definition.

``wikimem/host/variables.py`` defines every variable; the README's tables and
``deploy/env.example`` are generated from it (``make docs``). A variable added
to the code without an entry, or an entry without regenerated docs, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

from webapp.config import FLASK_KEYS
from wikimem.host import load_config
from wikimem.host.config import ENV_VARS, KEYS
from wikimem.host.variables import VARIABLES, stale_docs

ROOT = Path(__file__).resolve().parents[2]
NAMES = {v.name for v in VARIABLES}
# What operators read: a path or a variable named here must be the code's.
DOCS = ["README.md", "ARCHITECTURE.md", *(p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "deploy").rglob("*"))
                                          if p.is_file() and p.suffix not in (".pyc",))]


def text(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def test_the_readme_tables_and_env_example_are_generated_from_the_definition():
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
