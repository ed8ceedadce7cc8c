"""Retrieval benchmark: wikimem against rank_bm25 (BM25Okapi) and bm25s, same run, same tokens.

    .venv/bin/python bench/retrieval.py                      # 1k, 10k, 100k items, English + Chinese
    .venv/bin/python bench/retrieval.py --sizes 1000,10000   # a quicker run
    .venv/bin/python bench/retrieval.py --langs en --queries 500
    .venv/bin/python bench/retrieval.py --ref-queries 50 --ref-cap-from 100000   # the defaults

For each corpus (synthetic short memory items, written as real wiki files)
it prints, per system: index build time, cold start, retrieve p50/p99 over
``--queries`` queries, peak memory while building, and write-then-read
latency; then the ratios wikimem/reference and the targets of issue 3.

What is measured, exactly:

- ``build``: wikimem — ``MemoryIndex.rebuild()`` over items already parsed
  (tokenising included); references — building from the token lists our
  tokenizer made (``tokenize`` is printed on its own line: its cost is
  the same for everyone and excluded from their build).
- ``cold``: wikimem only — open the folder from disk (``MemoryStore`` +
  ``MemoryIndex``), read and parse every file, index, answer one query.
- ``p50/p99``: query string → top 10, including query tokenisation for all.
  wikimem is the whole ``retrieve`` pipeline (time gate check, link
  expansion, result objects); ``wikimem-py`` forces the pure-Python BM25
  path; ``bm25-core`` is ``BM25Index.top_k`` alone.
- ``peak MB``: ``tracemalloc`` peak while building (a separate pass, so
  timings are not slowed by tracing).
- ``w→r``: wikimem — ``store.add`` (a real atomic write with fsync and a
  journal line) then ``retrieve``; ``w→r idx`` is the same without the disk
  write (the index's own cost: incremental update + query). References —
  replace one document's tokens, re-index everything, query. After the
  timed writes the bench checks that the index really holds every written
  item (a stale index would make ``w→r`` meaninglessly fast).
- ``top10 ∩``: sanity check that everyone ranks the same tokens alike —
  mean overlap of the BM25 core's top 10 with each reference's top 10
  (the IDF formulas differ slightly, so 1.0 is not expected).
- rank_bm25 scans every document per query term in Python, so from
  ``--ref-cap-from`` items on it is timed over ``--ref-queries`` queries
  only (printed under the table).

Build, cold and w→r figures are medians of repeated runs (``--repeat``,
``--writes``, ``--ref-writes``); p50/p99 are over the queries.

``--fusion`` measures instead what fusion adds to a retrieve (issue 17: fused
retrieve at 10k items within 3 ms + the model call), same corpus, same
queries, same run: BM25 alone, fusion (w = 0.5), fusion with neighbour
context, each with a *zero-cost* in-process embedder (vectors drawn from a
hash of the text, 384 dimensions), so what is timed is wikimem's own work —
BM25, the vector scoring over the memmapped cache, the union and the
fusion. The embedder's own time per query, and one pass of cosines over
the whole matrix (the memory-bound floor of exact vector scoring), are
printed on their own lines. On a busy machine set ``OPENBLAS_NUM_THREADS=1``:
a two-thread matrix-vector product waits for a second core.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402  (the references need it anyway)

import wikimem.recall.lexical.bm25 as bm25_module  # noqa: E402
from wikimem import MemoryIndex, MemoryStore, tokenize  # noqa: E402
from wikimem.format.blocks import Block, render_blocks  # noqa: E402

COMMON_EN = """the a and to of in is it you that he was for on are with as his they be at one have this from
or had by not word but what some we can out other were all there when up use your how said an each she which
do their time if will way about many then them write would like so these her long make thing see him two has
look more day could go come did number sound no most people my over know water than call first who may down
side been now find any new work part take get place made live where after back little only round man year came
show every good me give our under name very through just form sentence great think say help low line differ
turn cause much mean before move right boy old too same tell does set three want air well also play small end
put home read hand port large spell add even land here must big high such follow act why ask men change went
light kind off need house picture try us again animal point mother world near build self earth father head stand
own page should country found answer school grow study still learn plant cover food sun four between state keep
eye never last let thought city tree cross farm hard start might story saw far sea draw left late run while
press close night real life few north open seem together next white children begin got walk example ease paper
group always music those both mark often letter until mile river car feet care second book carry took science
eat room friend began idea fish mountain stop once base hear horse cut sure watch color face wood main enough
plain girl usual young ready above ever red list though feel talk bird soon body dog family direct pose leave
song measure door product black short numeral class wind question happen complete ship area half rock order fire
south problem piece told knew pass since top whole king space heard best hour better true during hundred five
remember step early hold west ground interest reach fast verb sing listen six table travel less morning ten
simple several vowel toward war lay against pattern slow center love person money serve appear road map rain
rule govern pull cold notice voice unit power town fine certain fly fall lead cry dark machine note wait plan
figure star box noun field rest correct able pound done beauty drive stood contain front teach week final gave
green oh quick develop ocean warm free minute strong special mind behind clear tail produce fact street inch
coffee tea beach trip job company robot cat sleep dinner hotpot movie game""".split()

SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


def zipf_weights(n: int, s: float = 1.05) -> list[float]:
    return [1.0 / (r + 1) ** s for r in range(n)]


def english_vocab(rng: random.Random, size: int) -> list[str]:
    """Common words first, then made-up rarer words (names, places, jargon)."""
    vocab, seen = list(COMMON_EN), set(COMMON_EN)
    while len(vocab) < size:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            vocab.append(w)
    return vocab


def chinese_vocab(rng: random.Random, size: int) -> list[str]:
    """Words of one to four characters over a Zipf-weighted character set.

    Real Chinese is made of recurring words, so its bigrams recur too; a
    stream of independent random characters would make almost every bigram
    unique, which no memory text looks like.
    """
    chars = [chr(0x4E00 + i) for i in range(20902)]
    rng.shuffle(chars)
    chars = chars[:3500]
    cum = list(np.cumsum(zipf_weights(len(chars), 0.9)))
    words, seen = [], set()
    while len(words) < size:
        w = "".join(rng.choices(chars, cum_weights=cum, k=rng.choice((1, 2, 2, 2, 3, 4))))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


class Corpus:
    """Synthetic memory items: (file, name, content), plus queries drawn from them."""

    def __init__(self, lang: str, n: int, n_queries: int, seed: int = 42):
        self.lang, self.n = lang, n
        rng = random.Random(f"{seed}/{lang}/{n}")
        if lang == "en":
            vocab = english_vocab(rng, 8000 + n // 4)
        else:
            vocab = chinese_vocab(rng, 12000)
        weights = zipf_weights(len(vocab))
        cum = list(np.cumsum(weights))
        self.items = []
        for i in range(n):
            file = f"topic-{i // 50:05d}"
            name = f"item-{i:06d}"
            if lang == "en":
                content = " ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(8, 40))) + "."
            else:
                words = rng.choices(vocab, cum_weights=cum, k=rng.randint(6, 24))
                parts = ["".join(words[j:j + 6]) for j in range(0, len(words), 6)]
                content = "，".join(parts) + "。"
            if rng.random() < 0.1 and i:
                j = rng.randrange(i)
                content += f" [[topic-{j // 50:05d}:item-{j:06d}]]"
            self.items.append((file, name, content))
        self.queries = []
        for _ in range(n_queries):
            _, _, content = rng.choice(self.items)
            if lang == "en":
                words = content.rstrip(".").split("[[")[0].split()
                self.queries.append(" ".join(rng.sample(words, min(len(words), rng.randint(2, 5)))))
            else:
                text = content.split("[[")[0]
                start = rng.randrange(max(1, len(text) - 6))
                self.queries.append(text[start:start + rng.randint(3, 8)])

    def write(self, root: Path) -> None:
        """Write the items as real wiki files (the library's serializer, no journal)."""
        wiki = root / "wiki"
        wiki.mkdir(parents=True)
        by_file: dict[str, list[Block]] = {}
        for file, name, content in self.items:
            by_file.setdefault(file, []).append(Block(name, content))
        for file, blocks in by_file.items():
            (wiki / f"{file}.md").write_text(render_blocks(file, blocks), encoding="utf-8")


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def percentiles(fn, queries: list[str]) -> tuple[float, float]:
    times = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))]


