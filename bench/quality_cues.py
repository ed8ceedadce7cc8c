"""Recall that keeps its cues (issue 35): the quality corpus with what its three defects need.

    .venv/bin/python bench/quality_cues.py                      # en + zh, BM25 and fused host defaults
    .venv/bin/python bench/quality_cues.py --no-dense           # BM25 host only (seconds)
    .venv/bin/python bench/quality_cues.py --repo /tmp/base     # the same, importing wikimem from a checkout
    .venv/bin/python bench/quality_cues.py --save after.json --compare before.json   # paired, run against run

``--repo`` measures another checkout (say, the commit before a change) with
this script's data, so each change is read against the code before it.
``bench/quality.py``'s conversations (see its docstring), and:

- **plain**: its 704 questions a language, as they are;
- **greetings**: the same, with a content-free turn (a greeting, an
  acknowledgement, a few characters of filler: "Maya: Hello Tom! How are you
  doing today?", "Tom: Haha, nice!") inserted after every
  :data:`GREET_EVERY` turns of every session, the questions unchanged;
- **dated**: a wiki file ``plans`` per conversation of dated facts — each
  speaker travels on :data:`DATED_PER_SPEAKER` dates of 2024 ("Maya is going
  to Athens on the 10th of February 2024 for a wedding.") — asked by date
  ("Where is Maya going on February 10, 2024?"): the date is the only word
  that tells the facts of one person apart; **dated + diary**: the same with
  an unrelated diary entry on each of those dates (the window is not empty).

Reported: hit@k and MRR@10 (k = 10 en, 5 zh, as ``quality.py``) of each
set, and **limits**: the same questions at limits 5, 10 and 50 — the share
whose first 5 hits are the same at all three (and first 10 at 10 and 50),
and hit@5 read from each limit's answer. ``--save`` keeps every question's
rank; ``--compare`` reads such a file (another checkout's run) and prints the
paired difference of each set and variant (Δ hit@k, bootstrap 95% interval,
exact sign test on the questions only one side hits, Δ MRR), as quality.py.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _repo_first(argv: list[str]) -> None:
    """Import wikimem from ``--repo`` (before quality.py puts this tree first on the path)."""
    if "--repo" in argv:
        sys.path.insert(0, str(Path(argv[argv.index("--repo") + 1]).resolve()))
    import wikimem  # noqa: F401  (bound now: later imports reuse this one)


_repo_first(sys.argv)
sys.path.insert(0, str(HERE))

import quality  # noqa: E402
from quality import BM25_HOST, HOST_VARIANT, Outcome, Variant, make_index, paired, rank_of  # noqa: E402

from wikimem import MemoryStore  # noqa: E402
from wikimem.format.blocks import Block, render_blocks  # noqa: E402

GREET_EVERY = 3
DATED_PER_SPEAKER = 6
LIMITS = (5, 10, 50)

GREETINGS = {
    "en": ["Hello {other}! How are you doing today?", "Hi {other}, good to hear from you!", "Haha, nice!",
           "Ok, thanks!", "Sure, sounds good.", "Yeah, totally.", "Good morning {other}!", "Oh wow.",
           "Thanks for asking!", "Hey, how's it going?", "Lol, same.", "Hmm, okay."],
    "zh": ["你好呀{other}，今天过得怎么样？", "哈哈，好的！", "嗯嗯，是啊。", "谢谢你问我！", "早上好呀{other}！",
           "好的好的。", "哇，真的吗？", "没问题～", "嘿，你好吗？", "哈哈哈哈", "嗯，好吧。", "对对对！"],
}
CITIES = {
    "en": ["Athens", "Oslo", "Lima", "Nairobi", "Hanoi", "Porto", "Quebec", "Tbilisi", "Valencia", "Krakow",
           "Bergen", "Cusco", "Zanzibar", "Hobart", "Seville", "Tallinn"],
    "zh": ["雅典", "奥斯陆", "利马", "内罗毕", "河内", "波尔图", "魁北克", "第比利斯", "瓦伦西亚", "克拉科夫",
           "卑尔根", "库斯科", "桂林", "大理", "厦门", "青岛"],
}
REASONS = {
    "en": ["a wedding", "a conference", "a concert", "a job interview", "a family visit", "a marathon",
           "a cooking course", "a friend's birthday"],
    "zh": ["参加婚礼", "开会", "看演唱会", "面试", "看望家人", "跑马拉松", "上烹饪课", "给朋友过生日"],
}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _en_date(m: int, d: int, form: int) -> str:
    return [f"the {_ordinal(d)} of {MONTHS[m - 1]} 2024", f"{MONTHS[m - 1]} {d}, 2024", f"2024-{m:02d}-{d:02d}"][form]


def _zh_date(m: int, d: int, form: int) -> str:
    return [f"2024年{m}月{d}日", f"2024年{m}月{d}号", f"2024-{m:02d}-{d:02d}"][form]


# -- the corpus's additions ---------------------------------------------------------


def with_greetings(conv: dict, lang: str) -> dict:
    """The conversation with a content-free turn after every :data:`GREET_EVERY` turns of each session."""
    rng = random.Random(f"greet-{conv['id']}")
    a, b = conv["speakers"]
    sessions = []
    for session in conv["sessions"]:
        turns = []
        for n, turn in enumerate(session["turns"], 1):
            turns.append(turn)
            if n % GREET_EVERY == 0:
                who, other = (a, b) if rng.random() < 0.5 else (b, a)
                sep = "：" if lang == "zh" else ": "
                text = rng.choice(GREETINGS[lang]).format(other=other)
                turns.append({"name": f"{turn['name']}g", "content": f"{who}{sep}{text}"})
        sessions.append({"file": session["file"], "turns": turns})
    return {**conv, "sessions": sessions}


@dataclass
class Dated:
    """A conversation's dated facts (wiki file ``plans``), their questions, and one diary entry a date."""

    items: list[tuple[str, str]] = field(default_factory=list)  # (name, content)
    questions: list[dict] = field(default_factory=list)
    diary: list[tuple[str, str, str]] = field(default_factory=list)  # (date, HH:MM, content)


