"""Should the host rank the diary by topic by default (``diary: "all"``)? Quality and cost (issue 23, item 4).

    .venv/bin/python bench/quality_diary.py                 # en + zh, BM25 and fused host defaults
    .venv/bin/python bench/quality_diary.py --no-dense      # BM25 only (seconds)

Quality: ``bench/quality.py``'s conversations split in two — sessions 1–5
stay wiki files (transcripts), sessions 6–10 become diary days (one day per
session, six days apart, the last one a week ago; each turn an entry), so
half the questions are answered by the wiki and half by the diary. Asked
without a time word: ``diary="window"`` (the seed's) can never find a diary
answer; ``"all"`` can, and may push wiki answers down. Both halves are
reported, paired on the same questions, with and without the recency
half-life.

Cost, on a diary of :data:`COST_DAYS` days × :data:`COST_PER_DAY` entries
(a heavy user's three years) beside one conversation's wiki: the first query of ``"all"`` (it builds the
diary index), a query's p50 in each mode, the memory the diary index holds
(tracemalloc), and — with an embedder — how long embedding the whole diary
takes at the local model's measured rate (``"all"`` embeds every entry in
the background; ``"window"`` only the entries a window reaches).
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
from quality import BM25_HOST, HOST_VARIANT, Outcome, Variant, make_index, paired, print_pairs  # noqa: E402

from wikimem import MemoryStore  # noqa: E402
from wikimem.format.blocks import Block, render_blocks  # noqa: E402

WIKI_SESSIONS = 5
HALF_LIFE = 30.0
COST_DAYS, COST_PER_DAY = 1095, 5


def day_of(session: int, today: date) -> str:
    """Session 6 … 10 → a day, six days apart, the last one a week before ``today``."""
    return (today - timedelta(days=7 + 6 * (10 - session))).isoformat()


def write_split(root: Path, conv: dict, today: date) -> tuple[MemoryStore, dict]:
    """The wiki (first sessions) and the diary (last sessions) of one conversation; evidence → item key."""
    (root / "wiki").mkdir(parents=True, exist_ok=True)
    (root / "diary").mkdir(parents=True, exist_ok=True)
    where: dict[tuple[str, str], tuple[str, str]] = {}
    for n, session in enumerate(conv["sessions"], 1):
        if n <= WIKI_SESSIONS:
            blocks = [Block(t["name"], t["content"], None, None, None) for t in session["turns"]]
            (root / "wiki" / f"{session['file']}.md").write_text(render_blocks(session["file"], blocks), "utf-8")
            where.update({(session["file"], t["name"]): (session["file"], t["name"]) for t in session["turns"]})
            continue
        day = day_of(n, today)
        blocks = []
        for k, t in enumerate(session["turns"]):
            hhmm = f"{9 + k // 60:02d}:{k % 60:02d}"
            blocks.append(Block(hhmm, t["content"], None, None, None))
            where[(session["file"], t["name"])] = (day, hhmm)
        (root / "diary" / f"{day}.md").write_text(render_blocks(day, blocks), "utf-8")
    return MemoryStore(root), where


def diary_variants(dense: bool) -> list[tuple[Variant, str, float | None]]:
    bm25 = replace(BM25_HOST, name="bm25 host")
    bases = [bm25] + ([HOST_VARIANT] if dense else [])
    out = []
    for base in bases:
        label = "fused" if base.embedder else "bm25"
        out += [(base, f"{label} window", None), (base, f"{label} all", None),
                (base, f"{label} all hl={HALF_LIFE:g}", HALF_LIFE)]
    return out


def run(lang: str, args, embedders: dict) -> tuple[dict[str, Outcome], list[bool]]:
    """Outcomes per setting, and per question whether the diary holds its answer."""
    data = quality.json.loads((quality.DATA / f"{lang}.json").read_text(encoding="utf-8"))
    today = date.today()
    settings = diary_variants(bool(embedders))
    outcomes = {name: Outcome() for _, name, _ in settings}
    in_diary: list[bool] = []
    tmp = Path(tempfile.mkdtemp(prefix=f"quality-diary-{lang}-"))
    try:
        for conv in data["conversations"][: args.conversations]:
            store, where = write_split(tmp / conv["id"], conv, today)
            diary_days = {k for k, v in where.items() if v != k}
            in_diary += [all(tuple(e) in diary_days for e in q["evidence"]) for q in conv["questions"]]
            vectors = _vectors_copy(Path(args.cache), lang, conv["id"])
            for variant, name, half_life in settings:
                mode = "window" if name.endswith("window") else "all"
                index = make_index(store, variant, embedders, vectors)
                for q in conv["questions"]:
                    result = index.retrieve(q["question"], limit=10, expand_links=False, diary=mode,
                                            recency_half_life=half_life)
                    wanted = {where[tuple(e)] for e in q["evidence"]}
                    outcomes[name].ranks.append(quality.rank_of(result, wanted))
                    outcomes[name].types.append(q["type"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return outcomes, in_diary


def _vectors_copy(cache: Path, lang: str, conv: str) -> Path:
    """This bench's vector folder, first filled from quality.py's (its wiki holds only half the turns)."""
    mine = cache / "diary-split" / lang / conv
    theirs = cache / lang / conv
    if not mine.exists() and theirs.exists():
        shutil.copytree(theirs, mine)
    return mine


def print_halves(lang: str, outcomes: dict[str, Outcome], in_diary: list[bool]) -> None:
    k = 10 if lang == "en" else 5
    n_diary = sum(in_diary)
    print(f"\n### {lang}: {len(in_diary)} questions, {n_diary} answered by the diary, "
          f"{len(in_diary) - n_diary} by the wiki (hit@{k}, MRR@10)\n")
    print(f"| setting | all hit@{k} | diary questions hit@{k} | wiki questions hit@{k} | wiki questions MRR |")
    print("|---|---:|---:|---:|---:|")
    wiki_mask = [not d for d in in_diary]
    for name, out in outcomes.items():
        print(f"| {name} | {out.hit(k):.3f} | {out.hit(k, in_diary):.3f} | {out.hit(k, wiki_mask):.3f} | "
              f"{out.mrr(wiki_mask):.3f} |")
    for label in ("bm25", "fused"):
        if f"{label} window" not in outcomes:
            continue
        rows = [(f"{label} window", f"{label} all"), (f"{label} window", f"{label} all hl={HALF_LIFE:g}")]
        print_pairs(lang, outcomes, rows, f"{label}: window vs all, every question")
        wiki_only = {n: _masked(o, wiki_mask) for n, o in outcomes.items() if n.startswith(label)}
        print_pairs(lang, wiki_only, rows, f"{label}: window vs all, the wiki's questions only (the price)")


def _masked(out: Outcome, mask: list[bool]) -> Outcome:
    return Outcome([r for r, m in zip(out.ranks, mask) if m], [t for t, m in zip(out.types, mask) if m])


# -- cost ------------------------------------------------------------------------------


def write_big_diary(root: Path, turns: list[str], today: date, conv: dict) -> MemoryStore:
    """A heavy user's diary, next to one conversation's wiki (so that window mode has something to rank)."""
    quality.write_store(root, conv)
    (root / "diary").mkdir(parents=True, exist_ok=True)
    n = 0
    for d in range(COST_DAYS):
        day = (today - timedelta(days=d + 1)).isoformat()
        blocks = []
        for k in range(COST_PER_DAY):
            blocks.append(Block(f"{8 + 3 * k:02d}:00", turns[n % len(turns)], None, None, None))
            n += 1
        (root / "diary" / f"{day}.md").write_text(render_blocks(day, blocks), "utf-8")
    return MemoryStore(root)


def print_cost(embedders: dict) -> None:
    data = quality.json.loads((quality.DATA / "zh.json").read_text(encoding="utf-8"))
    turns = [t["content"] for c in data["conversations"] for s in c["sessions"] for t in s["turns"]]
    queries = [q["question"] for q in data["conversations"][0]["questions"]][:60]
    tmp = Path(tempfile.mkdtemp(prefix="quality-diary-cost-"))
    try:
        store = write_big_diary(tmp / "s", turns, date.today(), data["conversations"][0])
        bm25 = replace(BM25_HOST, name="bm25 host")
        window = make_index(store, bm25, {}, tmp / "v")
        every = make_index(store, bm25, {}, tmp / "v")
        tracemalloc.start()
        t0 = time.perf_counter()
        every.retrieve(queries[0], diary="all")
        build = time.perf_counter() - t0
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        p50 = {}
        for name, index in (("window", window), ("all", every)):
            times = []
            for q in queries:
                t0 = time.perf_counter()
                index.retrieve(q, limit=10, diary=name)
                times.append(time.perf_counter() - t0)
            p50[name] = statistics.median(times) * 1e3
        entries = COST_DAYS * COST_PER_DAY
        print(f"\n### Cost of diary=\"all\" ({entries:,} entries: {COST_DAYS} days × {COST_PER_DAY}; same run)\n")
        print("| measure | window | all |")
        print("|---|---:|---:|")
        print(f"| first query (all: builds the diary index) | — | {build * 1e3:.0f} ms |")
        print(f"| query p50 (BM25 host default, Chinese questions, {len(store.items())} wiki items) | "
              f"{p50['window']:.2f} ms | {p50['all']:.2f} ms |")
        print(f"| memory the diary index holds (tracemalloc) | 0 | {held / 1e6:.1f} MB |")
        emb = embedders.get("asym")
        if emb is not None:
            sample = turns[:64]
            t0 = time.perf_counter()
            emb.inner.embed(sample)
            rate = len(sample) / (time.perf_counter() - t0)
            print(f"| local model: embedding every entry in the background ({rate:.0f} entries/s measured) | "
                  f"only windows reached | {entries / rate / 60:.0f} min once, then each new entry |")
            print(f"| vector cache on disk (384 dims, item rows) | — | {entries * 384 * 4 / 1e6:.1f} MB |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None) -> int:
    args = quality.parse_args(argv)
    embedders = quality.query_embedder(args)
    print("## Diary by topic: window vs all (bench/quality_diary.py)")
    for lang in args.langs:
        outcomes, in_diary = run(lang, args, embedders)
        for emb in embedders.values():
            emb.save()
        print_halves(lang, outcomes, in_diary)
        sys.stdout.flush()
    if not args.no_cost:
        print_cost(embedders)
    return 0


__all__ = ["write_split", "diary_variants", "paired"]

if __name__ == "__main__":
    raise SystemExit(main())
