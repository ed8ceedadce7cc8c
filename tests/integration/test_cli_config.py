"""The CLI's settings come from the composition root: the same variables, checked the same way, as the host's."""

from __future__ import annotations

import pytest

from wikimem.cli import main
from wikimem.host.config import ENV_VARS


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)


def test_a_bad_setting_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WIKIMEM_REPLICATION", "sometimes")
    monkeypatch.setenv("WIKIMEM_REMOTE", f"file://{tmp_path}/r/{{owner}}.git")
    assert main(["runs", "--data", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("wikimem: WIKIMEM_REPLICATION must be one of")
    assert not (tmp_path / "data").exists()  # refused before a host made anything


def test_the_data_root_comes_from_the_environment_unless_given(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WIKIMEM_DATA", str(tmp_path / "env"))
    assert main(["index", "rebuild"]) == 0
    assert (tmp_path / "env" / "owners").is_dir()
    assert main(["index", "rebuild", "--data", str(tmp_path / "flag")]) == 0
    assert (tmp_path / "flag" / "owners").is_dir()


def test_a_missing_owner_without_a_remote_is_refused_before_anything_is_made(tmp_path, capsys):
    assert main(["--owner", "user:nobody", "--data", str(tmp_path / "typo"), "log"]) == 2
    assert "no owner 'user:nobody' under the data root" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


def test_credentials_files_come_from_their_variables(tmp_path, monkeypatch, capsys):
    tokens = tmp_path / "tokens.jsonl"
    monkeypatch.setenv("WIKIMEM_TOKENS_FILE", str(tokens))
    assert main(["token", "mint", "worker", "--scope", "read"]) == 0
    assert tokens.is_file()
    capsys.readouterr()
    assert main(["token", "list"]) == 0 and "worker" in capsys.readouterr().out
    monkeypatch.delenv("WIKIMEM_TOKENS_FILE")
    assert main(["token", "list"]) == 2
    assert "give --file or set WIKIMEM_TOKENS_FILE" in capsys.readouterr().err


def test_explain_of_a_host_owner_uses_the_hosts_recall_settings(tmp_path, monkeypatch, capsys):
    from wikimem.host import build_host, load_config

    data = tmp_path / "data"
    owner = build_host(load_config({"DATA_ROOT": str(data)}, environ={})).create_owner("user:ann")
    owner.diary_append("今天去了海边，很开心。", date="2026-07-21", time="14:30")
    monkeypatch.setenv("WIKIMEM_DATA", str(data))
    monkeypatch.setenv("WIKIMEM_DIARY_RECALL", "window")
    assert main(["--owner", "user:ann", "explain", "开心", "--no-jieba"]) == 1  # the seed's window: no diary
    capsys.readouterr()
    monkeypatch.delenv("WIKIMEM_DIARY_RECALL")  # the host's default: the diary ranked by topic
    assert main(["--owner", "user:ann", "explain", "开心", "--no-jieba"]) == 0
    assert "every diary entry is searched" in capsys.readouterr().out
    assert main(["--owner", "user:ann", "explain", "开心", "--no-jieba", "--diary", "window"]) == 1  # a flag wins
