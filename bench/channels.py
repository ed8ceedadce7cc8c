"""Retrieve in a room (``channel``/``present``, SPEC §11) against a plain retrieve of the same person.

One person ``user:a`` with a diary of ``--entries`` entries over a year in the shared layer and as many in
Kai's layer (a quarter said in direct chats, a third in groups G1/G2 with varying ``present`` lists, the
rest with no room info), plus ``--facts`` wiki items (a tenth learnt in a direct chat). Characters Kai and
Mira are registered. Each round asks every query once per variant, the variants' order turning by round,
at the Owner level and through the Flask test client:

- shared layer: plain (the reference) vs in G1 with B present (the direct-chat rule sifts);
- as Kai: shared-only plain retrieve (the reference) vs Kai's three layers with the rules switched off
  (internal: ``retrieve_layers`` with no Room — what the rules themselves cost is against this one) vs Kai
  without a room (the character rule alone) vs Kai in G1 with B present (both rules).

Prints p50/p95 (ms) of each and the p50 ratio against its reference (target ≤ 1.2×), and how many entries the
room left out (``explain``) so the rule is seen to bite. ``--profile`` adds a cProfile of the room variant.

    .venv/bin/python bench/channels.py                      # 3,000 + 3,000 entries, 300 facts, 20 rounds
    .venv/bin/python bench/channels.py --entries 500 --rounds 4
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikimem.context import WriteContext  # noqa: E402

A, B, C, D = "user:a", "user:b", "user:c", "user:d"
TOKEN = "bench-admin-token-0123456789"
WORDS = ("sea lighthouse tea garden river boat market winter summer train violin piano bread cheese mountain "
         "forest lantern harbor kite orchard concert exam sister cat rain hotpot movie bike museum birthday").split()
QUERIES = ["violin concert", "tea by the sea", "hotpot with my sister", "the cat in the rain", "birthday at the museum",
           "train to the mountain", "what did we do yesterday", "piano exam in winter", "kite in the orchard",
           "lantern harbor market"]
G1_PRESENT = ([A, B, "char:kai"], [A, B, C, "char:kai"], [A, B], [A, C, "char:kai"], [A, B, "char:kai", "char:mira"])
G2_PRESENT = ([A, "char:mira"], [A, D, "char:mira"], [A, D])


def text(rng: random.Random, i: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) + f" (note {i})"


def room_of(rng: random.Random, character: str | None) -> dict:
    """Where one entry was said: a direct chat (a quarter), G1 or G2 (a third), or unsaid (the rest)."""
    roll = rng.random()
    if roll < 0.25:
        return {"channel": "dm", "present": [A, f"char:{character or rng.choice(('kai', 'mira'))}"]}
    if roll < 0.45:
        return {"channel": "g1", "present": rng.choice(G1_PRESENT)}
    if roll < 0.58:
        return {"channel": "g2", "present": rng.choice(G2_PRESENT)}
    return {}


def fill(owner, layer: str | None, entries: int, facts: int, seed: int) -> None:
    """``entries`` diary entries and ``facts`` wiki items in one layer, 200 to a commit."""
    rng = random.Random(seed)
    first = date.today() - timedelta(days=365)
    target, ctx = owner.target(WriteContext(actor="bench", run=f"fill_{layer or 'shared'}"), layer)
    for start in range(0, entries, 200):
        with target.batch(ctx) as b:
            for i in range(start, min(entries, start + 200)):
                day = first + timedelta(days=i * 365 // entries)
                target.diary.append(text(rng, i), date=day.isoformat(), time=f"{8 + i % 14:02d}:{i % 60:02d}",
                                    owner=A, **room_of(rng, layer))
            b.result = {}
    with target.batch(ctx) as b:
        for i in range(facts):
            room = {"channel": "dm", "present": [A, "char:kai"]} if i % 10 == 0 else {}
            target.store.save(f"facts{i % 8}", f"f{i}", text(rng, i), owner=A, **room)
        b.result = {}


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def measure(variants: dict[str, Callable[[str], object]], rounds: int) -> dict[str, list[float]]:
    """Each query once per variant per round; the variants' order turns by round (none always goes first)."""
    names = list(variants)
    for name in names:  # warm: every index built before the clock runs
        for q in QUERIES:
            variants[name](q)
    out: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for q in QUERIES:
            for name in order:
                out[name].append(timed(lambda: variants[name](q)))  # noqa: B023
    return out


