"""Bulk rollback benchmark (issue 16): undo a bad deploy across many owners.

    .venv/bin/python bench/bulk.py [--owners 1000] [--samples 300]

Builds ``--owners`` owners, each with a good run and a bad run by the same
actor within one hour (a bad prompt deployed to every user), copies the
data root, then times on one copy the reference — one single-owner
rollback per owner through the existing per-owner path
(``Owner.undo("rollback", run)``, what an operator or a script did before)
— and on the other the bulk path: the cross-owner search, the preview of
every owner's plan, and the bulk rollback job (owner by owner, one commit
each; through the durable job runner when it is installed). A third part
measures what the cross-owner index costs a write: single commits with
and without its commit listener.

Prints one table with each figure and its ratio to the reference measured
in the same run. Timings on a shared machine are noisy: compare ratios.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikimem.context import WriteContext  # noqa: E402
from wikimem.host import Host, RunQuery, make_host  # noqa: E402

BAD_ACTOR = "Elaina-v12"


def build(root: Path, owners: int) -> list[str]:
    host = make_host(root)
    ids = []
    for i in range(owners):
        owner, _ = host.ensure_owner(f"user:b{i:05d}")
        owner.add("preferences", "tea", "Drinks oolong tea every morning.",
                  ctx=WriteContext(run=f"run_good_{i}", actor="Elaina"))
        with owner.vstore.batch(WriteContext(run=f"run_bad_{i}", actor=BAD_ACTOR),
                                message="memorize: 1 fact, 1 diary entry"):
            owner.store.add("preferences", "tea", "Hates tea.", owner=owner.id)
            owner.diary.append("Said they hate tea.", date="2026-07-21", time="14:30", owner=owner.id)
        ids.append(owner.id)
    return ids


def timed(fn):
    t = time.perf_counter()
    value = fn()
    return time.perf_counter() - t, value


def reference(root: Path, ids: list[str]) -> float:
    """One rollback per owner through the per-owner path (a fresh Host: no owner cached)."""
    host = make_host(root)

    def run():
        for i, owner_id in enumerate(ids):
            host.owner(owner_id).undo("rollback", f"run_bad_{i}", ctx=WriteContext(actor="script"))
    return timed(run)[0]


def bulk_job(host: Host, query: RunQuery, *, durable: bool) -> tuple[float, list[dict], str]:
    """``(seconds, per-owner results, run id of the commits)``: the bulk rollback as the API runs it (a
    durable job: steps claimed from the job store by the host's runner threads), or owner by owner in
    this thread (``durable=False``: what ``wikimem bulk-rollback`` does)."""
    if not durable:
        seconds, results = timed(lambda: host.fleet.bulk_rollback_now(query, job="bench_job", actor="bench"))
        return seconds, results, "bench_job"
    t = time.perf_counter()
    job = host.fleet.start_bulk_rollback(query, actor="bench")
    while True:
        found = host.fleet.bulk_job(job["id"])
        if found["state"] in ("done", "failed"):
            seconds = time.perf_counter() - t
            host.start_jobs().stop()
            return seconds, found["results"], job["id"]
        time.sleep(0.05)


def commit_cost(root: Path, samples: int) -> tuple[float, float]:
    """Median single-commit latency of one owner without and with the run index listener.

    The two kinds of commit alternate, so a slow moment of a shared machine
    falls on both alike.
    """
    host = make_host(root)
    owner, _ = host.ensure_owner("user:latency")
    listeners = list(owner.vstore.on_commit)
    times: dict[bool, list[float]] = {False: [], True: []}
    for j in range(2 * samples + 20):
        indexed = j % 2 == 1
        owner.vstore.on_commit[:] = listeners if indexed else []
        t = time.perf_counter()
        owner.add("notes", f"n{j % 50}", f"write {j}", ctx=WriteContext(actor="bench", run=f"r{j}"))
        if j >= 20:  # the first ones warm caches up
            times[indexed].append(time.perf_counter() - t)
    return statistics.median(times[False]), statistics.median(times[True])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--owners", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--in-process", action="store_true", help="run the bulk rollback in this thread, not as a job")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="wikimem-bulk-"))
    try:
        t_build, ids = timed(lambda: build(tmp / "a", args.owners))
        shutil.copytree(tmp / "a", tmp / "b", symlinks=True)
        t_ref = reference(tmp / "a", ids)

        host = make_host(tmp / "b")
        query = RunQuery.parse(actor=BAD_ACTOR, since="2000-01-01")
        t_search, page = timed(lambda: host.fleet.find_runs(query, limit=50))
        t_preview, preview = timed(lambda: host.fleet.preview_bulk_rollback(query))
        t_job, results, job_run = bulk_job(host, query, durable=not args.in_process)
        done = sum(1 for r in results if r["status"] == "done")
        t_undo_preview, undo = timed(lambda: host.fleet.preview_bulk_rollback(RunQuery.parse(run=job_run)))
        without, with_index = commit_cost(tmp / "c", args.samples)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    n = args.owners
    rows = [
        ("setup: owners with a good and a bad run", f"{n}", f"{t_build:.1f} s", ""),
        ("reference: per-owner rollback x owners", f"{n}", f"{t_ref:.2f} s", "1.00"),
        ("search: actor + window, first page + totals", f"{page.total['runs']} runs / {page.total['owners']} owners",
         f"{t_search * 1000:.1f} ms", f"{t_search / t_ref:.4f}"),
        ("bulk preview: every owner's plan", f"{preview.total['owners']} owners, {preview.total['changes']} changes",
         f"{t_preview:.2f} s", f"{t_preview / t_ref:.2f}"),
        ("bulk rollback job: one commit per owner", f"{done} done", f"{t_job:.2f} s", f"{t_job / t_ref:.2f}"),
        ("preview + job (what an operator waits for)", "", f"{t_preview + t_job:.2f} s",
         f"{(t_preview + t_job) / t_ref:.2f}"),
        ("undo of the bulk action: preview", f"{undo.total['owners']} owners", f"{t_undo_preview:.2f} s",
         f"{t_undo_preview / t_ref:.2f}"),
        ("commit latency without the run index", f"{args.samples} commits", f"{without * 1000:.2f} ms", "1.00"),
        ("commit latency with the run index listener", f"{args.samples} commits", f"{with_index * 1000:.2f} ms",
         f"{with_index / without:.2f}"),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    head = ("what", "size", "time", "ratio")
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    mode = "owner by owner in this thread" if args.in_process else "a durable job, the host's 2 runner threads"
    print(f"\nratios: bulk rows against the per-owner reference; the last row against the commit without the "
          f"index. Bulk rollback run as {mode}.")


if __name__ == "__main__":
    main()
