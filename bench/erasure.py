"""Backups, restores and forgetting (issue 27), each beside a reference measured in the same run.

    .venv/bin/python bench/erasure.py [--owners 1000] [--commits 10000]

**Backup and restore of a data root with ``--owners`` owners** (each: five
items, two diary days, a setting — eight commits):

- ``wikimem backup`` into an empty folder (every owner bundled), then again
  after ten owners changed (incremental: only they are bundled), then
  ``wikimem restore`` onto a fresh data root;
- references: ``cp -a`` of the data root (a consistent copy only while the
  host is stopped), ``git bundle create --all`` of every owner with the git
  command line, and ``git clone`` of every bundle (the restore a script would do).

**Forgetting one item in an owner with ``--commits`` commits**: the item is
written early and changed every thousand commits; the other commits write
other items. The forget (history rewritten, marker, history index rebuilt,
unreachable objects pruned) against: the same rewrite with the git command
line the way ``git filter-repo`` does it (``git fast-export --all`` → the text
removed from every blob → ``git fast-import`` into a new repository →
``git repack -a -d``), and one plain write (the median of 50) on the same
repository.

Prints markdown tables; on a shared machine compare the ratios.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikimem.context import WriteContext  # noqa: E402
from wikimem.host import make_backup, make_host, restore_backup  # noqa: E402

SECRET = "BENCHSECRET"


def _timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _git(*args: str, cwd: Path | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, **kw)


def build_root(root: Path, owners: int) -> list[str]:
    host = make_host(root)
    ids = []
    for i in range(owners):
        owner, _ = host.ensure_owner(f"user:bk{i:05d}")
        owner.put_settings({"tz": "Asia/Shanghai"})
        for j in range(5):
            owner.add("notes", f"n{j}", f"note {j} of owner {i}", ctx=WriteContext(run=f"run_{i}", actor="bench"))
        owner.diary_append(f"day one of {i}", date="2026-07-01", time="09:00")
        ids.append(owner.id)
    return ids


def bench_backup(owners: int, tmp: Path) -> list[tuple[str, float, str]]:
    root = tmp / "data"
    ids = build_root(root, owners)
    rows: list[tuple[str, float, str]] = []
    t_cp, _ = _timed(lambda: subprocess.run(["cp", "-a", str(root), str(tmp / "cp-copy")], check=True))
    bundles = tmp / "git-bundles"
    bundles.mkdir()

    def git_bundles() -> None:
        for folder in sorted((root / "owners").iterdir()):
            _git("-C", str(folder), "bundle", "create", "-q", str(bundles / f"{folder.name}.bundle"), "--all")

    t_gitb, _ = _timed(git_bundles)
    t_full, full = _timed(lambda: make_backup(root, tmp / "backup"))
    host = make_host(root)
    for owner_id in ids[:10]:
        host.owner(owner_id).add("notes", "late", "changed after the first backup")
    t_incr, incr = _timed(lambda: make_backup(root, tmp / "backup"))
    clones = tmp / "git-clones"
    clones.mkdir()

    def git_clones() -> None:
        for bundle in sorted(bundles.iterdir()):
            _git("clone", "-q", str(bundle), str(clones / bundle.stem))

    t_gitc, _ = _timed(git_clones)
    t_restore, restored = _timed(lambda: restore_backup(tmp / "backup", tmp / "restored"))
    t_cp_back, _ = _timed(lambda: subprocess.run(["cp", "-a", str(tmp / "cp-copy"), str(tmp / "cp-back")],
                                                 check=True))
    size = sum(p.stat().st_size for p in (tmp / "backup").rglob("*") if p.is_file())
    rows += [
        ("`cp -a` of the data root (reference; the host stopped)", t_cp, "1.00"),
        ("`git bundle create --all`, every owner (reference)", t_gitb, f"{t_gitb / t_cp:.2f}"),
        (f"**wikimem backup**, first ({full.bundled} bundled, {size / 1e6:.1f} MB)", t_full,
         f"{t_full / t_cp:.2f} of cp, {t_full / t_gitb:.2f} of git bundle"),
        (f"**wikimem backup**, incremental ({incr.bundled} bundled, {incr.reused} unchanged)", t_incr,
         f"{t_incr / t_cp:.2f} of cp"),
        ("`cp -a` back (reference)", t_cp_back, "1.00"),
        ("`git clone` of every bundle (reference)", t_gitc, f"{t_gitc / t_cp_back:.2f}"),
        (f"**wikimem restore** ({len(restored.heads)} owners, checksums checked, every commit checked)", t_restore,
         f"{t_restore / t_cp_back:.2f} of cp, {t_restore / t_gitc:.2f} of git clone"),
    ]
    return rows


def build_deep(root: Path, commits: int):
    host = make_host(root)
    owner = host.create_owner("user:deep")
    for i in range(commits - 1):
        if i == 100 or (i > 100 and i % 1000 == 0):
            owner.add("prefs", "secret", f"{SECRET} version {i}: told once, to be forgotten")
        else:
            owner.add(f"f{i % 20}", f"item{i % 200}", f"other content {i}")
    owner.vstore.pack()
    return host, owner


def filter_repo_like(repo: Path, out: Path) -> None:
    """``git fast-export --all`` → every blob without the secret's lines → ``git fast-import`` → repack."""
    exported = _git("-C", str(repo), "fast-export", "--all", "--signed-tags=strip", "--reencode=no").stdout
    pattern = re.compile(rb"[^\n]*" + SECRET.encode() + rb"[^\n]*\n?")
    parts, pos = [], 0
    for m in re.finditer(rb"^data (\d+)\n", exported, re.M):
        if m.start() < pos:
            continue
        parts.append(exported[pos:m.start()])
        n = int(m.group(1))
        data = pattern.sub(b"", exported[m.end():m.end() + n])
        parts.append(b"data %d\n" % len(data) + data)
        pos = m.end() + n
    parts.append(exported[pos:])
    _git("init", "-q", "--bare", str(out))
    _git("--git-dir", str(out), "fast-import", "--quiet", input=b"".join(parts))
    _git("--git-dir", str(out), "repack", "-a", "-d", "-q")


