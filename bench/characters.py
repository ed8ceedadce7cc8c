"""Characters (issue 33): retrieve as a character against a shared-only retrieve, and what memorize costs per turn.

Retrieve. One person (``user:bench``) with ``--shared`` items and ``--diary`` entries in the shared layer,
``--layer`` items and ``--layer-diary`` entries in kai's layer, ``--profile`` items in kai's profile (``char:kai``).
Each query is asked shared-only and as kai, the order alternating, at two levels: the host's ``Owner.retrieve``
(what a served request calls) and the Flask test client's ``POST …/retrieve`` (the whole request). ``user:flat``
holds the same total in its shared layer: as kai on ``user:bench`` against it is the cost of layers, not of reading
more. Then where the time of a retrieve as kai goes (each source's own ranking, the rest), and the ratio for other
sizes of kai's layer. Target (the issue's): as a character / shared-only p50 <= 1.3.

Memorize. A stand-in chat server on 127.0.0.1 (``tests/fakes.py``, the OpenAI protocol) answers every turn with
one diary entry and one fact; ``--turns`` turns without a character (facts direct, the host's default) and as
characters whose ``shared_writes`` is ``staged``, ``direct``, ``none``; then as kai once ``--pending`` proposals
wait for review. Per turn: LLM calls, prompt and completion tokens (counted at the server with wikimem's estimator,
one per word and per CJK character; an OpenAI tokenizer counts about 1.3 per English word), commits, seconds.

    .venv/bin/python bench/characters.py                # ~2 min
    .venv/bin/python bench/characters.py --rounds 5 --turns 5 --sweep 0.25 --pending 20
    .venv/bin/python bench/characters.py --profile-run  # also cProfile the retrieve as kai (top 25, cumulative)
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
for _key in [k for k in os.environ if k.startswith("WIKIMEM_")]:  # the host's defaults, whatever this shell says
    del os.environ[_key]

from fakes import FakeOpenAI  # noqa: E402

from webapp import create_app  # noqa: E402
from webapp.hosting import get_host  # noqa: E402
from wikimem.recall import est_tokens  # noqa: E402

ADMIN = "bench-admin-token-0123456789abcdef"
WORDS = ("sea lighthouse tea garden river boat market winter summer train violin piano bread cheese mountain forest "
         "lantern harbor kite orchard cat dog bicycle library museum concert coffee rain snow festival sister brother "
         "doctor school office painting novel poem recipe soup noodle dumpling island bridge castle theatre").split()
QUERIES = ["what tea does she like", "the lighthouse by the sea", "her sister and the violin", "winter festival",
           "a novel about a castle", "coffee at the harbor market", "the cat and the dog", "noodle soup recipe",
           "train to the mountain", "painting in the museum", "concert in the rain", "bicycle to school",
           "bread and cheese in the garden", "kite over the island", "poem about snow", "doctor at the office",
           "boat on the river", "dumpling festival", "library by the bridge", "orchard in summer"]
CHARACTERS = (("kai", "Kai", "staged"), ("mira", "Mira", "direct"), ("elaina", "Elaina", "none"))


def text(i: int, salt: int = 0) -> str:
    words = " ".join(WORDS[(i * k + k * k + salt) % len(WORDS)] for k in range(1, 11))
    return f"Ann mentioned {words} (note {salt}-{i})."


def ops(count: int, salt: int, diary: int) -> list[dict]:
    """``count`` items over 12 files and ``diary`` entries over half a year."""
    out: list[dict] = [{"op": "add", "file": f"topic{i % 12}", "name": f"n{salt}-{i}", "content": text(i, salt)}
                       for i in range(count)]
    out += [{"op": "diary", "content": "Today " + text(i, salt + 7).lower(),
             "date": f"2026-0{1 + i % 6}-{1 + i % 28:02d}", "time": f"{8 + i % 12:02d}:{i % 60:02d}"}
            for i in range(diary)]
    return out


def write(owner, all_ops: list[dict], character: str | None = None) -> None:
    for start in range(0, len(all_ops), 200):
        owner.apply_ops(all_ops[start:start + 200], character=character)


def person(host, owner_id: str, shared: list[dict], layer: list[dict]):
    owner = host.create_owner(owner_id)
    write(owner, shared)
    write(owner, layer, "kai")
    return owner


def timed(call, *args, **kwargs) -> float:
    start = time.perf_counter()
    call(*args, **kwargs)
    return time.perf_counter() - start


def paired(ref: list[float], char: list[float]) -> float:
    """The median of the ratios of calls made one after the other (steadier than a ratio of medians on a busy
    machine: a slow second hits both calls of a pair)."""
    return statistics.median(c / r for r, c in zip(ref, char))


def ms(xs: list[float], q: str = "p50") -> float:
    return (statistics.median(xs) if q == "p50" else statistics.quantiles(xs, n=20)[-1]) * 1e3


def ready(owner) -> None:
    """Wait until the diary indexes of every layer a retrieve as kai reads are built (the first use builds them in
    the background, and answers through the time window meanwhile)."""
    deadline = time.monotonic() + 120
    while owner.retrieve(QUERIES[0], character="kai").diary_index == "building" and time.monotonic() < deadline:
        time.sleep(0.05)


class Calls(list):
    """The seconds of calls (wall clock), with the calling thread's CPU seconds of each in ``cpu``: the CPU ratio
    is steadier on a shared machine (a call waiting for a core is not counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.cpu: list[float] = []


def pair(first, second, rounds: int) -> tuple[Calls, Calls]:
    """Each query through both calls, ``rounds`` times, the order alternating; warmed up once."""
    for q in QUERIES:
        first(q), second(q)
    a, b = Calls(), Calls()
    for r in range(rounds):
        for n, q in enumerate(QUERIES):
            calls = ((a, first), (b, second)) if (r + n) % 2 else ((b, second), (a, first))
            for out, call in calls:
                cpu = time.thread_time()
                out.append(timed(call, q))
                out.cpu.append(time.thread_time() - cpu)
    return a, b


def shared_only(owner):
    return lambda q: owner.retrieve(q, limit=10)


def as_kai(owner):
    return lambda q: owner.retrieve(q, character="kai", limit=10)


def through_api(client, owner_id: str, character: str | None):
    extra = {"character": character} if character else {}

    def call(q: str) -> None:
        r = client.post(f"/api/v1/owners/{owner_id}/retrieve", json={"query": q, "limit": 10, **extra},
                        headers={"Authorization": f"Bearer {ADMIN}"})
        assert r.status_code == 200, r.get_json()
    return call


def retrieve_table(app, host, args) -> None:
    bench, flat = host.owner("user:bench"), host.owner("user:flat")
    ready(bench)
    ready(flat)
    layers = sorted({e.layer for q in QUERIES for e in bench.retrieve(q, character="kai", limit=10).items})
    print(f"as kai, the 20 queries' hits come from the layers {layers}\n")
    rows = [("Owner.retrieve", "user:bench shared-only", *pair(shared_only(bench), as_kai(bench), args.rounds)),
            ("Owner.retrieve", "user:flat shared-only (same total)", *pair(shared_only(flat), as_kai(bench),
                                                                             args.rounds)),
            ("POST …/retrieve, test client", "user:bench shared-only",
             *pair(through_api(app.test_client(), "user:bench", None),
                   through_api(app.test_client(), "user:bench", "kai"), max(1, args.rounds // 2)))]
    print("| level | reference | p50 ms | p95 ms | user:bench as kai p50 ms | p95 ms | p50 ratio | p95 ratio | "
          "paired ratio | CPU p50 ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for level, name, ref, char in rows:
        print(f"| {level} | {name} | {ms(ref):.2f} | {ms(ref, 'p95'):.2f} | {ms(char):.2f} | {ms(char, 'p95'):.2f} | "
              f"**{ms(char) / ms(ref):.2f}×** | {ms(char, 'p95') / ms(ref, 'p95'):.2f}× | {paired(ref, char):.2f}× | "
              f"{ms(char.cpu) / ms(ref.cpu):.2f}× |")
    print(f"\n({len(rows[0][2])} calls per cell at the Owner level, {len(rows[2][2])} through the test client; "
          "target: p50 ratio <= 1.3×; paired: the median ratio of the calls made one after the other; CPU: of the "
          "thread's CPU seconds, steadier on a shared machine)\n")
    owner = rows[0]
    print(f"**retrieve as kai / shared-only, Owner level: p50 {ms(owner[3]) / ms(owner[2]):.2f}×, paired "
          f"{paired(owner[2], owner[3]):.2f}×, CPU {ms(owner[3].cpu) / ms(owner[2].cpu):.2f}× (target <= 1.3×; "
          f"load average {os.getloadavg()[0]:.1f})**\n")


class TimedIndex:
    """A source's index whose ``retrieve`` adds its seconds to ``spent[layer]`` (the merge only looks links up)."""

    def __init__(self, inner, layer: str, spent: dict[str, float]):
        self.inner, self.layer, self.spent = inner, layer, spent

    def retrieve(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.inner.retrieve(*args, **kwargs)
        finally:
            self.spent[self.layer] = self.spent.get(self.layer, 0.0) + time.perf_counter() - start

    def lookup(self, *args):
        return self.inner.lookup(*args)


def breakdown(host, args) -> None:
    """Where a retrieve as kai spends its time, measured inside the same calls: making the sources fresh, each
    source's own ranking, and the rest (the merge by score, links, the budget, the owner's bookkeeping)."""
    bench = host.owner("user:bench")
    ready(bench)
    made = bench._sources
    spent: dict[str, float] = {}

    def sources(*a):
        start = time.perf_counter()
        out = [replace(s, index=TimedIndex(s.index, s.layer, spent)) for s in made(*a)]
        spent["fresh"] = spent.get("fresh", 0.0) + time.perf_counter() - start
        return out

    bench._sources = sources  # (this instance only, for this table)
    parts: dict[str, list[float]] = {}
    try:
        for _ in range(max(1, args.rounds // 2)):
            for q in QUERIES:
                reference = timed(bench.retrieve, q, limit=10)
                spent.clear()
                total = timed(bench.retrieve, q, character="kai", limit=10)
                for key, took in (("reference", reference), ("total", total), *spent.items(),
                                  ("rest", total - sum(spent.values()))):
                    parts.setdefault(key, []).append(took)
        if args.profile_run:
            profiler = cProfile.Profile()
            profiler.enable()
            for q in QUERIES * 5:
                bench.retrieve(q, character="kai", limit=10)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    finally:
        del bench._sources
    names = {"reference": "shared-only retrieve, whole (the reference, just before)",
             "total": "retrieve as kai, whole", "fresh": "the three sources made fresh",
             "rest": "the rest: merge by score, links, budget, the owner's bookkeeping"}
    print("| a retrieve as kai (Owner level, inside the same calls) | p50 ms | share of the whole (p50s) |")
    print("|---|---:|---:|")
    for key, xs in parts.items():
        print(f"| {names.get(key, f'ranking of the {key} source')} | {ms(xs):.2f} | "
              f"{ms(xs) / ms(parts['total']):.0%} |")
    print()


def sweep(host, args, shared: list[dict]) -> None:
    """The ratio for other sizes of kai's layer (a share of the shared layer's items and entries)."""
    print("| kai's layer / shared layer | kai's layer | shared-only p50 ms | as kai p50 ms | ratio | paired ratio | "
          "CPU ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for share in args.sweep:
        n, d = int(args.shared * share), int(args.diary * share)
        owner = person(host, f"user:sweep-{int(share * 100)}", shared, ops(n, 1, d))
        ready(owner)
        ref, char = pair(shared_only(owner), as_kai(owner), max(1, args.rounds // 2))
        print(f"| {share:g} | {n} items + {d} entries | {ms(ref):.2f} | {ms(char):.2f} | "
              f"**{ms(char) / ms(ref):.2f}×** | {paired(ref, char):.2f}× | {ms(char.cpu) / ms(ref.cpu):.2f}× |")
    print()


class TimedLLM:
    """An owner's chat client, timed: the seconds a turn spent waiting for the model."""

    def __init__(self, inner):
        self.inner, self.seconds = inner, 0.0

    def chat(self, messages):
        start = time.perf_counter()
        try:
            return self.inner.chat(messages)
        finally:
            self.seconds += time.perf_counter() - start


class Turns:
    """Memorize turns on one person, and what the stand-in server saw of them."""

    def __init__(self, host, fake: FakeOpenAI, replies: list[str], owner_id: str):
        self.fake, self.replies = fake, replies
        self.owner = host.create_owner(owner_id)
        self.owner.llm = TimedLLM(self.owner.llm)
        self.n = 0

    def run(self, turns: int, character: str | None) -> dict:
        calls, replied = self.fake.chat_calls, len(self.replies)
        commits = len(self.owner.history(limit=10_000).entries) + len(self.owner.staged_runs())
        seconds, model, writes = [], [], 0
        for _ in range(turns):
            self.n += 1
            turn = f"user: I went to the {WORDS[self.n % len(WORDS)]} with my sister (turn {self.n})\nassistant: Nice!"
            self.owner.llm.seconds = 0.0
            start = time.perf_counter()
            writes += len(self.owner.memorize(turn, character=character).writes)
            seconds.append(time.perf_counter() - start)
            model.append(self.owner.llm.seconds)
        sent = self.fake.chat_messages[calls:]
        return {"calls": len(sent) / turns, "prompt": sum(est_tokens(m["content"]) for c in sent for m in c) / turns,
                "completion": sum(est_tokens(r) for r in self.replies[replied:]) / turns,
                "chars": sum(len(m["content"]) for c in sent for m in c) / turns,
                "commits": (len(self.owner.history(limit=10_000).entries) + len(self.owner.staged_runs())
                            - commits) / turns,
                "writes": writes / turns, "seconds": ms(seconds), "model": ms(model)}


def memorize_table(host, fake: FakeOpenAI, args) -> None:
    replies: list[str] = []

    def reply(messages: list[dict]) -> str:
        n = len(fake.chat_messages)
        out = json.dumps({"diary": [{"content": f"Ann told me about the {WORDS[n % len(WORDS)]} today."}],
                          "facts": [{"file": "likes", "name": f"like-{n}",
                                     "content": f"Ann likes the {WORDS[(n * 7) % len(WORDS)]}."}]})
        replies.append(out)
        return out

    fake.reply_fn = reply
    rows = [(f"{name} (shared_writes={policy})" if cid else "no character (facts direct)",
             Turns(host, fake, replies, f"user:memo-{cid or 'none'}").run(args.turns, cid))
            for cid, name, policy in ((None, "", ""), *CHARACTERS)]
    if args.pending:
        pending = Turns(host, fake, replies, "user:memo-pending")
        pending.run(args.pending, "kai")
        rows.append((f"Kai (staged), {args.pending} proposals pending", pending.run(args.turns, "kai")))
    print("| memorize as | LLM calls / turn | prompt tokens / turn | completion tokens / turn | prompt chars / turn | "
          "commits / turn | writes / turn | s / turn p50 | of which the model |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, r in rows:
        print(f"| {label} | {r['calls']:.2f} | {r['prompt']:.0f} | {r['completion']:.0f} | {r['chars']:.0f} | "
              f"{r['commits']:.2f} | {r['writes']:.2f} | {r['seconds']:.1f} ms | {r['model']:.1f} ms |")
    print(f"\n({args.turns} turns a row; commits: on main plus one staged run per proposal; the stand-in answers at "
          "once, so the seconds are the host's own cost and one local HTTP round trip)\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=int, default=2000, help="items in the person's shared layer")
    ap.add_argument("--diary", type=int, default=400, help="diary entries in the shared layer")
    ap.add_argument("--layer", type=int, default=500, help="items in kai's layer")
    ap.add_argument("--layer-diary", type=int, default=200, help="diary entries in kai's layer")
    ap.add_argument("--profile", type=int, default=30, help="items in kai's profile (char:kai)")
    ap.add_argument("--rounds", type=int, default=20, help="rounds of the 20 queries")
    ap.add_argument("--sweep", type=float, nargs="*", default=[0.0, 0.1, 1.0],
                    help="other sizes of kai's layer, as shares of the shared layer")
    ap.add_argument("--turns", type=int, default=20, help="memorize turns per row")
    ap.add_argument("--pending", type=int, default=80, help="proposals waiting before the last row (0: no row)")
    ap.add_argument("--profile-run", action="store_true", help="cProfile the retrieve as kai")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        app = create_app({"TESTING": True, "DATA_ROOT": str(Path(tmp) / "data"), "ADMIN_TOKEN": ADMIN,
                          "LLM_URL": fake.url, "LLM_MODEL": "fake-chat"})
        with app.app_context():
            host = get_host()
        started = time.perf_counter()
        for cid, name, policy in CHARACTERS:
            host.characters.put(cid, name=name, persona=f"{name}, a character of the bench bot, who listens well.",
                                shared_writes=policy)
        shared, layer = ops(args.shared, 0, args.diary), ops(args.layer, 1, args.layer_diary)
        profile = ops(args.profile, 2, 0)
        person(host, "user:bench", shared, layer)
        write(host.owner("char:kai"), profile)
        write(host.create_owner("user:flat"), shared + layer + profile)
        print(f"user:bench: {args.shared} shared items + {args.diary} diary entries; kai's layer {args.layer} items + "
              f"{args.layer_diary} entries; char:kai {args.profile} items; user:flat all of them in one layer "
              f"(made in {time.perf_counter() - started:.1f} s; the host's defaults, no embedder; "
              f"load average {os.getloadavg()[0]:.1f})\n")
        retrieve_table(app, host, args)
        breakdown(host, args)
        if args.sweep:
            sweep(host, args, shared)
        memorize_table(host, fake, args)
        host.start_jobs().stop()


if __name__ == "__main__":
    main()
