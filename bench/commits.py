"""Versioned-store benchmark (issue 5): commit latency vs the plain store, flat with history depth;
item history and per-item diff at depth; disk before/after packing vs `git gc`; 4-process throughput.

    .venv/bin/python bench/commits.py [--commits 10000] [--samples 200]

Prints one table. Latencies are medians (p90 in brackets) of single item writes into a
memory of 20 RecallFiles; the "deep" figures are taken after --commits commits.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikimem import MemoryStore  # noqa: E402
from wikimem.versioned import VersionedStore  # noqa: E402


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def writes(store, n: int, offset: int = 0) -> list[float]:
    out = []
    for i in range(offset, offset + n):
        t = time.perf_counter()
        store.add(f"file{i % 20}", f"item{i % 400}", f"memory number {i}: she mentioned the sea again, and tea.")
        out.append(time.perf_counter() - t)
    return out


def fmt(samples: list[float]) -> str:
    s = sorted(samples)
    return f"{statistics.median(s) * 1000:7.2f} ms  (p90 {s[int(len(s) * 0.9)] * 1000:.2f})"


def _proc(root: str, proc: int, n: int) -> None:
    vs = VersionedStore(root, auto_pack=False)
    for j in range(n):
        vs.add(f"file{j % 20}", f"p{proc}-{j}", f"worker {proc} write {j}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=200)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="wikimem-bench-"))
    rows: list[tuple[str, str]] = []
    try:
        plain = MemoryStore(tmp / "plain")
        writes(plain, 400)
        plain_lat = writes(plain, args.samples, 400)
        rows.append(("plain store write", fmt(plain_lat)))

        vs = VersionedStore(tmp / "versioned", auto_pack=True)
        writes(vs, 400)
        shallow = writes(vs, args.samples, 400)
        rows.append(("versioned write, depth ~600", fmt(shallow)))
        t = time.perf_counter()
        done = 400 + args.samples
        fill = args.commits - done - args.samples
        writes(vs, max(0, fill), done)
        fill_s = time.perf_counter() - t
        deep = writes(vs, args.samples, done + max(0, fill))
        depth = vs.db.count()
        rows.append((f"versioned write, depth {depth}", fmt(deep)))
        ratio0 = statistics.median(shallow) / statistics.median(plain_lat)
        ratio1 = statistics.median(deep) / statistics.median(plain_lat)
        drift = statistics.median(deep) / statistics.median(shallow) - 1
        rows.append(("versioned / plain (shallow, deep)", f"{ratio0:.1f}x, {ratio1:.1f}x   (target <= 10x)"))
        rows.append(("deep vs shallow drift", f"{drift * 100:+.0f}%   (target within +-25%)"))
        each = fill_s / max(1, fill) * 1000
        rows.append((f"filling {max(0, fill)} commits", f"{fill_s:.1f} s ({each:.2f} ms each, auto-pack included)"))

        hist = []
        for i in range(50):
            t = time.perf_counter()
            k = (i * 7) % 400
            page = vs.history(file=f"file{k % 20}", item=f"item{k}", limit=50)
            hist.append(time.perf_counter() - t)
        rows.append(("item history (50 newest), deep", fmt(hist) + f"  [{len(page.entries)} entries]"))
        ids = [e.id for e in vs.history(limit=100).entries]
        dif = []
        for cid in ids[:50]:
            t = time.perf_counter()
            vs.show_commit(cid)
            dif.append(time.perf_counter() - t)
        rows.append(("per-item diff of a commit, deep", fmt(dif)))
        t = time.perf_counter()
        vs.diff(ids[-1], ids[0])
        rows.append(("per-item diff across 100 commits", f"{(time.perf_counter() - t) * 1000:7.2f} ms"))

        git_dir = tmp / "versioned" / ".git"
        before = du(git_dir)
        t = time.perf_counter()
        vs.pack()
        pack_s = time.perf_counter() - t
        ours = du(git_dir)
        copy = tmp / "gc-copy"
        shutil.copytree(tmp / "versioned", copy)
        if shutil.which("git"):
            subprocess.run(["git", "gc", "-q", "--prune=now"], cwd=copy, check=True)
            gc = du(copy / ".git")
            rows.append(("repo size before final pack", f"{before / 1e6:.1f} MB (auto-packed every 1000 commits)"))
            rows.append(("repo size after pack()", f"{ours / 1e6:.1f} MB in {pack_s:.1f} s"))
            rows.append(("`git gc` of the same repo",
                         f"{gc / 1e6:.1f} MB -> ours / gc = {ours / gc:.2f}x (target <= 3x)"))
        vs.close()

        root = tmp / "multi"
        VersionedStore(root).close()
        ctx = multiprocessing.get_context("spawn")
        n = 250
        procs = [ctx.Process(target=_proc, args=(str(root), p, n)) for p in range(4)]
        t = time.perf_counter()
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        wall = time.perf_counter() - t
        count = VersionedStore(root).db.count() - 1
        rows.append(("4 processes x 250 writes, one owner",
                     f"{count / wall:.0f} commits/s ({count} commits in {wall:.1f} s, incl. start-up)"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    width = max(len(k) for k, _ in rows)
    print(f"bench/commits.py  (commits={args.commits}, samples={args.samples})")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")


if __name__ == "__main__":
    main()