def dated_facts(conv: dict, lang: str) -> Dated:
    rng = random.Random(f"dated-{conv['id']}")
    out = Dated()
    days = rng.sample([(m, d) for m in range(1, 13) for d in range(1, 29)], 2 * DATED_PER_SPEAKER)
    cities = rng.sample(CITIES[lang], 2 * DATED_PER_SPEAKER)
    for n, ((m, d), city) in enumerate(zip(days, cities)):
        who = conv["speakers"][n % 2]
        reason = rng.choice(REASONS[lang])
        said, asked = rng.randrange(3), rng.randrange(3)
        name = f"trip-{n + 1:02d}"
        if lang == "en":
            fact = f"{who} is going to {city} on {_en_date(m, d, said)} for {reason}."
            question = rng.choice([f"Where is {who} going on {_en_date(m, d, asked)}?",
                                   f"Where does {who} travel on {_en_date(m, d, asked)}?"])
            entry = f"{who} stayed home and watched a movie."
        else:
            fact = f"{who}{_zh_date(m, d, said)}要去{city}{reason}。"
            question = rng.choice([f"{who}{_zh_date(m, d, asked)}要去哪里？", f"{_zh_date(m, d, asked)}{who}去哪儿？"])
            entry = f"{who}在家看了一部电影。"
        out.items.append((name, fact))
        out.questions.append({"question": question, "type": "dated", "evidence": [["plans", name]]})
        out.diary.append((f"2024-{m:02d}-{d:02d}", "20:00", entry))
    return out


def write(root: Path, conv: dict, dated: Dated | None = None, diary: bool = False) -> MemoryStore:
    quality.write_store(root, conv)
    if dated is not None:
        blocks = [Block(name, content, None, None, None) for name, content in dated.items]
        (root / "wiki" / "plans.md").write_text(render_blocks("plans", blocks), encoding="utf-8")
    if dated is not None and diary:
        (root / "diary").mkdir(exist_ok=True)
        for day, hhmm, content in dated.diary:
            (root / "diary" / f"{day}.md").write_text(render_blocks(day, [Block(hhmm, content, None, None, None)]),
                                                      encoding="utf-8")
    return MemoryStore(root)


# -- running ------------------------------------------------------------------------


@dataclass
class Limits:
    """Per question: whether the first 5 (10) hits agree across the limits, and hit@5 at each limit."""

    same5: list[bool] = field(default_factory=list)
    same10: list[bool] = field(default_factory=list)
    hit5: dict[int, list[bool]] = field(default_factory=lambda: {k: [] for k in LIMITS})


