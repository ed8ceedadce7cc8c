"""The documentation site builds with `mkdocs build --strict` (issue 36): every page in order, every
internal link and anchor resolved, nothing in the nav missing. It runs in `make test`, hence in CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).parent / "mkdocs"

pytestmark = pytest.mark.skipif(not MKDOCS.exists(), reason="mkdocs is not installed (pip install -e .[dev])")


def build(site: Path, config: Path = REPO / "mkdocs.yml") -> subprocess.CompletedProcess:
    return subprocess.run([str(MKDOCS), "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_the_site_builds_strictly(tmp_path):
    done = build(tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    for page in ("index.html", "tutorial/index.html", "reference/http-api/index.html", "reference/cli/index.html",
                 "reference/configuration/index.html", "explanation/characters/index.html", "img/rollback.png"):
        assert (tmp_path / "site" / page).exists(), page
    assert not (REPO / "site").exists() or "/site/" in (REPO / ".gitignore").read_text()


def test_a_broken_link_fails_the_build(tmp_path):
    """The check has teeth: a page linking a page that does not exist stops the build."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: t\ndocs_dir: docs\ntheme: {name: material, font: false}\n")
    done = build(tmp_path / "site", config)
    assert done.returncode != 0 and "missing.md" in done.stdout + done.stderr
