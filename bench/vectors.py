"""Vector-search benchmark: ``wikimem.vectors.MemmapVectorIndex``, exact tier vs tier 1 (sign bits).

    .venv/bin/python bench/vectors.py                                  # 10k and 100k rows × 384 and 1024 dims
    .venv/bin/python bench/vectors.py --rows 10000 --dims 384 --queries 200   # a quick run

For each (rows, dim) it writes a synthetic float32 matrix to a temp ``.npy``
file, opens it with ``np.load(mmap_mode="r")`` as ``VectorCache`` does, and
measures both tiers of ``MemmapVectorIndex`` on the same queries:

- ``exact``: ``binary_threshold = rows`` (the index answers with exact cosine
  over every row); ``tier 1``: ``binary_threshold = rows - 1`` (1-bit sign
  signatures around the mean direction, Hamming coarse rank, exact rerank of
  ``top_k · max(4, √rows / 5)`` rows, :func:`wikimem.vectors.index.rerank_size`).
- ``build s``: constructing the index over the memmap (norms; for tier 1 also
  the mean direction and the signatures).
- ``p50/p99 ms``: ``search(query, 10)`` latency over ``--queries`` queries,
  after a short warm-up (the page cache holds the file: a running host).
- memory: ``own MB`` is ``index.resident_bytes`` (inverse norms + signatures
  + centre: the RAM the index holds of its own); ``anon Δ MB`` is the growth
  of the process's anonymous RSS (``RssAnon`` in ``/proc/self/status``) from
  before opening to after building + searching; ``file MB`` is the ``.npy``
  size and ``mapped Δ MB`` the growth of file-backed RSS (``RssFile``) over
  the same span — the memmap pages the searches touched, which live in the
  shared, evictable page cache (building reads every row once, so both
  tiers touch the whole file; tier 1's searches then touch only reranked rows).
- ``recall@10``: mean |tier-1 top 10 ∩ exact top 10| / 10; ``hit@1``: share
  of queries whose exact best row is also tier 1's best row.
- a second table repeats tier 1 with fixed rerank factors (the rule patched in
  the bench process only) to show where its recall is lost.

Data: ``--clusters`` (200) gaussian centres, every row a centre plus gaussian
noise plus a shared offset (real embedding models are anisotropic: all
vectors share a common direction, which is why tier 1 takes signs around the
mean), normalised. Queries are corpus rows plus a smaller perturbation, so
every query has true near neighbours (its source row, then its cluster).

The exact tier is one BLAS matrix-vector product over the memmap: on a busy
machine run it also with ``OPENBLAS_NUM_THREADS=1`` (a multi-threaded gemv
waits for a second core and its tail latency shows the scheduler, not the index).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import wikimem.vectors.index as vector_index  # noqa: E402
from wikimem.vectors.index import MemmapVectorIndex, rerank_size  # noqa: E402

TOP_K = 10
CHUNK = 8192
CLUSTER_NOISE = 0.6  # norm of a row's own noise, relative to its (unit) centre
SHARED_OFFSET = 0.5  # norm of the direction every row shares
QUERY_NOISE = 0.3  # norm of a query's perturbation, relative to its (unit) source row


# -- data ------------------------------------------------------------------------


def _unit_rows(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def _gaussian(rng: np.random.Generator, shape: tuple[int, int], norm: float) -> np.ndarray:
    """Gaussian rows whose expected norm is ``norm``."""
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(norm / np.sqrt(shape[1]))


def write_matrix(path: Path, rows: int, dim: int, clusters: int, seed: int) -> None:
    """Write the clustered corpus to ``path`` as a float32 ``.npy``, chunk by chunk."""
    rng = np.random.default_rng(seed)
    centres = _unit_rows(_gaussian(rng, (clusters, dim), 1.0))
    shared = _unit_rows(_gaussian(rng, (1, dim), 1.0))[0] * np.float32(SHARED_OFFSET)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, dim))
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        labels = rng.integers(clusters, size=n)
        chunk = centres[labels] + shared + _gaussian(rng, (n, dim), CLUSTER_NOISE)
        out[start:start + n] = _unit_rows(chunk)
    out.flush()
    del out


def make_queries(matrix: np.ndarray, count: int, seed: int) -> np.ndarray:
    """``count`` perturbed copies of random corpus rows."""
    rng = np.random.default_rng(seed + 1)
    src = np.sort(rng.choice(matrix.shape[0], size=count, replace=False))
    base = np.asarray(matrix[src], dtype=np.float32)
    return _unit_rows(base + _gaussian(rng, base.shape, QUERY_NOISE))


# -- measuring -------------------------------------------------------------------


def rss_kb() -> dict[str, int]:
    """``RssAnon`` and ``RssFile`` of this process, in kB (Linux)."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile"):
                out[key] = int(value.split()[0])
    return out


