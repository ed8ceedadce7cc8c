"""The admin views stay thin: parse the request, one call into the host, a template.

Read with ``ast`` (nothing runs): the view modules may not reach into the
retrieval or git layers, and every routed view is a handful of statements.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ADMIN = Path(__file__).resolve().parents[2] / "webapp" / "admin"
VIEW_MODULES = ["owners.py", "search.py", "history.py", "actions.py", "edits.py", "runs.py", "prefs.py",
                "characters.py", "imports.py"]
# Layers a view must go through the host for, never around it.
FORBIDDEN = ("dulwich", "wikimem.recall.index", "wikimem.versioned", "wikimem.recall.lexical.bm25", "wikimem.vectors",
             "wikimem.store.wiki", "wikimem.store.diary", "wikimem.fsio", "wikimem.store.writer",
             "wikimem.format.codec")
MAX_STATEMENTS = 12


def imported(tree: ast.Module) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.append(node.module or "")
    return names


def routed_views(tree: ast.Module) -> list[ast.FunctionDef]:
    def is_route(dec):
        return isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) \
            and isinstance(dec.func.value, ast.Name) and dec.func.value.id == "bp" \
            and dec.func.attr in {"get", "post", "route"}
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and any(map(is_route, n.decorator_list))]


def statements(fn: ast.FunctionDef) -> int:
    docstring = fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant)
    body = fn.body[1:] if docstring else fn.body
    return sum(1 for node in body for n in ast.walk(node) if isinstance(n, ast.stmt))


@pytest.mark.parametrize("module", sorted(p.name for p in ADMIN.glob("*.py")))
def test_views_do_not_reach_around_the_host(module):
    tree = ast.parse((ADMIN / module).read_text(encoding="utf-8"))
    bad = [m for m in imported(tree) if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == []


@pytest.mark.parametrize("module", VIEW_MODULES)
def test_every_view_is_a_few_statements(module):
    tree = ast.parse((ADMIN / module).read_text(encoding="utf-8"))
    views = routed_views(tree)
    assert views, f"no routed views found in {module}"
    fat = {v.name: statements(v) for v in views if statements(v) > MAX_STATEMENTS}
    assert fat == {}


def test_templates_call_no_library_method():
    """Templates format what the view passed; they never query a store or the git layer."""
    templates = Path(__file__).resolve().parents[2] / "templates"
    calls = (".retrieve(", ".history(", ".commit(", ".revert(", ".rollback(", ".restore(", ".store.", ".vstore.",
             ".day(", ".window(", ".dates(", ".files(")
    bad = [(p.name, c) for p in templates.rglob("*.html") for c in calls if c in p.read_text(encoding="utf-8")]
    assert bad == []
