"""One composition root (issue 21): the environment is read in ``wikimem/host/config.py`` and ``webapp/config.py`` only.

Read with ``ast``, nothing executed: any ``os.environ`` / ``os.getenv`` / ``environ`` imported from ``os``
elsewhere in the library or the web app is a second place where configuration is assembled — how the CLI
came to build hosts without replication.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPOSITION_ROOTS = {"wikimem/host/config.py", "webapp/config.py"}
# Not configuration, and not WIKIMEM_*: what these hand on to other programs.
NOT_CONFIGURATION = {
    "wikimem/vectors/local.py",  # sets OMP_NUM_THREADS for the ONNX engine before it loads
    "wikimem/versioned/vstore.py",  # the environment of a `git` child process (GIT_DIR)
    "wikimem/versioned/remote.py",  # GIT_SSH_COMMAND, as git itself honours it
}


def environment_reads(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "environb", "getenv", "putenv") \
                and isinstance(node.value, ast.Name) and node.value.id == "os":
            found.append(f"os.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"from os import {a.name} (line {node.lineno})" for a in node.names
                      if a.name in ("environ", "environb", "getenv")]
    return found


def test_only_the_composition_root_and_the_flask_config_read_the_environment():
    bad = {}
    for package in ("wikimem", "webapp"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in COMPOSITION_ROOTS | NOT_CONFIGURATION:
                continue
            if reads := environment_reads(path):
                bad[rel] = reads
    assert bad == {}


def test_no_module_builds_a_host_but_the_composition_root():
    """``Host(...)`` is called in ``wikimem/host/config.py`` alone (tests and benchmarks may build their own)."""
    bad = []
    for package in ("wikimem", "webapp"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"))
            calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                     and ((isinstance(n.func, ast.Name) and n.func.id == "Host")
                          or (isinstance(n.func, ast.Attribute) and n.func.attr == "Host"))]
            if calls and rel != "wikimem/host/config.py":
                bad.append(rel)
    assert bad == []
