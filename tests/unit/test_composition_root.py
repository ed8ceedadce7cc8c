"""One composition root (issue 21): ``Host(...)`` is built in ``wikimem/host/config.py`` only.

Read with ``ast``, nothing executed. A second place that assembles a host is how the CLI came to build
hosts without replication (the environment rule is ``test_architecture.py``'s).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def host_constructions(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
            and ((isinstance(n.func, ast.Name) and n.func.id == "Host")
                 or (isinstance(n.func, ast.Attribute) and n.func.attr == "Host"))]


def test_no_module_builds_a_host_but_the_composition_root():
    """Tests and benchmarks may build their own hosts; the library, the CLI and the web app ask build_host()."""
    bad = {}
    for package in ("wikimem", "webapp"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel != "wikimem/host/config.py" and (lines := host_constructions(path)):
                bad[rel] = lines
    assert bad == {}