def peak_mb(fn) -> float:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    keep = fn()  # noqa: F841 - kept alive until the peak is read
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 2**20


def tok(text: str) -> list[str]:
    return tokenize(text, use_jieba=False)


def top10(scores: np.ndarray) -> list[int]:
    k = min(10, len(scores))
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part])].tolist()


def overlap(a: list, b: list) -> float:
    """|a ∩ b| / |a| of two top-10 lists (1.0 when both are empty)."""
    if not a:
        return 1.0 if not b else 0.0
    return len(set(a) & set(b)) / len(a)


def row_of(key) -> int | None:
    """Corpus row of a wikimem key ``(file, "item-NNNNNN")``; None for items the bench added."""
    name = key[1]
    return int(name[5:]) if name.startswith("item-") else None


def bench_wikimem(root: Path, corpus: Corpus, args) -> tuple[list[dict], list[list[int]]]:
    """wikimem rows (whole pipeline, pure-Python path, BM25 core) and the core's top 10s."""
    queries = corpus.queries

    def cold():
        index = MemoryIndex(MemoryStore(root), use_jieba=False)
        index.retrieve(queries[0])
        return index

    cold_s = median_time(cold, args.repeat)
    store = MemoryStore(root)
    index = MemoryIndex(store, use_jieba=False)
    index.retrieve(queries[0])
    build_s = median_time(index.rebuild, args.repeat)
    for q in queries[:50]:  # warm up caches as a running host would be
        index.retrieve(q)
    p50, p99 = percentiles(lambda q: index.retrieve(q), queries)
    core = index.wiki.bm25
    c50, c99 = percentiles(lambda q: core.top_k(tok(q), 10), queries)
    tops = [[row_of(key) for key, _ in core.top_k(tok(q), 10)] for q in queries[: args.agree]]
    py50, py99 = pure_python_percentiles(index, queries)
    mem = peak_mb(lambda: (index.rebuild(), index)[1])
    wr, wr_idx = write_then_read(store, index, corpus, args.writes)
    return [
        dict(system="wikimem", build=build_s, cold=cold_s, p50=p50, p99=p99, mem=mem, wr=wr, wr_idx=wr_idx),
        dict(system="wikimem-py", p50=py50, p99=py99),
        dict(system="bm25-core", p50=c50, p99=c99),
    ], tops


