"""One copy, one door (issue 32), enforced with ``ast`` (nothing is executed):

- each write verb of the git layer (``add``, ``remove``, ``diary_append``, ``batch``) is written once: any other
  definition of the same name in ``wikimem/versioned/`` only hands the call on (one statement after its docstring);
- no edge (the web app, the MCP tools, the command line, the fleet's jobs) builds a ``WriteContext`` or logs an
  audit event itself: they get both from the host's gate (``wikimem/host/gate.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERBS = ("add", "remove", "diary_append", "batch")
EDGES = ("webapp", "wikimem/cli", "wikimem/host/fleet")


def _functions(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body


def test_each_write_verb_is_written_once_in_the_git_layer():
    written: dict[str, list[str]] = {verb: [] for verb in VERBS}
    for path in sorted((ROOT / "wikimem/versioned").rglob("*.py")):
        for fn in _functions(path):
            if fn.name in written and len(_body(fn)) > 1:
                written[fn.name].append(f"{path.relative_to(ROOT)}:{fn.lineno}")
    assert {verb: places for verb, places in written.items() if len(places) != 1} == {}


def _edge_offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "WriteContext":
            out.append(f"WriteContext (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("wikimem") \
                and any(a.name in ("WriteContext", "audit") for a in node.names):
            out.append(f"import {', '.join(a.name for a in node.names)} (line {node.lineno})")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "audit":
                out.append(f"audit() (line {node.lineno})")
    return out


def test_no_edge_builds_a_write_context_or_logs_an_audit_event_itself():
    bad = {}
    for edge in EDGES:
        for path in sorted((ROOT / edge).rglob("*.py")):
            found = _edge_offences(path)
            if found:
                bad[path.relative_to(ROOT).as_posix()] = found
    assert bad == {}


def test_the_rules_see_what_they_forbid(tmp_path):
    """The checks above would catch a view that made its own context, and a second copy of a verb."""
    view = tmp_path / "view.py"
    view.write_text("from wikimem.context import WriteContext\nfrom wikimem.host import audit\n"
                    "def put():\n    audit('edit', actor='x')\n    return WriteContext(actor='x')\n")
    assert len(_edge_offences(view)) == 4
    copy = tmp_path / "copy.py"
    copy.write_text("def add(self, f, n, c):\n    '''doc'''\n    x = self.batch()\n    return x\n"
                    "def remove(self, f):\n    '''doc'''\n    return self.main.remove(f)\n")
    sizes = {fn.name: len(_body(fn)) for fn in _functions(copy)}
    assert sizes == {"add": 2, "remove": 1}
