"""The import direction of STYLE.md, enforced: webapp → host → versioned → store → files.

Imports are read with ``ast`` (nothing is executed). Module-level imports
decide what ``import x`` costs; imports inside functions are the lazy ones
the optional layers rely on, and they too must respect who may use what.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def imports(path: Path) -> list[tuple[str, bool]]:
    """(imported module, is_module_level) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    for node in tree.body:  # imports under module-level try/if are module level too
        if isinstance(node, (ast.Try, ast.If)):
            top.update(id(n) for n in ast.walk(node))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                pkg = path.relative_to(ROOT).with_suffix("").parts[:-1]
                base = ".".join(pkg[: len(pkg) - node.level + 1])
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            out.append((name, id(node) in top))
    return out


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def is_under(name: str, *roots: str) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


def test_only_the_git_layer_imports_dulwich():
    bad = [rel(p) for p in modules("wikimem") + modules("webapp")
           if "versioned" not in p.parts and any(is_under(m, "dulwich") for m, _ in imports(p))]
    assert bad == []


def test_only_webapp_imports_flask():
    bad = [rel(p) for p in modules("wikimem") if any(is_under(m, "flask", "werkzeug", "flask_wtf") for m, _ in imports(p))]
    assert bad == []


def test_the_library_never_imports_the_web_app():
    # `wikimem serve` / `operator add` start or use the web app: inside their functions only.
    allowed_lazily = {"wikimem/cli/hostcmd.py"}
    bad = [rel(p) for p in modules("wikimem")
           if any(is_under(m, "webapp") and (top or rel(p) not in allowed_lazily) for m, top in imports(p))]
    assert bad == []


def test_the_git_layer_does_not_reach_up_into_the_host():
    bad = [rel(p) for p in modules("wikimem/versioned") if any(is_under(m, "wikimem.host", "wikimem.client") for m, _ in imports(p))]
    assert bad == []


@pytest.mark.parametrize("heavy", ["numpy", "jieba", "dulwich", "flask"])
def test_core_modules_import_no_optional_dependency_at_module_level(heavy):
    # numpy modules, themselves imported lazily (wikimem.vectors is their stdlib facade)
    optional = {"wikimem/recall/bm25_numpy.py", "wikimem/vectors/cache.py", "wikimem/vectors/index.py",
                "wikimem/vectors/search.py"}
    bad = []
    for p in modules("wikimem"):
        if "versioned" in p.parts or rel(p) in optional:
            continue
        if any(is_under(m, heavy) and top for m, top in imports(p)):
            bad.append(rel(p))
    assert bad == []


def test_the_web_layer_reaches_memory_only_through_the_host():
    """Every module of webapp/: no import of the git layer (nor dulwich), no ``.vstore`` — the Owner is the service."""
    bad = []
    for p in modules("webapp"):
        bad += [(rel(p), m) for m, _ in imports(p) if is_under(m, "wikimem.versioned", "dulwich")]
        bad += [(rel(p), "." + n.attr) for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                if isinstance(n, ast.Attribute) and n.attr == "vstore"]
    assert bad == []


def private_uses(path: Path) -> list[str]:
    """``from m import _x`` and ``obj._x`` (on anything but self/cls) in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            out += [f"import {a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                out.append(f"{ast.unparse(node)} (line {node.lineno})")
    return out


# The numpy hot path of BM25 reads the index's slot arrays in place, by design (copying them per query
# is what it exists to avoid): bm25_numpy.py is bm25.py's other half, not a client of it.
FRIENDS = {"wikimem/recall/bm25_numpy.py"}


def test_no_private_name_is_used_across_modules():
    """A name with a leading underscore stays in its module (and its own object): the seams are public."""
    bad = {rel(p): uses for p in modules("wikimem") + modules("webapp")
           if rel(p) not in FRIENDS and (uses := private_uses(p))}
    assert bad == {}
