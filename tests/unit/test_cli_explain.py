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
    assert lines[:4] == ["query: 海边", "query tokens: 海边", "ranking: BM25 (embedding: off)",
                         "time gate: none (whole store)"]
    assert "  #  src      score     bm25    cos  ~tok  item" in lines
    hit = next(line for line in lines if line.endswith("preferences:likes-the-sea  [海边]"))
    assert hit.split()[:2] == ["1", "hit"] and hit.split()[4] == "-"  # rank, source, score, bm25, no cosine
    link = next(line for line in lines if "daily_life:beach-trip-plan" in line)
    assert link.split()[0] == "link" and link.endswith("(via likes-the-sea)")
    assert "unresolved links: [[nope:gone]]" in lines
    assert any(line.startswith("budget: used ") and line.endswith(" / no limit") for line in lines)


def test_budget_cut_is_shown(root):
    out = run("explain", "海边", "--no-jieba", "--budget", "5", store=root)
    assert out.returncode == 0
    assert any(line.startswith("budget: used ") and line.endswith(" / 5") for line in out.stdout.splitlines())
    assert "dropped (1): daily_life:beach-trip-plan" in out.stdout


def test_no_links_and_limit(root):
    out = run("explain", "海边 coffee", "--no-links", "--limit", "1", "--no-jieba", store=root)
    assert out.returncode == 0
    assert "(via" not in out.stdout and "unresolved links" not in out.stdout
    assert out.stdout.count(" hit ") == 1


def test_time_range_flag_opens_the_diary(root):
    out = run("explain", "海边", "--time-range", "2026-07-21..2026-07-21", "--no-jieba", store=root)
    assert out.returncode == 0
    assert "time gate: 2026-07-21  [explicit]" in out.stdout
    assert "diary 2026-07-21:14:30" in out.stdout
    widened = run("explain", "海边", "--time-range", "2026-07-22", "--no-jieba", store=root)
    assert "time gate: 2026-07-21..2026-07-23  [explicit]  (widened: window was empty)" in widened.stdout


def test_parsed_time_gate_is_reported(root):
    out = run("explain", "2026-07-21 开心", "--no-jieba", store=root)
    assert out.returncode == 0
    assert "time gate: 2026-07-21  [parsed]" in out.stdout
    assert "diary 2026-07-21:14:30" in out.stdout


def test_nothing_found_exits_1(root):
    out = run("explain", "zebra", "--no-jieba", store=root)
    assert out.returncode == 1
    assert "no results" in out.stdout and "time gate: none (whole store)" in out.stdout


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
    assert out.returncode == 2 and "not found" in out.stderr


def test_store_from_the_environment(root):
    out = run("explain", "coffee", "--no-jieba", env={"WIKIMEM_STORE": str(root)})
    assert out.returncode == 0 and "preferences:coffee" in out.stdout


def test_jieba_flag_in_process(root, capsys):
    pytest.importorskip("jieba")
    assert main(["--store", str(root), "explain", "想去海边", "--jieba"]) == 0
    out = capsys.readouterr().out
    assert "query tokens: 想, 去, 海边" in out or "query tokens: 想去, 海边" in out
    assert main(["--store", str(root), "explain", "想去海边", "--no-jieba"]) == 0
    assert "query tokens: 想去, 去海, 海边" in capsys.readouterr().out


def test_explain_diary_all_searches_every_entry(root):
    out = run("explain", "开心", "--no-jieba", "--diary", "all", store=root)
    assert out.returncode == 0, out.stderr
    assert "time gate: none (whole store; every diary entry is searched)" in out.stdout
    first = next(line for line in out.stdout.splitlines() if line.split()[:2] == ["1", "hit"])
    assert first.endswith("diary 2026-07-21:14:30  [开心]")
    seed = run("explain", "开心", "--no-jieba", store=root)
    assert seed.returncode == 1 and "no results" in seed.stdout  # the seed: no window, no diary
    bad = run("explain", "x", "--diary", "some", store=root)
    assert bad.returncode == 2
    assert run("explain", "x", "--diary", "all", "--recency-half-life", "0", store=root).returncode == 2
    assert run("explain", "开心", "--no-jieba", "--diary", "all", "--recency-half-life", "30",
               store=root).returncode == 0


def test_explain_stopwords(root):
    out = run("explain", "the coffee", "--stopwords", store=root)
    assert "query tokens: coffee" in out.stdout
