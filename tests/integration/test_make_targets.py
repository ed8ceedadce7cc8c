"""`make run` installs only what the host needs; `make test` keeps the development tools."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEV_ONLY = ("pytest", "playwright", "schemathesis", "hypothesis", "rank-bm25", "bm25s", "build", "psutil")

tomllib = pytest.importorskip("tomllib")
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _plan(target: str, venv: Path) -> str:
    """The commands ``make TARGET`` would run for a fresh environment (``make -n``)."""
    done = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=REPO, capture_output=True, text=True,
                          check=True)
    return done.stdout


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_make_run_installs_the_run_extra_only(tmp_path):
    plan = _plan("run", tmp_path / "venv")
    assert '-e ".[run]"' in plan and ".[dev]" not in plan
    assert "wikimem serve --demo" in plan


def test_make_test_installs_the_development_tools(tmp_path):
    plan = _plan("test", tmp_path / "venv")
    assert '-e ".[dev]"' in plan and "pytest" in plan


def test_make_test_runs_the_gates_before_the_suite(tmp_path):
    """ruff and mypy fail fast, before pytest; `make lint` runs the two alone."""
    plan = _plan("test", tmp_path / "venv")
    ruff, mypy, suite = (plan.index(f"/bin/{tool}") for tool in ("ruff check .", "mypy", "pytest"))
    assert ruff < mypy < suite
    lint = _plan("lint", tmp_path / "venv")
    assert "/bin/ruff check ." in lint and "/bin/mypy" in lint and "/bin/pytest" not in lint


def test_the_run_extra_is_the_host_without_development_tools():
    extras = _extras()
    run = " ".join(extras["run"])
    assert "host" in run and not any(tool in run for tool in DEV_ONLY)
    host = " ".join(extras["host"])
    assert all(dep in host for dep in ("flask", "dulwich", "gunicorn"))
    assert not any(tool in host for tool in DEV_ONLY)
