"""`make test` says which area of the suite runs: a line per area as it starts, with how many tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from areas import area_of

REPO = Path(__file__).resolve().parents[2]


def test_the_area_of_a_test_is_its_folder_under_tests():
    assert area_of("tests/integration/test_api.py::test_x[a/b]") == "tests/integration"
    assert area_of("tests/unit/test_x.py") == "tests/unit"


@pytest.mark.slow
def test_a_run_prints_a_line_per_area_as_it_starts(tmp_path):
    for area in ("alpha", "beta"):
        (tmp_path / "tests" / area).mkdir(parents=True)
        (tmp_path / "tests" / area / f"test_{area}.py").write_text("def test_one():\n    pass\n\n"
                                                                  "def test_two():\n    pass\n")
    (tmp_path / "tests" / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO / 'tests')!r})\n"
        "def pytest_configure(config):\n    from areas import register\n    register(config)\n")
    # (only the plugins these runs need: loading every installed one took most of this test's 30 s)
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    for args in ([], ["-n", "2"]):
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist.plugin",
                               *args, "tests"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = [line for line in done.stdout.splitlines() if line.startswith("── ")]
        assert sorted(lines) == ["── tests/alpha (2 tests) starting", "── tests/beta (2 tests) starting"], done.stdout
