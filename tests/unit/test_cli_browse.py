"""`wikimem ls / show / grep` as a user runs them (a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from wikimem import MemoryStore


def run(*args, store=None, env=None):
    full_env = dict(os.environ, **(env or {}))
    cmd = [sys.executable, "-m", "wikimem"] + (["--store", str(store)] if store else []) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env)


@pytest.fixture
def root(tmp_path):
    s = MemoryStore(tmp_path / "mem")
    s.add("preferences", "likes-the-sea", "喜欢海边。", owner="user:xnne")
    s.add("preferences", "coffee", "Pour-over only, never sugar.")
    s.add("work", "current-job", "Robots company.")
    s.diary.append("换了工作", date="2026-07-21", time="14:30")
    return s.root


def test_ls(root):
    out = run("ls", store=root)
    assert out.returncode == 0
    assert out.stdout.splitlines()[:2] == ["preferences\t2", "work\t1"]
    assert "1 days" in out.stdout
    assert run("ls", "preferences", store=root).stdout.split() == ["likes-the-sea", "coffee"]
    assert run("ls", "nope", store=root).returncode == 1


def test_show(root):
    out = run("show", "preferences", "likes-the-sea", store=root)
    assert out.returncode == 0 and "喜欢海边。" in out.stdout and "owner=user:xnne" in out.stdout
    assert run("show", "preferences", "nope", store=root).returncode == 1
    assert run("show", "../../etc", store=root).returncode == 2


def test_grep_and_env_store(root):
    out = run("grep", "SUGAR", "-i", env={"WIKIMEM_STORE": str(root)})
    assert out.returncode == 0 and "preferences:coffee" in out.stdout
    assert run("grep", "SUGAR", store=root).returncode == 1
    assert run("grep", "(", store=root).returncode == 2


def test_usage_and_store_errors_exit_2(tmp_path):
    assert run().returncode == 2
    assert run("frobnicate").returncode == 2
    assert run("ls", store=tmp_path / "missing").returncode == 2