def pure_python_percentiles(index, queries: list[str]) -> tuple[float, float]:
    """retrieve p50/p99 with the numpy scorer switched off (every query on the Python path)."""
    saved = bm25_module.NUMPY_MIN_POSTINGS
    bm25_module.NUMPY_MIN_POSTINGS = 1 << 62
    try:
        for q in queries[:50]:
            index.retrieve(q)
        return percentiles(lambda q: index.retrieve(q), queries)
    finally:
        bm25_module.NUMPY_MIN_POSTINGS = saved


def write_then_read(store, index, corpus: Corpus, writes: int) -> tuple[float, float]:
    """Medians of (store.add + retrieve) and of the retrieve alone; half updates, half adds.

    Afterwards checks that the index holds every written item with its new terms.
    """
    rng = random.Random(7)
    wr, wr_idx, written = [], [], {}
    for n in range(writes):
        file, name, content = corpus.items[rng.randrange(corpus.n)]
        new_name = name if n % 2 else f"new-{n:04d}"
        new_content = content[: len(content) // 2] + f" edit{n}"
        q = rng.choice(corpus.queries)
        t = time.perf_counter()
        store.add(file, new_name, new_content)
        t_written = time.perf_counter()
        index.retrieve(q)
        t_read = time.perf_counter()
        wr.append(t_read - t)
        wr_idx.append(t_read - t_written)
        written[(file, new_name)] = new_content
    for (file, name), content in written.items():
        if set(index.wiki.bm25.doc_terms((file, name))) != set(tok(name + "\n" + content)):
            raise AssertionError(f"index is stale for {file}/{name} after a write")
    return statistics.median(wr), statistics.median(wr_idx)


def edited_tokens(tokens: list[list[str]], rng: random.Random, n: int) -> list[list[str]]:
    """A copy of the corpus tokens with one document changed (what a reference re-indexes)."""
    edited = list(tokens)
    i = rng.randrange(len(tokens))
    edited[i] = edited[i][: len(edited[i]) // 2] + [f"edit{n}"]
    return edited


def bench_bm25s(tokens: list[list[str]], corpus: Corpus, args) -> tuple[dict, list[list[int]]]:
    """bm25s: build, retrieve p50/p99, peak MB, re-index + query; its top 10s."""
    import bm25s

    def build(toks=tokens):
        r = bm25s.BM25(k1=1.5, b=0.75)
        r.index(toks, show_progress=False)
        return r

    def query(q, r):
        qt = tok(q)
        if not any(t in r.vocab_dict for t in qt):  # bm25s raises on an all-unknown query
            return []
        docs, _ = r.retrieve([qt], k=min(10, len(tokens)), show_progress=False, n_threads=0)
        return docs[0].tolist()

    build_s = median_time(build, args.repeat)
    ret = build()
    queries = corpus.queries
    for q in queries[:20]:
        query(q, ret)
    p50, p99 = percentiles(lambda q: query(q, ret), queries)
    tops = [query(q, ret) for q in queries[: args.agree]]
    ret = None  # free it before the memory measurement
    mem = peak_mb(build)
    rng, wr = random.Random(8), []
    for n in range(args.ref_writes):
        edited = edited_tokens(tokens, rng, n)
        q = rng.choice(queries)
        t = time.perf_counter()
        query(q, build(edited))
        wr.append(time.perf_counter() - t)
    return dict(system="bm25s", build=build_s, p50=p50, p99=p99, mem=mem, wr=statistics.median(wr)), tops


def bench_rank_bm25(tokens: list[list[str]], corpus: Corpus, args) -> tuple[dict, list[list[int]]]:
    """rank_bm25 BM25Okapi: same measures; timed over fewer queries on big corpora."""
    from rank_bm25 import BM25Okapi

    build_s = median_time(lambda: BM25Okapi(tokens), args.repeat)
    okapi = BM25Okapi(tokens)
    queries = corpus.queries
    if corpus.n >= args.ref_cap_from:
        queries = queries[: args.ref_queries]
    p50, p99 = percentiles(lambda q: top10(okapi.get_scores(tok(q))), queries)
    tops = [top10(okapi.get_scores(tok(q))) for q in corpus.queries[: min(args.agree, len(queries))]]
    okapi = None  # free it before the memory measurement
    mem = peak_mb(lambda: BM25Okapi(tokens))
    rng, wr = random.Random(8), []
    for n in range(args.ref_writes):
        edited = edited_tokens(tokens, rng, n)
        q = rng.choice(corpus.queries)
        t = time.perf_counter()
        top10(BM25Okapi(edited).get_scores(tok(q)))
        wr.append(time.perf_counter() - t)
    return dict(system="rank_bm25", build=build_s, p50=p50, p99=p99, mem=mem,
                wr=statistics.median(wr), queries=len(queries)), tops


def bench_corpus(corpus: Corpus, args) -> list[dict]:
    """Every system on one corpus written to a temp folder; rows for :func:`print_table`."""
    tmp = Path(tempfile.mkdtemp(prefix="wikimem-bench-"))
    try:
        root = tmp / "memory"
        corpus.write(root)
        texts = [name + "\n" + content for _, name, content in corpus.items]
        t = time.perf_counter()
        tokens = [tok(x) for x in texts]  # shared by every system
        tokenize_s = time.perf_counter() - t

        rows, w_tops = bench_wikimem(root, corpus, args)
        gc.collect()
        s_row, s_tops = bench_bm25s(tokens, corpus, args)
        gc.collect()
        o_row, o_tops = bench_rank_bm25(tokens, corpus, args)
        s_row["agree"] = statistics.mean(overlap(a, b) for a, b in zip(w_tops, s_tops))
        o_row["agree"] = statistics.mean(overlap(a, b) for a, b in zip(w_tops, o_tops))
        rows += [s_row, o_row, dict(system="(tokenize)", build=tokenize_s)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def fmt_ms(value) -> str:
    if value is None:
        return "-"
    ms = value * 1000
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def print_table(lang: str, corpus: Corpus, rows: list[dict]) -> dict:
    """One markdown table per corpus, then the ratios wikimem/reference."""
    by = {r["system"]: r for r in rows}
    print(f"\n### {lang} · {corpus.n:,} items · {len(corpus.queries)} queries\n")
    print("| system | build ms | cold ms | p50 ms | p99 ms | peak MB | w→r ms | w→r idx ms | top10 ∩ core |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        mem = f"{r['mem']:.1f}" if "mem" in r else "-"
        agree = f"{r['agree']:.2f}" if "agree" in r else "-"
        print(f"| {r['system']} | {fmt_ms(r.get('build'))} | {fmt_ms(r.get('cold'))} | {fmt_ms(r.get('p50'))} "
              f"| {fmt_ms(r.get('p99'))} | {mem} | {fmt_ms(r.get('wr'))} | {fmt_ms(r.get('wr_idx'))} | {agree} |")
    w, s, o, t = by["wikimem"], by["bm25s"], by["rank_bm25"], by["(tokenize)"]
    ratios = {
        "p50 / rank_bm25": w["p50"] / o["p50"],
        "p50 / bm25s": w["p50"] / s["p50"],
        "core p50 / bm25s": by["bm25-core"]["p50"] / s["p50"],
        "pure-Python p50 / rank_bm25": by["wikimem-py"]["p50"] / o["p50"],
        "build / bm25s build": w["build"] / s["build"],
        "build / rank_bm25 build": w["build"] / o["build"],
        "w→r / bm25s re-index": w["wr"] / s["wr"],
        "w→r / rank_bm25 re-index": w["wr"] / o["wr"],
        "w→r idx / bm25s re-index": w["wr_idx"] / s["wr"],
        "cold / bm25s build": w["cold"] / s["build"],
        "cold / (tokenize + bm25s build)": w["cold"] / (t["build"] + s["build"]),
        "peak MB / bm25s": w["mem"] / s["mem"],
        "peak MB / rank_bm25": w["mem"] / o["mem"],
    }
    print("\nratios wikimem/reference: " + "; ".join(f"{k} = {v:.3g}" for k, v in ratios.items()))
    if o["queries"] != len(corpus.queries):
        print(f"(rank_bm25 p50/p99 timed over its first {o['queries']} queries only: it is too slow at this size)")
    return {"w": w, "s": s, "o": o, "t": t, "ratios": ratios}


def print_targets(lang: str, res: dict) -> None:
    r, w = res["ratios"], res["w"]
    checks = [
        ("retrieve p50 ≤ 1/10 of rank_bm25", r["p50 / rank_bm25"] <= 0.1, f"{r['p50 / rank_bm25']:.3f}"),
        ("write-then-read ≤ 1/50 of bm25s re-index", r["w→r / bm25s re-index"] <= 0.02,
         f"{r['w→r / bm25s re-index']:.4f}"),
        ("write-then-read ≤ 1/50 of rank_bm25 re-index", r["w→r / rank_bm25 re-index"] <= 0.02,
         f"{r['w→r / rank_bm25 re-index']:.4f}"),
        ("write-then-read < 5 ms", w["wr"] < 0.005, f"{w['wr'] * 1000:.2f} ms"),
        ("cold start ≤ 2× bm25s index time", r["cold / bm25s build"] <= 2.0, f"{r['cold / bm25s build']:.2f}×"),
    ]
    print(f"\ntargets at 10,000 items ({lang}):")
    for text, ok, value in checks:
        print(f"  [{'met' if ok else 'MISSED'}] {text}: {value}")
    print(f"  (closeness to bm25s: retrieve p50 ratio {r['p50 / bm25s']:.2f}, BM25 core {r['core p50 / bm25s']:.2f})")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated item counts")
    parser.add_argument("--langs", default="en,zh", help="en, zh or both")
    parser.add_argument("--queries", type=int, default=500, help="queries per corpus (≥ 500 for the issue)")
    parser.add_argument("--ref-queries", type=int, default=50,
                        help="rank_bm25's timed queries on corpora of --ref-cap-from items or more")
    parser.add_argument("--ref-cap-from", type=int, default=100_000,
                        help="corpus size from which rank_bm25's queries are capped (it is O(N) Python per term)")
    parser.add_argument("--agree", type=int, default=100, help="queries of the top-10 agreement check")
    parser.add_argument("--repeat", type=int, default=3, help="repeats of each build measurement")
    parser.add_argument("--writes", type=int, default=60, help="write-then-read samples for wikimem")
    parser.add_argument("--ref-writes", type=int, default=3, help="re-index samples for the references")
    parser.add_argument("--fusion", action="store_true", help="measure the cost of fusion instead (see above)")
    return parser.parse_args(argv)


class ZeroCostEmbedder:
    """Deterministic 384-d vectors from a hash of the text: no model, (almost) no time."""

    model = "zero-cost"
    dim = 384

    def embed(self, texts):
        import hashlib

        out = np.empty((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(), "little")
            out[i] = np.random.default_rng(seed).standard_normal(self.dim)
        return out

    embed_query = embed


def bench_fusion(args) -> int:
    """BM25 vs fused retrieve at the given sizes: p50/p99 in the same run."""
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print("fusion cost (zero-cost embedder, 384 dims; figures from a shared 2-core machine)\n")
    print("| lang | items | variant | p50 ms | p99 ms | p50 − BM25 |")
    print("|---|---:|---|---:|---:|---:|")
    emb = ZeroCostEmbedder()
    for lang in [s.strip() for s in args.langs.split(",") if s.strip()]:
        for n in sizes:
            corpus = Corpus(lang, n, args.queries)
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                corpus.write(root)
                store = MemoryStore(root)
                variants = [
                    ("BM25", MemoryIndex(store, use_jieba=False)),
                    ("fusion", MemoryIndex(store, use_jieba=False, embedder=emb, vectors_dir=root / "v1")),
                    ("fusion + neighbours", MemoryIndex(store, use_jieba=False, embedder=emb,
                                                       vectors_dir=root / "v2", neighbour_context=True)),
                ]
                for _, index in variants:
                    index.retrieve(corpus.queries[0])  # build, embed the cache once
                base = None
                for name, index in variants:
                    for q in corpus.queries[:50]:
                        index.retrieve(q)  # warm
                    p50, p99 = (x * 1e3 for x in percentiles(lambda q, index=index: index.retrieve(q), corpus.queries))
                    base = p50 if base is None else base
                    print(f"| {lang} | {n:,} | {name} | {p50:.2f} | {p99:.2f} | {p50 - base:+.2f} |")
                    if name == "fusion":
                        assert index.retrieve(corpus.queries[1]).embedding_used
                        state = index.vectors.search()._state
                        vectors = [np.asarray(emb.embed([q])[0]) for q in corpus.queries[:200]]
                        mv50, mv99 = (x * 1e3 for x in percentiles(state.index.all_scores, vectors))
                        matvec = (f"| {lang} | {n:,} | (one {n:,} × {emb.dim} cosine pass alone) "
                                  f"| {mv50:.2f} | {mv99:.2f} | |")
                print(matvec)
            t0 = time.perf_counter()
            for q in corpus.queries:
                emb.embed_query([q])
            print(f"| {lang} | {n:,} | (the zero-cost embedder itself, per query) | "
                  f"{(time.perf_counter() - t0) / len(corpus.queries) * 1e3:.2f} | | |")
    return 0


def main(argv=None) -> int:
    import platform

    import bm25s
    import rank_bm25  # noqa: F401

    args = parse_args(argv)
    if args.fusion:
        return bench_fusion(args)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    langs = [s.strip() for s in args.langs.split(",") if s.strip()]
    print(f"python {platform.python_version()}, numpy {np.__version__}, bm25s {bm25s.__version__}, "
          f"{platform.machine()}, {os.cpu_count()} CPUs; tokens: wikimem.recall.tokenizer (bigrams, no jieba) "
          f"for every system; build repeats {args.repeat}, wikimem writes {args.writes}, "
          f"reference re-indexes {args.ref_writes}")
    started_all = time.perf_counter()
    targets = {}
    for lang in langs:
        for n in sizes:
            corpus = Corpus(lang, n, args.queries)
            started = time.perf_counter()
            res = print_table(lang, corpus, bench_corpus(corpus, args))
            print(f"\n(corpus done in {time.perf_counter() - started:.0f} s)")
            if n == 10_000:
                targets[lang] = res
    for lang, res in targets.items():
        print_targets(lang, res)
    print(f"\n(total {time.perf_counter() - started_all:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