def ask(index, q: dict, out: Outcome, limits: Limits | None) -> None:
    evidence = {tuple(e) for e in q["evidence"]}
    if limits is None:
        out.ranks.append(rank_of(index.retrieve(q["question"], limit=10, expand_links=False), evidence))
        out.types.append(q["type"])
        return
    keys = {}
    for limit in LIMITS:
        result = index.retrieve(q["question"], limit=limit, expand_links=False)
        keys[limit] = [(e.item.file, e.item.name) for e in result.items if e.source == "hit"]
        limits.hit5[limit].append(any(k in evidence for k in keys[limit][:5]))
        if limit == 10:
            out.ranks.append(rank_of(result, evidence))
            out.types.append(q["type"])
    limits.same5.append(keys[5] == keys[10][:5] == keys[50][:5])
    limits.same10.append(keys[10] == keys[50][:10])


SETS = ("plain", "greetings", "dated", "dated + diary")


def _vectors(cache: Path, space: str, lang: str, conv: str) -> Path:
    """The vector folder of a set: quality.py's for the plain one; the others start as a copy of it."""
    plain = cache / lang / conv
    if space == "plain":
        return plain
    mine = cache / "cues" / space / lang / conv
    if not mine.exists() and plain.exists():
        shutil.copytree(plain, mine)
    return mine