def bench_forget(commits: int, tmp: Path) -> list[tuple[str, float, str]]:
    t_build, (host, owner) = _timed(lambda: build_deep(tmp / "deep", commits))
    repo = owner.root
    plain = []
    for i in range(50):
        t, _ = _timed(lambda i=i: owner.add("probe", f"p{i}", f"a plain write {i}"))
        plain.append(t)
    t_plain = statistics.median(plain)
    t_ref, _ = _timed(lambda: filter_repo_like(repo, tmp / "filtered.git"))
    t_forget, done = _timed(lambda: owner.forget("wiki", file="prefs", name="secret", actor="bench"))
    left = subprocess.run(["git", "-C", str(repo), "log", "-p", "--all"], capture_output=True).stdout.count(
        SECRET.encode())
    return [
        (f"building {commits:,} commits (not compared)", t_build, ""),
        ("one plain write on that owner (median of 50; reference)", t_plain, "1"),
        ("`git fast-export` → filter → `git fast-import` → repack (reference, filter-repo-like)", t_ref,
         f"{t_ref / t_plain:.0f} writes"),
        (f"**wikimem forget** ({done.rewritten:,} commits rewritten, {done.versions} versions, "
         f"{(done.pruned or {}).get('removed', 0):,} objects pruned; texts left in `git log -p --all`: {left})",
         t_forget, f"{t_forget / t_plain:.0f} writes, {t_forget / t_ref:.2f} of the git CLI rewrite"),
    ]


def table(title: str, rows: list[tuple[str, float, str]]) -> str:
    lines = [f"### {title}", "", "| what | seconds | ratio |", "|---|---:|---|"]
    lines += [f"| {what} | {secs:.3f} | {ratio} |" for what, secs, ratio in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--owners", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--only", choices=["backup", "forget"], default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wikimem-bench-erasure-") as tmp:
        if args.only in (None, "backup"):
            print(table(f"Backup and restore, {args.owners:,} owners", bench_backup(args.owners, Path(tmp) / "b")))
            shutil.rmtree(Path(tmp) / "b", ignore_errors=True)
        if args.only in (None, "forget"):
            print(table(f"Forget one item, an owner with {args.commits:,} commits",
                        bench_forget(args.commits, Path(tmp) / "f")))


if __name__ == "__main__":
    main()
