"""A drop-in for upstream wikimem (issue 35): its module paths, its CLI, its time-gate contract.

Written from the seeds (core-api.zh.md: the public names and what they do)
and upstream's documented CLI (``wikimem --store DIR ls | show | grep |
explain | graph``, ``WIKIMEM_STORE``, exit codes 0 ok / 1 not found or no
match / 2 usage or store error). Differences that remain are listed in
docs/guides/upstream-compatibility.md.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from wikimem import MemoryStore
from wikimem.cli import main

# -- the module paths ---------------------------------------------------------------------------

SEED_NAMES = {
    "retrieval": ["MemoryIndex", "RetrievalResult", "RetrievedItem", "as_recall_item"],
    "memorize": ["memorize", "LLM", "DIARY_PROMPT", "diary_tool", "handle_diary_tool", "DIARY_TOOL_DESCRIPTION"],
    "store": ["MemoryStore", "Diary", "Journal", "validate_file", "sanitize_item_name"],
    "diary": ["Diary", "DiaryItem"],
    "journal": ["Journal"],
    "tokenize": ["tokenize", "est_tokens"],
}


def test_the_upstream_module_paths_import_with_the_seed_names():
    import wikimem
    from wikimem import diary, journal, memorize, retrieval, store, tokenize  # noqa: F401  (the issue's line)

    for module, names in SEED_NAMES.items():
        face = getattr(wikimem, module)
        for name in names:
            assert getattr(face, name) is getattr(wikimem, name) or name in ("memorize", "tokenize"), (module, name)


def test_memorize_and_tokenize_stay_callable_as_the_functions_they_always_were(tmp_path):
    from wikimem import Diary, memorize, tokenize

    class Once:
        def chat(self, messages):
            return '[{"content": "他换了工作。"}]'

    entries = memorize(Diary(tmp_path), "我换工作了", llm=Once(), date="2026-07-24", time="09:00")
    assert [e.content for e in entries] == ["他换了工作。"]
    assert tokenize("喜欢海边", use_jieba=False) == ["喜欢", "欢海", "海边"]
    assert list(inspect.signature(memorize).parameters)[:2] == ["diary", "turn"]
    assert memorize.memorize(Diary(tmp_path), "x", llm=Once(), date="2026-07-25", time="09:00")
    assert memorize.parse_entries('```json\n[{"content": "去了海边。"}]\n```') == ["去了海边。"]
    assert tokenize.est_tokens("喜欢 the sea") == 4


def test_the_faces_import_in_any_order_and_stay_one_object():
    code = ("import wikimem.memorize as m, wikimem.tokenize as t\n"
            "from wikimem import memorize, tokenize, retrieval\n"
            "assert memorize is m and tokenize is t and callable(memorize) and callable(tokenize)\n"
            "assert 'numpy' not in __import__('sys').modules and 'dulwich' not in __import__('sys').modules\n")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).returncode == 0


def test_retrieval_calls_no_model_by_its_own_source():
    from wikimem import retrieval

    source = open(retrieval.__file__, encoding="utf-8").read()
    assert not any(word in source for word in ("httpx", "requests", "urllib", "openai", "anthropic"))


# -- the time gate's contract ------------------------------------------------------------------

def test_bm25_alone_never_returns_a_diary_entry_the_words_do_not_match(tmp_path):
    from wikimem import MemoryIndex

    s = MemoryStore(tmp_path / "memory")
    s.add("work", "current-job", "在一家做机器人的公司上班。")
    s.diary.append("晚饭吃了拉面，汤头很浓。", date="2026-07-22", time="19:30")
    s.diary.append("下午去了海边，风很大。", date="2026-07-22", time="15:00")
    index = MemoryIndex(s, use_jieba=False)
    window = ("2026-07-22", "2026-07-22")
    assert [e.item.name for e in index.retrieve("机器人公司", time_range=window).items] == ["current-job"]
    assert [e.item.name for e in index.retrieve("海边", time_range=window).items] == ["15:00"]
    # question words only: the window comes back, newest first (the fallback is for these)
    assert [e.item.name for e in index.retrieve("做了什么", time_range=window).items] == ["19:30", "15:00"]
    assert [e.item.name for e in index.retrieve("", time_range=window).items] == ["19:30", "15:00"]


# -- the command line ---------------------------------------------------------------------------

@pytest.fixture
def memory(tmp_path):
    s = MemoryStore(tmp_path / "memory")
    s.add("preferences", "likes-the-sea", "喜欢海边，提到过想去海边玩。[[daily_life:beach-trip-plan]] [[missing:gone]]",
          owner="user:xnne", source_conv="conv_1")
    s.add("daily_life", "beach-trip-plan", "计划夏天去海边旅行，看日出。")
    s.add("preferences", "coffee", "只喝手冲咖啡，不加糖。")
    return s.root


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


COMMANDS = [["ls"], ["show", "preferences"], ["grep", "海边"], ["explain", "想去海边玩", "--no-jieba"], ["graph"]]


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_store_before_or_after_the_command_is_the_same(capsys, memory, command):
    before = cli(capsys, "--store", str(memory), *command)
    after = cli(capsys, *command, "--store", str(memory))
    short = cli(capsys, command[0], "-s", str(memory), *command[1:])
    assert before[0] == 0 and before == after == short


def test_wikimem_store_is_the_default(capsys, memory, monkeypatch):
    monkeypatch.setenv("WIKIMEM_STORE", str(memory))
    code, out, _ = cli(capsys, "ls")
    assert code == 0 and {line.split()[0]: line.split()[1] for line in out.splitlines()} == {
        "daily_life": "1", "preferences": "2"}


def test_ls_shapes_and_exit_codes(capsys, memory, tmp_path):
    assert cli(capsys, "--store", str(tmp_path / "empty-and-new"), "ls")[0] == 2  # no such folder
    (tmp_path / "empty").mkdir()
    assert cli(capsys, "--store", str(tmp_path / "empty"), "ls")[:2] == (0, "")  # an empty store: quiet
    code, _, err = cli(capsys, "--store", str(tmp_path / "nowhere"), "ls")
    assert code == 2 and "not found" in err


def test_show_prints_what_the_file_stores(capsys, memory):
    code, out, _ = cli(capsys, "--store", str(memory), "show", "preferences")
    assert code == 0 and out.startswith("# preferences\n\n## likes-the-sea\n\n喜欢海边")
    assert "<!-- wikimem: owner=user:xnne | source=conv_1 | ts=" in out and "## coffee" in out
    code, out, _ = cli(capsys, "--store", str(memory), "show", "preferences", "coffee")
    assert code == 0 and out.startswith("## coffee\n\n只喝手冲咖啡") and "likes-the-sea" not in out
    assert cli(capsys, "--store", str(memory), "show", "preferences", "tea")[::2] == (1, "wikimem: no item 'tea' in "
                                                                                        "preferences\n")
    code, _, err = cli(capsys, "--store", str(memory), "show", "nope")
    assert code == 1 and "no such category" in err


def test_grep_shapes_and_exit_codes(capsys, memory):
    code, out, _ = cli(capsys, "--store", str(memory), "grep", "海边")
    assert code == 0 and out.splitlines() == [
        "daily_life:beach-trip-plan:计划夏天去海边旅行，看日出。",
        "preferences:likes-the-sea:喜欢海边，提到过想去海边玩。[[daily_life:beach-trip-plan]] [[missing:gone]]"]
    assert "preferences:coffee:## coffee" in cli(capsys, "--store", str(memory), "grep", "COFFEE", "-i")[1]
    assert cli(capsys, "--store", str(memory), "grep", "quantum")[0] == 1
    code, _, err = cli(capsys, "--store", str(memory), "grep", "[")
    assert code == 2 and "bad pattern" in err


def test_explain_shape_and_exit_codes(capsys, memory):
    code, out, _ = cli(capsys, "--store", str(memory), "explain", "想去海边玩", "--no-jieba")
    assert code == 0 and "ranking: BM25 (embedding: off)" in out and "time gate: none (whole store)" in out
    assert "(via likes-the-sea)" in out and "unresolved links: [[missing:gone]]" in out and "budget: used" in out
    code, out, _ = cli(capsys, "--store", str(memory), "explain", "想去海边玩", "--no-jieba", "--budget", "1")
    assert code == 0 and "/ 1" in out and "dropped" in out
    code, out, _ = cli(capsys, "--store", str(memory), "explain", "想去海边玩", "--no-jieba", "--no-links")
    assert "(via" not in out and "unresolved links" not in out
    code, out, _ = cli(capsys, "--store", str(memory), "explain", "quantum", "--no-jieba")
    assert code == 1 and "no results" in out
    code, out, _ = cli(capsys, "--store", str(memory), "explain", "拉面", "--time-range", "2026-07-22", "--no-jieba")
    assert "time gate: 2026-07-21..2026-07-23  [explicit]  (widened: window was empty)" in out


def test_graph_as_mermaid_and_json(capsys, memory):
    code, out, _ = cli(capsys, "--store", str(memory), "graph")
    assert code == 0 and out == ('graph LR\n    n0["daily_life:beach-trip-plan"]\n    n1["preferences:likes-the-sea"]\n'
                                 '    n2["missing:gone"]:::unresolved\n    n1 --> n0\n    n1 --> n2\n'
                                 '    classDef unresolved stroke-dasharray: 5 5;\n')
    code, out, _ = cli(capsys, "graph", "--format", "json", "--store", str(memory))
    data = json.loads(out)
    nodes = {n["id"]: n for n in data["nodes"]}
    assert nodes["missing:gone"] == {"id": "missing:gone", "file": "missing", "name": "gone", "unresolved": True}
    assert nodes["preferences:likes-the-sea"]["unresolved"] is False and "preferences:coffee" not in nodes
    assert data["edges"] == [{"source": "preferences:likes-the-sea", "target": "daily_life:beach-trip-plan"},
                             {"source": "preferences:likes-the-sea", "target": "missing:gone"}]
    with pytest.raises(SystemExit) as usage:  # a usage error, as argparse reports one
        main(["--store", str(memory), "graph", "--format", "dot"])
    assert usage.value.code == 2


def test_the_commands_read_a_host_owner_too(capsys, tmp_path):
    from wikimem.host import make_host

    host = make_host(tmp_path / "data")
    owner, _ = host.ensure_owner("user:xnne")
    owner.add("preferences", "likes-the-sea", "喜欢海边。[[daily_life:trip]]")
    data = str(tmp_path / "data")
    for argv in (["--owner", "user:xnne", "--data", data, "graph"], ["graph", "--owner", "user:xnne", "--data", data],
                 ["--data", data, "graph", "--owner", "user:xnne"]):
        code, out, _ = cli(capsys, *argv)
        assert code == 0 and '"daily_life:trip"]:::unresolved' in out, argv
    for command in (["ls"], ["show", "preferences"], ["grep", "海边"], ["explain", "海边", "--no-jieba"]):
        assert cli(capsys, *command, "--owner", "user:xnne", "--data", data)[0] == 0, command
    assert cli(capsys, "ls", "--owner", "user:nobody", "--data", data)[0] == 2
