"""Proof that a change of the ranking's code changes no retrieve: the same JSON, byte for byte, as a baseline tree.

It serves nothing. It seeds, once, in a temporary folder: the 420-turn chat owner of bench/api.py (its questions),
and a person holding wiki facts, small talk, dated diary entries said in channels, a character ``kai`` with its own
layer and profile. Each tree then runs, in a subprocess of its own (``PYTHONPATH=<tree>``) on a copy of that folder,
the same ≥ 500 retrieves (limits, diary modes, time words, ``as_of``, character, channel/present, a hand edit of a
file on disk in the middle) through a host built from the configuration as gunicorn builds it (BM25 only), writes
each result's JSON, and times every retrieve (median of its repeats). Then the outputs are compared::

    mkdir -p /tmp/base && git archive main | tar -x -C /tmp/base
    .venv/bin/python bench/ranking_identity.py --baseline /tmp/base [--repeats 5]

Printed: identical / total, the first differences, ms per retrieve (median) of this tree and of the baseline.
Without ``--baseline`` only this tree runs (its figures, and its output kept with ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHAT = "user:chat"
ANN = "user:ann"
WORDS = ["tea", "lighthouse", "violin", "harbor", "noodle", "museum", "kite", "orchard", "snow", "river"]
ROOMS = [{}, {"channel": "g1", "present": ["user:ann", "user:bob", "char:kai"]},
         {"channel": "dm", "present": ["user:ann", "char:kai"]}, {"channel": "g1"}]
ANN_QUERIES = ["tea at the harbor", "the violin and the snow", "kite over the river", "hi", "thanks, what about tea",
               "what did we do on 2026-03-04", "the orchard in January 2026", "noodle", "lighthouse museum",
               "what happened on 2026-02-05 at the harbor", "river snow kite tea violin"]


def _text(i: int, salt: int) -> str:
    return "Ann said " + " ".join(WORDS[(i * k + salt) % len(WORDS)] for k in (1, 3, 7)) + f" ({salt}-{i})."


def _host(root: Path):
    from wikimem.host.config import build_host, load_config

    return build_host(load_config(environ={"WIKIMEM_DATA": str(root), "WIKIMEM_EMBEDDER": "none"}))


def seed(root: Path) -> None:
    """The two owners, written once (their timestamps are then the same for every tree)."""
    sys.path.insert(0, str(REPO / "bench"))
    from api import chat_turns

    from wikimem.context import WriteContext

    host = _host(root)
    turns, _ = chat_turns(420)
    chat, _ = host.ensure_owner(CHAT)
    ops = [{"op": "add", "file": f, "name": name, "content": text} for f, name, text in turns]
    for i in range(0, len(ops), 200):
        chat.apply_ops(ops[i:i + 200])
    host.characters.put("kai", name="Kai", persona="Kai listens.", shared_writes="direct")
    ann, _ = host.ensure_owner(ANN)
    ctx = WriteContext(actor="bench", run="seed")
    for salt, character in ((0, None), (1, "kai")):
        ann.apply_ops([{"op": "add", "file": f"topic{i % 4}", "name": f"n{salt}-{i}", "content": _text(i, salt)}
                       for i in range(60)] + [{"op": "add", "file": "chat", "name": f"hi{salt}-{i}",
                                               "content": "Hi! Thanks, ok." if i % 2 else _text(i, salt + 3)}
                                              for i in range(30)], character=character)
        for i in range(60):
            day = f"2026-0{1 + i % 4}-{1 + i % 9:02d}"
            room = ROOMS[i % 3]
            ann.diary_append(_text(i, salt + 5), character=character, date=day, time=f"1{i % 10}:00", ctx=ctx,
                             **room)
            ann.diary_append("thanks!", character=character, date=day, time=f"0{i % 10}:30", ctx=ctx)
    host.owner("char:kai").apply_ops([{"op": "add", "file": "me", "name": f"p{i}", "content": _text(i, 9)}
                                      for i in range(12)])


def workload(root: Path) -> list[tuple[str, str, dict]]:
    """``(phase, owner, retrieve kwargs)``: the same list for every tree."""
    sys.path.insert(0, str(REPO / "bench"))
    from api import chat_turns

    _, questions = chat_turns(420)
    calls: list[tuple[str, str, dict]] = []
    for n, q in enumerate(questions[:300]):
        calls.append(("before", CHAT, {"query": q, "limit": (8, 1, 3, 20, 100)[n % 5]}))
    for q in questions[300:360]:
        calls.append(("before", CHAT, {"query": q, "limit": 8, "diary": "window"}))
    for q in ANN_QUERIES:
        for limit in (1, 5, 12):
            calls.append(("before", ANN, {"query": q, "limit": limit}))
            calls.append(("before", ANN, {"query": q, "limit": limit, "diary": "window"}))
            calls.append(("before", ANN, {"query": q, "limit": limit, "recency_half_life": 30.0}))
            calls.append(("before", ANN, {"query": q, "limit": limit, "as_of": "HEAD~3"}))
            for room in ROOMS:
                calls.append(("before", ANN, {"query": q, "limit": limit, "character": "kai", **room}))
            calls.append(("before", ANN, {"query": q, "limit": limit, **ROOMS[1]}))
    for q in questions[:40]:  # after a hand edit of the chat owner's files
        calls.append(("after", CHAT, {"query": q, "limit": 8}))
    calls.append(("after", CHAT, {"query": "the lighthouse museum and coffee", "limit": 3}))
    for q in ANN_QUERIES:
        calls.append(("after", ANN, {"query": q, "limit": 6}))
        calls.append(("after", ANN, {"query": q, "limit": 6, "character": "kai", **ROOMS[2]}))
    return calls


def hand_edit(root: Path) -> None:
    """Edit files on disk, as an operator would: the chat owner's largest file loses its last turn and a turn
    of it says something else; a diary day of the person loses its last entry."""
    wiki = sorted((root / "owners" / "user_3achat" / "wiki").glob("*.md"), key=lambda p: (-p.stat().st_size, p.name))
    text = wiki[0].read_text()
    text = text[: text.rindex("\n## ")] + "\n"
    cut = text.index("\n## ", len(text) // 2)
    wiki[0].write_text(text[:cut] + "\n## edited\n\nTom: the lighthouse museum and coffee with Nora.\n" + text[cut:])
    day = root / "owners" / "user_3aann" / "diary" / "2026-01-01.md"
    text = day.read_text()
    day.write_text(text[: text.rindex("\n## ")] + "\n")


def run(root: Path, out: Path, repeats: int) -> None:
    """This tree (whatever ``wikimem`` imports): every call ``repeats`` times; JSON lines of the first answer and
    the median time of each call."""
    import wikimem
    from wikimem.host.freshness import FULL_CHECK_SECONDS

    host = _host(root)
    owners = {CHAT: host.ensure_owner(CHAT)[0], ANN: host.ensure_owner(ANN)[0]}
    for layer in (None, "kai"):
        owners[ANN].index(layer).diary_ready(None)
    owners[CHAT].index().diary_ready(None)
    host.owner("char:kai").index().diary_ready(None)
    lines, times = [], []
    edited = False
    for phase, who, kwargs in workload(root):
        if phase == "after" and not edited:
            hand_edit(root)
            time.sleep(FULL_CHECK_SECONDS + 0.2)  # (an edit in place is seen within that bound: then by every tree)
            edited = True
        owner = owners[who]
        try:
            first = json.dumps(owner.retrieve(**kwargs).to_dict(), sort_keys=True)
        except Exception as e:  # (the same refusal in both trees is the same answer)
            first = f"error {type(e).__name__}: {e}"
        spent = []
        for _ in range(repeats):
            t = time.perf_counter()
            try:
                owner.retrieve(**kwargs)
            except Exception:
                pass
            spent.append(time.perf_counter() - t)
        lines.append(json.dumps({"call": [phase, who, kwargs], "result": first}, sort_keys=True))
        times.append(statistics.median(spent))
    out.write_text("\n".join(lines) + "\n")
    (out.with_suffix(".times")).write_text(json.dumps(times))
    print(f"{wikimem.__file__}: {len(lines)} retrieves", file=sys.stderr)


def _tree_run(tree: Path, seeded: Path, work: Path, name: str, repeats: int) -> tuple[list[str], list[float]]:
    root = work / f"data-{name}"
    shutil.copytree(seeded, root, symlinks=True)
    out = work / f"{name}.jsonl"
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    for var in [v for v in env if v.startswith("WIKIMEM_")]:
        env.pop(var)
    subprocess.run([sys.executable, __file__, "--run", str(root), "--out", str(out), "--repeats", str(repeats)],
                   env=env, check=True, cwd=str(work))
    return out.read_text().splitlines(), json.loads(out.with_suffix(".times").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, help="a tree to compare with (e.g. a git archive of main)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats of every retrieve")
    parser.add_argument("--out", type=Path, help="(with --run, or to keep this tree's output)")
    parser.add_argument("--run", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run is not None:
        run(args.run, args.out, args.repeats)
        return
    with tempfile.TemporaryDirectory(prefix="wikimem-ranking-identity-") as tmp:
        work = Path(tmp)
        seeded = work / "seed"
        env = dict(os.environ, PYTHONPATH=str(REPO))
        subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO / 'bench')!r}); "
                        "import ranking_identity as r, pathlib; r.seed(pathlib.Path(sys.argv[1]))", str(seeded)],
                       env=env, check=True, cwd=str(work))
        trees = ([("baseline", args.baseline.resolve())] if args.baseline else []) + [("this", REPO)]
        outs = {name: _tree_run(tree, seeded, work, name, args.repeats) for name, tree in trees}
        if args.out:
            args.out.write_text("\n".join(outs["this"][0]) + "\n")
    lines, times = outs["this"]
    errors = sum(1 for line in lines if json.loads(line)["result"].startswith("error"))
    edited = sum(1 for line in lines if "lighthouse museum and coffee" in json.loads(line)["result"])
    print(f"retrieves: {len(lines)} ({errors} refused, {edited} finding the hand-edited turn)")
    for name, (_, spent) in outs.items():
        print(f"{name:9s} ms per retrieve: median {statistics.median(spent) * 1000:.3f}, "
              f"mean {statistics.mean(spent) * 1000:.3f}, chat owner median "
              f"{statistics.median(spent[:300]) * 1000:.3f}")
    if "baseline" not in outs:
        return
    base, base_times = outs["baseline"]
    same = sum(1 for a, b in zip(lines, base) if a == b)
    print(f"identical: {same} / {max(len(lines), len(base))}")
    shown = 0
    for a, b in zip(lines, base):
        if a != b and shown < 3:
            shown += 1
            print("DIFFERENT:", json.loads(a)["call"])
            print("  this:    ", json.loads(a)["result"][:600])
            print("  baseline:", json.loads(b)["result"][:600])
    ratio = statistics.median(times) / statistics.median(base_times)
    print(f"this / baseline (median ms per retrieve): {ratio:.2f}")
    if same != len(lines) or len(lines) != len(base):
        sys.exit(1)


if __name__ == "__main__":
    main()
