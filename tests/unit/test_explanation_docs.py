"""The design notes (ARCHITECTURE.md, docs/explanation/*.md) stay true to the code: every Python block runs,
every other block is an illustration marked ``text``, and every file path they name exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTES = [ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs" / "explanation").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
PATH = re.compile(r"`((?:wikimem|webapp|tests|bench|deploy|docs)/[\w/.-]+\.(?:py|md|html|sh|conf|toml))`")


def blocks(path: Path) -> list[tuple[str, str]]:
    return FENCE.findall(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", NOTES, ids=lambda p: p.name)
def test_a_block_is_python_that_runs_or_an_illustration(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for language, code in blocks(path):
        assert language in ("python", "text"), f"{path.name}: a ```{language} block (python runs; text illustrates)"
        if language == "python":
            exec(compile(code, f"{path.name}:block", "exec"), {"__name__": "__doc_block__"})


@pytest.mark.parametrize("path", NOTES, ids=lambda p: p.name)
def test_every_path_a_note_names_exists(path):
    missing = sorted({p for p in PATH.findall(path.read_text(encoding="utf-8")) if not (ROOT / p).exists()})
    assert missing == []


def test_a_module_whose_notes_moved_points_to_a_page_that_names_it():
    """A docstring saying "Design notes: docs/explanation/x.md (``module``)" points to a page with that heading."""
    pointer = re.compile(r"Design notes: (docs/explanation/[\w-]+\.md) \(``([\w/.]+)``\)")
    found = 0
    for module in sorted((ROOT / "wikimem").rglob("*.py")) + sorted((ROOT / "webapp").rglob("*.py")):
        for page, name in pointer.findall(module.read_text(encoding="utf-8")):
            found += 1
            assert f"## `{name}`" in (ROOT / page).read_text(encoding="utf-8"), (module, page)
    assert found > 20