def run(lang: str, args, embedders: dict, variants: list[Variant]) -> dict[tuple[str, str], tuple[Outcome, Limits]]:
    data = quality.json.loads((quality.DATA / f"{lang}.json").read_text(encoding="utf-8"))
    out = {(s, v.name): (Outcome(), Limits()) for s in SETS for v in variants}
    tmp = Path(tempfile.mkdtemp(prefix=f"quality-cues-{lang}-"))
    try:
        for conv in data["conversations"][: args.conversations]:
            dated = dated_facts(conv, lang)
            stores = {"plain": (write(tmp / "p" / conv["id"], conv), conv["questions"], "plain"),
                      "greetings": (write(tmp / "g" / conv["id"], with_greetings(conv, lang)), conv["questions"],
                                    "greetings"),
                      "dated": (write(tmp / "d" / conv["id"], conv, dated), dated.questions, "dated"),
                      "dated + diary": (write(tmp / "dd" / conv["id"], conv, dated, diary=True), dated.questions,
                                        "dated")}
            for name, (store, questions, space) in stores.items():
                vectors = _vectors(Path(args.cache), space, lang, conv["id"])
                for v in variants:
                    index = make_index(store, v, embedders, vectors)
                    if v.embedder:  # every vector in place before the first question counts
                        index.retrieve(questions[0]["question"])
                        if not index.wait_for_vectors(3600):
                            raise SystemExit(f"{v.name}: vectors not ready after an hour")
                    outcome, limits = out[(name, v.name)]
                    for q in questions:
                        ask(index, q, outcome, limits if name != "plain" or args.limits_plain else None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def print_sets(lang: str, results: dict, variants: list[Variant]) -> None:
    k = 10 if lang == "en" else 5
    print(f"\n### {lang} (hit@{k}, MRR@10; limits: the share of questions whose first hits agree)\n")
    print(f"| set | variant | questions | hit@1 | hit@{k} | MRR | first 5 same at 5/10/50 | first 10 same at 10/50 "
          "| hit@5 at limit 5 / 10 / 50 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for s in SETS:
        for v in variants:
            o, lim = results[(s, v.name)]
            same5 = f"{sum(lim.same5) / len(lim.same5):.3f}" if lim.same5 else "–"
            same10 = f"{sum(lim.same10) / len(lim.same10):.3f}" if lim.same10 else "–"
            hits = " / ".join(f"{sum(h) / len(h):.3f}" for h in lim.hit5.values()) if lim.same5 else "–"
            print(f"| {s} | {v.name} | {len(o.ranks)} | {o.hit(1):.3f} | {o.hit(k):.3f} | {o.mrr():.3f} | "
                  f"{same5} | {same10} | {hits} |")


def save(path: str, results: dict[str, dict]) -> None:
    Path(path).write_text(json.dumps({lang: {f"{s}|{v}": o.ranks for (s, v), (o, _) in found.items()}
                                      for lang, found in results.items()}), encoding="utf-8")


def print_compared(lang: str, results: dict, before_path: str | None) -> None:
    """The paired differences against another run's ranks (``before_path``), or, without one, of each extra
    variant against the fused host default of this run."""
    k = 10 if lang == "en" else 5
    if before_path:
        before = json.loads(Path(before_path).read_text(encoding="utf-8")).get(lang, {})
        rows = [(s, v, before.get(f"{s}|{v}"), out) for (s, v), (out, _) in results.items()]
        title = f"against {before_path}"
    else:
        rows = [(s, v, results[(s, "fused host")][0].ranks, out) for (s, v), (out, _) in results.items()
                if v.startswith("fused host,")]
        title = "each extra variant against the fused host default"
    print(f"\n{lang}: {title} (B − A at hit@{k}; only-A / only-B = questions one of them hits)\n")
    print(f"| set | variant | Δ hit@{k} | 95% CI | only A | only B | sign test p | Δ MRR |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for s, v, ranks, out in rows:
        if ranks is None or len(ranks) != len(out.ranks):
            continue
        d = paired(Outcome(ranks=ranks), out, k)
        print(f"| {s} | {v} | {d['d_hit']:+.3f} | [{d['ci_hit'][0]:+.3f}, {d['ci_hit'][1]:+.3f}] | {d['only_a']} | "
              f"{d['only_b']} | {quality._p(d['p'])} | {d['d_mrr']:+.3f} |")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--langs", default="en,zh")
    p.add_argument("--conversations", type=int, default=None)
    p.add_argument("--no-dense", action="store_true")
    p.add_argument("--cache", default=str(quality.ROOT / "var" / "bench-quality"))
    p.add_argument("--repo", default=None, help="a checkout to import wikimem from (read before anything else)")
    p.add_argument("--limits-plain", action="store_true", help="also ask the plain set at limits 5, 10 and 50")
    p.add_argument("--save", default=None, help="write every question's rank to this JSON file")
    p.add_argument("--compare", default=None, help="a --save file of another run: print the paired differences")
    p.add_argument("--variants", default="", help="extra variants, comma-separated names of extra_variants(): "
                                                  "ctx-conversations (item weight 0.4 in conversations only), "
                                                  "ctx-0.4 (0.4 everywhere)")
    args = p.parse_args(argv)
    args.langs = [s.strip() for s in args.langs.split(",") if s.strip()]
    args.only = []
    args.weights = ()
    return args


def extra_variants() -> dict[str, Variant]:
    """Levers tried on top of the host defaults (only where the code under test has them)."""
    out: dict[str, Variant] = {}
    try:
        from wikimem.vectors import NeighbourContext

        out["ctx-conversations"] = Variant("fused host, ctx 0.4 conversations", **{
            **{f: getattr(HOST_VARIANT, f) for f in ("stop", "embedder", "weight", "b")},
            "context": NeighbourContext(item_weight=0.6, conversation_weight=0.4)})
        out["ctx-0.4"] = Variant("fused host, ctx 0.4", **{
            **{f: getattr(HOST_VARIANT, f) for f in ("stop", "embedder", "weight", "b")}, "context": 0.4})
    except (ImportError, TypeError):  # an older checkout: no per-file weight
        pass
    return out


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    embedders = quality.query_embedder(args)
    variants = [Variant("bm25 host", stop=BM25_HOST.stop, b=BM25_HOST.b, smooth=BM25_HOST.smooth)]
    if embedders:
        variants.append(Variant("fused host", **{f: getattr(HOST_VARIANT, f)
                                                 for f in ("stop", "embedder", "weight", "context", "b")}))
        table = extra_variants()
        variants += [table[name.strip()] for name in args.variants.split(",") if name.strip() in table]
    import wikimem

    print(f"## Recall that keeps its cues (bench/quality_cues.py; wikimem from {Path(wikimem.__file__).parent})")
    everything = {}
    for lang in args.langs:
        results = everything[lang] = run(lang, args, embedders, variants)
        for emb in embedders.values():
            emb.save()
        print_sets(lang, results, variants)
        if args.compare:
            print_compared(lang, results, args.compare)
        if len(variants) > 2:
            print_compared(lang, results, None)
        sys.stdout.flush()
    if args.save:
        save(args.save, everything)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