def p(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000


def table(title: str, reference: str, got: dict[str, list[float]]) -> None:
    print(f"\n### {title}\n\n| variant | calls | p50 ms | p95 ms | p50 / {reference} |\n|---|---:|---:|---:|---:|")
    ref = statistics.median(got[reference])
    for name, xs in got.items():
        print(f"| {name} | {len(xs)} | {p(xs, 0.5):.2f} | {p(xs, 0.95):.2f} | {statistics.median(xs) / ref:.2f}x |")


def ratio(got: dict[str, list[float]], reference: str) -> None:
    ref = statistics.median(got[reference])
    print(f"\nagainst '{reference}': " + ", ".join(f"{name} {statistics.median(xs) / ref:.2f}x p50"
                                                  for name, xs in got.items() if name != reference))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=3000, help="diary entries per layer (shared, Kai's)")
    ap.add_argument("--facts", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--profile", action="store_true", help="cProfile the room variants (Owner level)")
    args = ap.parse_args()
    from webapp import create_app
    from webapp.hosting import get_host
    from wikimem.host.layered import retrieve_layers

    with tempfile.TemporaryDirectory() as tmp:
        app = create_app({"TESTING": True, "DATA_ROOT": str(Path(tmp) / "data"), "ADMIN_TOKEN": TOKEN})
        client = app.test_client()
        headers = {"Authorization": f"Bearer {TOKEN}"}
        started = time.perf_counter()
        with app.app_context():
            host = get_host()
            for character in ("kai", "mira"):
                host.characters.put(character, name=character.title(), shared_writes="direct")
            owner, _ = host.ensure_owner(A)
            fill(owner, None, args.entries, args.facts, 1)
            fill(owner, "kai", args.entries, args.facts, 2)
        print(f"person {A}: {args.entries:,} diary entries and {args.facts} facts in the shared layer and in Kai's "
              f"(made in {time.perf_counter() - started:.1f} s); {len(QUERIES)} queries x {args.rounds} rounds")
        g1 = {"channel": "g1", "present": [A, B, "char:kai"]}
        shared_room = {"channel": "g1", "present": [A, B]}

        def api(**extra) -> Callable[[str], object]:
            def call(q: str) -> object:
                r = client.post(f"/api/v1/owners/{A}/retrieve", headers=headers, json={"query": q, **extra})
                assert r.status_code == 200, r.get_json()
                return r
            return call

        with app.app_context():
            owner = get_host().owner(A)
            lib = {"plain": lambda q: owner.retrieve(q),
                   "in G1 with B": lambda q: owner.retrieve(q, **shared_room)}
            unruled = owner._sources("kai", None, False, None)  # Kai's three layers with no Room: the rules' cost
            kai = {"shared-only plain": lambda q: owner.retrieve(q),
                   "as Kai, rules off (internal)": lambda q: retrieve_layers(unruled, q, tz=owner._tz(None)),
                   "as Kai, no room": lambda q: owner.retrieve(q, character="kai"),
                   "as Kai, in G1 with B": lambda q: owner.retrieve(q, character="kai", **g1)}
            table("Owner.retrieve, shared layer", "plain", measure(lib, args.rounds))
            got = measure(kai, args.rounds)
            table("Owner.retrieve, as a character", "shared-only plain", got)
            ratio(got, "as Kai, rules off (internal)")
            http = {"plain": api(), "in G1 with B": api(**shared_room)}
            table("POST …/retrieve (Flask test client), shared layer", "plain", measure(http, args.rounds))
            http_kai = {"shared-only plain": api(), "as Kai, no room": api(character="kai"),
                        "as Kai, in G1 with B": api(character="kai", **g1)}
            table("POST …/retrieve (Flask test client), as a character", "shared-only plain",
                  measure(http_kai, args.rounds))
            left = owner.retrieve("violin concert", explain=True, limit=50, **shared_room).excluded
            left_kai = owner.retrieve("violin concert", character="kai", explain=True, limit=50, **g1).excluded
            print(f"\nleft out by the room (explain, 'violin concert'): shared in G1 {left}; as Kai in G1 {left_kai}")
            if args.profile:
                prof = cProfile.Profile()
                prof.enable()
                for _ in range(args.rounds):
                    for q in QUERIES:
                        owner.retrieve(q, **shared_room)
                        owner.retrieve(q, character="kai", **g1)
                prof.disable()
                pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        host.start_jobs().stop()


if __name__ == "__main__":
    main()
