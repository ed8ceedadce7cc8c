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
    assert [line.split() for line in out.stdout.splitlines()[:2]] == [["preferences", "2"], ["work", "1"]]
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


# -- issue 15: the rough edges --------------------------------------------------------

def test_ls_outside_a_memory_folder_says_so(tmp_path):
    (tmp_path / "notes.txt").write_text("not memory")
    out = subprocess.run([sys.executable, "-m", "wikimem", "ls"], capture_output=True, text=True, cwd=tmp_path,
                         env={k: v for k, v in os.environ.items() if k != "WIKIMEM_STORE"})
    assert out.returncode == 2 and out.stdout == ""
    assert "the current folder is not a memory folder" in out.stderr and "--store" in out.stderr
    out = run("ls", store=tmp_path)
    assert out.returncode == 2 and f"{tmp_path} is not a memory folder" in out.stderr


def test_ls_of_an_empty_memory_folder_says_there_is_nothing_yet(tmp_path):
    (tmp_path / "mem" / "wiki").mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    for folder in (tmp_path / "mem", tmp_path / "empty"):  # upstream: an empty store lists nothing, exit 0
        out = run("ls", store=folder)
        assert out.returncode == 0 and out.stdout == "" and "no memories in" in out.stderr


def test_grep_searches_the_diary_too(root):
    MemoryStore(root).diary.append("Went surfing for the first time.\nShe loved it.", date="2026-07-22",
                                   time="09:15")
    out = run("grep", "surf|换了", store=root)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["2026-07-21:14:30:换了工作", "2026-07-22:09:15:Went surfing for the first time."]
    out = run("grep", "sugar|loved", "-i", store=root)
    assert out.stdout.splitlines() == ["preferences:coffee:Pour-over only, never sugar.",
                                       "2026-07-22:09:15:She loved it."]


def test_version():
    from wikimem import __version__

    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"wikimem {__version__}"


@pytest.mark.parametrize("ref", ["preferences/likes-the-sea", "preferences:likes-the-sea"])
def test_show_accepts_the_forms_log_and_grep_print(root, ref):
    out = run("show", ref, store=root)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("## likes-the-sea\n\n喜欢海边。") and "owner=user:xnne" in out.stdout
    assert run("show", "preferences/nope", store=root).returncode == 1


def test_owner_addresses_a_host_owner_by_id(tmp_path):
    from wikimem.host.owner_ids import encode_owner_id

    data = tmp_path / "data"
    folder = data / "owners" / encode_owner_id("user:xnne")
    (folder / ".git").mkdir(parents=True)  # what the host makes; the plain store reads the markdown
    MemoryStore(folder).add("preferences", "likes-the-sea", "喜欢海边。")
    out = run("--owner", "user:xnne", "--data", str(data), "show", "preferences/likes-the-sea")
    assert out.returncode == 0 and "喜欢海边。" in out.stdout, out.stderr
    out = run("--owner", "user:xnne", "ls", env={"WIKIMEM_DATA": str(data)})
    assert out.returncode == 0 and out.stdout.split()[:2] == ["preferences", "1"]
    out = run("--owner", "user:nobody", "--data", str(data), "ls")
    assert out.returncode == 2 and "no owner 'user:nobody'" in out.stderr
    out = run("--owner", "../etc", "--data", str(data), "ls")
    assert out.returncode == 2
    out = run("--owner", "user:xnne", "--data", str(data), "ls", store=tmp_path)
    assert out.returncode == 2 and "either --store or --owner" in out.stderr
