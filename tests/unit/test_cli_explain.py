"""`wikimem explain QUERY`: the retrieval breakdown, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from wikimem import MemoryStore
from wikimem.cli import main


def run(*args, store=None, env=None):
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("WIKIMEM_STORE", None)
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "wikimem"] + (["--store", str(store)] if store else []) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env)


@pytest.fixture
def root(tmp_path):
    s = MemoryStore(tmp_path / "mem")
    s.add("preferences", "likes-the-sea", "喜欢海边，想去海边玩。[[daily_life:beach-trip-plan]] [[nope:gone]]")
    s.add("daily_life", "beach-trip-plan", "计划八月去青岛。" + "很长的计划" * 20)
    s.add("preferences", "coffee", "Pour-over coffee only, never sugar.")
    s.diary.append("今天去了海边，很开心。", date="2026-07-21", time="14:30")
    return s.root


def test_explain_shows_hits_links_tokens_and_dangling_links(root):
    out = run("explain", "海边", "--no-jieba", store=root)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "query terms: 海边" in lines
    assert any(l.startswith("time gate: off") for l in lines)
    hit = next(i for i, l in enumerate(lines) if "1. hit  preferences:likes-the-sea" in l)
    assert "score=" in lines[hit] and "bm25=" in lines[hit] and "tokens=" in lines[hit]
    assert "matched: 海边" in lines[hit + 1]
    link = next(l for l in lines if "-> link daily_life:beach-trip-plan" in l)
    assert "(via preferences:likes-the-sea)" in link
    assert "dangling links: [[nope:gone]]" in lines
    assert any(l.startswith("budget: none;") for l in lines)


def test_budget_cut_is_shown(root):
    out = run("explain", "海边", "--no-jieba", "--budget", "5", store=root)
    assert out.returncode == 0
    assert "budget: " in out.stdout and "1 kept, 1 dropped" in out.stdout
    assert "dropped by the budget (1):" in out.stdout
    assert "link daily_life:beach-trip-plan" in out.stdout.split("dropped by the budget")[1]


def test_no_links_and_limit(root):
    out = run("explain", "海边 coffee", "--no-links", "--limit", "1", "--no-jieba", store=root)
    assert out.returncode == 0
    assert "-> link" not in out.stdout and "dangling links" not in out.stdout
    assert out.stdout.count(" hit ") == 1


def test_time_range_flag_opens_the_diary(root):
    out = run("explain", "海边", "--time-range", "2026-07-21..2026-07-21", "--no-jieba", store=root)
    assert out.returncode == 0
    assert "time gate: 2026-07-21 (explicit)" in out.stdout
    assert "hit  diary 2026-07-21:14:30" in out.stdout
    widened = run("explain", "海边", "--time-range", "2026-07-22", "--no-jieba", store=root)
    assert "time gate: 2026-07-21..2026-07-23 (explicit; it was empty, so widened one day each side)" in widened.stdout


def test_parsed_time_gate_is_reported(root):
    out = run("explain", "2026-07-21 开心", "--no-jieba", store=root)
    assert out.returncode == 0
    assert "time gate: 2026-07-21 (parsed)" in out.stdout
    assert "diary 2026-07-21:14:30" in out.stdout


def test_nothing_found_exits_1(root):
    out = run("explain", "zebra", "--no-jieba", store=root)
    assert out.returncode == 1
    assert "no memories found" in out.stdout and "time gate: off" in out.stdout


@pytest.mark.parametrize("args", [
    ["explain", "x", "--time-range", "2026-13-01"],
    ["explain", "x", "--time-range", "yesterday..today"],
    ["explain", "x", "--limit", "-1"],
    ["explain", "x", "--budget", "lots"],
    ["explain", "x", "--jieba", "--no-jieba"],
    ["explain", "x", "--tz", "Mars/Olympus"],
    ["explain"],
])
def test_usage_errors_exit_2(root, args):
    out = run(*args, store=root)
    assert out.returncode == 2
    assert "wikimem" in out.stderr


def test_missing_store_exits_2(tmp_path):
    out = run("explain", "sea", store=tmp_path / "nowhere")
    assert out.returncode == 2 and "no memory folder" in out.stderr


def test_store_from_the_environment(root):
    out = run("explain", "coffee", "--no-jieba", env={"WIKIMEM_STORE": str(root)})
    assert out.returncode == 0 and "preferences:coffee" in out.stdout


def test_jieba_flag_in_process(root, capsys):
    pytest.importorskip("jieba")
    assert main(["--store", str(root), "explain", "想去海边", "--jieba"]) == 0
    out = capsys.readouterr().out
    assert "query terms: 想 去 海边" in out or "query terms: 想去 海边" in out
    assert main(["--store", str(root), "explain", "想去海边", "--no-jieba"]) == 0
    assert "query terms: 想去 去海 海边" in capsys.readouterr().out


def test_explain_diary_all_searches_every_entry(root):
    out = run("explain", "开心", "--no-jieba", "--diary", "all", store=root)
    assert out.returncode == 0, out.stderr
    assert "time gate: off (no time window; every diary entry is searched)" in out.stdout
    assert "1. hit  diary 2026-07-21:14:30" in out.stdout
    seed = run("explain", "开心", "--no-jieba", store=root)
    assert seed.returncode == 1 and "no memories found" in seed.stdout  # the seed: no window, no diary
    bad = run("explain", "x", "--diary", "some", store=root)
    assert bad.returncode == 2
    assert run("explain", "x", "--diary", "all", "--recency-half-life", "0", store=root).returncode == 2
    assert run("explain", "开心", "--no-jieba", "--diary", "all", "--recency-half-life", "30",
               store=root).returncode == 0


def test_explain_stopwords(root):
    out = run("explain", "the coffee", "--stopwords", store=root)
    assert "query terms: coffee" in out.stdout
