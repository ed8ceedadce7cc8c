"""One composition root (issues 21, 32): ``build_host`` (``wikimem/host/config.py``) is the only caller of
``make_host`` (``wikimem/host/assembly.py``), the only place that builds a ``Host`` from its parts.

Read with ``ast``, nothing executed. A second place that assembles a host is how the CLI came to build
hosts without replication (the environment rule is ``test_architecture.py``'s).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def calls_of(path: Path, name: str) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
            and ((isinstance(n.func, ast.Name) and n.func.id == name)
                 or (isinstance(n.func, ast.Attribute) and n.func.attr == name))]


@pytest.mark.parametrize(("name", "home"), [("Host", "wikimem/host/assembly.py"),
                                            ("make_host", "wikimem/host/config.py")])
def test_no_module_builds_a_host_but_the_composition_root(name, home):
    """Tests and benchmarks may build their own hosts (make_host); the library, the CLI and the web app ask
    build_host(), and only the assembly calls Host()."""
    bad = {}
    for package in ("wikimem", "webapp"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel != home and (lines := calls_of(path, name)):
                bad[rel] = lines
    assert bad == {}
