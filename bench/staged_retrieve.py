"""Retrieve with ``include_staged`` right after a write of ``main``, against a plain retrieve of the same owner.

An owner with a main memory of ``--main`` items and ``--runs`` staged runs of ``--items`` items each (the
issue's case: 100 × 150). Each round writes one item to ``main`` (what makes the staged view stale), then
times one ``include_staged`` retrieve and one plain retrieve; then another write, six ``include_staged``
retrieves at once (threads) and six plain ones at once. Which kind goes first alternates by round (the
first read after a write parses the changed file; the other finds it parsed). The first ``include_staged``
retrieve (the first build of the view) is reported apart. Prints p50 and max of each and the ratio
staged / plain (target: within 3× after the first build).

    .venv/bin/python bench/staged_retrieve.py            # 100 runs x 150 items, 8 rounds
    .venv/bin/python bench/staged_retrieve.py --runs 20 --items 50 --rounds 4
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikimem.context import WriteContext  # noqa: E402
from wikimem.host import make_host  # noqa: E402

WORDS = ("sea lighthouse tea garden river boat market winter summer train violin piano bread cheese "
         "mountain forest lantern harbor kite orchard").split()


def text(i: int) -> str:
    return " ".join(WORDS[(i * k + k) % len(WORDS)] for k in range(1, 9)) + f" note {i}"


def build(root: Path, main: int, runs: int, items: int):
    host = make_host(root)
    owner = host.create_owner("user:bench")
    for start in range(0, main, 200):
        owner.apply_ops([{"op": "add", "file": f"main{(start // 200) % 10}", "name": f"m{i}", "content": text(i)}
                         for i in range(start, min(main, start + 200))])
    for r in range(runs):
        ctx = WriteContext(run=f"run_{r:03d}", actor="memorize-v7", staged=True)
        owner.apply_ops([{"op": "add", "file": f"staged{r % 10}", "name": f"r{r}-{i}", "content": text(r * 1000 + i)}
                         for i in range(items)], ctx=ctx)
    return host, owner


def timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def at_once(n: int, call) -> list[float]:
    out: list[float] = []
    lock = threading.Lock()

    def one() -> None:
        took = timed(call)
        with lock:
            out.append(took)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def row(name: str, xs: list[float]) -> str:
    return f"| {name} | {len(xs)} | {statistics.median(xs) * 1000:.1f} | {max(xs) * 1000:.1f} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--main", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--items", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        host, owner = build(Path(tmp) / "data", args.main, args.runs, args.items)
        print(f"owner: {args.main} main items, {args.runs} staged runs x {args.items} items "
              f"(made in {time.perf_counter() - started:.1f} s)\n")
        query = "lighthouse tea by the sea"
        staged = lambda: owner.retrieve(query, include_staged=True)  # noqa: E731
        plain = lambda: owner.retrieve(query)  # noqa: E731
        plain()
        first = timed(staged)
        one_staged, one_plain, six_staged, six_plain = [], [], [], []
        for n in range(args.rounds):  # which kind goes first after the write alternates (the first parses the file)
            owner.add("main0", f"w{n}", f"one more line {n} about the sea")
            if n % 2:
                one_plain.append(timed(plain))
                one_staged.append(timed(staged))
            else:
                one_staged.append(timed(staged))
                one_plain.append(timed(plain))
            owner.add("main1", f"x{n}", f"another line {n} about tea")
            if n % 2:
                six_plain += at_once(6, plain)
                six_staged += at_once(6, staged)
            else:
                six_staged += at_once(6, staged)
                six_plain += at_once(6, plain)
        print(f"first include_staged retrieve (the first build): {first * 1000:.0f} ms\n")
        print("| right after a main write | calls | p50 ms | max ms |\n|---|---:|---:|---:|")
        for name, xs in (("include_staged, one call", one_staged), ("plain, one call", one_plain),
                         ("include_staged, six at once", six_staged), ("plain, six at once", six_plain)):
            print(row(name, xs))
        print()
        for label, a, b in (("one call", one_staged, one_plain), ("six at once", six_staged, six_plain)):
            print(f"{label}: include_staged / plain = {statistics.median(a) / statistics.median(b):.2f}x p50, "
                  f"{max(a) / max(b):.2f}x max")
        host.start_jobs().stop()


if __name__ == "__main__":
    main()