def timed_search(index: MemmapVectorIndex, queries: np.ndarray, warmup: int = 10):
    """Top-10 rows per query and the latencies (s) of each ``search`` call."""
    for q in queries[:warmup]:
        index.search(q, TOP_K)
    results, times = [], []
    for q in queries:
        t = time.perf_counter()
        hits = index.search(q, TOP_K)
        times.append(time.perf_counter() - t)
        results.append([row for row, _ in hits])
    return results, times


def p50_p99_ms(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1e3, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3


def recall(found: list[list[int]], truth: list[list[int]]) -> tuple[float, float]:
    """(mean recall@10, share of queries with the same best row)."""
    r10 = statistics.mean(len(set(f) & set(t)) / len(t) for f, t in zip(found, truth))
    hit1 = statistics.mean(float(f[:1] == t[:1]) for f, t in zip(found, truth))
    return r10, hit1


@dataclass
class TierResult:
    build_s: float
    p50: float
    p99: float
    own_mb: float
    anon_mb: float
    mapped_mb: float
    top: list[list[int]]


def run_tier(path: Path, queries: np.ndarray, threshold: int) -> TierResult:
    """Open the memmap fresh, build the index with ``threshold``, search every query."""
    gc.collect()
    before = rss_kb()
    matrix = np.load(path, mmap_mode="r")
    t = time.perf_counter()
    index = MemmapVectorIndex(matrix, binary_threshold=threshold)
    build_s = time.perf_counter() - t
    top, times = timed_search(index, queries)
    gc.collect()
    after = rss_kb()
    p50, p99 = p50_p99_ms(times)
    res = TierResult(build_s, p50, p99, index.resident_bytes / 2**20,
                     (after["RssAnon"] - before["RssAnon"]) / 1024,
                     (after["RssFile"] - before["RssFile"]) / 1024, top)
    del index, matrix
    gc.collect()
    return res


def rerank_sweep(path: Path, queries: np.ndarray, truth: list[list[int]], factors: list[int]) -> list[tuple]:
    """Tier-1 recall and p50 with fixed rerank factors (the library's rule patched here only)."""
    saved = vector_index.rerank_size
    matrix = np.load(path, mmap_mode="r")
    index = MemmapVectorIndex(matrix, binary_threshold=matrix.shape[0] - 1)
    out = []
    try:
        for factor in factors:
            vector_index.rerank_size = lambda rows, k, f=factor: min(rows, k * f)
            top, times = timed_search(index, queries)
            out.append((factor, *recall(top, truth), p50_p99_ms(times)[0]))
    finally:
        vector_index.rerank_size = saved
    return out


# -- one cell and the tables -----------------------------------------------------


def fits_in_ram(rows: int, dim: int) -> tuple[bool, int, int]:
    """Whether the matrix (plus headroom for the page cache and temporaries) fits in available RAM."""
    need_mb = rows * dim * 4 * 3 // 2**20
    with open("/proc/meminfo") as fh:
        info = {line.split(":")[0]: int(line.split()[1]) for line in fh}
    avail_mb = info.get("MemAvailable", 0) // 1024
    return need_mb < avail_mb, need_mb, avail_mb


def bench_cell(rows: int, dim: int, args, tmp: Path) -> dict:
    """Both tiers (and the rerank sweep) on one synthetic matrix."""
    path = tmp / f"vectors-{rows}x{dim}.npy"
    t = time.perf_counter()
    write_matrix(path, rows, dim, args.clusters, seed=rows * 7919 + dim)
    gen_s = time.perf_counter() - t
    queries = make_queries(np.load(path, mmap_mode="r"), args.queries, seed=rows + dim)
    exact = run_tier(path, queries, threshold=rows)
    binary = run_tier(path, queries, threshold=rows - 1)
    r10, hit1 = recall(binary.top, exact.top)
    sweep = rerank_sweep(path, queries, exact.top, args.rerank) if args.rerank else []
    file_mb = path.stat().st_size / 2**20
    path.unlink()
    return dict(rows=rows, dim=dim, exact=exact, binary=binary, recall=r10, hit1=hit1,
                sweep=sweep, file_mb=file_mb, gen_s=gen_s)


def print_main_table(cells: list[dict], skipped: list[str]) -> None:
    print("| rows | dim | tier | build s | p50 ms | p99 ms | own MB | anon Δ MB | file MB | mapped Δ MB "
          "| recall@10 | hit@1 |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in cells:
        tier1 = f"tier 1 ({rerank_size(c['rows'], TOP_K)} reranked)"
        for name, r in (("exact", c["exact"]), (tier1, c["binary"])):
            rec = f"{c['recall']:.3f}" if name != "exact" else "1 (ref)"
            hit = f"{c['hit1']:.3f}" if name != "exact" else "1 (ref)"
            print(f"| {c['rows']:,} | {c['dim']} | {name} | {r.build_s:.2f} | {r.p50:.3f} | {r.p99:.3f} "
                  f"| {r.own_mb:.2f} | {r.anon_mb:.1f} | {c['file_mb']:.1f} | {r.mapped_mb:.1f} | {rec} | {hit} |")
    for line in skipped:
        print(f"| {line} |")


def print_sweep_table(cells: list[dict]) -> None:
    if not any(c["sweep"] for c in cells):
        return
    print("\ntier 1 with fixed rerank factors (the library reranks top_k × max(4, √rows / "
          f"{vector_index.RERANK_DIVISOR}) candidates, see the main table; here factor × {TOP_K}):\n")
    print("| rows | dim | rerank factor | candidates | recall@10 | hit@1 | p50 ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for c in cells:
        for factor, r10, hit1, p50 in c["sweep"]:
            print(f"| {c['rows']:,} | {c['dim']} | {factor} | {factor * TOP_K} | {r10:.3f} | {hit1:.3f} | {p50:.3f} |")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="10000,100000", help="comma-separated row counts")
    parser.add_argument("--dims", default="384,1024", help="comma-separated dimensions")
    parser.add_argument("--queries", type=int, default=200, help="queries per cell (≥ 200)")
    parser.add_argument("--clusters", type=int, default=200, help="gaussian cluster centres")
    parser.add_argument("--rerank", default="4,16,64",
                        help="rerank factors of the diagnostic table (empty to skip it)")
    args = parser.parse_args(argv)
    args.rows = [int(x) for x in args.rows.split(",") if x.strip()]
    args.dims = [int(x) for x in args.dims.split(",") if x.strip()]
    args.rerank = [int(x) for x in args.rerank.split(",") if x.strip()]
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs; top_k {TOP_K}, {args.queries} queries per cell, {args.clusters} clusters, "
          f"row noise {CLUSTER_NOISE}, shared offset {SHARED_OFFSET}, query noise {QUERY_NOISE}")
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}, "
          f"load average at start {os.getloadavg()[0]:.2f}\n")
    started = time.perf_counter()
    cells, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="wikimem-vec-bench-") as tmp:
        for rows in args.rows:
            for dim in args.dims:
                ok, need, avail = fits_in_ram(rows, dim)
                if not ok:
                    skipped.append(f"{rows:,} | {dim} | SKIPPED: needs ~{need} MB, {avail} MB available")
                    continue
                cells.append(bench_cell(rows, dim, args, Path(tmp)))
                print(f"(done {rows:,} × {dim} in {time.perf_counter() - started:.0f} s so far)", file=sys.stderr)
    print_main_table(cells, skipped)
    print_sweep_table(cells)
    low = [c for c in cells if c["recall"] < 0.95]
    if low:
        print("\ntier-1 recall@10 below 0.95 at: " + ", ".join(f"{c['rows']:,}×{c['dim']} ({c['recall']:.3f})"
                                                           for c in low))
    print(f"\n(total {time.perf_counter() - started:.0f} s, load average at end {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
