"""A wheel built from the repository carries the templates and static files and serves the UI elsewhere."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import sys, webapp
assert webapp.__file__.startswith(sys.argv[1]), webapp.__file__
from webapp import create_app
app = create_app({"TESTING": True, "DATA_ROOT": sys.argv[2], "ADMIN_TOKEN": "probe-token-0123456789"})
c = app.test_client()
login = c.get("/login")
css = c.get("/static/admin.css")
print(login.status_code, "Sign in" in login.get_data(as_text=True), css.status_code, len(css.data) > 100)
"""


def test_the_wheel_serves_the_admin_ui_from_its_own_files(tmp_path):
    pytest.importorskip("hatchling")
    out = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    wheel = next(out.glob("wikimem-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "webapp/templates/login.html" in names and "webapp/static/admin.css" in names
    assert "webapp/templates/admin/confirm.html" in names
    assert not any(n.startswith("tests/") for n in names)
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    # Run from elsewhere with only the unpacked wheel ahead of the dependencies.
    done = subprocess.run([sys.executable, "-c", PROBE, str(site), str(tmp_path / "data")], cwd=tmp_path,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["200", "True", "200", "True"]
