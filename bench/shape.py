"""The shape of the code, in figures: what issue 32 measures before and after.

    .venv/bin/python bench/shape.py            # this tree
    .venv/bin/python bench/shape.py --repo ../main

Prints: import circles between modules (lazy imports included; the count of
``tests/unit/test_architecture.py``, which fails on a new one), the files and
inner packages of ``wikimem/versioned/``, modules over 600 lines, module
docstrings over 20 lines and the longest functions of ``wikimem/`` and
``webapp/``. Pairs of duplicated code: ``duplicates --most 200`` (a separate
command) counts them.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def sources(root: Path) -> list[Path]:
    return sorted(list((root / "wikimem").rglob("*.py")) + list((root / "webapp").rglob("*.py")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=HERE, help="the checkout to measure (default: this one)")
    parser.add_argument("--longest", type=int, default=10, help="how many of the longest functions to list")
    args = parser.parse_args()
    root = args.repo.resolve()
    sys.path.insert(0, str(HERE / "tests" / "unit"))
    import test_architecture as arch  # the one definition of an import circle

    arch.ROOT = root
    circles = arch.import_circles(arch.import_graph())
    print(f"import circles between modules (lazy imports included): {len(circles)}")
    for circle in circles:
        shown = ", ".join(circle) if len(circle) <= 6 else ", ".join(circle[:6]) + ", …"
        print(f"  {len(circle)}: {shown}")
    versioned = root / "wikimem" / "versioned"
    files = sorted(versioned.rglob("*.py"))
    rooms = sorted(p.parent.name for p in versioned.glob("*/__init__.py"))
    print(f"wikimem/versioned: {len(files)} files, {len(list(versioned.glob('*.py')))} at the top, "
          f"inner packages: {', '.join(rooms) or 'none'}")
    lengths, docstrings, functions = [], [], []
    for path in sources(root):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(root).as_posix()
        lengths.append((text.count("\n"), name))
        tree = ast.parse(text)
        doc = ast.get_docstring(tree, clean=False)
        if doc and doc.count("\n") + 1 > 20:
            docstrings.append((doc.count("\n") + 1, name))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((node.end_lineno - node.lineno + 1, f"{name}:{node.lineno} {node.name}"))
    big = sorted((n, p) for n, p in lengths if n > 600)
    print(f"modules over 600 lines: {len(big)}" + "".join(f"\n  {n} {p}" for n, p in reversed(big)))
    print(f"module docstrings over 20 lines: {len(docstrings)}"
          + "".join(f"\n  {n} {p}" for n, p in sorted(docstrings, reverse=True)))
    print(f"longest functions ({args.longest}):")
    for n, where in sorted(functions, reverse=True)[: args.longest]:
        print(f"  {n} {where}")


if __name__ == "__main__":
    main()
