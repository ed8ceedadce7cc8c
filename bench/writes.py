"""Write-path benchmark (issue 26): sync calls per write, latency against its floors, concurrent writers.

    .venv/bin/python bench/writes.py [--baseline /work/main] [--samples 200] [--seconds 6]

Every figure is measured in child processes, this tree and (``--baseline``)
another checkout of the project side by side in the same run, so that the
ratios hold on a shared, noisy machine:

1. **Sync calls per write**, counted by ``strace -f -c`` (fsync, fdatasync,
   syncfs, sync, sync_file_range, msync) over N writes minus the same run
   with none (start-up and owner creation cancel out): ``Owner.add`` through
   the host, the plain ``MemoryStore.add`` for reference, and renames.
2. **Latency** (medians, the kinds interleaved sample by sample, the
   trees in turn for ``--rounds`` rounds): one
   ``fsync`` of a small write (the floor), plain ``MemoryStore.add``,
   ``Owner.add``, and ``PUT /api/v1/owners/<o>/items/<f>/<n>`` through the
   Flask app in-process (auth, parsing, JSON included); the ratios HTTP /
   plain (goal ≤ 2×) and HTTP / floor (goal ≤ 10×).
3. **Throughput**: 8 threads writing to one owner and to 8 owners, with
   group commit on and off (``Writer.group_commit``), and the baseline: each
   configuration in turn, ``--rounds`` rounds of ``--seconds`` each, in
   fresh processes (medians and ranges).

The load average is printed with each table: compare within a table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
TOKEN = "bench-writes-token-0123456789abcdef"

CHILD = textwrap.dedent('''
    import atexit, json, os, shutil, statistics, sys, tempfile, threading, time
    mode, args = sys.argv[1], json.loads(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="wikimem-bench-writes-", dir=args.get("tmp"))
    atexit.register(shutil.rmtree, tmp, True)

    def text(i):
        return f"memory number {i}: she mentioned the sea again, and green tea in the morning."

    def host():
        from wikimem.host import Host, make_host
        return make_host(os.path.join(tmp, "data"))

    def fill(store, n):
        """An owner (or plain store) of n wiki files, written in one batch (``--files``)."""
        if n <= 5:
            return
        with store.batch():
            for k in range(n):
                store.add(f"f{k}", "seed", text(k))

    def group_commit(owner, on):
        writer = owner.vstore.writer
        if hasattr(writer, "group_commit"):
            writer.group_commit = on
        return hasattr(writer, "group_commit")

    if mode == "syncs":
        from wikimem import MemoryStore
        n, kind = args["n"], args["kind"]
        if kind == "owner":
            o, _ = host().ensure_owner("user:ann")
            for i in range(20):
                o.add(f"f{i % 5}", f"warm{i}", text(i))
            for i in range(n):
                o.add(f"f{i % 5}", f"item{i}", text(i))
        else:
            s = MemoryStore(os.path.join(tmp, "plain"))
            for i in range(20):
                s.add(f"f{i % 5}", f"warm{i}", text(i))
            for i in range(n):
                s.add(f"f{i % 5}", f"item{i}", text(i))
        print(json.dumps({}))

    elif mode == "latency":
        from webapp import create_app
        from wikimem import MemoryStore
        app = create_app({"TESTING": True, "DATA_ROOT": os.path.join(tmp, "data"), "ADMIN_TOKEN": args["token"]})
        client = app.test_client()
        auth = {"Authorization": "Bearer " + args["token"]}
        assert client.put("/api/v1/owners/user:http", headers=auth).status_code in (200, 201)
        h = host()
        owner, _ = h.ensure_owner("user:lib")
        plain = MemoryStore(os.path.join(tmp, "plain"))
        nf = args.get("files", 5)
        for store in (h.ensure_owner("user:http")[0].vstore.store, owner.vstore.store, plain):
            fill(store, nf)
        fd = os.open(os.path.join(tmp, "floor"), os.O_WRONLY | os.O_CREAT, 0o644)

        def floor(i):
            os.write(fd, text(i).encode())
            os.fsync(fd)

        def http(i):
            r = client.put(f"/api/v1/owners/user:http/items/f{i % nf}/item{i}", headers=auth,
                           json={"content": text(i)})
            assert r.status_code in (200, 201), r.get_data(as_text=True)

        kinds = {"fsync floor": floor,
                 "plain MemoryStore.add": lambda i: plain.add(f"f{i % nf}", f"item{i}", text(i)),
                 "Owner.add": lambda i: owner.add(f"f{i % nf}", f"item{i}", text(i)),
                 "HTTP PUT item": http}
        for i in range(30):  # warm up
            for fn in kinds.values():
                fn(100_000 + i)
        samples = {k: [] for k in kinds}
        for i in range(args["samples"]):
            for k, fn in kinds.items():
                t = time.perf_counter()
                fn(i)
                samples[k].append(time.perf_counter() - t)
        print(json.dumps({k: statistics.median(v) for k, v in samples.items()}))

    elif mode == "phases":
        # Where one write's time goes: each phase's function timed in place (nested phases inside their parent).
        import collections, functools, importlib
        from webapp import create_app
        spent = collections.defaultdict(float)

        def timed(module, qualname, label):
            try:
                cls_name, name = qualname.split(".")
                cls = getattr(importlib.import_module(module), cls_name)
                fn = getattr(cls, name)
            except (ImportError, AttributeError, ValueError):
                return  # (another tree may not have it)

            @functools.wraps(fn)
            def wrapper(*a, **k):
                t = time.perf_counter()
                try:
                    return fn(*a, **k)
                finally:
                    spent[label] += time.perf_counter() - t
            setattr(cls, name, wrapper)

        for module, qualname, label in args["phases"]:
            timed(module, qualname, label)
        app = create_app({"TESTING": True, "DATA_ROOT": os.path.join(tmp, "data"), "ADMIN_TOKEN": args["token"]})
        client = app.test_client()
        auth = {"Authorization": "Bearer " + args["token"]}
        assert client.put("/api/v1/owners/user:http", headers=auth).status_code in (200, 201)
        nf = args.get("files", 5)
        fill(host().ensure_owner("user:http")[0].vstore.store, nf)

        def put(i):
            r = client.put(f"/api/v1/owners/user:http/items/f{i % nf}/item{i}", headers=auth, json={"content": text(i)})
            assert r.status_code in (200, 201), r.get_data(as_text=True)

        for i in range(30):
            put(100_000 + i)
        spent.clear()
        t0 = time.perf_counter()
        for i in range(args["samples"]):
            put(i)
        total = time.perf_counter() - t0
        n = args["samples"]
        print(json.dumps({"HTTP PUT": total / n, **{k: v / n for k, v in spent.items()}}))

    elif mode == "throughput":
        h = host()
        owners = [h.ensure_owner(f"user:t{k}")[0] for k in range(args["owners"])]
        supported = all(group_commit(o, True) for o in owners)
        for k, o in enumerate(owners):
            for i in range(20):
                o.add("warm", f"up{i}", text(k))

        def run(group):
            for o in owners:
                group_commit(o, group)
            stop = time.monotonic() + args["seconds"]
            counts = [0] * args["threads"]

            def worker(t):
                o = owners[t % len(owners)]
                i = 0
                while time.monotonic() < stop:
                    o.add(f"f{t}", f"item{i % 200}", text(i))
                    i += 1
                counts[t] = i

            t0 = time.monotonic()
            threads = [threading.Thread(target=worker, args=(t,)) for t in range(args["threads"])]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            return sum(counts) / (time.monotonic() - t0)

        rate = run(bool(args["group"]) and supported)
        print(json.dumps({"writes_per_s": rate, "group_commit": supported}))
''')


# (label, module, Class.method): the phases of one HTTP PUT, nested as indented (two spaces a level).
PHASES = [
    ("Owner.add", "wikimem.host.owner", "Owner.add"),
    ("  settle: stale git locks, intent log, temp files", "wikimem.versioned.vstore", "VersionedStore._settle"),
    ("  hand edits: the folder against HEAD", "wikimem.versioned.vstore", "VersionedStore._commit_external"),
    ("  MemoryStore.save (validate, read, parse, render, stage)", "wikimem.store.wiki", "MemoryStore.save"),
    ("  build the commit in memory (blob, trees, commit)", "wikimem.versioned.vstore", "VersionedStore.committed"),
    ("  land the round", "wikimem.versioned.vstore", "VersionedStore._land"),
    ("    intent record + its fdatasync", "wikimem.versioned.intent", "IntentLog.append"),
    ("    loose objects", "wikimem.versioned.objects", "GitRepo.write_objects"),
    ("    memory file + journal line", "wikimem.store.writer", "Landing.write"),
    ("    CAS of main", "wikimem.versioned.objects", "GitRepo.move_ref"),
    ("    .git/index", "wikimem.versioned.objects", "GitRepo.update_index"),
    ("    history index (SQLite)", "wikimem.versioned.history.historydb", "HistoryDB.sync"),
    ("    on_commit listeners (run index, metrics)", "wikimem.versioned.vstore", "VersionedStore.tell"),
    ("    record marked applied", "wikimem.versioned.intent", "IntentLog.mark"),
]


def phases(tree: Path, samples: int, files: int) -> dict[str, float]:
    """Mean seconds per HTTP PUT of each phase (``HTTP PUT`` the whole request), measured in a child of ``tree``."""
    return child(tree, "phases", {"samples": samples, "token": TOKEN, "files": files,
                                  "phases": [(m, q, label) for label, m, q in PHASES]})


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


TMP: str | None = None  # --tmp: where the children make their data folders


def child(tree: Path, mode: str, args: dict, strace: list[str] | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, "-c", CHILD, mode, json.dumps({**args, "tmp": TMP})]
    done = subprocess.run((strace or []) + cmd, env=env, cwd=tree, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{mode} in {tree} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if strace:
        out["strace"] = done.stderr
    return out


_SYNCS = ("fsync", "fdatasync", "syncfs", "sync", "sync_file_range", "msync")


def _strace_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
        if m:
            counts[m.group(2)] = int(m.group(1))
    return counts


def syncs_per_write(tree: Path, kind: str, n: int) -> tuple[float, float]:
    """(sync calls, renames) per write, from strace -f -c over n writes minus over none."""
    trace = ["strace", "-f", "-c", "-e", "trace=" + ",".join(_SYNCS + ("rename", "renameat", "renameat2"))]

    def count(k: int) -> tuple[int, int]:
        c = _strace_counts(child(tree, "syncs", {"n": k, "kind": kind}, trace)["strace"])
        return sum(c.get(s, 0) for s in _SYNCS), sum(c.get(r, 0) for r in ("rename", "renameat", "renameat2"))

    base, full = count(0), count(n)
    return (full[0] - base[0]) / n, (full[1] - base[1]) / n


def create_cost(folder: str) -> float:
    """Median microseconds to create an empty file in a new folder under ``folder`` (file systems differ)."""
    import statistics
    import tempfile

    probe = tempfile.mkdtemp(prefix="wikimem-create-", dir=folder)
    times = []
    try:
        for i in range(200):
            t = time.perf_counter()
            os.close(os.open(os.path.join(probe, f"f{i}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            times.append(time.perf_counter() - t)
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    return statistics.median(times) * 1e6


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n### {title}  (load average {load()})\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="another checkout to measure side by side (e.g. /work/main)")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=3.0, help="throughput: seconds per round")
    ap.add_argument("--rounds", type=int, default=5, help="throughput: rounds of every configuration in turn")
    ap.add_argument("--files", type=int, default=5,
                    help="latency and phases: wiki files of each owner, written to in turn (a large folder: 1000)")
    ap.add_argument("--skip", default="", help="comma-separated sections to skip: syncs,latency,phases,throughput")
    ap.add_argument("--tmp", default=os.environ.get("WIKIMEM_BENCH_TMP", "/var/tmp" if os.path.isdir("/var/tmp")
                                                     else None),
                    help="folder for the data (default /var/tmp: on a machine whose /tmp holds many test trees, "
                         "creating a file there can cost 10-30x more)")
    args = ap.parse_args()
    global TMP
    TMP = args.tmp
    trees = [("this tree", HERE)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    skip = set(filter(None, args.skip.split(",")))
    print(f"bench/writes.py  (samples={args.samples}, files={args.files}, {os.cpu_count()} cores; trees: "
          + ", ".join(f"{name} = {path}" for name, path in trees) + ")")
    import tempfile

    where = args.tmp or tempfile.gettempdir()
    print(f"data under {where}: creating a file there costs {create_cost(where):.0f} µs (median; a write of the "
          f"versioned store creates 7 files — 4 loose objects, the memory file, main.lock, index.lock —, a plain "
          f"write 1)")

    if "syncs" not in skip:
        if shutil.which("strace"):
            rows = []
            for name, tree in trees:
                for kind, label in (("owner", "Owner.add"), ("plain", "plain MemoryStore.add")):
                    syncs, renames = syncs_per_write(tree, kind, 200)
                    rows.append([name, label, f"{syncs:.2f}", f"{renames:.2f}"])
            table("Sync calls per write (strace -f -c, 200 writes minus none)",
                  ["tree", "write", "sync calls / write", "renames / write"], rows)
        else:
            print("\n(strace not installed: sync calls not counted; apt-get install strace)")

    if "latency" not in skip:
        import statistics

        runs: dict[str, list[dict]] = {name: [] for name, _ in trees}
        for _ in range(args.rounds):  # the trees in turn, so that both meet the same load
            for name, tree in trees:
                runs[name].append(child(tree, "latency", {"samples": max(20, args.samples // args.rounds),
                                                          "token": TOKEN, "files": args.files}))
        results = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
        rows = []
        for name, r in results.items():
            http, plain, floor, own = r["HTTP PUT item"], r["plain MemoryStore.add"], r["fsync floor"], r["Owner.add"]
            rows.append([name, f"{floor * 1000:.2f}", f"{plain * 1000:.2f}", f"{own * 1000:.2f}", f"{http * 1000:.2f}",
                         f"**{http / plain:.1f}×** (goal ≤ 2)", f"**{http / floor:.1f}×** (goal ≤ 10)"])
        table(f"Write latency, medians in ms (the kinds interleaved sample by sample, the trees in turn, {args.rounds} "
              f"rounds)",
              ["tree", "fsync floor", "plain add", "Owner.add", "HTTP PUT", "HTTP / plain", "HTTP / floor"], rows)

    if "phases" not in skip:
        import statistics

        got: dict[str, dict[str, list[float]]] = {name: {} for name, _ in trees}
        for _ in range(args.rounds):
            for name, tree in trees:
                for label, value in phases(tree, max(50, args.samples // args.rounds), args.files).items():
                    got[name].setdefault(label, []).append(value)
        med = {name: {k: statistics.median(v) for k, v in g.items()} for name, g in got.items()}
        labels = ["HTTP PUT", "  Flask, auth, route, gate, audit (PUT − Owner.add)"] + [label for label, _, _ in PHASES]
        for m in med.values():
            if "Owner.add" in m:
                m[labels[1]] = m["HTTP PUT"] - m["Owner.add"]
        rows = [[label.replace("  ", "· ")] + [f"{med[name][label] * 1000:.3f}" if label in med[name] else "n/a"
                                              for name, _ in trees] for label in labels]
        table(f"Where one HTTP PUT's time goes (mean ms a write, phases timed in place, nested; medians of "
              f"{args.rounds} runs)", ["phase"] + [name for name, _ in trees], rows)
        print("(the memory file + journal line, and MemoryStore.save, are what a plain add does too)")

    if "throughput" not in skip:
        import statistics

        rows = []
        figures: dict[tuple, float] = {}
        for owners in (1, 8):
            got: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.rounds):  # every configuration in turn: all meet the same load
                for name, tree in trees:
                    for group in (True, False):
                        r = child(tree, "throughput", {"owners": owners, "threads": 8, "seconds": args.seconds,
                                                       "group": group})
                        if not r["group_commit"] and group:
                            continue  # a tree without group commit: measured once per round
                        got.setdefault((name, "on" if r["group_commit"] and group else
                                        ("off" if r["group_commit"] else "n/a (none)")), []).append(
                            r["writes_per_s"])
            for (name, mode), rates in got.items():
                figures[(name, owners, mode)] = statistics.median(rates)
                rows.append([name, str(owners), mode, f"{statistics.median(rates):.0f}",
                             f"{min(rates):.0f}–{max(rates):.0f}"])
        table(f"8 concurrent writers (Owner.add in threads of one process; each configuration in turn, {args.rounds} "
              f"rounds of {args.seconds:g} s, medians)", ["tree", "owners", "group commit", "writes/s", "range"], rows)
        for owners in (1, 8):
            ours = figures.get(("this tree", owners, "on"))
            off = figures.get(("this tree", owners, "off"))
            ref = figures.get(("baseline", owners, "n/a (none)"))
            parts = []
            if ours and off:
                parts.append(f"group commit on / off = **{ours / off:.1f}×**")
            if ours and ref:
                goal = " (goal ≥ 3×)" if owners == 1 else ""
                parts.append(f"this tree (on) / baseline = **{ours / ref:.1f}×**{goal}")
            if parts:
                print(f"- {owners} owner{'s' if owners > 1 else ''}: " + "; ".join(parts))

if __name__ == "__main__":
    main()
